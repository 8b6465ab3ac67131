"""What a computation costs: counts that do not depend on the machine, and times that do
(Chapters 3, 4 and 6).

- :func:`seconds_per_call`, :func:`interleaved_seconds`: wall-clock time (volatile: it depends on
  the machine and its load, so it illustrates, never decides);
- :func:`peak_allocated_bytes`: the most memory a call holds at once, from the allocator's
  records, a fused kernel's internal work buffers included (deterministic; Chapter 6 uses it);
- :func:`peak_tensor_bytes`: the largest total size of the tensors that operators return and
  that are alive at once, counted from the tensors PyTorch creates (deterministic; blind to a
  kernel's internal buffers, which is how the tests show what the allocator count adds);
- :func:`matmul_flops`: floating-point operations of the matrix products, counted by
  :class:`torch.utils.flop_counter.FlopCounterMode` (deterministic; elementwise work not counted);
- :func:`graph_depth`: the longest chain of operations in the autograd graph, i.e. how many
  rounds must run one after another however many processors there are (a cumulative sum
  counted as the log2 n rounds of a parallel prefix sum);
Reading these measurements against the sequence length (slopes, crossovers, growth classes) is
in :mod:`longdep.measure.fit`.
"""

import contextlib
import math
import os
import sys
import time
import weakref
from collections.abc import Callable, Hashable, Mapping

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode, _FlopCounterMode

from longdep.models import _checks as check


# speed-up: dispatch modes without the compiler import, which costs over a second per process
# and that the book never uses; delete when a dispatch mode's first call no longer imports
# torch._dynamo (README.md, "Speed patches").
def _dispatch_without_compiler(mode_class: type) -> None:
    """Let the dispatch mode ``mode_class`` run without importing the compiler.

    PyTorch wraps every dispatch mode's ``__torch_dispatch__`` so that ``torch.compile`` skips
    it; on its first call the wrapper imports ``torch._dynamo`` and caches
    ``torch._dynamo.disable`` of the function on the function, as ``__dynamo_disable``. The
    book compiles nothing, so caching the function itself there makes the wrapper call it
    directly: the same counts. (Private to this PyTorch: under another one
    the attribute goes unread and the mode works as before, compiler import included.)
    """
    function = getattr(mode_class.__torch_dispatch__, "__wrapped__", None)
    if function is not None:
        setattr(function, "__dynamo_disable", function)


_dispatch_without_compiler(_FlopCounterMode)  # the mode inside FlopCounterMode


def seconds_per_call(fn: Callable[[], object], repeats: int = 3, threads: int = 1) -> float:
    """The fastest of ``repeats`` timed calls of ``fn`` after one warm-up call, in seconds.

    Timed on ``threads`` threads (restored afterwards): on a shared machine a thread of a
    parallel operation can wait for a free core far longer than the operation takes, and the
    minimum over repeats is the time least disturbed by other work.
    """
    check.callables(fn=fn)
    check.positive(repeats=repeats, threads=threads)
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        fn()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(previous)
    return min(times)


def interleaved_seconds(calls: Mapping[Hashable, Callable[[], object]], repeats: int = 5,
                        threads: int = 1) -> dict[Hashable, float]:
    """The median over ``repeats`` rounds of one timed call of each of ``calls``, in seconds.

    Every round calls each function once, in turn, after one warm-up call of each: a burst of
    other work on a shared machine then slows all of them alike instead of the few that happen
    to run during it, and the median ignores the rounds it spoilt (Chapter 6). Timed on
    ``threads`` threads, restored afterwards.
    """
    if not isinstance(calls, Mapping) or not calls:
        raise TypeError(f"calls must be a non-empty dict of functions, got {check.describe(calls)}")
    check.callables(**{f"calls[{key!r}]": fn for key, fn in calls.items()})
    check.positive(repeats=repeats, threads=threads)
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for fn in calls.values():
            fn()
        times: dict[Hashable, list[float]] = {key: [] for key in calls}
        for _ in range(repeats):
            for key, fn in calls.items():
                start = time.perf_counter()
                fn()
                times[key].append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(previous)
    return {key: float(np.median(seconds)) for key, seconds in times.items()}


class _LiveTensorBytes(TorchDispatchMode):
    """Adds the bytes of every new storage an operation creates, subtracts them when it is freed."""

    def __init__(self):
        super().__init__()
        self.live = self.peak = 0
        self.storages: set[int] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {t.untyped_storage().data_ptr() for t in tree_flatten((args, kwargs))[0]
                  if isinstance(t, torch.Tensor)}
        for tensor in tree_flatten(out)[0]:
            if isinstance(tensor, torch.Tensor):
                storage = tensor.untyped_storage()
                # Views and in-place results share an input's storage: nothing new was allocated.
                if storage.data_ptr() not in inputs | self.storages and storage.nbytes():
                    self._add(storage)
        return out

    def _add(self, storage: torch.UntypedStorage) -> None:
        key, nbytes = storage.data_ptr(), storage.nbytes()
        self.storages.add(key)
        self.live += nbytes
        self.peak = max(self.peak, self.live)
        weakref.finalize(storage, self._free, key, nbytes)

    def _free(self, key: int, nbytes: int) -> None:
        self.storages.discard(key)
        self.live -= nbytes


_dispatch_without_compiler(_LiveTensorBytes)


def peak_tensor_bytes(fn: Callable[[], object]) -> int:
    """Peak total bytes of the tensors that ``fn()`` creates and that are alive at the same time.

    Measured without autograd, from the storages PyTorch allocates: tensors made before the call
    (inputs passed in by closure) and views of them are not counted; the result is.
    """
    check.callables(fn=fn)
    tracker = _LiveTensorBytes()
    with torch.no_grad(), tracker:
        fn()
    return tracker.peak


def matmul_flops(fn: Callable[[], object]) -> int:
    """Floating-point operations of the matrix products in ``fn()`` (no autograd), as counted by
    :class:`torch.utils.flop_counter.FlopCounterMode`: 2 m n k for an (m, k) @ (k, n) product."""
    check.callables(fn=fn)
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        fn()
    return counter.get_total_flops()


def graph_depth(output: torch.Tensor) -> int:
    """The number of rounds on the longest chain of ``output``'s autograd graph.

    Operations on one chain must run one after another, so this is the number of sequential
    steps of the computation, whatever the number of processors (Chapter 6). An operation
    counts one round, but a cumulative sum (or product) over n entries counts
    ceil(log2 n) rounds, at least one: what a parallel prefix sum needs, so that a running
    sum written as one call of ``torch.cumsum`` counts as the scan it is.
    """
    if not isinstance(output, torch.Tensor):
        raise TypeError(f"output must be a torch.Tensor, got {type(output).__name__}")
    if output.grad_fn is None:
        raise ValueError("output has no autograd graph: compute it from inputs that require grad")
    depth: dict = {}
    pending = [output.grad_fn]
    while pending:  # an explicit stack: a recurrent graph is deeper than Python's recursion limit
        node = pending[-1]
        children = [child for child, _ in node.next_functions if child is not None]
        missing = [child for child in children if child not in depth]
        if missing:
            pending.extend(missing)
            continue
        depth[node] = rounds(node) + max((depth[child] for child in children), default=0)
        pending.pop()
    return depth[output.grad_fn]


def rounds(node) -> int:
    """The parallel rounds of one node of an autograd graph (:func:`graph_depth`): 1, or
    ceil(log2 n) for a cumulative sum or product over n entries."""
    if type(node).__name__ not in ("CumsumBackward0", "CumprodBackward0"):
        return 1
    shape, dim = node._input_metadata[0].shape, node._saved_dim
    if dim >= len(shape):  # a negative dim, saved as an unsigned 64-bit integer
        dim -= 2**64
    return max(1, math.ceil(math.log2(max(shape[dim], 1))))


@contextlib.contextmanager
def _quiet_stderr():
    """Send file descriptor 2 to the null device for the duration (C++ logs included)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def peak_allocated_bytes(fn: Callable[[], object]) -> int:
    """Peak bytes that ``fn()`` holds allocated at once, from the allocator's own records
    (Chapter 6, "What is quadratic and what need not be").

    :func:`peak_tensor_bytes` sees only the tensors that operators return; a fused kernel's
    internal work buffers never leave it. This counter reads the memory that PyTorch's
    (legacy, CPU) profiler records with ``profile_memory=True``: every operator's own
    allocations minus its own frees. A positive balance is counted from the operator's start,
    a negative one from its end, and the largest running total is returned. That is exact when
    allocations are made by innermost operators (``aten::empty`` and the like, as in every
    kernel measured here) and frees happen in their callers or between operators; an operator
    that allocates and frees the same bytes itself would hide them. Run on one thread (restored
    afterwards): a parallel kernel may allocate one work buffer per thread. Counted, not timed:
    the same on every run.
    """
    check.callables(fn=fn)
    from torch.autograd.profiler import profile

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    with _quiet_stderr():  # the profiler's C++ side logs every start and stop to stderr
        try:
            with torch.no_grad(), profile(profile_memory=True, use_kineto=False) as recording:
                fn()
        finally:
            torch.set_num_threads(previous)
    changes = []
    for event in recording.function_events:
        nbytes = event.self_cpu_memory_usage
        if nbytes:
            at = event.time_range.start if nbytes > 0 else event.time_range.end
            changes.append((at, nbytes < 0, nbytes))  # at equal times, allocations first
    live = peak = 0
    for _, _, nbytes in sorted(changes):
        live += nbytes
        peak = max(peak, live)
    return peak


def _fused_attention_flops(query_shape, key_shape, value_shape, *args, out_shape=None,
                           **kwargs) -> int:
    from torch.utils.flop_counter import sdpa_flop_count
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def attention_flops(fn: Callable[[], object]) -> int:
    """:func:`matmul_flops`, counting also PyTorch's fused CPU attention kernel
    (``torch.nn.functional.scaled_dot_product_attention``), which ``FlopCounterMode`` does not
    see on the CPU, by a formula: its two products, 2 T S d each per head, for the whole
    T x S matrix, as PyTorch counts its GPU kernels. A causal fused kernel skips the blocks
    above the diagonal, about half of that; the formula counts them, as the book's own softmax
    attention computes them (Chapter 6, "What is quadratic and what need not be")."""
    check.callables(fn=fn)
    fused = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    counter = FlopCounterMode(display=False, custom_mapping={fused: _fused_attention_flops})
    with torch.no_grad(), counter:
        fn()
    return counter.get_total_flops()

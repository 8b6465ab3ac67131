"""Spread independent computations of a chapter over the machine's cores (Chapters 3, 5, 6).

The chapters run on one thread (their operations are too small to gain from a second), so the
trainings of one cell can run side by side in worker processes, one per core, each on one
thread. A computation that seeds itself returns exactly what it returns in the chapter's own
process, bit for bit: only the wall time changes.
"""

import multiprocessing
import os
import sys
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import ProcessPoolExecutor

import torch

from longdep.book import use_deterministic_algorithms


def worker_count(calls: int) -> int:
    """How many worker processes :func:`in_worker_processes` starts: one per core this process
    may run on (two on the book's machines), at most one per call."""
    return max(1, min(calls, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else os.cpu_count() or 1))


def set_up_worker(deterministic: bool, fill_memory: bool) -> None:
    """Run on one thread, as :func:`longdep.book.reproducible` sets the chapters up, with the
    parent's choice of deterministic algorithms and of filling uninitialised memory (a spawned
    worker does not inherit them)."""
    torch.set_num_threads(1)
    use_deterministic_algorithms(deterministic)
    torch.utils.deterministic.fill_uninitialized_memory = fill_memory


def in_worker_processes(calls: dict[Hashable, tuple[Callable, tuple]]) -> dict[Hashable, object]:
    """``function(*arguments)`` for every ``key: (function, arguments)`` of ``calls``, returned
    under the same keys, the calls spread over :func:`worker_count` processes.

    A chapter runs on one thread, so the trainings of a cell can share the machine's other
    cores. The workers are forked from this process, so they share its settings
    (deterministic algorithms, the ``ATEN_CPU_CAPABILITY`` kernels), and each runs on one
    thread: a call computes exactly what it computes here, bit for bit, as long as it seeds
    itself (every training of longdep does) and its function and arguments pickle (a
    function of a module, dataclasses, numbers). Only the wall time changes. With one core the
    calls run here, one after another. Outside Linux (macOS, Windows) the workers are
    spawned instead of forked: they import longdep afresh and are given the thread
    count and the choices of deterministic algorithms and memory filling.
    """
    if not isinstance(calls, dict) or not all(
            isinstance(call, tuple) and len(call) == 2 and callable(call[0])
            and isinstance(call[1], tuple) for call in calls.values()):
        raise TypeError("calls must map keys to (function, arguments tuple)")
    workers = worker_count(len(calls))
    if workers == 1:
        return {key: function(*arguments) for key, (function, arguments) in calls.items()}
    method = "fork" if sys.platform == "linux" else "spawn"  # fork is unsafe on macOS
    # Speed patch. What: import torch's symbolic-shape checks here, before the fork. Why: the
    # first vmap of some operations (cross_entropy's decomposition) imports them, sympy among
    # them, about 0.4 s of a core, in every worker of every pool; imported here, once, each
    # forked worker inherits them. Delete when torch's eager vmap no longer imports sympy.
    import torch.fx.experimental.symbolic_shapes  # noqa: F401
    with ProcessPoolExecutor(workers, multiprocessing.get_context(method),
                             initializer=set_up_worker,
                             initargs=(torch.are_deterministic_algorithms_enabled(),
                                       torch.utils.deterministic.fill_uninitialized_memory)
                             ) as pool:
        futures = {key: pool.submit(function, *arguments)
                   for key, (function, arguments) in calls.items()}
        return {key: future.result() for key, future in futures.items()}


def over_cores(function: Callable, points: Iterable[tuple],
               cost: Callable[[tuple], float] | None = None) -> dict[tuple, object]:
    """``function(*point)`` for every point of ``points`` (each a tuple of arguments), the calls
    spread over the cores (:func:`in_worker_processes`): {point: result}, in the order of
    ``points``. With ``cost``, the calls start in decreasing cost(point), the longest first, so
    that no core waits for one long run at the end. What a cell of a chapter calls when its
    runs are independent (Chapters 3, 5, 6)."""
    points = [tuple(point) for point in points]
    order = sorted(points, key=cost, reverse=True) if cost is not None else points
    results = in_worker_processes({point: (function, point) for point in order})
    return {point: results[point] for point in points}

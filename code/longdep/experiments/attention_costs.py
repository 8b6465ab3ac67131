"""What attention and decoding cost, counted (Chapter 6, "The quadratic cost", "What is
quadratic and what need not be", "Decoding: the cost of one more token").

Costs are counted, so they are the same on every machine: matrix-product FLOPs
(:func:`longdep.measure.cost.attention_flops`) and the peak bytes a call holds
(:func:`longdep.measure.cost.peak_allocated_bytes`). Times only illustrate the counts
(:func:`attention_seconds`) and never decide a word of the prose.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn

from longdep.book import Bilingual, Table, significant
from longdep.measure.cost import (
    attention_flops,
    interleaved_seconds,
    matmul_flops,
    peak_allocated_bytes,
)
from longdep.measure.fit import crossover_length, fitted_exponent
from longdep.models import _checks as check
from longdep.models.attention import causal_mask, scaled_dot_product_attention
from longdep.models.decode import (
    linear_attention_step,
    softmax_attention_step,
    ssm_step,
    state_bytes,
)
from longdep.models.linear import linear_attention
from longdep.models.sparse import sliding_window_attention
from longdep.models.ssm import SelectiveSSM
from longdep.seeds import seeded_generator

ATTENTION_KINDS = ("softmax", "fused softmax", "sliding window", "linear")

KIND_NAMES = {"softmax": "softmax", "fused softmax": "融合 softmax",
              "sliding window": "滑动窗口", "linear": "线性注意力",
              "softmax attention (KV cache)": "softmax 注意力（键值缓存）",
              "linear attention": "线性注意力", "selective SSM": "选择性 SSM"}
"""Each kind of :data:`ATTENTION_KINDS` and :data:`DECODING_KINDS` by its name in Chinese."""


def kind_name(kind: str) -> Bilingual:
    """The name of ``kind`` (of :data:`ATTENTION_KINDS` or :data:`DECODING_KINDS`) in both
    languages, as Chapter 6's tables and figures show it."""
    check.choice(kind=(kind, KIND_NAMES))
    return Bilingual(kind, KIND_NAMES[kind])


def attention_call(kind: str, length: int, features: int = 32, window: int = 64,
                   seed: int = 0) -> Callable[[], torch.Tensor]:
    """A call of causal attention ``kind`` on random float32 q, k, v of shape (1, length,
    features), made ready to be timed or measured: softmax attention with the causal mask
    (:func:`longdep.models.attention.scaled_dot_product_attention`), banded sliding-window attention
    of ``window`` keys, or chunked linear attention (Chapter 6, "The quadratic cost, measured").
    "fused softmax" is the same causal softmax attention computed by PyTorch's fused kernel
    (``torch.nn.functional.scaled_dot_product_attention`` with ``is_causal=True``), which never
    forms the T x T matrix (Chapter 6, "What is quadratic and what need not be")."""
    if kind not in ATTENTION_KINDS:
        raise ValueError(f"kind must be one of {ATTENTION_KINDS}, got {kind!r}")
    check.positive(length=length, features=features, window=window)
    check.int_range(0, None, seed=seed)
    generator = seeded_generator(seed)
    q, k, v = (torch.randn(1, length, features, generator=generator) for _ in range(3))
    if kind == "softmax":
        return lambda: scaled_dot_product_attention(q, k, v, causal_mask(length))[0]
    if kind == "fused softmax":  # one head: (batch, heads, time, features)
        return lambda: nn.functional.scaled_dot_product_attention(
            q[:, None], k[:, None], v[:, None], is_causal=True)[:, 0]
    if kind == "sliding window":
        return lambda: sliding_window_attention(q, k, v, min(window, length))
    return lambda: linear_attention(q, k, v)


@dataclass(frozen=True)
class AttentionCosts:
    """What each of :data:`ATTENTION_KINDS` costs at ``lengths``, counted (the same on every
    machine): matrix-product FLOPs (:func:`longdep.measure.cost.attention_flops`, which counts
    the fused kernel by a formula, for the whole T x T matrix) and the peak bytes a call holds
    allocated, work buffers inside a fused kernel included
    (:func:`longdep.measure.cost.peak_allocated_bytes`)."""

    lengths: list[int]
    flops: dict[str, list[int]]
    peak_bytes: dict[str, list[int]]

    def mebibytes(self) -> dict[str, list[float]]:
        """``peak_bytes`` in MiB (2^20 bytes)."""
        return {kind: [b / 2**20 for b in row] for kind, row in self.peak_bytes.items()}

    def exponents(self, measure: str, last: int = 3) -> dict[str, float]:
        """The exponent p of cost ~ T^p of every kind, fitted over the ``last`` longest lengths
        (where the leading term dominates); ``measure`` is "flops" or "memory"."""
        if measure not in ("flops", "memory"):
            raise ValueError(f"measure must be 'flops' or 'memory', got {measure!r}")
        check.int_range(2, None, last=last)
        rows = self.flops if measure == "flops" else self.peak_bytes
        return {kind: fitted_exponent(self.lengths[-last:], row[-last:])
                for kind, row in rows.items()}

    def table(self) -> Table:
        """The counts in both languages: per kind, MFLOP and MiB at every length and the
        exponent fitted over the three longest (:meth:`exponents`)."""
        exponents = {"MFLOP": self.exponents("flops"), "MiB": self.exponents("memory")}
        values = {"MFLOP": {kind: [f / 1e6 for f in row] for kind, row in self.flops.items()},
                  "MiB": self.mebibytes()}
        rows = [[kind_name(kind), unit, *(f"{v:.3g}" for v in values[unit][kind]),
                 f"{exponents[unit][kind]:.2f}"]
                for kind in self.flops for unit in ("MFLOP", "MiB")]
        return Table([("attention", "注意力"), ("count", "计数"), *map(str, self.lengths),
                      ("fitted exponent", "拟合指数")], rows)

    def flop_crossings(self, kinds: Sequence[str] = ("sliding window", "linear")
                       ) -> dict[str, float]:
        """The length beyond which softmax attention does more FLOPs than each of ``kinds``
        (:func:`longdep.measure.fit.crossover_length`; nan if none in range)."""
        return {kind: crossover_length(self.lengths, self.flops["softmax"], self.flops[kind])
                for kind in kinds}


def fused_scratch_mib(lengths: Sequence[int], features: int = 32) -> list[float]:
    """The memory that the fused kernel ("fused softmax" of :func:`attention_call`) holds
    beyond its own (T, features) float32 output, in MiB, at every length: its work buffer and
    row statistics (Chapter 6, "What is quadratic and what need not be"). Counted by
    :func:`longdep.measure.cost.peak_allocated_bytes`, the same on every run."""
    check.ints("lengths", lengths)
    check.positive(features=features)
    return [(peak_allocated_bytes(attention_call("fused softmax", n, features))
             - 4 * n * features) / 2**20 for n in lengths]


def attention_costs(lengths: Sequence[int], features: int = 32, window: int = 64
                    ) -> AttentionCosts:
    """Count the cost of one call of each kind of :func:`attention_call` at every length
    (Chapter 6, "The quadratic cost, counted and timed")."""
    check.ints("lengths", lengths)
    calls = {kind: [attention_call(kind, n, features, window) for n in lengths]
             for kind in ATTENTION_KINDS}
    return AttentionCosts(
        list(lengths),
        {kind: [attention_flops(call) for call in row] for kind, row in calls.items()},
        {kind: [peak_allocated_bytes(call) for call in row] for kind, row in calls.items()})


def attention_seconds(lengths: Sequence[int], features: int = 32, window: int = 64,
                      repeats: int = 5) -> dict[str, list[float]]:
    """Seconds per call of each kind of :func:`attention_call` at every length, on one thread:
    the median of ``repeats`` rounds in which every (kind, length) runs once
    (:func:`longdep.measure.cost.interleaved_seconds`). Volatile: it illustrates the counts of
    :func:`attention_costs` and never decides anything."""
    check.ints("lengths", lengths)
    check.positive(repeats=repeats)
    calls = {(kind, n): attention_call(kind, n, features, window)
             for kind in ATTENTION_KINDS for n in lengths}
    seconds = interleaved_seconds(calls, repeats)
    return {kind: [seconds[kind, n] for n in lengths] for kind in ATTENTION_KINDS}


def crossover_phrase(lengths: Sequence[int], first: Sequence[float], second: Sequence[float]
                     ) -> Bilingual:
    """Where the timed ``first`` overtakes the timed ``second`` for good
    (:func:`longdep.measure.fit.crossover_length`), in words for the prose, in both languages:
    "at about T = 310" (约在 T = 310 处; two significant digits), or, when there is no crossing
    in the timed range, "beyond the timed range (T > 2048)" or "below the timed range
    (T < 32)". A page can glue it whatever the measurement gave (Chapter 6, "The quadratic
    cost, counted and timed")."""
    check.ints("lengths", lengths, count=2)
    if len(first) != len(lengths) or len(second) != len(lengths):
        raise ValueError(f"first and second must hold one value per length ({len(lengths)}), "
                         f"got {len(first)} and {len(second)}")
    length = crossover_length(lengths, first, second)
    if math.isfinite(length):
        at = f"{significant(length, 2):.0f}"
        return Bilingual(f"at about T = {at}", f"约在 T = {at} 处")
    if first[-1] <= second[-1]:
        return Bilingual(f"beyond the timed range (T > {lengths[-1]})",
                         f"在计时范围之外（T > {lengths[-1]}）")
    return Bilingual(f"below the timed range (T < {lengths[0]})",
                     f"在计时范围之下（T < {lengths[0]}）")


DECODING_KINDS = ("softmax attention (KV cache)", "linear attention", "selective SSM")


@dataclass(frozen=True)
class DecodingCosts:
    """What generating token T costs one layer, counted at each of ``lengths``: matrix-product
    FLOPs of the step (:func:`longdep.measure.cost.matmul_flops`) and the bytes of the state it
    reads (:func:`longdep.models.decode.state_bytes`), per kind of :data:`DECODING_KINDS`."""

    lengths: list[int]
    flops: dict[str, list[int]]
    state_bytes: dict[str, list[int]]


def decoding_costs(lengths: Sequence[int], features: int = 32, state_size: int = 8
                   ) -> DecodingCosts:
    """Count one decoding step of each kind after T - 1 earlier tokens, for every T in
    ``lengths``, float32, batch 1 (Chapter 6, "Decoding: the cost of one more token"). The
    state a step reads is made directly at its size (random keys and values for the cache;
    (S, z) and h of their fixed shapes), since its values do not change what the step costs."""
    check.ints("lengths", lengths, least=2)
    check.positive(features=features, state_size=state_size)
    generator = seeded_generator(0)
    layer = SelectiveSSM(features, state_size)
    x_t = torch.randn(1, 1, features, generator=generator)
    flops = {kind: [] for kind in DECODING_KINDS}
    sizes = {kind: [] for kind in DECODING_KINDS}
    for n in lengths:
        cache = tuple(torch.randn(1, n - 1, features, generator=generator) for _ in range(2))
        linear_state = (torch.rand(1, features, features, generator=generator),
                        torch.rand(1, features, generator=generator) + 1)
        h = torch.randn(1, features, state_size, generator=generator)
        steps = {DECODING_KINDS[0]: (partial(softmax_attention_step, x_t, x_t, x_t, cache), cache),
                 DECODING_KINDS[1]: (partial(linear_attention_step, x_t, x_t, x_t, linear_state),
                                     linear_state),
                 DECODING_KINDS[2]: (partial(ssm_step, layer, x_t, h), h)}
        for kind, (step, state) in steps.items():
            flops[kind].append(matmul_flops(step))
            sizes[kind].append(state_bytes(state))
    return DecodingCosts(list(lengths), flops, sizes)


def kv_cache_bytes(layers: int, kv_heads: int, head_width: int, length: int, batch: int = 1,
                   bytes_per_number: int = 2) -> int:
    """The bytes of the KV cache that a causal Transformer reads to generate the next token
    after ``length`` tokens (Chapter 6, "Decoding: the cost of one more token"):
    2 (keys and values) x layers x kv_heads x head_width x length x batch x bytes_per_number.
    With multi-query attention (kv_heads = 1) or grouped-query attention (kv_heads between 1
    and the number of query heads) the query heads share keys and values, and the cache
    shrinks by heads / kv_heads."""
    check.positive(layers=layers, kv_heads=kv_heads, head_width=head_width, length=length,
                   batch=batch, bytes_per_number=bytes_per_number)
    return 2 * layers * kv_heads * head_width * length * batch * bytes_per_number


def kv_attention_flops(layers: int, heads: int, head_width: int, length: int,
                       batch: int = 1) -> int:
    """The matrix-product FLOPs with which ``heads`` query heads per layer attend to a cache of
    ``length`` keys and values to generate one token: 2 x 2 x layers x heads x head_width x
    length x batch (scores and weighted sum, a multiply and an add each; Chapter 6, "Decoding:
    the cost of one more token"). Unlike the cache, it does not shrink with shared keys and
    values."""
    check.positive(layers=layers, heads=heads, head_width=head_width, length=length,
                   batch=batch)
    return 4 * layers * heads * head_width * length * batch

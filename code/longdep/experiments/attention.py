"""Chapter 4's experiments: the 1/sqrt(d_k) scale, what attention knows about positions, and
Table 1 of Vaswani et al. (2017) measured.

If the entries of a query q and a key k are independent with mean 0 and variance 1, the score
q . k = sum_i q_i k_i is a sum of d_k terms of variance 1, so Var(q . k) = d_k. Unscaled scores
spread further apart as d_k grows, the softmax over them approaches a one-hot vector, and its
Jacobian diag(w) - w w^T, through which every gradient of the scores passes, goes to zero.

What self-attention knows about the order of its inputs is measured in
:mod:`longdep.experiments.order`.

The sinusoidal encoding PE(pos, 2i) = sin(pos w_i), PE(pos, 2i+1) = cos(pos w_i) turns a shift
of the position into a fixed rotation: PE(pos + k) = M_k PE(pos) for every pos, where M_k is
block-diagonal with one 2 x 2 rotation by the angle k w_i per frequency.

Table 1: :func:`fewest_layers` stacks layers of one kind and finds the fewest after which the
last output depends on the first input (:mod:`longdep.measure.reach`); :func:`layer_flops`
counts one layer's floating-point operations.
"""

from collections.abc import Callable, Iterator
from typing import NamedTuple

import torch
from torch import nn

from longdep.experiments.registry import TABLE_1_KIND
from longdep.measure.cost import matmul_flops
from longdep.measure.gradients import softmax_jacobian_norm
from longdep.measure.reach import (
    first_dependent_layer,
    masked_path_length,
    sweep_outputs,
)
from longdep.models import _checks as check
from longdep.models.attention import scaled_dot_product_attention, sinusoidal_table
from longdep.models.linear import performer_attention, random_projection
from longdep.models.sparse import bigbird_mask
from longdep.models.transformer import EncoderLayer
from longdep.seeds import manual_seed, seeded_generator

TABLE_1_LAYERS = ("self-attention", "recurrent", "convolution", "dilated convolution",
                  "windowed attention")
"""The layer types of Vaswani et al.'s (2017) Table 1, in the order Chapter 4 prints them."""

TABLE_1 = {label: TABLE_1_KIND[label].table_1 for label in TABLE_1_LAYERS}
"""Their rows (:class:`longdep.experiments.registry.Table1Row`), in that order."""


class ScoreVariance(NamedTuple):
    """An empirical variance and its standard error (see :func:`score_variance`)."""

    variance: float
    standard_error: float


def score_variance(d_k: int, samples: int, generator: torch.Generator | None = None
                   ) -> ScoreVariance:
    """Empirical variance of q . k over ``samples`` pairs of (d_k,) vectors with N(0, 1)
    entries, in float64 (Chapter 4, "Why the 1/sqrt(d_k) scale").

    The standard error of the estimate is measured from the same scores,
    sqrt((m4 - s^4) / samples) with m4 their fourth central moment and s^2 their variance. The
    pairs are drawn in chunks of about a million numbers each, so memory stays small for many
    samples of wide vectors.
    """
    check.positive(d_k=d_k)
    if samples < 2:
        raise ValueError(f"samples must be at least 2 for a variance, got {samples}")
    chunk = max(1, 2**20 // d_k)
    scores = torch.cat([
        torch.randn(2, min(chunk, samples - start), d_k, dtype=torch.float64,
                    generator=generator).prod(0).sum(-1)
        for start in range(0, samples, chunk)])
    centred = scores - scores.mean()
    variance = centred.square().sum() / (samples - 1)
    fourth_moment = centred.pow(4).mean()
    standard_error = ((fourth_moment - variance**2) / samples).sqrt()
    return ScoreVariance(variance.item(), standard_error.item())


class Saturation(NamedTuple):
    """Averages over queries of the softmax over one query's scores (see :func:`saturation`)."""

    max_weight: float
    entropy: float
    jacobian_norm: float


def saturation(d_k: int, keys: int, samples: int, scaled: bool,
               generator: torch.Generator | None = None) -> Saturation:
    """How saturated the attention softmax is for random unit-variance queries and keys.

    For ``samples`` queries, each against its own ``keys`` keys of width d_k (float64), takes
    w = softmax(q K^T / sqrt(d_k)) when ``scaled``, softmax(q K^T) otherwise, and returns the
    means of the largest weight (1/keys when uniform, 1 when one-hot), of the entropy in nats
    (log keys when uniform, 0 when one-hot) and of the Frobenius norm of the Jacobian dw/ds.
    """
    check.positive(d_k=d_k, keys=keys, samples=samples)
    q = torch.randn(samples, 1, d_k, dtype=torch.float64, generator=generator)
    k = torch.randn(samples, keys, d_k, dtype=torch.float64, generator=generator)
    scores = (q @ k.transpose(1, 2))[:, 0]
    if scaled:
        scores = scores / d_k**0.5
    weights = torch.softmax(scores, dim=-1)
    entropy = -(weights * torch.log_softmax(scores, dim=-1)).sum(-1)
    return Saturation(
        max_weight=weights.max(-1).values.mean().item(),
        entropy=entropy.mean().item(),
        jacobian_norm=softmax_jacobian_norm(weights).mean().item(),
    )


def shift_matrix(d_model: int, offset: int) -> torch.Tensor:
    """The (d_model, d_model) matrix M_k with PE(pos + k) = M_k PE(pos) for every pos, k = offset
    (Chapter 4, "Sinusoidal positional encoding").

    Block i rotates the pair (sin(pos w_i), cos(pos w_i)) by the angle k w_i; its entries
    cos(k w_i) and sin(k w_i) are read off PE(k) itself, so M_k uses exactly the frequencies of
    :func:`longdep.models.attention.sinusoidal_table`. float64; M_k is orthogonal and
    M_j M_k = M_{j+k}.
    """
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be a non-negative int, got {offset!r}")
    check.positive(d_model=d_model)
    angle = sinusoidal_table(offset + 1, d_model)[offset]
    sin, cos = angle[0::2], angle[1::2]
    blocks = torch.stack([torch.stack([cos, sin], -1), torch.stack([-sin, cos], -1)], -2)
    return torch.block_diag(*blocks)


def check_layer_kind(kind: str, kernel_size: int, window: int) -> None:
    """Raise a clear ``ValueError`` for an unknown layer kind, kernel size or window."""
    if kind not in TABLE_1_LAYERS:
        raise ValueError(f"kind must be one of {TABLE_1_LAYERS}, got {kind!r}")
    if kernel_size < 2:
        raise ValueError(f"kernel_size must be at least 2, got {kernel_size}")
    if window < 2:
        raise ValueError(f"window must be at least 2, got {window}")


def make_layer(kind: str, features: int, index: int = 0, kernel_size: int = 3,
               window: int = 8) -> nn.Module:
    """Layer number ``index`` (from 0) of a stack of ``kind``, a layer type of
    :data:`TABLE_1_LAYERS`; dilations double per layer."""
    check_layer_kind(kind, kernel_size, window)
    check.positive(features=features)
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"index must be a non-negative int, got {index!r}")
    return TABLE_1[kind].layer(features, index, kernel_size, window)


def layer_outputs(kind: str, x: torch.Tensor, max_layers: int, kernel_size: int = 3,
                  window: int = 8) -> Iterator[torch.Tensor]:
    """Yield the outputs (batch, time, features) after 1, 2, ..., max_layers layers of ``kind``.

    For "recurrent", layer l is the l-th parallel sweep of one Elman layer,
    h^(l)_t = tanh(W_ih x_t + W_hh h^(l-1)_{t-1} + b) with h^(0) = 0, which equals the RNN's
    state h_t for every t < l: after ``time`` sweeps it is the whole RNN output.
    """
    check_layer_kind(kind, kernel_size, window)
    check.positive(max_layers=max_layers)
    if not isinstance(x, torch.Tensor) or x.dim() != 3:
        raise ValueError(f"x must be a tensor of shape (batch, time, features), got "
                         f"{tuple(getattr(x, 'shape', ())) or type(x).__name__}")
    if TABLE_1_KIND[kind].recurrent:
        yield from sweep_outputs(make_layer(kind, x.size(-1)).to(x.dtype), x, max_layers)
        return
    h = x
    for index in range(max_layers):
        h = make_layer(kind, x.size(-1), index, kernel_size, window).to(x.dtype)(h)
        yield h


def fewest_layers(kind: str, steps: int, features: int = 4, kernel_size: int = 3,
                  window: int = 8, seed: int = 0) -> int:
    """The fewest layers of ``kind`` after which output ``steps - 1`` depends on input 0.

    Measured through the derivative: random layers (float64) are stacked one at a time until
    dy_last/dx_0 is not exactly zero. Forward-mode differentiation carries the derivative along
    a random direction of x_0 with every layer's output, so one pass through the stack gives it
    after each layer. A blocked attention weight, a padded convolution tap and a state not yet
    reached all contribute an exact zero, so the answer is the receptive field of the stack, not
    a threshold. The global random state is left as it was.
    """
    check_layer_kind(kind, kernel_size, window)
    check.int_range(2, None, steps=steps)
    check.positive(features=features)
    layers = first_dependent_layer(
        lambda dual: layer_outputs(kind, dual, steps, kernel_size, window), steps, features, seed)
    if layers is None:
        raise AssertionError(f"{steps} layers of {kind} never reach the first input: a stack "
                             f"as deep as the sequence should")
    return layers


def predicted_layers(kind: str, steps: int, kernel_size: int = 3, window: int = 8) -> int:
    """What :func:`fewest_layers` must find, from each layer's reach into the past.

    A causal convolution reaches k - 1 steps back per layer, a window of r positions r - 1
    steps, dilated convolutions with dilations 1, 2, 4, ... reach (k - 1)(2^L - 1) steps after L
    layers, and the recurrence one step per sweep (its state needs ``steps`` sweeps).
    """
    check_layer_kind(kind, kernel_size, window)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2:
        raise ValueError(f"steps must be an int of at least 2, got {steps!r}")
    return TABLE_1[kind].layers_needed(steps, kernel_size, window)


def layer_flops(kind: str, steps: int, features: int, kernel_size: int = 3,
                window: int = 8) -> int:
    """Floating-point operations of one forward pass of one layer on a (1, steps, features) input.

    Counted by :func:`longdep.measure.cost.matmul_flops` (2 per multiply-add, matrix
    products and convolutions only) on a zero input: the count depends only on the shapes.
    (Not on the "meta" device, which would use no memory: its shape functions import the
    compiler, and the chapter's lengths are short.) The attention layer includes its four
    projections: 8 n d^2 + 4 n^2 d. A windowed attention computed with a mask costs the same as
    full attention.
    """
    check.positive(steps=steps)
    layer = make_layer(kind, features, 0, kernel_size, window)
    x = torch.zeros(1, steps, features)
    return matmul_flops(lambda: layer(x))




def encoder_layers(depth: int, d_model: int, num_heads: int, d_ff: int, norm_first: bool,
                   glorot: bool = False, seed: int = 0) -> nn.ModuleList:
    """``depth`` float64 :class:`~longdep.models.transformer.EncoderLayer` s without dropout, for
    :func:`layer_input_gradients` (Chapter 4, "Residual connections and layer normalisation").

    With ``glorot``, every weight matrix is drawn from Glorot (Xavier) uniform instead of
    PyTorch's default for :class:`torch.nn.Linear`, which is smaller by a factor of about sqrt(3)
    for square matrices; the residual branches then start larger. The global random state is
    left as it was.
    """
    check.positive(depth=depth)
    with torch.random.fork_rng(devices=[]):
        manual_seed(seed)
        layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first=norm_first)
                               for _ in range(depth))
        if glorot:
            for parameter in layers.parameters():
                if parameter.dim() > 1:
                    nn.init.xavier_uniform_(parameter)
    return layers.double()


Score = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def shifted_score_error(score: Score, d_model: int, shift: int, pairs: int = 256,
                        max_position: int = 400,
                        generator: torch.Generator | None = None) -> float:
    """Largest |score(a, b, i, j) - score(a, b, i + shift, j + shift)| over random pairs
    (Chapter 4, "Sinusoidal positional encoding" and "Rotary position embedding").

    ``score(a, b, i, j)`` takes the contents a, b (pairs, d_model) of a query token and a key
    token, here drawn from N(0, 1) in float64, and their positions i, j (pairs,), with
    0 <= j <= i < max_position, and returns the attention scores (pairs,). The error is zero up
    to round-off exactly when the score depends on the positions through i - j only.
    """
    check.callables(score=score)
    check.positive(d_model=d_model, shift=shift, pairs=pairs, max_position=max_position)
    a = torch.randn(pairs, d_model, dtype=torch.float64, generator=generator)
    b = torch.randn(pairs, d_model, dtype=torch.float64, generator=generator)
    i = torch.randint(0, max_position, (pairs,), generator=generator)
    j = (torch.rand(pairs, dtype=torch.float64, generator=generator) * (i + 1)).long()
    return (score(a, b, i, j) - score(a, b, i + shift, j + shift)).abs().max().item()


def performer_errors(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, feature_counts: list[int],
                     draws: int, orthogonal: bool = True, seed: int = 0) -> torch.Tensor:
    """Relative error |Performer - softmax| / |softmax| of the outputs, non-causal.

    For every m in ``feature_counts`` and each of ``draws`` random projections; returns a
    (len(feature_counts), draws) tensor. q, k, v as in :func:`linear_attention`.
    """
    check.positive(draws=draws)
    check.ints("feature_counts", feature_counts)
    exact, _ = scaled_dot_product_attention(q, k, v)
    generator = seeded_generator(seed)
    errors = torch.empty(len(feature_counts), draws, dtype=torch.float64)
    for row, count in enumerate(feature_counts):
        for draw in range(draws):
            projection = random_projection(count, q.size(-1), orthogonal, generator, q.dtype)
            approximate = performer_attention(q, k, v, projection)
            errors[row, draw] = (approximate - exact).norm() / exact.norm()
    return errors


def random_mask_path_lengths(length: int, window: int, global_positions: list[int],
                             num_random: int, draws: int,
                             generator: torch.Generator | None = None) -> list[int]:
    """:func:`masked_path_length` of ``draws`` independent causal :func:`bigbird_mask` s
    (Chapter 6, "Sparse attention").

    With random links the path length is itself random (one lucky link from the last query to
    the first key makes it 1), so the chapter reports a summary over several masks, each drawn
    from ``generator`` in turn.
    """
    check.positive(draws=draws)
    return [masked_path_length(bigbird_mask(length, window, global_positions, num_random,
                                            generator))
            for _ in range(draws)]

"""Sparse attention: sliding windows, global tokens and random links (Chapter 6, "Sparse
attention").

A sparse pattern is only a boolean mask (True = query i may attend to key j) handed to the book's
one attention function, :func:`longdep.attention.scaled_dot_product_attention`:

- sliding window (Longformer, Beltagy et al. 2020): query i sees the keys j with
  0 <= i - j < window (causal) or |i - j| < window;
- global tokens (Longformer): a few positions see every key and are seen by every query;
- random links (BigBird, Zaheer et al. 2020): window + global + ``num_random`` random keys per
  query.

A dense mask still builds the (time, time) score matrix. :func:`sliding_window_attention` computes
the same output as the sliding-window mask from (time, window) bands only, in O(time * window).
"""

import torch

from longdep.attention import MultiHeadAttention, causal_mask
from longdep.paths import first_dependent_layer


def check_window(length: int, window: int) -> None:
    """Raise a clear ``ValueError`` unless 1 <= window <= length."""
    if length < 1:
        raise ValueError(f"length must be at least 1, got {length}")
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    if window > length:
        raise ValueError(f"window {window} is larger than the sequence ({length} steps)")


def sliding_window_mask(length: int, window: int, causal: bool = True) -> torch.Tensor:
    """The (length, length) mask of a sliding window: 0 <= i - j < window, or |i - j| < window.

    With ``causal`` query i sees itself and the window - 1 keys before it; without, the
    window - 1 keys on either side too. Either way one layer carries information window - 1 steps.
    """
    check_window(length, window)
    positions = torch.arange(length)
    offset = positions[:, None] - positions[None, :]
    if causal:
        return (offset >= 0) & (offset < window)
    return offset.abs() < window


def global_token_mask(length: int, window: int, global_positions: list[int],
                      causal: bool = True) -> torch.Tensor:
    """Sliding window plus global tokens (Longformer): each position in ``global_positions``
    attends to every key and every query attends to it (within causality when ``causal``)."""
    mask = sliding_window_mask(length, window, causal)
    positions = torch.as_tensor(global_positions, dtype=torch.long)
    if positions.numel() and (positions.min() < 0 or positions.max() >= length):
        raise ValueError(f"global positions must lie in [0, {length}), got {global_positions}")
    mask[positions, :] = True
    mask[:, positions] = True
    return mask & causal_mask(length) if causal else mask


def bigbird_mask(length: int, window: int, global_positions: list[int], num_random: int,
                 generator: torch.Generator | None = None, causal: bool = True) -> torch.Tensor:
    """BigBird's pattern: window + global tokens + ``num_random`` random keys for every query,
    drawn without replacement among the keys it may see (j <= i when ``causal``)."""
    if not 0 <= num_random <= length:
        raise ValueError(f"num_random must be in [0, {length}], got {num_random}")
    mask = global_token_mask(length, window, global_positions, causal)
    draws = torch.rand(length, length, generator=generator)
    if causal:
        # Keys a query may not see get a draw below every allowed one, and are removed after.
        draws = draws.masked_fill(~causal_mask(length), -1.0)
    chosen = draws.topk(num_random, dim=-1).indices
    links = torch.zeros(length, length, dtype=torch.bool).scatter_(1, chosen, True)
    return mask | (links & causal_mask(length) if causal else links)


def sliding_window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int,
                             causal: bool = True) -> torch.Tensor:
    """Softmax attention restricted to a sliding window, computed band by band in O(time * window).

    q, k: (..., time, d_k); v: (..., time, d_v). Returns (..., time, d_v), equal to
    ``scaled_dot_product_attention(q, k, v, sliding_window_mask(time, window, causal))[0]``
    without ever forming a (time, time) matrix: the keys and values are zero-padded and unfolded
    into one (span, features) block per query, span = window (causal) or 2 window - 1.
    """
    if q.shape[:-1] != k.shape[:-1] or k.shape[:-1] != v.shape[:-1] or q.size(-1) != k.size(-1):
        raise ValueError(
            f"q, k, v must have shapes (..., time, d_k), (..., time, d_k), (..., time, d_v), "
            f"got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    length = q.size(-2)
    check_window(length, window)
    before, after = window - 1, 0 if causal else window - 1
    span = before + after + 1

    def bands(x: torch.Tensor) -> torch.Tensor:  # (..., time, features) -> (..., time, span, f)
        padded = torch.nn.functional.pad(x, (0, 0, before, after))
        return padded.unfold(-2, span, 1).transpose(-1, -2)

    key_bands, value_bands = bands(k), bands(v)
    scores = torch.einsum("...tf,...tsf->...ts", q * q.size(-1) ** -0.5, key_bands)
    # Band slot s of query t holds key t - before + s; slots outside [0, time) are padding.
    keys = torch.arange(length)[:, None] - before + torch.arange(span)[None, :]
    inside = (keys >= 0) & (keys < length)
    scores = scores.masked_fill(~inside, torch.finfo(scores.dtype).min)
    return torch.einsum("...ts,...tsf->...tf", torch.softmax(scores, dim=-1), value_bands)


def masked_path_length(mask: torch.Tensor, features: int = 4, seed: int = 0) -> int:
    """The fewest layers of self-attention restricted by ``mask`` (time, time) after which the
    last output depends on the first input (Chapter 6, "Sparse attention").

    Measured through the derivative as in Chapter 4 (:func:`longdep.paths.fewest_layers`):
    forward-mode differentiation carries a random perturbation of x_0 through random one-head
    attention layers (float64) until the last output's derivative is not exactly zero. A
    blocked link has an attention weight of exactly zero, so the count is exact. Raises a
    ``ValueError`` if ``time`` layers never get there (no path at all).
    """
    if mask.dim() != 2 or mask.size(0) != mask.size(1) or mask.dtype != torch.bool:
        raise ValueError(f"mask must be a boolean (time, time) matrix, got {mask.dtype} "
                         f"{tuple(mask.shape)}")
    steps = mask.size(0)

    def attention_layers(h: torch.Tensor):
        for _ in range(steps):
            h = MultiHeadAttention(features, num_heads=1).double()(h, h, h, mask)[0]
            yield h

    layers = first_dependent_layer(attention_layers, steps, features, seed)
    if layers is not None:
        return layers
    raise ValueError("the mask has no path from the first input to the last output")


def random_mask_path_lengths(length: int, window: int, global_positions: list[int],
                             num_random: int, draws: int,
                             generator: torch.Generator | None = None) -> list[int]:
    """:func:`masked_path_length` of ``draws`` independent causal :func:`bigbird_mask` s
    (Chapter 6, "Sparse attention").

    With random links the path length is itself random (one lucky link from the last query to
    the first key makes it 1), so the chapter reports a summary over several masks, each drawn
    from ``generator`` in turn.
    """
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    return [masked_path_length(bigbird_mask(length, window, global_positions, num_random,
                                            generator))
            for _ in range(draws)]

"""Sparse attention: sliding windows, global tokens and random links (Chapter 6, "Sparse
attention").

A sparse pattern is only a boolean mask (True = query i may attend to key j) handed to the book's
one attention function, :func:`longdep.models.attention.scaled_dot_product_attention`:

- sliding window (Longformer, Beltagy et al. 2020): query i sees the keys j with
  0 <= i - j < window (causal) or |i - j| < window;
- global tokens (Longformer): a few positions see every key and are seen by every query;
- random links (BigBird, Zaheer et al. 2020): window + global + ``num_random`` random keys per
  query.

A dense mask still builds the (time, time) score matrix. :func:`sliding_window_attention` computes
the same output as the sliding-window mask from (time, window) bands only, in O(time * window).

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError).
NaN and inf are not checked, as in PyTorch. In :func:`sliding_window_attention` a NaN or inf key
or value outside a query's window never reaches that query's output: its band holds only the
window's keys and zero padding. With the dense mask instead, a NaN *value* at a blocked position
still reaches it through 0 * NaN = NaN (:mod:`longdep.models.attention`); the tests check both.
"""

import torch

try:  # inside the longdep package
    from . import _checks as check
    from .attention import causal_mask, check_window, sliding_window_mask
except ImportError:  # copied into a folder of its own, beside _checks.py
    import _checks as check
    from attention import causal_mask, check_window, sliding_window_mask


def global_token_mask(length: int, window: int, global_positions: list[int],
                      causal: bool = True) -> torch.Tensor:
    """Sliding window plus global tokens (Longformer): each position in ``global_positions``
    attends to every key and every query attends to it (within causality when ``causal``)."""
    mask = sliding_window_mask(length, window, causal)
    if not isinstance(global_positions, (list, tuple)) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in global_positions):
        raise TypeError(f"global_positions must be a list of ints, got "
                        f"{check.describe(global_positions)}")
    positions = torch.as_tensor(global_positions, dtype=torch.long)
    if positions.numel() and (positions.min() < 0 or positions.max() >= length):
        raise ValueError(f"global_positions must lie in [0, {length}), got {global_positions}")
    mask[positions, :] = True
    mask[:, positions] = True
    return mask & causal_mask(length) if causal else mask


def bigbird_mask(length: int, window: int, global_positions: list[int], num_random: int,
                 generator: torch.Generator | None = None, causal: bool = True) -> torch.Tensor:
    """BigBird's pattern: window + global tokens + ``num_random`` random keys for every query,
    drawn without replacement among the keys it may see (j <= i when ``causal``)."""
    mask = global_token_mask(length, window, global_positions, causal)
    check.int_range(0, length, num_random=num_random)
    check.generator(generator)
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
    check.qkv(q, k, v, same_shape=True, causal=True)
    check.flags(causal=causal)
    length = q.size(-2)
    check_window(length, window)
    before, after = window - 1, 0 if causal else window - 1
    span = before + after + 1

    def bands(x: torch.Tensor) -> torch.Tensor:  # (..., time, features) -> (..., time, span, f)
        padded = torch.nn.functional.pad(x, (0, 0, before, after))
        return padded.unfold(-2, span, 1).transpose(-1, -2)

    key_bands, value_bands = bands(k), bands(v)
    scores = torch.einsum("...tf,...tsf->...ts", q * q.size(-1) ** -0.5, key_bands)  # (.., t, span)
    # Band slot s of query t holds key t - before + s; slots outside [0, time) are padding.
    keys = (torch.arange(length, device=q.device)[:, None] - before
            + torch.arange(span, device=q.device)[None, :])  # (time, span)
    inside = (keys >= 0) & (keys < length)
    scores = scores.masked_fill(~inside, torch.finfo(scores.dtype).min)
    return torch.einsum("...ts,...tsf->...tf", torch.softmax(scores, dim=-1), value_bands)

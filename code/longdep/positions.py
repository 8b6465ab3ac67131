"""What self-attention knows about positions (Chapter 4, "Self-attention does not know the
order" and "Sinusoidal positional encoding").

Without a positional encoding, self-attention is permutation-*equivariant*: permuting the input
positions permutes the outputs the same way, f(P x) = P f(x). It is not permutation-*invariant*
(f(P x) = f(x)); only a summary that forgets the order, such as the mean over positions, is.

The sinusoidal encoding PE(pos, 2i) = sin(pos w_i), PE(pos, 2i+1) = cos(pos w_i) turns a shift
of the position into a fixed rotation: PE(pos + k) = M_k PE(pos) for every pos, where M_k is
block-diagonal with one 2 x 2 rotation by the angle k w_i per frequency.
"""

from collections.abc import Callable

import torch

from longdep.attention import sinusoidal_table


def permutation_errors(
    f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, permutation: torch.Tensor
) -> tuple[float, float]:
    """Largest |f(P x) - P f(x)| and largest |f(P x) - f(x)| (Chapter 4, "Self-attention does
    not know the order").

    f maps (batch, time, features) to (batch, time, features'); ``permutation`` (time,) reorders
    the time axis. The first number is zero up to round-off when f is permutation-equivariant,
    the second when it is permutation-invariant.
    """
    if x.dim() != 3:
        raise ValueError(f"x must have shape (batch, time, features), got {tuple(x.shape)}")
    if not torch.equal(permutation.sort().values, torch.arange(x.size(1))):
        raise ValueError(f"permutation must reorder 0 .. {x.size(1) - 1}, got {permutation}")
    permuted = f(x[:, permutation])
    original = f(x)
    return ((permuted - original[:, permutation]).abs().max().item(),
            (permuted - original).abs().max().item())


def shift_matrix(d_model: int, offset: int) -> torch.Tensor:
    """The (d_model, d_model) matrix M_k with PE(pos + k) = M_k PE(pos) for every pos, k = offset
    (Chapter 4, "Sinusoidal positional encoding").

    Block i rotates the pair (sin(pos w_i), cos(pos w_i)) by the angle k w_i; its entries
    cos(k w_i) and sin(k w_i) are read off PE(k) itself, so M_k uses exactly the frequencies of
    :func:`longdep.attention.sinusoidal_table`. float64; M_k is orthogonal and M_j M_k = M_{j+k}.
    """
    if offset < 0:
        raise ValueError(f"offset must be non-negative, got {offset}")
    angle = sinusoidal_table(offset + 1, d_model)[offset]
    sin, cos = angle[0::2], angle[1::2]
    blocks = torch.stack([torch.stack([cos, sin], -1), torch.stack([-sin, cos], -1)], -2)
    return torch.block_diag(*blocks)

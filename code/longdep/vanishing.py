"""The bound on the Jacobian product and the set-ups of its experiments (Chapter 2).

Chapter 2 bounds ||dh_t/dh_k|| <= (gamma * sigma_max(W_hh))^(t-k), with gamma the largest
derivative of the activation, and then measures how real networks sit relative to that bound.
This module computes gamma, the norms of matrix powers, and builds the small float64 RNNs whose
gradients :mod:`longdep.probes` measures.
"""

from collections.abc import Callable

import torch

from longdep.rnn import ElmanRNN


def activation_gamma(
    activation: Callable[[torch.Tensor], torch.Tensor],
    half_width: float = 10.0,
    spacing: float = 1e-4,
) -> tuple[float, float]:
    """gamma = max_a phi'(a), found numerically (Chapter 2, "The bound").

    phi' is evaluated by autograd in float64 on the grid of multiples of ``spacing`` in
    [-half_width, half_width] (0 is on the grid exactly); returns (gamma, the a of the maximum).
    """
    if not 0 < spacing <= half_width:
        raise ValueError(f"need 0 < spacing <= half_width, got {spacing}, {half_width}")
    count = round(half_width / spacing)
    a = (torch.arange(-count, count + 1, dtype=torch.float64) * spacing).requires_grad_()
    (derivative,) = torch.autograd.grad(activation(a).sum(), a)
    best = derivative.argmax()
    return derivative[best].item(), a[best].item()


def matrix_power_norms(matrix: torch.Tensor, max_power: int) -> torch.Tensor:
    """Spectral norms ||W^k||_2 for k = 0 .. max_power, a (max_power + 1,) tensor (Chapter 2,
    "Eigenvalues versus singular values"). For a linear RNN, W^k is the Jacobian dh_t/dh_(t-k)."""
    if matrix.dim() != 2 or matrix.size(0) != matrix.size(1):
        raise ValueError(f"matrix must be square, got shape {tuple(matrix.shape)}")
    if max_power < 0:
        raise ValueError(f"max_power must be non-negative, got {max_power}")
    power, norms = torch.eye(matrix.size(0), dtype=matrix.dtype), []
    for _ in range(max_power + 1):
        norms.append(torch.linalg.matrix_norm(power, ord=2))
        power = matrix @ power
    return torch.stack(norms)


def orthogonal_matrix(size: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """A random orthogonal (size, size) float64 matrix, uniform over the orthogonal group: the QR
    factor of a Gaussian matrix with the signs of R's diagonal moved into Q. Every singular value
    and every eigenvalue modulus of s * Q equals s (Chapter 2, "Regimes")."""
    if size < 1:
        raise ValueError(f"size must be positive, got {size}")
    q, r = torch.linalg.qr(torch.randn(size, size, dtype=torch.float64, generator=generator))
    return q * torch.sign(torch.diagonal(r))


def probe_rnn(
    weight_hh: torch.Tensor,
    nonlinearity: str = "tanh",
    input_scale: float = 1.0,
    steps: int = 200,
    batch: int = 8,
    input_size: int = 4,
    seed: int = 0,
) -> tuple[ElmanRNN, torch.Tensor]:
    """A float64 Elman RNN with the given W_hh, and a random input sequence to probe it with.

    W_ih has N(0, 1/input_size) entries and the biases are zero, so each step adds an input
    N(0, input_scale^2) to every unit's pre-activation. Returns the RNN and x of shape
    (batch, steps, input_size); W_ih and x depend only on ``seed`` (Chapter 2, "Regimes").
    """
    if weight_hh.dim() != 2 or weight_hh.size(0) != weight_hh.size(1):
        raise ValueError(f"weight_hh must be square, got shape {tuple(weight_hh.shape)}")
    if steps < 1 or batch < 1:
        raise ValueError(f"steps and batch must be positive, got {steps}, {batch}")
    if input_scale < 0:
        raise ValueError(f"input_scale must be non-negative, got {input_scale}")
    generator = torch.Generator().manual_seed(seed)
    hidden = weight_hh.size(0)
    rnn = ElmanRNN(input_size, hidden, nonlinearity).double()
    with torch.no_grad():
        rnn.weight_hh.copy_(weight_hh)
        rnn.weight_ih.copy_(torch.randn(hidden, input_size, dtype=torch.float64,
                                        generator=generator) / input_size**0.5)
        rnn.bias_ih.zero_()
        rnn.bias_hh.zero_()
    x = input_scale * torch.randn(batch, steps, input_size, dtype=torch.float64,
                                  generator=generator)
    return rnn, x

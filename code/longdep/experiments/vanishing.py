"""The set-ups of Chapter 2's gradient measurements ("Regimes", "Saturation").

W_hh = s Q with Q orthogonal has every singular value equal to s, so the bound
(gamma sigma_max)^d of Chapter 2 is s^d exactly; :func:`rnn_with_recurrent_matrix` builds the
float64 network and the input with which :mod:`longdep.measure.gradients` probes it.
"""

import torch

from longdep.models.rnn import ElmanRNN


def orthogonal_matrix(size: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """A random orthogonal (size, size) float64 matrix, uniform over the orthogonal group: the QR
    factor of a Gaussian matrix with the signs of R's diagonal moved into Q. Every singular value
    and every eigenvalue modulus of s * Q equals s (Chapter 2, "Regimes")."""
    if size < 1:
        raise ValueError(f"size must be positive, got {size}")
    q, r = torch.linalg.qr(torch.randn(size, size, dtype=torch.float64, generator=generator))
    return q * torch.sign(torch.diagonal(r))


def rnn_with_recurrent_matrix(
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

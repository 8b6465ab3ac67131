"""The set-ups of Chapter 2's gradient measurements ("Regimes", "The inputs decide",
"Saturation", "Eigenvalues versus singular values").

W_hh = s Q with Q orthogonal has every singular value equal to s, so the bound
(gamma sigma_max)^d of Chapter 2 is s^d exactly. The inputs reach every unit independently:
W_ih is the identity, so a unit's pre-activation gets its own N(0, input_scale^2) at every step,
as the mean-field theory (:mod:`longdep.experiments.mean_field`) assumes.

:func:`rnn_with_recurrent_matrix` builds one float64 network, for the autograd probe of
:mod:`longdep.measure.gradients`; :func:`probe_networks` measures many recurrent matrices at
once (weights stacked along a leading dimension, by hand-written backpropagation that the tests
check against that probe), so that every number the chapter reads is a median over draws.
"""

from typing import NamedTuple

import torch

from longdep.measure.fit import fitted_rate
from longdep.measure.gradients import finite_or_inf
from longdep.models import _checks as check
from longdep.models.rnn import ACTIVATIONS, ElmanRNN
from longdep.seeds import seeded_generator

PHI = {"tanh": torch.tanh, "identity": torch.clone}  # what probe_networks can run


def check_non_negative(**values: float) -> None:
    """Raise unless every named value is a finite number >= 0."""
    check.finite(**values)
    for name, value in values.items():
        if value < 0:
            raise ValueError(f"{name} must be non-negative, got {value}")


def check_square(matrix, name: str, dims: str = "(n, n)", leading: int = 0) -> None:
    """Raise unless ``matrix`` is a non-empty floating tensor of ``leading`` + 2 dimensions whose
    last two sizes are equal."""
    check.tensor(matrix, name, dims, leading + 2)
    if matrix.dim() != leading + 2 or matrix.size(-1) != matrix.size(-2):
        raise ValueError(f"{name} must be square, of shape {dims}, got {check.describe(matrix)}")


def check_fit(fit, longest: int | None = None) -> None:
    """Raise unless fit = (first, last) are ints with 0 <= first < last (<= ``longest``)."""
    if not (isinstance(fit, (tuple, list)) and len(fit) == 2):
        raise TypeError(f"fit must be a pair (first, last) of distances, got {check.describe(fit)}")
    check.int_range(0, None, **{"fit[0]": fit[0]})
    check.int_range(fit[0] + 1, longest, **{"fit[1]": fit[1]})


def orthogonal_matrix(size: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """A random orthogonal (size, size) float64 matrix, uniform over the orthogonal group: the QR
    factor of a Gaussian matrix with the signs of R's diagonal moved into Q. Every singular value
    and every eigenvalue modulus of s * Q equals s (Chapter 2, "Regimes")."""
    check.positive(size=size)
    check.generator(generator)
    q, r = torch.linalg.qr(torch.randn(size, size, dtype=torch.float64, generator=generator))
    return q * torch.sign(torch.diagonal(r))


def scaled_orthogonal(scales, size: int, draws: int,
                      generator: torch.Generator | None = None) -> torch.Tensor:
    """s * Q for every s in ``scales`` and ``draws`` random orthogonal Q (the same Q for every
    s): a float64 tensor (len(scales), draws, size, size) (Chapter 2, "Regimes")."""
    if isinstance(scales, (str, bytes)) or not hasattr(scales, "__len__") or not len(scales):
        raise ValueError(f"scales must be a non-empty sequence of gains s, got "
                         f"{check.describe(scales)}")
    check_non_negative(**{f"scales[{i}]": float(s) for i, s in enumerate(scales)})
    check.positive(size=size, draws=draws)
    q = torch.stack([orthogonal_matrix(size, generator) for _ in range(draws)])
    return torch.tensor(scales, dtype=torch.float64)[:, None, None, None] * q


def rnn_with_recurrent_matrix(
    weight_hh: torch.Tensor,
    nonlinearity: str = "tanh",
    input_scale: float = 1.0,
    steps: int = 200,
    batch: int = 8,
    seed: int = 0,
) -> tuple[ElmanRNN, torch.Tensor]:
    """A float64 Elman RNN with the given W_hh, and a random input sequence to probe it with.

    W_ih is the identity and the biases are zero, so each step adds an independent
    N(0, input_scale^2) to every unit's pre-activation. Returns the RNN and x of shape
    (batch, steps, hidden); x depends only on ``seed`` (Chapter 2, "Regimes").
    """
    check_square(weight_hh, "weight_hh", "(hidden, hidden)")
    check.choice(nonlinearity=(nonlinearity, tuple(ACTIVATIONS)))
    check_non_negative(input_scale=input_scale)
    check.positive(steps=steps, batch=batch)
    check.int_range(0, None, seed=seed)
    hidden = weight_hh.size(0)
    rnn = ElmanRNN(hidden, hidden, nonlinearity).double()
    with torch.no_grad():
        rnn.weight_hh.copy_(weight_hh)
        rnn.weight_ih.copy_(torch.eye(hidden, dtype=torch.float64))
        rnn.bias_ih.zero_()
        rnn.bias_hh.zero_()
    x = input_scale * torch.randn(batch, steps, hidden, dtype=torch.float64,
                                  generator=seeded_generator(seed))
    return rnn, x


class Probe(NamedTuple):
    """What :func:`probe_networks` measures: ``ratios`` (networks, time), entry d the gradient
    ratio ||dL/dh_(T-d)|| / ||dL/dh_T|| (over batch and units; inf where it overflowed), and
    ``slopes`` (networks, time, batch, hidden), phi'(a_t) of every unit at every step."""

    ratios: torch.Tensor
    slopes: torch.Tensor


@torch.no_grad()
def probe_networks(weights: torch.Tensor, x: torch.Tensor, activation: str = "tanh",
                   longest: int | None = None) -> Probe:
    """Run h_t = phi(W h_(t-1) + x_t) from h_0 = 0 for every W of ``weights`` (networks, n, n)
    on the same inputs x (batch, time, n), and backpropagate L = sum h_T by hand,
    dL/dh_(t-1) = W^T (phi'(a_t) * dL/dh_t), all networks in one batched computation (Chapter 2,
    "Regimes" and "The inputs decide"), back to distance ``longest`` (default: time - 1; the
    ratios then have longest + 1 entries). The network of one W is
    :func:`rnn_with_recurrent_matrix`'s (W_ih = I, no biases): its ratios equal
    :func:`longdep.measure.gradients.state_gradient_norms` there (tested). Returns a
    :class:`Probe`."""
    check_square(weights, "weights", "(networks, n, n)", leading=1)
    check.sequence(x, weights.size(-1), like=weights)
    check.choice(activation=(activation, tuple(PHI)))
    longest = x.size(1) - 1 if longest is None else longest
    check.int_range(0, x.size(1) - 1, longest=longest)
    h = x.new_zeros(len(weights), x.size(0), x.size(2))  # (networks, batch, n)
    slopes = []
    for t in range(x.size(1)):
        h = PHI[activation](h @ weights.transpose(1, 2) + x[:, t])
        slopes.append(1 - h**2 if activation == "tanh" else torch.ones_like(h))  # phi'(a_t)
    slopes = torch.stack(slopes, dim=1)  # (networks, time, batch, n)
    grad, norms = torch.ones_like(h), []
    for t in range(x.size(1) - 1, x.size(1) - 2 - longest, -1):
        norms.append(grad.norm(dim=(1, 2)))  # at distance time - 1 - t
        grad = (slopes[:, t] * grad) @ weights
    norms = finite_or_inf(torch.stack(norms, dim=1))  # (networks, time)
    return Probe(norms / norms[:, :1], slopes)


def fitted_rates(ratios: torch.Tensor, fit=(10, 100)) -> torch.Tensor:
    """The per-step rate of the gradient norm of each network (Chapter 2, "The inputs decide" and
    "The theory that predicts the measurement"): exp of the least-squares slope of log ratio
    against the distance d for d in [fit[0], fit[1]] (:func:`longdep.measure.fit
    .fitted_rate`). ratios (networks, time) as :func:`probe_networks` returns them, with
    time > fit[1]; returns (networks,)."""
    check.tensor(ratios, "ratios", "(networks, time)", 2)
    check_fit(fit, ratios.size(-1) - 1)
    if ratios.dim() != 2:
        raise ValueError(f"ratios must have shape (networks, time), got {check.describe(ratios)}")
    d = list(range(fit[0], fit[1] + 1))
    return torch.tensor([fitted_rate(d, row[fit[0]:fit[1] + 1].tolist()) for row in ratios],
                        dtype=torch.float64)


def step_factor_norms(weights: torch.Tensor, slopes: torch.Tensor) -> torch.Tensor:
    """Spectral norms of the step Jacobians diag(phi'(a_t)) W of each network (Chapter 2,
    "Saturation"): weights (networks, n, n), slopes (networks, time, n) -> (networks, time)."""
    check_square(weights, "weights", "(networks, n, n)", leading=1)
    check.tensor(slopes, "slopes", f"({len(weights)}, time, {weights.size(-1)})", 3)
    if slopes.dim() != 3 or slopes.shape[::2] != (len(weights), weights.size(-1)):
        raise ValueError(f"slopes must have shape (networks, time, n) = ({len(weights)}, time, "
                         f"{weights.size(-1)}), got {check.describe(slopes)}")
    return torch.linalg.matrix_norm(slopes[..., None] * weights[:, None], ord=2)


def masked_product_norms(matrix: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Spectral norms of the running products diag(m_k) W ... diag(m_1) W (Chapter 2,
    "Eigenvalues versus singular values"): the Jacobian products of an RNN whose units have the
    slopes m_k (a relu RNN: 1 for a unit switched on, 0 for one switched off). masks is
    (steps, units), or (draws, steps, units) for several sequences at once; returns
    (steps + 1,) or (draws, steps + 1), the first entry the empty product's norm 1. A single
    matrix's powers decay at the rate rho(W); products with step-dependent masks are ruled by
    the joint spectral radius of the set {diag(m) W}, which can exceed 1 when rho(W) < 1."""
    check_square(matrix, "matrix", "(units, units)")
    check.tensor(masks, "masks", f"([draws,] steps, {matrix.size(0)})", 2)
    if masks.dim() not in (2, 3) or masks.size(-1) != matrix.size(0):
        raise ValueError(f"masks must have shape ([draws,] steps, {matrix.size(0)}), got "
                         f"{check.describe(masks)}")
    batched = masks if masks.dim() == 3 else masks[None]
    product = torch.eye(matrix.size(0), dtype=matrix.dtype).expand(len(batched), -1, -1)
    norms = [torch.ones(len(batched), dtype=matrix.dtype)]
    for mask in batched.unbind(1):  # (draws, units)
        product = (mask[:, :, None] * matrix) @ product
        norms.append(torch.linalg.matrix_norm(product, ord=2))
    norms = torch.stack(norms, dim=1)
    return norms if masks.dim() == 3 else norms[0]

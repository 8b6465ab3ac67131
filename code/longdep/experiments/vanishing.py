"""The set-ups of Chapter 2's gradient measurements ("Regimes", "Saturation").

W_hh = s Q with Q orthogonal has every singular value equal to s, so the bound
(gamma sigma_max)^d of Chapter 2 is s^d exactly; :func:`rnn_with_recurrent_matrix` builds the
float64 network and the input with which :mod:`longdep.measure.gradients` probes it.
"""

import numpy as np
import torch
from numpy.polynomial.hermite_e import hermegauss

from longdep.models import _checks as check
from longdep.models.rnn import ACTIVATIONS, ElmanRNN
from longdep.seeds import seeded_generator


def _check_non_negative(**values: float) -> None:
    """Raise unless every named value is a finite number >= 0."""
    check.finite(**values)
    for name, value in values.items():
        if value < 0:
            raise ValueError(f"{name} must be non-negative, got {value}")


def _check_square(matrix, name: str, dims: str = "(n, n)", leading: int = 0) -> None:
    """Raise unless ``matrix`` is a non-empty floating tensor of ``leading`` + 2 dimensions whose
    last two sizes are equal."""
    check.tensor(matrix, name, dims, leading + 2)
    if matrix.dim() != leading + 2 or matrix.size(-1) != matrix.size(-2):
        raise ValueError(f"{name} must be square, of shape {dims}, got {check.describe(matrix)}")


def _check_fit(fit, burn_in: int) -> None:
    """Raise unless fit = (first, last) are ints with 0 <= first < last and burn_in >= 0."""
    if not (isinstance(fit, (tuple, list)) and len(fit) == 2):
        raise TypeError(f"fit must be a pair (first, last) of distances, got {check.describe(fit)}")
    check.int_range(0, None, burn_in=burn_in, **{"fit[0]": fit[0]})
    check.int_range(fit[0] + 1, None, **{"fit[1]": fit[1]})


def orthogonal_matrix(size: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """A random orthogonal (size, size) float64 matrix, uniform over the orthogonal group: the QR
    factor of a Gaussian matrix with the signs of R's diagonal moved into Q. Every singular value
    and every eigenvalue modulus of s * Q equals s (Chapter 2, "Regimes")."""
    check.positive(size=size)
    check.generator(generator)
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
    _check_square(weight_hh, "weight_hh", "(hidden, hidden)")
    check.choice(nonlinearity=(nonlinearity, tuple(ACTIVATIONS)))
    _check_non_negative(input_scale=input_scale)
    check.positive(steps=steps, batch=batch, input_size=input_size)
    check.int_range(0, None, seed=seed)
    generator = seeded_generator(seed)
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


# ---- Chapter 2, "The theory that predicts the measurement" (mean field) -------------------

_ACTIVATIONS = {  # phi and phi' as numpy functions, for the Gaussian expectations below
    "tanh": (np.tanh, lambda a: 1.0 - np.tanh(a) ** 2),
    "identity": (lambda a: a, np.ones_like),
}


# Gauss-Hermite rule for the weight exp(-z^2 / 2). tanh(c z)^2 has poles near the real axis
# for large c, so the rule needs many nodes: 301 is within 1e-8 of direct integration at s = 3.
_NODES, _WEIGHTS = hermegauss(301)


def _gaussian_mean(function, variance: float) -> float:
    """E[function(a)] for a ~ N(0, variance), by Gauss-Hermite quadrature in float64."""
    return float(_WEIGHTS @ function(np.sqrt(variance) * _NODES) / np.sqrt(2 * np.pi))


def mean_field_fixed_point(s: float, sigma_x: float, activation: str = "tanh",
                           tolerance: float = 1e-14, max_iterations: int = 10_000) -> float:
    """The stationary state variance q* of W_hh = s Q, inputs of scale sigma_x (Chapter 2,
    "The theory that predicts the measurement"): the fixed point of q = E[phi(a)^2] with
    a ~ N(0, s^2 q + sigma_x^2), found by iterating from q = 1 (Chen et al. 2018)."""
    _check_non_negative(s=s, sigma_x=sigma_x)
    check.choice(activation=(activation, tuple(_ACTIVATIONS)))
    check.finite(tolerance=tolerance)
    if tolerance <= 0:
        raise ValueError(f"tolerance must be positive, got {tolerance}")
    check.positive(max_iterations=max_iterations)
    phi, _ = _ACTIVATIONS[activation]
    q = 1.0
    for _ in range(max_iterations):
        new = _gaussian_mean(lambda a: phi(a) ** 2, s**2 * q + sigma_x**2)
        if not np.isfinite(new):
            raise ValueError(f"no finite fixed point for s = {s}, {activation}")
        if abs(new - q) <= tolerance * max(1.0, abs(q)):
            return new
        q = new
    raise ValueError(f"the iteration did not converge for s = {s}, sigma_x = {sigma_x}")


def predicted_rate(s: float, sigma_x: float, activation: str = "tanh") -> float:
    """The mean-field per-step rate of the gradient norm, sqrt(chi) with
    chi = s^2 E[phi'(a)^2], a ~ N(0, s^2 q* + sigma_x^2) (Chapter 2, "The theory that predicts
    the measurement"). For the identity phi' = 1 and the rate is s, whatever q* is."""
    _check_non_negative(s=s, sigma_x=sigma_x)
    check.choice(activation=(activation, tuple(_ACTIVATIONS)))
    _, derivative = _ACTIVATIONS[activation]
    if activation == "identity":
        return float(s)
    variance = s**2 * mean_field_fixed_point(s, sigma_x, activation) + sigma_x**2
    return float(s * np.sqrt(_gaussian_mean(lambda a: derivative(a) ** 2, variance)))


@torch.no_grad()
def measured_rates(scales, sigma_x: float = 1.0, activation: str = "tanh", hidden: int = 128,
                   draws: int = 4, batch: int = 8, burn_in: int = 50, fit=(10, 100),
                   seed: int = 0) -> torch.Tensor:
    """The measured per-step rate of the gradient norm for W_hh = s Q, for every s in
    ``scales`` and ``draws`` random Q, in one batched computation (Chapter 2, "The theory that
    predicts the measurement"): the forward pass runs ``burn_in`` steps to reach the stationary
    state, then ``fit[1]`` more; backpropagation from L = sum h_T (by hand:
    dL/dh_(t-1) = W^T (phi'(a_t) * dL/dh_t)) gives ||dL/dh_(T-d)|| over batch and units, and the
    rate is exp of the least-squares slope of its log against d over d in [fit[0], fit[1]].
    Inputs: W_ih x with W_ih ~ N(0, 1/4) over 4 features and x ~ N(0, sigma_x^2).
    Returns (len(scales), draws)."""
    if isinstance(scales, (str, bytes)) or not hasattr(scales, "__len__") or not len(scales):
        raise ValueError(f"scales must be a non-empty sequence of gains s, got "
                         f"{check.describe(scales)}")
    _check_non_negative(**{f"scales[{i}]": float(s) for i, s in enumerate(scales)})
    check.positive(hidden=hidden, draws=draws)
    check.int_range(0, None, seed=seed)
    generator = seeded_generator(seed)
    q = torch.stack([orthogonal_matrix(hidden, generator) for _ in range(draws)])
    s = torch.tensor(scales, dtype=torch.float64)
    w = (s[:, None, None, None] * q).reshape(-1, hidden, hidden)  # (scales * draws, n, n)
    rates = fitted_rates(w, sigma_x, activation, batch, burn_in, fit, generator)
    return rates.reshape(len(scales), draws)


def growth_onset(sigma_x: float, low: float = 1.0, high: float = 4.0,
                 tolerance: float = 1e-10) -> float:
    """The s at which the predicted tanh rate crosses 1 (Chapter 2, "The theory that predicts
    the measurement"), by bisection on [low, high]."""
    _check_non_negative(sigma_x=sigma_x, low=low, tolerance=tolerance)
    check.finite(high=high)
    if not low < high or tolerance <= 0:
        raise ValueError(f"need low < high and tolerance > 0, got low = {low}, high = {high}, "
                         f"tolerance = {tolerance}")
    if not predicted_rate(low, sigma_x) < 1 < predicted_rate(high, sigma_x):
        raise ValueError(f"the predicted rate does not cross 1 in [{low}, {high}]")
    while high - low > tolerance:
        middle = (low + high) / 2
        low, high = (middle, high) if predicted_rate(middle, sigma_x) < 1 else (low, middle)
    return (low + high) / 2


def masked_product_norms(matrix: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Spectral norms of the running products diag(m_k) W ... diag(m_1) W (Chapter 2,
    "Eigenvalues versus singular values"): the Jacobian products of a relu RNN whose units are
    switched on (1) and off (0) by the rows of masks (steps, units). Returns (steps + 1,), the
    first entry the empty product's norm 1. A single matrix's powers decay at the rate rho(W);
    products with step-dependent masks are ruled by the joint spectral radius of the set
    {diag(m) W}, which can exceed 1 when rho(W) < 1."""
    _check_square(matrix, "matrix", "(units, units)")
    check.tensor(masks, "masks", f"(steps, {matrix.size(0)})", 2)
    if masks.dim() != 2 or masks.size(1) != matrix.size(0):
        raise ValueError(f"masks must have shape (steps, {matrix.size(0)}), got "
                         f"{check.describe(masks)}")
    product, norms = torch.eye(matrix.size(0), dtype=matrix.dtype), [1.0]
    for mask in masks:
        product = (mask[:, None] * matrix) @ product
        norms.append(torch.linalg.matrix_norm(product, ord=2).item())
    return torch.tensor(norms, dtype=matrix.dtype)


@torch.no_grad()
def fitted_rates(weights: torch.Tensor, sigma_x: float = 1.0, activation: str = "tanh",
                 batch: int = 8, burn_in: int = 50, fit=(10, 100),
                 generator: torch.Generator | None = None) -> torch.Tensor:
    """The fitted per-step rate of the gradient norm for each recurrent matrix in weights
    (networks, n, n), in one batched computation (Chapter 2, "The inputs decide" and "The theory
    that predicts the measurement"); see :func:`measured_rates` for the method. Returns
    (networks,)."""
    _check_square(weights, "weights", "(networks, n, n)", leading=1)
    _check_non_negative(sigma_x=sigma_x)
    check.choice(activation=(activation, tuple(_ACTIVATIONS)))
    check.positive(batch=batch)
    _check_fit(fit, burn_in)
    check.generator(generator)
    hidden = weights.size(1)
    w = weights
    steps = burn_in + fit[1]
    w_ih = torch.randn(hidden, 4, dtype=torch.float64, generator=generator) / 2
    x = sigma_x * torch.randn(steps, batch, 4, dtype=torch.float64, generator=generator)
    phi = torch.tanh if activation == "tanh" else (lambda a: a)
    h = torch.zeros(len(w), batch, hidden, dtype=torch.float64)
    pre = []
    for t in range(steps):
        a = h @ w.transpose(1, 2) + x[t] @ w_ih.T  # (networks, batch, hidden)
        pre.append(a)
        h = phi(a)
    grad, log_norms = torch.ones_like(h), []
    for t in range(steps - 1, steps - 2 - fit[1], -1):
        log_norms.append(grad.norm(dim=(1, 2)).log())  # at distance steps - 1 - t
        slope = 1 - torch.tanh(pre[t]) ** 2 if activation == "tanh" else 1.0
        grad = (slope * grad) @ w
    d = torch.arange(fit[0], fit[1] + 1, dtype=torch.float64)
    y = torch.stack(log_norms)[fit[0]:]  # (distances, networks)
    dc = d - d.mean()
    fitted = (dc[:, None] * (y - y.mean(0))).sum(0) / (dc**2).sum()
    return fitted.exp()

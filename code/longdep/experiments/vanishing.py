"""The set-ups of Chapter 2's gradient measurements ("Regimes", "Saturation").

W_hh = s Q with Q orthogonal has every singular value equal to s, so the bound
(gamma sigma_max)^d of Chapter 2 is s^d exactly; :func:`rnn_with_recurrent_matrix` builds the
float64 network and the input with which :mod:`longdep.measure.gradients` probes it.
"""

import numpy as np
import torch
from numpy.polynomial.hermite_e import hermegauss

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
    if s < 0 or sigma_x < 0:
        raise ValueError(f"s and sigma_x must be non-negative, got {s}, {sigma_x}")
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
    generator = torch.Generator().manual_seed(seed)
    q = torch.stack([orthogonal_matrix(hidden, generator) for _ in range(draws)])
    s = torch.tensor(scales, dtype=torch.float64)
    w = (s[:, None, None, None] * q).reshape(-1, hidden, hidden)  # (scales * draws, n, n)
    rates = fitted_rates(w, sigma_x, activation, batch, burn_in, fit, generator)
    return rates.reshape(len(scales), draws)


def growth_onset(sigma_x: float, low: float = 1.0, high: float = 4.0,
                 tolerance: float = 1e-10) -> float:
    """The s at which the predicted tanh rate crosses 1 (Chapter 2, "The theory that predicts
    the measurement"), by bisection on [low, high]."""
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
    if matrix.dim() != 2 or masks.dim() != 2 or masks.size(1) != matrix.size(0):
        raise ValueError(f"need a square matrix and (steps, units) masks, got "
                         f"{tuple(matrix.shape)} and {tuple(masks.shape)}")
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
    if weights.dim() != 3 or weights.size(1) != weights.size(2):
        raise ValueError(f"weights must be (networks, n, n), got {tuple(weights.shape)}")
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

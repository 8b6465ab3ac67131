"""The mean-field theory of Chapter 2 ("The theory that predicts the measurement"; Chen,
Pennington & Schoenholz 2018), and the measurement it predicts.

For W_hh = s Q (Q orthogonal) or a Gaussian W_hh of gain s, with many units and inputs that add
an independent N(0, sigma_x^2) to every pre-activation, a pre-activation is close to
N(0, s^2 q* + sigma_x^2), q* the stationary mean square of a state, and each backward step
multiplies the squared gradient norm by chi = s^2 E[phi'(a)^2]: the norm changes by sqrt(chi)
per step (:func:`predicted_rate`). :func:`measured_rates` measures that rate on networks of
many random Q.
"""

import numpy as np
import torch
from numpy.polynomial.hermite_e import hermegauss

from longdep.experiments.vanishing import (
    check_fit,
    check_non_negative,
    fitted_rates,
    probe_networks,
    scaled_orthogonal,
)
from longdep.models import _checks as check
from longdep.seeds import seeded_generator

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
    check_non_negative(s=s, sigma_x=sigma_x)
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
    check_non_negative(s=s, sigma_x=sigma_x)
    check.choice(activation=(activation, tuple(_ACTIVATIONS)))
    _, derivative = _ACTIVATIONS[activation]
    if activation == "identity":
        return float(s)
    variance = s**2 * mean_field_fixed_point(s, sigma_x, activation) + sigma_x**2
    return float(s * np.sqrt(_gaussian_mean(lambda a: derivative(a) ** 2, variance)))


def growth_onset(sigma_x: float, low: float = 1.0, high: float = 4.0,
                 tolerance: float = 1e-10) -> float:
    """The s at which the predicted tanh rate crosses 1 (Chapter 2, "The theory that predicts
    the measurement"), by bisection on [low, high]."""
    check_non_negative(sigma_x=sigma_x, low=low, tolerance=tolerance)
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


def measured_rates(scales, sigma_x: float = 1.0, activation: str = "tanh", hidden: int = 128,
                   draws: int = 10, batch: int = 8, burn_in: int = 50, fit=(10, 100),
                   seed: int = 0) -> torch.Tensor:
    """The measured per-step rate of the gradient norm for W_hh = s Q, for every s in
    ``scales`` and ``draws`` random Q, in one batched computation (Chapter 2, "The theory that
    predicts the measurement"): the networks of :func:`~longdep.experiments.vanishing
    .probe_networks` (inputs N(0, sigma_x^2), independent for every unit) run ``burn_in`` steps
    to reach the stationary state, then ``fit[1] + 1`` more, and the rate is
    :func:`~longdep.experiments.vanishing.fitted_rates` over distances ``fit``.
    Returns (len(scales), draws)."""
    check_non_negative(sigma_x=sigma_x)
    check.positive(hidden=hidden, draws=draws, batch=batch)
    check.int_range(0, None, burn_in=burn_in, seed=seed)
    check_fit(fit)
    generator = seeded_generator(seed)
    weights = scaled_orthogonal(scales, hidden, draws, generator)  # (scales, draws, n, n)
    steps = burn_in + fit[1] + 1
    x = sigma_x * torch.randn(batch, steps, hidden, dtype=torch.float64, generator=generator)
    probe = probe_networks(weights.flatten(0, 1), x, activation, longest=fit[1])
    return fitted_rates(probe.ratios, fit).reshape(len(scales), draws)

"""Chapter 2's mean-field theory: the fixed point, the predicted and the measured rate."""

import numpy as np
import pytest
from longdep.experiments.mean_field import (
    growth_onset,
    mean_field_fixed_point,
    measured_rates,
    predicted_rate,
)


def _fixed_point_by_trapezoid(s, sigma_x):
    # E[tanh(a)^2] on a fine grid of a standard normal z, iterated to convergence
    z = np.linspace(-12, 12, 200_001)
    density = np.exp(-z**2 / 2) / np.sqrt(2 * np.pi)
    q = 1.0
    for _ in range(500):
        q = np.trapezoid(np.tanh(np.sqrt(s**2 * q + sigma_x**2) * z) ** 2 * density, z)
    return q


@pytest.mark.parametrize("s, sigma_x", [(0.5, 1.0), (1.0, 1.0), (2.0, 0.3), (3.0, 1.0)])
def test_fixed_point_matches_direct_integration(s, sigma_x):
    assert mean_field_fixed_point(s, sigma_x) == pytest.approx(
        _fixed_point_by_trapezoid(s, sigma_x), abs=1e-6)


def test_zero_input_below_one_has_the_zero_state():
    assert mean_field_fixed_point(0.9, 0.0) == pytest.approx(0.0, abs=1e-6)
    assert predicted_rate(0.9, 0.0) == pytest.approx(0.9, rel=1e-5)


@pytest.mark.parametrize("s", [0.5, 1.0, 2.5])
def test_linear_network_rate_is_s_predicted_and_measured(s):
    assert predicted_rate(s, 1.0, "identity") == s
    measured = measured_rates([s], activation="identity", hidden=16, draws=2)
    assert np.allclose(measured.numpy(), s, rtol=1e-10)


def test_tanh_prediction_matches_measurement_and_onset():
    """With inputs independent from unit to unit (the theory's assumption) the measured rate is
    within 2 % of the prediction, on both sides of the onset."""
    scales = (0.9, 1.5, 1.75, 2.0)
    measured = measured_rates(scales, hidden=128, draws=3).median(1).values
    for s, rate in zip(scales, measured):
        assert rate.item() == pytest.approx(predicted_rate(s, 1.0), rel=0.02)
    onset = growth_onset(1.0)
    assert predicted_rate(onset, 1.0) == pytest.approx(1.0, abs=1e-8)
    assert 1.5 < onset < 2.0


def test_alternating_relu_masks_grow_although_rho_is_one_half():
    import torch
    from longdep.experiments.vanishing import masked_product_norms
    w = torch.tensor([[1.5, 2.0], [-1.0, -1.5]], dtype=torch.float64)  # W^2 = I / 4
    ones = masked_product_norms(w, torch.ones(20, 2, dtype=torch.float64))
    assert ones[20].item() == pytest.approx(0.25**10, rel=1e-12)  # no mask: the powers of W
    masks = torch.tensor([[0.0, 1.0], [1.0, 0.0]] * 10, dtype=torch.float64)
    norms = masked_product_norms(w, masks)
    # M = (D1 W)(D2 W) = [[-2, -3], [0, 0]] has M^k = (-2)^(k-1) M: rho = 2 per two steps
    assert norms[2].item() == pytest.approx(13**0.5, rel=1e-12)
    assert norms[20].item() == pytest.approx(2**9 * 13**0.5, rel=1e-12)
    assert 1800 < norms[20].item() < 1900

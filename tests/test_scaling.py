"""Var(q . k) = d_k, and the softmax saturates without the 1/sqrt(d_k) scale."""

import math

import pytest
import torch
from longdep.experiments.attention import saturation, score_variance
from longdep.measure.gradients import softmax_jacobian_norm


@pytest.mark.parametrize("d_k", [1, 16, 256])  # 256: five chunks of 4096 pairs
def test_score_variance_is_d_k(d_k):
    generator = torch.Generator().manual_seed(0)
    variance, standard_error = score_variance(d_k, 20_000, generator)
    assert variance == pytest.approx(d_k, rel=0.05)
    assert abs(variance - d_k) < 4 * standard_error


def test_score_variance_standard_error_is_the_spread_of_repeated_estimates():
    generator = torch.Generator().manual_seed(1)
    estimates = [score_variance(4, 500, generator) for _ in range(300)]
    spread = torch.tensor([e.variance for e in estimates]).std().item()
    mean_error = sum(e.standard_error for e in estimates) / len(estimates)
    # for large d_k the score is nearly Gaussian and the error is about d_k sqrt(2 / samples);
    # at d_k = 4 its heavier tails make it larger: sqrt((3 d_k^2 + 6 d_k - d_k^2) / samples)
    assert mean_error == pytest.approx(math.sqrt((2 * 4**2 + 6 * 4) / 500), rel=0.1)
    assert spread == pytest.approx(mean_error, rel=0.15)



def test_softmax_jacobian_norm_equals_autograd():
    scores = torch.randn(3, 5, dtype=torch.float64)
    weights = torch.softmax(scores, -1)
    for row in range(3):
        jacobian = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores[row])
        torch.testing.assert_close(softmax_jacobian_norm(weights)[row],
                                   torch.linalg.matrix_norm(jacobian))


@pytest.mark.parametrize("scaled", [False, True])
def test_one_key_is_fully_saturated(scaled):
    result = saturation(8, keys=1, samples=10, scaled=scaled)
    assert result.max_weight == 1.0
    assert result.entropy == 0.0
    assert result.jacobian_norm == 0.0


def test_scale_changes_nothing_at_d_k_one():
    unscaled = saturation(1, 6, 100, scaled=False, generator=torch.Generator().manual_seed(3))
    scaled = saturation(1, 6, 100, scaled=True, generator=torch.Generator().manual_seed(3))
    assert unscaled == scaled


def test_saturation_grows_without_the_scale():
    generator = torch.Generator().manual_seed(0)
    widths = (16, 64, 256, 1024)
    unscaled = [saturation(d, 16, 400, False, generator) for d in widths]
    scaled = [saturation(d, 16, 400, True, generator) for d in widths]
    assert all(a.max_weight < b.max_weight for a, b in zip(unscaled, unscaled[1:]))
    assert all(a.jacobian_norm > b.jacobian_norm for a, b in zip(unscaled, unscaled[1:]))
    assert unscaled[-1].max_weight > 0.9 and unscaled[-1].entropy < 0.2
    for result in scaled:  # the scaled softmax stays far from one-hot at every width
        assert result.max_weight < 0.3 and result.entropy > 0.8 * math.log(16)


@pytest.mark.parametrize("arguments", [dict(d_k=0), dict(keys=0), dict(samples=0)])
def test_saturation_errors(arguments):
    values = dict(d_k=4, keys=4, samples=4) | arguments
    with pytest.raises(ValueError, match="at least 1"):
        saturation(scaled=True, **values)


def test_score_variance_errors():
    with pytest.raises(ValueError, match="d_k must be at least 1"):
        score_variance(0, 10)
    with pytest.raises(ValueError, match="samples must be at least 2"):
        score_variance(4, 1)

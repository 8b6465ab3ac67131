"""Var(q . k) = d_k, and the softmax saturates without the 1/sqrt(d_k) scale."""

import math

import pytest
import torch

from longdep.scaling import saturation, score_variance, softmax_jacobian_norm


@pytest.mark.parametrize("d_k", [1, 16, 256])
def test_score_variance_is_d_k(d_k):
    generator = torch.Generator().manual_seed(0)
    assert score_variance(d_k, 20_000, generator) == pytest.approx(d_k, rel=0.05)


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

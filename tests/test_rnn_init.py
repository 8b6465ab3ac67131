"""PyTorch's default initialisation of W_hh: rho -> 1/sqrt(3), sigma_max -> 2/sqrt(3)
(Chapter 1, "PyTorch's default initialisation")."""

import math

import pytest
import torch
from longdep.experiments.rnn import DEFAULT_INIT_LIMITS, default_recurrent_spectrum


def test_limits_are_those_of_variance_one_over_3n():
    assert DEFAULT_INIT_LIMITS["spectral_radius"] == pytest.approx(math.sqrt(1 / 3))
    assert DEFAULT_INIT_LIMITS["sigma_max"] == pytest.approx(2 * math.sqrt(1 / 3))


def test_a_wide_network_sits_at_the_limits():
    """n = 1024, one seed (too slow for the chapter). sigma_max is within 0.01 of its limit; the
    spectral radius converges slowly (its edge fluctuations shrink like sqrt(log n / n) and sit
    above the limit at finite n: 0.60 for seed 0), so it gets 0.03."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # LAPACK on one matrix: threads only contend with other jobs
    try:
        spectrum = default_recurrent_spectrum({1024: 1})[1024]
    finally:
        torch.set_num_threads(threads)
    assert spectrum["spectral_radius"][0] == pytest.approx(
        DEFAULT_INIT_LIMITS["spectral_radius"], abs=0.03)
    assert spectrum["sigma_max"][0] == pytest.approx(DEFAULT_INIT_LIMITS["sigma_max"], abs=0.01)


def test_matches_the_models_own_initialisation_and_leaves_the_stream_alone():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    spectrum = default_recurrent_spectrum({8: 2})[8]
    assert torch.equal(torch.random.get_rng_state(), before)
    torch.manual_seed(1)
    weight_hh = torch.nn.RNNCell(1, 8).weight_hh.detach()
    assert weight_hh.abs().max() <= 8**-0.5
    assert spectrum["sigma_max"][1] == pytest.approx(torch.linalg.svdvals(weight_hh)[0].item())
    assert len(spectrum["spectral_radius"]) == 2


@pytest.mark.parametrize("bad", [{}, {0: 1}, {4: 0}])
def test_rejects_empty_sizes_and_seed_counts(bad):
    with pytest.raises(ValueError):
        default_recurrent_spectrum(bad)

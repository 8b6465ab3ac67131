"""Chapter 1's measurements: PyTorch's default initialisation of W_hh (rho -> 1/sqrt(3),
sigma_max -> 2/sqrt(3)), and BPTT per loss term over draws of the chapter's set-up."""

import math

import pytest
import torch
from longdep.experiments import rnn as rnn_experiments
from longdep.experiments.rnn import (
    DEFAULT_INIT_LIMITS,
    SPECTRUM_DRAWS,
    bptt_at_initialisation,
    default_recurrent_spectrum,
    double_sum_terms,
    loss_term_state_gradients,
    truncation_errors,
)
from longdep.measure.bptt import bptt, loss_to_step_gradients
from longdep.models.rnn import ElmanRNN


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


# --- Chapter 1, "Seeing BPTT" and the double-sum exercise: per-loss-term BPTT over draws ---


def small_case(nonlinearity="tanh", seed=3):
    """A small float64 network, inputs and output gradients (batch 3, time 7, hidden 5)."""
    torch.manual_seed(seed)
    rnn = ElmanRNN(2, 5, nonlinearity=nonlinearity).double()
    x = torch.randn(3, 7, 2, dtype=torch.float64)
    output_grads = torch.randn(3, 7, 5, dtype=torch.float64)
    return rnn, x, output_grads


def test_loss_term_gradients_are_bptt_of_each_loss_term_alone():
    rnn, x, output_grads = small_case()
    per_term = loss_term_state_gradients(rnn, x, output_grads)
    assert per_term.shape == (7, 3, 7, 5)
    for t in (0, 4, 6):
        only_t = torch.zeros_like(output_grads)
        only_t[:, t] = output_grads[:, t]
        torch.testing.assert_close(per_term[t], bptt(rnn, x, only_t).state_grads,
                                   rtol=1e-13, atol=1e-15)
    assert torch.all(torch.triu(per_term.norm(dim=(1, 3)), diagonal=1) == 0)
    torch.testing.assert_close(per_term.norm(dim=(1, 3)),
                               loss_to_step_gradients(rnn, x, output_grads),
                               rtol=1e-13, atol=1e-15)
    # summed over the loss terms, they are the total state gradients
    torch.testing.assert_close(per_term.sum(0), bptt(rnn, x, output_grads).state_grads,
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_double_sum_terms_add_up_to_autograds_gradient(nonlinearity):
    rnn, x, output_grads = small_case(nonlinearity)
    terms = double_sum_terms(rnn, x, output_grads)
    assert terms.shape == (7, 7, 5, 5)
    later = torch.triu(torch.ones(7, 7, dtype=torch.bool), diagonal=1)  # k > t
    assert torch.all(terms[later] == 0)
    states, _ = rnn(x)
    (states * output_grads).sum().backward()  # a loss whose dL_t/dh_t is output_grads
    torch.testing.assert_close(terms.sum((0, 1)), rnn.weight_hh.grad, rtol=1e-12, atol=1e-13)
    # summed over the loss terms, term (., k) is step k's immediate term
    torch.testing.assert_close(terms.sum(0), bptt(rnn, x, output_grads).weight_hh_terms,
                               rtol=1e-12, atol=1e-13)


def test_truncation_errors_by_hand():
    terms = torch.zeros(3, 3, 1, 1, dtype=torch.float64)
    terms[0, 0], terms[1, 1], terms[2, 2] = 1.0, 1.0, 1.0  # t - k = 0
    terms[1, 0], terms[2, 1] = 2.0, -4.0  # t - k = 1
    terms[2, 0] = 8.0  # t - k = 2: the full sum is 3 - 2 + 8 = 9
    errors = truncation_errors(terms, (0, 1, 2))
    assert errors == pytest.approx({0: 6 / 9, 1: 8 / 9, 2: 0.0})


def test_truncation_errors_vanish_without_truncation_and_reject_bad_taus():
    rnn, x, output_grads = small_case()
    terms = double_sum_terms(rnn, x, output_grads)
    errors = truncation_errors(terms, [0, 3, 6])
    assert errors[6] < 1e-14 and errors[0] > errors[3] > errors[6]
    with pytest.raises(ValueError, match="taus"):
        truncation_errors(terms, [])
    with pytest.raises(ValueError, match="taus\\[1\\]"):
        truncation_errors(terms, [1, -1])
    with pytest.raises(ValueError, match="per_term"):
        double_sum_terms(rnn, x, output_grads, per_term=torch.zeros(7, 3, 7, 4))


def test_bptt_at_initialisation_is_its_set_up_measured_directly(monkeypatch):
    torch.manual_seed(5)
    before = torch.random.get_rng_state()
    result = bptt_at_initialisation(draws=2, reach=3, taus=(1, 39))
    assert torch.equal(torch.random.get_rng_state(), before)
    assert all(len(result[key]) == 2 for key in ("decay", "worst_row", "spread"))
    rnn, x, output_grads = rnn_experiments._draw(1)  # draw 1, measured with the book's tools
    assert (x.shape, output_grads.shape) == ((8, 40, 4), (8, 40, 16))
    norms = loss_to_step_gradients(rnn, x, output_grads)
    assert result["decay"][1] == pytest.approx((norms[-1, -4] / norms[-1, -1]).item(), rel=1e-12)
    rows = torch.arange(3, 40)
    assert result["worst_row"][1] == pytest.approx(
        (norms[rows, rows - 3] / norms[rows, rows]).max().item(), rel=1e-12)
    weight_hh = rnn.weight_hh.detach()
    assert result["sigma_max"][1] == pytest.approx(torch.linalg.svdvals(weight_hh)[0].item())
    step_terms = bptt(rnn, x, output_grads).weight_hh_terms.norm(dim=(1, 2))
    assert step_terms[0] == 0
    assert result["spread"][1] == pytest.approx((step_terms[1:].min() / step_terms.max()).item())
    assert result["truncation_error"][39][1] < 1e-14 < result["truncation_error"][1][1]
    monkeypatch.setenv("LONGDEP_SEED_SHIFT", "7")  # other draws under a seed shift
    assert bptt_at_initialisation(draws=1, reach=3, taus=(1,))["decay"][0] != result["decay"][0]


@pytest.mark.parametrize("bad, error", [(dict(draws=0), ValueError),
                                        (dict(reach=40), ValueError),
                                        (dict(reach=2.0), TypeError),
                                        (dict(taus=(1, -2)), ValueError)])
def test_bptt_at_initialisation_rejects_bad_arguments(bad, error):
    with pytest.raises(error, match=next(iter(bad))):
        bptt_at_initialisation(**bad)


def test_default_draws_meet_the_books_standard():
    """A measurement at initialisation that a page reads is over at least 10 draws."""
    assert min(SPECTRUM_DRAWS.values()) >= 10
    assert list(SPECTRUM_DRAWS) == sorted(SPECTRUM_DRAWS)

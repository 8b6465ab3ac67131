"""The bound's ingredients (Chapter 2): gamma, matrix powers, the probe networks, and the
batched probe that measures many networks at once."""

import numpy as np
import pytest
import torch
from longdep.experiments.vanishing import (
    fitted_rates,
    masked_product_norms,
    orthogonal_matrix,
    probe_networks,
    rnn_with_recurrent_matrix,
    scaled_orthogonal,
    step_factor_norms,
)
from longdep.measure.gradients import (
    activation_derivatives,
    activation_gamma,
    matrix_power_norms,
    ratios_by_distance,
    state_gradient_norms,
    step_jacobian_norms,
)
from longdep.plots import style
from longdep.plots.vanishing import plot_regimes

F64 = torch.float64


@pytest.mark.parametrize(
    "activation, gamma, where",
    [(torch.tanh, 1.0, 0.0), (torch.sigmoid, 0.25, 0.0), (lambda a: torch.sin(a - 1.5), 1.0, 1.5),
     (lambda a: 3 * torch.tanh(a / 3 + 1), 1.0, -3.0)],
)
def test_activation_gamma(activation, gamma, where):
    found, at = activation_gamma(activation)
    assert found == pytest.approx(gamma, abs=1e-12)
    assert at == pytest.approx(where, abs=1e-4)


def test_powers_of_the_non_normal_matrix_match_the_closed_form():
    # W^k = [[0.9^k, 2k 0.9^(k-1)], [0, 0.9^k]]
    matrix = torch.tensor([[0.9, 2.0], [0.0, 0.9]], dtype=torch.float64)
    norms = matrix_power_norms(matrix, 30)
    for k in (0, 1, 9, 30):
        closed = torch.tensor([[0.9**k, 2 * k * 0.9 ** (k - 1)], [0.0, 0.9**k]],
                              dtype=torch.float64)
        assert norms[k].item() == pytest.approx(torch.linalg.matrix_norm(closed, ord=2).item(),
                                                rel=1e-12)
    assert norms.shape == (31,) and norms[0] == 1.0


def test_scaled_orthogonal_matrix():
    generator = torch.Generator().manual_seed(3)
    q = orthogonal_matrix(7, generator)
    torch.testing.assert_close(q.T @ q, torch.eye(7, dtype=torch.float64), rtol=0, atol=1e-14)
    norms = matrix_power_norms(1.5 * q, 10)
    torch.testing.assert_close(norms, 1.5 ** torch.arange(11, dtype=torch.float64),
                               rtol=1e-12, atol=0)
    assert torch.equal(q, orthogonal_matrix(7, torch.Generator().manual_seed(3)))


def test_probe_rnn_is_deterministic_scales_its_input_and_reads_every_unit_alone():
    weight = torch.randn(5, 5, dtype=F64)
    rnn, x = rnn_with_recurrent_matrix(weight, "relu", input_scale=1.0, steps=12, batch=3, seed=4)
    rnn2, x2 = rnn_with_recurrent_matrix(weight, "relu", input_scale=2.5, steps=12, batch=3,
                                         seed=4)
    assert x.shape == (3, 12, 5) and x.dtype == F64
    torch.testing.assert_close(x2, 2.5 * x, rtol=1e-15, atol=0)
    assert torch.equal(rnn.weight_ih, torch.eye(5, dtype=F64))  # independent input per unit
    assert torch.equal(rnn.weight_hh, weight) and rnn.nonlinearity == "relu"
    assert torch.all(rnn.bias_ih == 0) and torch.all(rnn.bias_hh == 0)


def test_scaled_orthogonal_has_every_singular_value_equal_to_its_gain():
    weights = scaled_orthogonal([0.5, 2.0], 6, 3, torch.Generator().manual_seed(1))
    assert weights.shape == (2, 3, 6, 6)
    singular = torch.linalg.svdvals(weights)  # (2, 3, 6)
    torch.testing.assert_close(singular[0], torch.full((3, 6), 0.5, dtype=F64))
    torch.testing.assert_close(singular[1], torch.full((3, 6), 2.0, dtype=F64))
    torch.testing.assert_close(weights[1], 4 * weights[0])  # the same Q for every gain


@pytest.mark.parametrize("activation", ["tanh", "identity"])
def test_the_batched_probe_equals_the_autograd_probe_network_by_network(activation):
    weights = scaled_orthogonal([0.9, 1.5, 3.0], 8, 2, torch.Generator().manual_seed(2))
    weights = weights.flatten(0, 1)  # (6, 8, 8)
    _, x = rnn_with_recurrent_matrix(weights[0], steps=30, batch=3, seed=5)
    probe = probe_networks(weights, x, activation)
    assert probe.ratios.shape == (6, 30) and probe.slopes.shape == (6, 30, 3, 8)
    for weight, ratios, slopes in zip(weights, probe.ratios, probe.slopes):
        rnn, _ = rnn_with_recurrent_matrix(weight, activation, steps=30, batch=3, seed=5)
        expected = ratios_by_distance(state_gradient_norms(rnn, x))
        torch.testing.assert_close(ratios, expected, rtol=1e-12, atol=0)
        torch.testing.assert_close(slopes, activation_derivatives(rnn, x).transpose(0, 1))
    shorter = probe_networks(weights, x, activation, longest=10)
    torch.testing.assert_close(shorter.ratios, probe.ratios[:, :11], rtol=1e-14, atol=0)


def test_fitted_rates_recover_the_exact_rate_of_a_linear_network():
    weights = scaled_orthogonal([0.8, 1.0, 1.3], 8, 2, torch.Generator().manual_seed(3))
    x = torch.randn(2, 120, 8, dtype=F64, generator=torch.Generator().manual_seed(4))
    rates = fitted_rates(probe_networks(weights.flatten(0, 1), x, "identity").ratios)
    torch.testing.assert_close(rates, torch.tensor([0.8, 0.8, 1.0, 1.0, 1.3, 1.3], dtype=F64),
                               rtol=1e-10, atol=0)


def test_step_factor_norms_are_the_norms_the_probe_of_one_network_gives():
    weight = 2.0 * orthogonal_matrix(6, torch.Generator().manual_seed(6))
    rnn, x = rnn_with_recurrent_matrix(weight, steps=9, batch=2, seed=7)
    slopes = probe_networks(weight[None], x).slopes  # (1, time, batch, n)
    torch.testing.assert_close(step_factor_norms(weight[None], slopes[:, :, 1]),
                               step_jacobian_norms(rnn, x)[1][None])


def test_masked_products_of_several_sequences_are_those_of_each_alone():
    w = torch.tensor([[1.5, 2.0], [-1.0, -1.5]], dtype=F64)
    masks = torch.rand(4, 7, 2, dtype=F64, generator=torch.Generator().manual_seed(8))
    batched = masked_product_norms(w, masks)
    assert batched.shape == (4, 8)
    for row, mask in zip(batched, masks):
        torch.testing.assert_close(row, masked_product_norms(w, mask), rtol=1e-14, atol=0)


def test_slopes_in_the_unit_interval_never_beat_the_absolute_matrix_power():
    """|prod diag(m_j) W| <= |W|^k entrywise for slopes in [0, 1], so the norm is at most
    || |W|^k ||: the sufficient condition rho(|W|) < 1 of Chapter 2."""
    w = torch.tensor([[0.9, 2.0], [0.0, 0.9]], dtype=F64)
    masks = torch.rand(50, 60, 2, dtype=F64, generator=torch.Generator().manual_seed(9))
    bound = matrix_power_norms(w.abs(), 60)
    assert (masked_product_norms(w, masks) <= bound * (1 + 1e-12)).all()


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="spacing"):
        activation_gamma(torch.tanh, half_width=1.0, spacing=0.0)
    with pytest.raises(ValueError, match="square"):
        matrix_power_norms(torch.ones(2, 3), 4)
    with pytest.raises(ValueError, match="max_power"):
        matrix_power_norms(torch.eye(2), -1)
    with pytest.raises(ValueError, match="size"):
        orthogonal_matrix(0)
    with pytest.raises(ValueError, match="square"):
        rnn_with_recurrent_matrix(torch.ones(3, 2))
    with pytest.raises(ValueError, match="input_scale"):
        rnn_with_recurrent_matrix(torch.eye(3), input_scale=-1.0)
    with pytest.raises(ValueError, match="steps must be at least 1"):
        rnn_with_recurrent_matrix(torch.eye(3), steps=0)
    with pytest.raises(ValueError, match="nonlinearity"):
        rnn_with_recurrent_matrix(torch.eye(3), nonlinearity="sigmoid")
    with pytest.raises(ValueError, match=r"activation must be one of \['tanh', 'identity'\]"):
        probe_networks(torch.eye(3, dtype=F64)[None], torch.zeros(1, 2, 3, dtype=F64), "relu")


@pytest.mark.parametrize("roundoff", [-1e-13, 0.0, 1e-13])
def test_a_median_at_one_to_round_off_stays_at_one_in_the_alt_text(roundoff):
    """The linear RNN at s = 1 keeps the norm exactly: the figure's words must not depend on
    which side of 1 round-off puts it (the other floating-point path put it on the other)."""
    d = np.arange(6)
    profiles = {("linear", 0.5): np.tile(0.5 ** d, (3, 1)),
                ("linear", 1.0): np.tile(np.full(6, 1.0 + roundoff), (3, 1)),
                ("linear", 2.0): np.tile(2.0 ** d, (3, 1))}
    alt = style.alt_text(plot_regimes(profiles))
    assert "the medians for s = 0.5 fall; those for s = 1 stay at 1; those for s = 2 rise" in alt
    with style.in_language("zh"):
        assert "s = 1 的中位数曲线保持在 1" in style.alt_text(plot_regimes(profiles))

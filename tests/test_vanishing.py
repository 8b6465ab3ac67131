"""The bound's ingredients (Chapter 2): gamma, matrix powers, and the probe networks."""

import pytest
import torch
from longdep.experiments.vanishing import orthogonal_matrix, rnn_with_recurrent_matrix
from longdep.measure.gradients import activation_gamma, matrix_power_norms


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


def test_probe_rnn_is_deterministic_and_scales_its_input():
    weight = torch.randn(5, 5, dtype=torch.float64)
    rnn, x = rnn_with_recurrent_matrix(weight, "relu", input_scale=1.0, steps=12, batch=3,
                                       input_size=2, seed=4)
    rnn2, x2 = rnn_with_recurrent_matrix(weight, "relu", input_scale=2.5, steps=12, batch=3,
                                         input_size=2, seed=4)
    assert x.shape == (3, 12, 2) and x.dtype == torch.float64
    torch.testing.assert_close(x2, 2.5 * x, rtol=1e-15, atol=0)
    assert torch.equal(rnn.weight_ih, rnn2.weight_ih) and torch.equal(rnn.weight_hh, weight)
    assert rnn.nonlinearity == "relu"
    assert torch.all(rnn.bias_ih == 0) and torch.all(rnn.bias_hh == 0)


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

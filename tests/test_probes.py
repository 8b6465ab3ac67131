"""Gradient probes (Chapter 2): per-step state gradients against autograd's Jacobians, the bound
(gamma sigma_max)^d, and overflow reported as inf."""

import pytest
import torch
from longdep.book import seed_everything
from longdep.experiments.vanishing import orthogonal_matrix, rnn_with_recurrent_matrix
from longdep.measure.gradients import (
    activation_derivatives,
    norm_without_overflow,
    ratios_by_distance,
    state_gradient_norms,
    step_jacobian_norms,
)
from longdep.models.rnn import ElmanRNN
from torch import nn
from torch.autograd.functional import jacobian

NONLINEARITIES = ["tanh", "relu", "identity"]


def small_rnn(nonlinearity, input_size=3, hidden=4, seed=0):
    seed_everything(seed)
    model = ElmanRNN(input_size, hidden, nonlinearity).double()
    with torch.no_grad():
        model.weight_hh.mul_(3.0)  # large enough that the relu units are not all alive or dead
    return model


def step_jacobians(model, x, h0):
    """dh_t/dh_(t-1) for one sequence (x (time, input), h0 (hidden,)), each by autograd."""
    h, factors = h0, []
    for x_t in x:
        factors.append(jacobian(lambda state: model.step(x_t[None], state[None])[0], h))
        h = model.step(x_t[None], h[None])[0].detach()
    return factors


@pytest.mark.parametrize("nonlinearity", NONLINEARITIES)
def test_state_gradients_equal_jacobian_products(nonlinearity):
    """With L = sum_t <g_t, h_t>, dL/dh_k = sum_(t>=k) (dh_t/dh_k)^T g_t (Chapter 2's product)."""
    model = small_rnn(nonlinearity)
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    h0 = torch.randn(2, 4, dtype=torch.float64)
    weights = torch.randn(2, 6, 4, dtype=torch.float64)
    measured = state_gradient_norms(model, x, lambda states: (weights * states).sum(), h0)

    expected = torch.zeros(2, 6, 4, dtype=torch.float64)
    for b in range(2):
        factors = step_jacobians(model, x[b], h0[b])
        for k in range(6):
            product = torch.eye(4, dtype=torch.float64)  # dh_t/dh_k, starting at t = k
            for t in range(k, 6):
                if t > k:
                    product = factors[t] @ product
                expected[b, k] += product.T @ weights[b, t]
    torch.testing.assert_close(measured, expected.norm(dim=(0, 2)), rtol=1e-12, atol=1e-14)


def test_default_loss_equals_jacobian_of_the_rollout():
    """The default loss sum(h_T): dL/dh_k = J^T 1 with J the Jacobian of the map h_k -> h_T."""
    model = small_rnn("tanh", seed=1)
    x = torch.randn(1, 7, 3, dtype=torch.float64)
    states, _ = model(x)
    measured = state_gradient_norms(model, x)
    for k in range(6):
        rollout = lambda h_k: model(x[:, k + 1 :], h_k[None])[1][0]  # noqa: E731
        J = jacobian(rollout, states[0, k].detach())
        torch.testing.assert_close(measured[k], (J.T @ torch.ones(4, dtype=torch.float64)).norm(),
                                   rtol=1e-12, atol=1e-14)
    assert measured[-1] == pytest.approx(2.0)  # dL/dh_T is the all-ones vector of 4 units


class SigmoidRNN(nn.Module):
    """h_t = sigmoid(W_ih x_t + W_hh h_(t-1)): gamma = 1/4; any model with step() can be probed."""

    def __init__(self, weight_hh, input_size=2):
        super().__init__()
        self.input_size, self.hidden_size = input_size, weight_hh.size(0)
        self.weight_hh = weight_hh
        self.weight_ih = torch.randn(self.hidden_size, input_size, dtype=weight_hh.dtype)

    def step(self, x_t, h):
        return torch.sigmoid(x_t @ self.weight_ih.T + h @ self.weight_hh.T)


@pytest.mark.parametrize("seed", range(6))
def test_measured_ratio_never_exceeds_the_bound(seed):
    """||dL/dh_(T-d)|| / ||dL/dh_T|| <= (gamma sigma_max)^d for random W_hh of many scales."""
    generator = torch.Generator().manual_seed(seed)
    for scale in (0.3, 0.8, 1.0, 1.5, 3.0):
        weight = scale * torch.randn(6, 6, dtype=torch.float64, generator=generator) / 6**0.5
        sigma = torch.linalg.matrix_norm(weight, ord=2)
        distance = torch.arange(40, dtype=torch.float64)
        for nonlinearity in NONLINEARITIES:
            rnn, x = rnn_with_recurrent_matrix(weight, nonlinearity, input_scale=scale, steps=40,
                                               batch=3, seed=seed)
            ratios = ratios_by_distance(state_gradient_norms(rnn, x))
            assert torch.all(ratios <= sigma**distance * (1 + 1e-10))
        x = torch.randn(3, 40, 2, dtype=torch.float64, generator=generator)
        ratios = ratios_by_distance(state_gradient_norms(SigmoidRNN(weight), x))
        assert torch.all(ratios <= (sigma / 4) ** distance * (1 + 1e-10))


@pytest.mark.parametrize("scale", [0.5, 1.0, 2.0])
def test_linear_rnn_with_scaled_orthogonal_weight_sits_on_the_bound(scale):
    weight = scale * orthogonal_matrix(8, torch.Generator().manual_seed(0))
    rnn, x = rnn_with_recurrent_matrix(weight, "identity", steps=60)
    ratios = ratios_by_distance(state_gradient_norms(rnn, x))
    expected = torch.full((60,), scale, dtype=torch.float64) ** torch.arange(60)
    torch.testing.assert_close(ratios, expected, rtol=1e-10, atol=0)


def test_overflow_is_reported_as_inf_never_nan():
    weight = 3.0 * orthogonal_matrix(8, torch.Generator().manual_seed(0))
    rnn, x = rnn_with_recurrent_matrix(weight, "identity", steps=700, batch=2)
    norms = state_gradient_norms(rnn, x)  # the forward states overflow too: no crash
    assert not torch.isnan(norms).any()
    # ||dL/dh_(T-d)|| = 3^d ||dL/dh_T|| = 3^d * 4 exactly: inf where that passes ~1.8e308
    expected = 4.0 * 3.0 ** torch.arange(699, -1, -1, dtype=torch.float64)
    overflowed = torch.isinf(expected)
    assert 0 < overflowed.sum() < 700
    assert torch.all(torch.isinf(norms[overflowed]))
    torch.testing.assert_close(norms[~overflowed], expected[~overflowed], rtol=1e-9, atol=0)


def test_norm_without_overflow():
    t = torch.randn(5, 3, dtype=torch.float64)
    torch.testing.assert_close(norm_without_overflow(t), t.norm(), rtol=1e-14, atol=0)
    huge = torch.tensor([3e200, 4e200], dtype=torch.float64)
    assert huge.norm() == float("inf")  # the plain formula overflows ...
    assert norm_without_overflow(huge).item() == pytest.approx(5e200, rel=1e-14)  # this does not
    assert norm_without_overflow(torch.zeros(3)) == 0
    assert norm_without_overflow(torch.tensor([1.0, float("inf")])) == float("inf")


def test_states_the_loss_ignores_get_zero_gradient():
    model = small_rnn("tanh")
    norms = state_gradient_norms(model, torch.randn(2, 5, 3, dtype=torch.float64),
                                 lambda states: states[:, 2].sum())
    assert torch.all(norms[3:] == 0) and torch.all(norms[:3] > 0)


def test_a_hook_on_the_weight_fires_once_per_backward():
    """The source article's measurement: one number per backward pass, not one per step."""
    model = small_rnn("tanh")
    recorded = []
    model.weight_hh.register_hook(lambda grad: recorded.append(grad.norm().item()))
    states, _ = model(torch.randn(2, 9, 3, dtype=torch.float64))
    states[:, -1].sum().backward()
    assert len(recorded) == 1
    assert recorded[0] == pytest.approx(model.weight_hh.grad.norm().item(), rel=1e-14)


@pytest.mark.parametrize("nonlinearity", NONLINEARITIES)
def test_step_jacobian_norms_are_the_norms_of_autograds_factors(nonlinearity):
    model = small_rnn(nonlinearity, seed=2)
    x = torch.randn(2, 5, 3, dtype=torch.float64)
    measured = step_jacobian_norms(model, x)
    derivatives = activation_derivatives(model, x)
    for b in range(2):
        factors = step_jacobians(model, x[b], torch.zeros(4, dtype=torch.float64))
        for t, factor in enumerate(factors):
            torch.testing.assert_close(measured[b, t], torch.linalg.matrix_norm(factor, ord=2),
                                       rtol=1e-12, atol=1e-14)
            torch.testing.assert_close(derivatives[b, t, :, None] * model.weight_hh, factor,
                                       rtol=1e-12, atol=1e-14)


def test_bad_arguments_raise():
    model = small_rnn("tanh")
    with pytest.raises(ValueError, match=r"x must have shape \(batch, time, 3\)"):
        state_gradient_norms(model, torch.randn(5, 3, dtype=torch.float64))
    with pytest.raises(ValueError,
                       match=r"x must have shape \(batch, time, 3\), got .*\(1, 5, 2\)"):
        state_gradient_norms(model, torch.randn(1, 5, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match="h0 must have shape"):
        state_gradient_norms(model, torch.randn(2, 5, 3, dtype=torch.float64),
                             h0=torch.zeros(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="non-empty \\(time,\\) tensor"):
        ratios_by_distance(torch.ones(2, 3))
    with pytest.raises(ValueError, match="finite and positive"):
        ratios_by_distance(torch.tensor([1.0, 0.0]))

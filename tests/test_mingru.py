"""minGRU (Chapter 6): the paper's equations, its scan equal to its loop at T = 512 in float64,
the gradient over distance exactly the product of the keep gates, and the forget bias."""

import pytest
import torch
from longdep.models.mingru import MinGRU

F64 = torch.float64


def model_and_input(steps, forget_bias=0.0, scan="parallel", seed=0, batch=4, hidden=32):
    torch.manual_seed(seed)
    model = MinGRU(3, hidden, forget_bias, scan).double()
    x = torch.randn(batch, steps, 3, dtype=F64, generator=torch.Generator().manual_seed(seed))
    return model, x


def test_forward_follows_the_papers_equations():
    model, x = model_and_input(9)
    h0 = torch.randn(4, 32, dtype=F64)
    h, expected = h0, []
    for x_t in x.unbind(1):
        z = torch.sigmoid(x_t @ model.linear_z.weight.T + model.linear_z.bias)
        candidate = x_t @ model.linear_h.weight.T + model.linear_h.bias
        h = (1 - z) * h + z * candidate
        expected.append(h)
    outputs, last = model(x, h0)
    torch.testing.assert_close(outputs, torch.stack(expected, 1), rtol=0, atol=1e-14)
    assert torch.equal(last, outputs[:, -1])


@pytest.mark.parametrize("forget_bias", [0.0, 3.0])
def test_the_scan_equals_the_loop_at_512_steps_in_float64(forget_bias):
    model, x = model_and_input(512, forget_bias)
    with torch.no_grad():
        parallel = model(x)[0]
        model.scan = "sequential"
        sequential = model(x)[0]
    torch.testing.assert_close(parallel, sequential, rtol=0, atol=1e-12)


def state_jacobian(model, x, k):
    """d h_T / d h_k (batch, hidden, hidden) from h_k, running steps k+1 .. T."""
    h_k = torch.randn(x.size(0), model.hidden_size, dtype=F64)
    rows = torch.autograd.functional.jacobian(lambda h: model(x[:, k + 1:], h)[1].sum(0), h_k)
    return rows.permute(1, 0, 2)  # (batch, out, in)


@pytest.mark.parametrize("scan", ["parallel", "sequential"])
@pytest.mark.parametrize("forget_bias", [0.0, 4.0])
def test_the_gradient_over_distance_is_the_product_of_keep_gates(scan, forget_bias):
    """d h_T / d h_k = diag(prod_{r=k+1..T} (1 - z_r)), exactly: the state enters linearly."""
    model, x = model_and_input(41, forget_bias, scan, batch=2, hidden=6)
    k = 10
    with torch.no_grad():
        keep = 1 - torch.sigmoid(model.linear_z(x[:, k + 1:]))  # (batch, T - k, hidden)
    jacobian = state_jacobian(model, x, k)
    expected = torch.diag_embed(keep.prod(1))
    torch.testing.assert_close(jacobian, expected, rtol=1e-13, atol=0)


def test_default_gates_halve_the_gradient_per_step_and_the_bias_keeps_it():
    """At initialisation z is near 1/2, so the product falls like 2^-d; a forget bias of 4 keeps
    1 - z near sigma(4) = 0.98."""
    distance = 50
    decays = {}
    for bias in (0.0, 4.0):
        model, x = model_and_input(distance + 1, bias, batch=8)
        with torch.no_grad():
            keep = 1 - torch.sigmoid(model.linear_z(x[:, 1:]))
        decays[bias] = keep.prod(1).median().item()
    assert 1e-20 < decays[0.0] < 1e-10  # 0.5^50 = 9e-16, spread by the input
    assert decays[4.0] > 0.2


def test_the_forget_bias_sets_b_z_and_the_keep_gate_at_zero_input():
    model = MinGRU(3, 5, forget_bias=2.5).double()
    assert torch.equal(model.linear_z.bias, torch.full((5,), -2.5, dtype=F64))
    keep, _ = model.keep_and_write(torch.zeros(1, 3, dtype=F64))
    torch.testing.assert_close(keep, torch.sigmoid(torch.tensor(2.5, dtype=F64)).expand(1, 5))
    assert "forget_bias=2.5" in repr(model)


@pytest.mark.parametrize("call, error, message", [
    (lambda: MinGRU(0, 4), ValueError, "input_size must be at least 1"),
    (lambda: MinGRU(3, 2.5), TypeError, "hidden_size must be an int"),
    (lambda: MinGRU(3, 4, forget_bias=float("nan")), ValueError, "forget_bias must be finite"),
    (lambda: MinGRU(3, 4, forget_bias="1"), TypeError, "forget_bias must be a number"),
    (lambda: MinGRU(3, 4, scan="log"), ValueError, "scan must be one of"),
    (lambda: MinGRU(3, 4)(torch.ones(2, 5, 3), torch.ones(3, 4)), ValueError,
     r"h0 must have shape \(batch, hidden\) = \(2, 4\)"),
    (lambda: MinGRU(3, 4).step(torch.ones(2, 3), torch.ones(2, 5)), ValueError,
     r"h must have shape"),
])
def test_mingru_checks_its_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()

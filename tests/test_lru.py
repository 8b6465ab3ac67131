"""The LRU (Chapter 2): the paper's equations, the doubling scan equal to the loop at T = 512,
the ring initialisation and its normalisation, and the gradient over distance of modulus
exactly |lambda|^(T-k) per channel."""

import math

import pytest
import torch
from longdep.models.lru import LRU, power_scan

F64 = torch.float64


def model_and_input(steps=512, r_min=0.9, r_max=0.999, seed=0, state_size=8):
    torch.manual_seed(seed)
    model = LRU(3, state_size, r_min, r_max).double()
    x = torch.randn(2, steps, 3, dtype=F64, generator=torch.Generator().manual_seed(seed))
    return model, x


def test_forward_follows_the_papers_equations():
    model, x = model_and_input(steps=20)
    lam = torch.exp(torch.complex(-model.nu_log.exp(), model.theta_log.exp()))
    B, C = torch.complex(model.B_re, model.B_im), torch.complex(model.C_re, model.C_im)
    h0 = torch.randn(2, 8, dtype=torch.complex128)
    h, outputs = h0, []
    for x_t in x.unbind(1):
        h = lam * h + model.gamma_log.exp() * (x_t.to(B.dtype) @ B.T)
        outputs.append((h @ C.T).real + model.D * x_t)
    y, last = model(x, h0)
    torch.testing.assert_close(y, torch.stack(outputs, 1), rtol=0, atol=1e-13)
    torch.testing.assert_close(last, h, rtol=0, atol=1e-13)


def test_the_doubling_scan_equals_the_loop_at_512_steps():
    model, x = model_and_input()
    h0 = torch.randn(2, 8, dtype=torch.complex128)
    with torch.no_grad():
        parallel = model(x, h0)
        model.scan = "sequential"
        sequential = model(x, h0)
    for got, want in zip(parallel, sequential):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


def test_power_scan_is_the_sum_of_decayed_inputs():
    log_lambda = torch.complex(torch.tensor([-0.1, -2.0], dtype=F64),
                               torch.tensor([0.5, 3.0], dtype=F64))
    b = torch.randn(1, 11, 2, dtype=torch.complex128)
    expected = torch.stack([sum(torch.exp((t - j) * log_lambda) * b[:, j] for j in range(t + 1))
                            for t in range(11)], 1)
    torch.testing.assert_close(power_scan(log_lambda, b), expected, rtol=0, atol=1e-14)


@pytest.mark.parametrize("r_min, r_max", [(0.0, 1.0), (0.9, 0.999), (0.5, 0.6)])
def test_eigenvalues_start_on_the_ring_with_gamma_normalising(r_min, r_max):
    torch.manual_seed(0)
    model = LRU(4, 4000, r_min, r_max, max_phase=math.pi / 10).double()
    lam = model.log_eigenvalues().exp()
    assert ((lam.abs() >= r_min - 1e-6) & (lam.abs() <= r_max + 1e-6)).all()
    assert ((lam.angle() >= 0) & (lam.angle() <= math.pi / 10 + 1e-6)).all()
    # |lambda|^2 uniform on [r_min^2, r_max^2]: its mean is the midpoint, to 5 standard errors.
    low, high = r_min**2, r_max**2
    assert abs((lam.abs() ** 2).mean() - (low + high) / 2) < 5 * (high - low) / math.sqrt(
        12 * 4000)
    torch.testing.assert_close(model.gamma_log.exp(), (1 - lam.abs() ** 2).sqrt(), rtol=1e-5,
                               atol=0)  # the parameters are initialised in float32


def test_gamma_normalises_the_impulse_response_energy():
    """Fed one input b at step 0, h_t = lambda^t gamma b: sum_t |h_t|^2 = gamma^2 |b|^2
    (1 - |lambda|^(2T)) / (1 - |lambda|^2) = |b|^2 (1 - |lambda|^(2T)), for |lambda| near 1 too."""
    model, _ = model_and_input(r_min=0.99, r_max=0.9999)
    x = torch.zeros(1, 3000, 3, dtype=F64)
    x[0, 0] = torch.tensor([1.0, -2.0, 0.5], dtype=F64)
    with torch.no_grad():  # gamma exactly, in float64 (the parameters start in float32)
        model.gamma_log.copy_(0.5 * torch.log1p(-model.log_eigenvalues().exp().abs() ** 2))
        b = model.drive(x[0, 0]) / model.gamma_log.exp()  # B x_0, (N,)
        states = power_scan(model.log_eigenvalues(), model.drive(x))[0]  # (time, N)
        modulus = model.log_eigenvalues().exp().abs()
    energy = (states.abs() ** 2).sum(0)
    torch.testing.assert_close(energy, b.abs() ** 2 * (1 - modulus ** (2 * 3000)), rtol=1e-9,
                               atol=0)


@pytest.mark.parametrize("scan", ["parallel", "sequential"])
def test_the_gradient_over_distance_has_modulus_lambda_to_the_distance(scan):
    """dh_T/dh_k = lambda^(T-k) per channel: on (Re h, Im h) a rotation times |lambda|^(T-k)."""
    model, x = model_and_input(steps=300, r_min=0.0, r_max=1.0)
    model.scan = scan
    distance = 250
    state = torch.randn(1, 8, 2, dtype=F64)  # h_k as (Re, Im)
    jacobian = torch.autograd.functional.jacobian(
        lambda h: torch.view_as_real(model(x[:1, -distance:], torch.view_as_complex(h))[1]),
        state)[0, :, :, 0]  # (N, 2, N, 2)
    blocks = torch.stack([jacobian[n, :, n] for n in range(8)])  # (N, 2, 2)
    with torch.no_grad():
        power = torch.exp(distance * model.log_eigenvalues())  # lambda^(T-k), (N,)
    expected = torch.stack([torch.stack([power.real, -power.imag], -1),
                            torch.stack([power.imag, power.real], -1)], -2)
    torch.testing.assert_close(blocks, expected, rtol=1e-12, atol=1e-300)
    modulus = torch.linalg.matrix_norm(blocks, ord=2)
    torch.testing.assert_close(modulus, model.log_eigenvalues().exp().abs().detach() ** distance,
                               rtol=1e-12, atol=1e-300)
    off_channel = jacobian.clone()
    for n in range(8):
        off_channel[n, :, n] = 0
    assert (off_channel == 0).all()  # each channel's gradient reaches only itself


@pytest.mark.parametrize("call, error, message", [
    (lambda: LRU(3, 4, r_min=0.9, r_max=0.9), ValueError, r"need 0 <= r_min < r_max <= 1"),
    (lambda: LRU(3, 4, r_max=1.5), ValueError, r"need 0 <= r_min < r_max <= 1"),
    (lambda: LRU(3, 4, max_phase=0.0), ValueError, r"max_phase > 0"),
    (lambda: LRU(3, 4, r_min=float("nan")), ValueError, r"r_min must be finite"),
    (lambda: LRU(3, 4, scan="fft"), ValueError, r"scan must be one of"),
    (lambda: LRU(3, 0), ValueError, r"state_size must be at least 1"),
    (lambda: LRU(3, 4)(torch.ones(2, 5, 3), torch.ones(2, 4)), TypeError,
     r"h must be a complex64 tensor"),
    (lambda: LRU(3, 4)(torch.ones(2, 5, 3), torch.ones(2, 5, dtype=torch.complex64)),
     ValueError, r"h must have shape \(batch, N\) = \(2, 4\)"),
])
def test_lru_checks_its_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()

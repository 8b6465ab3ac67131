"""Mamba-2's scalar SSM (Chapter 6): the recurrence equals causal attention masked by the
1-semiseparable matrix L_ij = prod_{k=j+1..i} a_k, to round-off in float64 at T = 64 .. 256; L is
formed stably; the gradient over distance is the product of the a's."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from longdep.models.ssd import (
    ScalarSSM,
    decay_parameters,
    segsum,
    ssd_attention,
    ssd_chunked,
    ssd_recurrent,
)

F64 = torch.float64
FAST = settings(max_examples=25, deadline=None, database=None)


def ssd_inputs(batch=2, steps=64, heads=3, P=4, N=5, seed=0, decay=1.0):
    """x, log a (a in (e^-decay, 1)), B, C, and a starting state, in float64."""
    generator = torch.Generator().manual_seed(seed)

    def draw(*shape):
        return torch.randn(*shape, dtype=F64, generator=generator)

    log_a = -decay * torch.rand(batch, steps, heads, dtype=F64, generator=generator)
    return draw(batch, steps, heads, P), log_a, draw(batch, steps, heads, N), draw(
        batch, steps, heads, N), draw(batch, heads, N, P)


def explicit_mask(log_a_head):
    """L_ij = prod_{k=j+1..i} a_k for i >= j, 0 above: (time,) -> (time, time), by products."""
    a, steps = log_a_head.exp(), log_a_head.size(0)
    mask = torch.zeros(steps, steps, dtype=F64)
    for i in range(steps):
        for j in range(i + 1):
            mask[i, j] = a[j + 1:i + 1].prod()
    return mask


def test_segsum_gives_the_1_semiseparable_mask():
    log_a = -torch.rand(2, 12, dtype=F64, generator=torch.Generator().manual_seed(0))
    sums = segsum(log_a)
    assert (sums.diagonal(dim1=-2, dim2=-1) == 0).all()
    assert torch.isneginf(sums[..., ~torch.ones(12, 12, dtype=torch.bool).tril()]).all()
    for row in range(2):
        torch.testing.assert_close(sums[row].exp(), explicit_mask(log_a[row]), rtol=1e-14,
                                   atol=0)


def test_segsum_stays_exact_where_the_prefix_products_underflow():
    """With a = e^-1 for 2000 steps the prefix product e^-2000 underflows to 0, so dividing two
    of them gives 0 / 0; each entry summed from its own terms is exactly what it should be."""
    log_a = torch.full((2000,), -1.0, dtype=F64)
    mask = segsum(log_a).exp()
    assert not torch.isnan(mask).any()
    assert torch.equal(mask.diagonal(-1), torch.full((1999,), math.exp(-1.0), dtype=F64))
    assert mask[1999, 0] == 0.0 and mask[1999, 1990] == pytest.approx(math.exp(-9.0), rel=1e-14)


def test_the_masks_gradient_is_exact_for_strong_decays():
    """log a = -300 .. -400: exp of a difference of prefix sums above the diagonal would be
    e^+300k, inf, and its gradient NaN. d/d log a_k of sum W_ij L_ij = sum over i >= k > j."""
    generator = torch.Generator().manual_seed(0)
    log_a = (-300 - 100 * torch.rand(6, dtype=F64, generator=generator)).requires_grad_()
    weights = torch.randn(6, 6, dtype=F64, generator=generator)
    (segsum(log_a).exp() * weights).sum().backward()
    terms = weights * explicit_mask(log_a.detach())  # W_ij L_ij
    expected = torch.stack([terms[k:, :k].sum() for k in range(6)])
    torch.testing.assert_close(log_a.grad, expected, rtol=1e-13, atol=0)


def test_the_attention_form_is_L_times_the_scores_times_x():
    x, log_a, B, C, _ = ssd_inputs(batch=1, steps=9, heads=2)
    y, _ = ssd_attention(x, log_a, B, C)
    for head in range(2):
        scores = C[0, :, head] @ B[0, :, head].T  # (time, time): C_i . B_j
        expected = (explicit_mask(log_a[0, :, head]) * scores) @ x[0, :, head]
        torch.testing.assert_close(y[0, :, head], expected, rtol=0, atol=1e-13)


@pytest.mark.parametrize("steps", [64, 128, 256])
@pytest.mark.parametrize("with_state", [False, True])
def test_recurrence_equals_masked_attention_to_round_off(steps, with_state):
    x, log_a, B, C, state = ssd_inputs(steps=steps, seed=steps)
    state = state if with_state else None
    y_rec, last_rec = ssd_recurrent(x, log_a, B, C, state)
    for y, last in (ssd_attention(x, log_a, B, C, state),
                    ssd_chunked(x, log_a, B, C, state, chunk_size=48)):
        torch.testing.assert_close(y, y_rec, rtol=0, atol=1e-12)
        torch.testing.assert_close(last, last_rec, rtol=0, atol=1e-12)


@FAST
@given(batch=st.integers(1, 3), steps=st.integers(1, 40), heads=st.integers(1, 3),
       P=st.integers(1, 4), N=st.integers(1, 4), chunk=st.integers(1, 17),
       decay=st.sampled_from([0.01, 1.0, 30.0]), seed=st.integers(0, 99))
def test_every_form_agrees_on_random_shapes_and_decays(batch, steps, heads, P, N, chunk, decay,
                                                       seed):
    x, log_a, B, C, state = ssd_inputs(batch, steps, heads, P, N, seed, decay)
    y_rec, last_rec = ssd_recurrent(x, log_a, B, C, state)
    y, last = ssd_chunked(x, log_a, B, C, state, chunk_size=chunk)
    torch.testing.assert_close(y, y_rec, rtol=0, atol=1e-12)
    torch.testing.assert_close(last, last_rec, rtol=0, atol=1e-12)


@pytest.mark.parametrize("form", [ssd_recurrent, ssd_attention, ssd_chunked])
def test_the_gradient_over_distance_is_the_product_of_the_decays(form):
    """dS_T/dS_k = (prod_{r=k+1..T} a_r) I for every head: the state enters linearly."""
    x, log_a, B, C, state = ssd_inputs(batch=1, steps=30, heads=2, P=2, N=3)
    jacobian = torch.autograd.functional.jacobian(lambda s: form(x, log_a, B, C, s)[1], state)
    jacobian = jacobian.flatten(0, 3).flatten(1)  # (heads N P, heads N P)
    products = log_a[0].sum(0).exp()  # (heads,)
    expected = torch.diag(products.repeat_interleave(3 * 2))
    torch.testing.assert_close(jacobian, expected, rtol=1e-13, atol=1e-300)


def test_the_layers_decays_start_near_one_and_stay_in_zero_one():
    torch.manual_seed(0)
    layer = ScalarSSM(8, 4, 3, dt_min=1e-3, dt_max=1e-1).double()
    dt = torch.nn.functional.softplus(layer.dt_proj.bias)
    assert ((dt >= 1e-3 - 1e-12) & (dt <= 1e-1 + 1e-12)).all()
    assert ((layer.A_log.exp() >= 1) & (layer.A_log.exp() <= 16)).all()
    _, log_a, _, _ = layer.ssm_inputs(10 * torch.randn(2, 50, 8, dtype=F64))
    assert (log_a < 0).all() and (log_a > -math.inf).all()


def test_the_layer_adds_the_skip_D_x():
    torch.manual_seed(0)
    layer = ScalarSSM(6, 2, 3).double()
    x = torch.randn(2, 7, 6, dtype=F64)
    with torch.no_grad():
        y_ssm, _ = ssd_chunked(*layer.ssm_inputs(x))
        layer.D.fill_(0.0)
        torch.testing.assert_close(layer(x)[0], y_ssm.flatten(-2), rtol=0, atol=0)
        layer.D.copy_(torch.tensor([2.0, -1.0]))
        skip = torch.cat([2 * x[..., :3], -x[..., 3:]], -1)
        torch.testing.assert_close(layer(x)[0], y_ssm.flatten(-2) + skip, rtol=0, atol=1e-15)


x, log_a, B, C, state = ssd_inputs(batch=1, steps=5)


@pytest.mark.parametrize("call, error, message", [
    (lambda: ssd_recurrent(x[0], log_a, B, C), ValueError, r"x must have shape"),
    (lambda: ssd_recurrent(x, log_a[..., :2], B, C), ValueError, r"must have shapes"),
    (lambda: ssd_attention(x, log_a, B, C[..., :2]), ValueError, r"must have shapes"),
    (lambda: ssd_chunked(x, log_a.float(), B, C), TypeError, r"log_a is float32"),
    (lambda: ssd_chunked(x, log_a, B.long(), C), TypeError, r"B must be a floating"),
    (lambda: ssd_chunked(x, log_a, B, C, state[..., :1]), ValueError,
     r"state must have shape \(batch, heads, N, P\)"),
    (lambda: ssd_chunked(x, log_a, B, C, chunk_size=0), ValueError, r"chunk_size"),
    (lambda: segsum([1.0]), TypeError, r"log_a must be a torch.Tensor"),
    (lambda: ScalarSSM(6, 4), ValueError, r"d_model must be a multiple of num_heads"),
    (lambda: ScalarSSM(6, 2, form="scan"), ValueError, r"form must be one of"),
    (lambda: ScalarSSM(6, 2, state_size=0), ValueError, r"state_size must be at least 1"),
    (lambda: decay_parameters(6, 2, dt_min=0.2, dt_max=0.1), ValueError,
     r"need 0 < dt_min <= dt_max"),
    (lambda: decay_parameters(6, 2, dt_min=float("nan")), ValueError, r"dt_min must be finite"),
])
def test_ssd_checks_its_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()

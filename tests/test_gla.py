"""Gated linear attention (Chapter 6): the attention form equals the recurrence in float64;
with alpha = 1 it is the additive write of DeltaNet's rule with beta = 1, and with one decay for
every channel it is Mamba-2's scalar SSM; the gradient over distance is the product of the
diagonal transitions."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from longdep.models.delta import delta_rule_recurrent
from longdep.models.gla import gla_attention, gla_recurrent
from longdep.models.ssd import ssd_recurrent

F64 = torch.float64
FAST = settings(max_examples=25, deadline=None, database=None)


def gla_inputs(lead=(2,), steps=30, d_k=4, d_v=3, seed=0, decay=1.0):
    generator = torch.Generator().manual_seed(seed)

    def draw(*shape):
        return torch.randn(*lead, *shape, dtype=F64, generator=generator)

    log_alpha = -decay * torch.rand(*lead, steps, d_k, dtype=F64, generator=generator)
    return draw(steps, d_k), draw(steps, d_k), draw(steps, d_v), log_alpha, draw(d_k, d_v)


@FAST
@given(steps=st.integers(1, 40), d_k=st.integers(1, 5), d_v=st.integers(1, 4),
       with_state=st.booleans(), decay=st.sampled_from([0.01, 1.0, 30.0]),
       seed=st.integers(0, 99))
def test_the_attention_form_equals_the_recurrence(steps, d_k, d_v, with_state, decay, seed):
    q, k, v, log_alpha, state = gla_inputs((2, 3), steps, d_k, d_v, seed, decay)
    state = state if with_state else None
    y_rec, last_rec = gla_recurrent(q, k, v, log_alpha, state)
    y, last = gla_attention(q, k, v, log_alpha, state)
    torch.testing.assert_close(y, y_rec, rtol=0, atol=1e-12)
    torch.testing.assert_close(last, last_rec, rtol=0, atol=1e-12)


def test_without_decay_it_is_the_additive_write():
    q, k, v, log_alpha, state = gla_inputs(steps=20)
    y, last = gla_attention(q, k, v, torch.zeros_like(log_alpha), state)
    y_add, last_add = delta_rule_recurrent(q, k, v, torch.ones(2, 20, dtype=F64), None, state,
                                           write="additive")
    torch.testing.assert_close(y, y_add, rtol=0, atol=1e-13)
    torch.testing.assert_close(last, last_add, rtol=0, atol=1e-13)


def test_one_decay_for_every_channel_is_mamba_2():
    """S_t = a_t S_{t-1} + k_t v_t^T, y = S^T q is Mamba-2's recurrence with B = k, x = v,
    C = q (one head)."""
    q, k, v, log_alpha, state = gla_inputs(steps=25)
    scalar = log_alpha[..., :1].expand_as(log_alpha)
    y, last = gla_attention(q, k, v, scalar, state)
    y_ssd, last_ssd = ssd_recurrent(v[:, :, None], scalar[..., 0, None], k[:, :, None],
                                    q[:, :, None], state[:, None])
    torch.testing.assert_close(y, y_ssd[:, :, 0], rtol=0, atol=1e-13)
    torch.testing.assert_close(last, last_ssd[:, 0], rtol=0, atol=1e-13)


@pytest.mark.parametrize("form", [gla_recurrent, gla_attention])
def test_the_gradient_over_distance_is_the_product_of_the_gates(form):
    """dS_T/dS_{-1} = diag(prod_t alpha_t) (x) I_{d_v}, channel by channel."""
    q, k, v, log_alpha, state = gla_inputs((), steps=15, d_k=3, d_v=2)
    jacobian = torch.autograd.functional.jacobian(
        lambda s: form(q, k, v, log_alpha, s)[1], state)  # (d_k, d_v, d_k, d_v)
    expected = torch.einsum("ik,jl->ijkl", torch.diag(log_alpha.sum(0).exp()),
                            torch.eye(2, dtype=F64))
    torch.testing.assert_close(jacobian, expected, rtol=1e-13, atol=1e-300)


q, k, v, log_alpha, state = gla_inputs(steps=6)


@pytest.mark.parametrize("call, error, message", [
    (lambda: gla_recurrent(q, k[..., :2], v, log_alpha), ValueError, r"must share"),
    (lambda: gla_attention(q, k, v[..., :3, :], log_alpha), ValueError, r"must share"),
    (lambda: gla_attention(q, k, v, log_alpha[..., :1]), ValueError, r"must share"),
    (lambda: gla_attention(q, k, v.float(), log_alpha), TypeError, r"v is float32"),
    (lambda: gla_recurrent(q, k, v, log_alpha.long()), TypeError, r"log_alpha must be a float"),
    (lambda: gla_attention(q, k, v, log_alpha, state[:1]), ValueError,
     r"state must have shape \(\.\.\., d_k, d_v\)"),
    (lambda: gla_recurrent([1.0], k, v, log_alpha), TypeError, r"q must be a torch.Tensor"),
])
def test_gla_checks_its_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()

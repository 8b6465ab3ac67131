"""DeltaNet and Gated DeltaNet (Chapter 6): the chunked (WY) form equals the recurrence in
float64; the delta rule replaces what a key stored where the additive write adds to it; the
additive write normalised is linear attention; the gradient over distance is prod A_t."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from longdep.models.delta import DeltaNet, delta_rule_chunked, delta_rule_recurrent
from longdep.models.linear import elu_feature_map, linear_attention

F64 = torch.float64
FAST = settings(max_examples=25, deadline=None, database=None)


def rule_inputs(lead=(2, 3), steps=40, d_k=5, d_v=4, seed=0, gated=True, decay=1.0):
    """q, unit k, v, beta in (0, 1), log alpha in (-decay, 0] (or None), a state, in float64."""
    generator = torch.Generator().manual_seed(seed)

    def draw(*shape):
        return torch.randn(*lead, *shape, dtype=F64, generator=generator)

    q, k, v = draw(steps, d_k), torch.nn.functional.normalize(draw(steps, d_k), dim=-1), draw(
        steps, d_v)
    beta = torch.rand(*lead, steps, dtype=F64, generator=generator)
    log_alpha = -decay * torch.rand(*lead, steps, dtype=F64, generator=generator)
    return q, k, v, beta, log_alpha if gated else None, draw(d_k, d_v)


@pytest.mark.parametrize("write", ["delta", "additive"])
@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("steps, chunk", [(64, 16), (128, 32), (256, 64), (100, 7)])
def test_the_chunked_form_equals_the_recurrence(write, gated, steps, chunk):
    q, k, v, beta, log_alpha, state = rule_inputs(steps=steps, gated=gated, seed=steps)
    y_rec, last_rec = delta_rule_recurrent(q, k, v, beta, log_alpha, state, write)
    y, last = delta_rule_chunked(q, k, v, beta, log_alpha, state, write, chunk_size=chunk)
    torch.testing.assert_close(y, y_rec, rtol=0, atol=1e-12)
    torch.testing.assert_close(last, last_rec, rtol=0, atol=1e-12)


@FAST
@given(steps=st.integers(1, 40), d_k=st.integers(1, 5), d_v=st.integers(1, 4),
       chunk=st.integers(1, 17), gated=st.booleans(), with_state=st.booleans(),
       decay=st.sampled_from([0.01, 1.0, 30.0]), seed=st.integers(0, 99))
def test_the_forms_agree_on_random_shapes(steps, d_k, d_v, chunk, gated, with_state, decay,
                                          seed):
    q, k, v, beta, log_alpha, state = rule_inputs((2,), steps, d_k, d_v, seed, gated, decay)
    state = state if with_state else None
    y_rec, last_rec = delta_rule_recurrent(q, k, v, beta, log_alpha, state)
    y, last = delta_rule_chunked(q, k, v, beta, log_alpha, state, chunk_size=chunk)
    torch.testing.assert_close(y, y_rec, rtol=0, atol=1e-12)
    torch.testing.assert_close(last, last_rec, rtol=0, atol=1e-12)


def test_the_recurrence_is_the_papers_matrix_update():
    """S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T, y_t = S_t^T q_t."""
    q, k, v, beta, log_alpha, state = rule_inputs((), steps=12)
    S, outputs = state, []
    for t in range(12):
        A = log_alpha[t].exp() * (torch.eye(5, dtype=F64) - beta[t] * torch.outer(k[t], k[t]))
        S = A @ S + beta[t] * torch.outer(k[t], v[t])
        outputs.append(S.T @ q[t])
    y, last = delta_rule_recurrent(q, k, v, beta, log_alpha, state)
    torch.testing.assert_close(y, torch.stack(outputs), rtol=0, atol=1e-14)
    torch.testing.assert_close(last, S, rtol=0, atol=1e-14)


def write_then_read(write, reassign):
    """Store 8 values under orthonormal keys with beta = 1, write key 0 again with a new value,
    then read key 0."""
    keys = torch.linalg.qr(torch.randn(16, 16, dtype=F64,
                                       generator=torch.Generator().manual_seed(0)))[0][:8]
    values = torch.randn(9, 4, dtype=F64, generator=torch.Generator().manual_seed(1))
    k = torch.cat([keys, keys[reassign:reassign + 1]])  # (9, 16)
    y, _ = delta_rule_recurrent(k, k, values, torch.ones(9, dtype=F64), write=write)
    return y[-1], values


def test_the_delta_rule_replaces_a_reassigned_value_and_the_additive_write_adds_it():
    read, values = write_then_read("delta", reassign=0)
    torch.testing.assert_close(read, values[8], rtol=0, atol=1e-14)  # the last write wins
    read, values = write_then_read("additive", reassign=0)
    torch.testing.assert_close(read, values[0] + values[8], rtol=0, atol=1e-14)


def test_the_additive_write_normalised_is_linear_attention():
    """With phi(q), phi(k) as queries and keys, beta = alpha = 1: dividing by the same write of
    ones (phi(q) . sum phi(k)) gives longdep.models.linear.linear_attention exactly."""
    q, k, v, _, _, _ = rule_inputs(steps=30)
    phi_q, phi_k, ones = elu_feature_map(q), elu_feature_map(k), torch.ones(2, 3, 30, dtype=F64)
    numerator, _ = delta_rule_chunked(phi_q, phi_k, v, ones, write="additive", chunk_size=8)
    denominator, _ = delta_rule_chunked(phi_q, phi_k, ones[..., None], ones, write="additive")
    torch.testing.assert_close(numerator / denominator, linear_attention(q, k, v), rtol=0,
                               atol=1e-13)


@pytest.mark.parametrize("form", [delta_rule_recurrent, delta_rule_chunked])
def test_the_gradient_over_distance_is_the_product_of_the_transitions(form):
    """dS_T/dS_k = (prod_{t=T..k+1} A_t) (x) I_{d_v} with A_t = alpha_t (I - beta_t k_t k_t^T)."""
    q, k, v, beta, log_alpha, state = rule_inputs((), steps=25, d_k=4, d_v=3)
    jacobian = torch.autograd.functional.jacobian(
        lambda s: form(q, k, v, beta, log_alpha, s)[1], state)  # (d_k, d_v, d_k, d_v)
    product = torch.eye(4, dtype=F64)
    for t in range(25):
        A = log_alpha[t].exp() * (torch.eye(4, dtype=F64) - beta[t] * torch.outer(k[t], k[t]))
        product = A @ product
    expected = torch.einsum("ik,jl->ijkl", product, torch.eye(3, dtype=F64))
    torch.testing.assert_close(jacobian, expected, rtol=0, atol=1e-15)


def test_directions_no_key_wrote_to_are_kept_by_deltanet():
    """For alpha = 1, prod A_t leaves every direction orthogonal to all keys unchanged."""
    q, k, v, beta, _, state = rule_inputs((), steps=10, d_k=6, d_v=2)
    k[:, 4:] = 0.0  # keys span the first four directions only
    k = torch.nn.functional.normalize(k, dim=-1)
    state[:4] = 0.0
    _, last = delta_rule_recurrent(q, k, torch.zeros_like(v), beta, None, state)
    torch.testing.assert_close(last, state, rtol=0, atol=0)


def test_the_layer_normalises_queries_and_keys_and_gates_in_range():
    torch.manual_seed(0)
    layer = DeltaNet(8, 2, gated=True).double()
    q, k, v, beta, log_alpha = layer.rule_inputs(5 * torch.randn(3, 11, 8, dtype=F64))
    for unit in (q, k):
        torch.testing.assert_close(unit.norm(dim=-1), torch.ones(3, 2, 11, dtype=F64))
    assert ((beta > 0) & (beta < 1)).all() and (log_alpha < 0).all()
    assert v.shape == (3, 2, 11, 4) and DeltaNet(8, 2).rule_inputs(torch.ones(1, 2, 8))[4] is None


q, k, v, beta, log_alpha, state = rule_inputs((2,), steps=6)


@pytest.mark.parametrize("call, error, message", [
    (lambda: delta_rule_recurrent(q, k[..., :2], v, beta), ValueError, r"must share"),
    (lambda: delta_rule_recurrent(q, k, v[:1], beta), ValueError, r"must share"),
    (lambda: delta_rule_chunked(q, k, v, beta[..., :3]), ValueError, r"must share"),
    (lambda: delta_rule_chunked(q, k, v, beta, log_alpha[..., 1:]), ValueError, r"must share"),
    (lambda: delta_rule_chunked(q, k, v.float(), beta), TypeError, r"v is float32"),
    (lambda: delta_rule_chunked(q, k, v, beta.long()), TypeError, r"beta must be a floating"),
    (lambda: delta_rule_chunked(q, k, v, beta, None, state[:1]), ValueError,
     r"state must have shape \(\.\.\., d_k, d_v\)"),
    (lambda: delta_rule_chunked(q, k, v, beta, chunk_size=0), ValueError, r"chunk_size"),
    (lambda: delta_rule_recurrent(q, k, v, beta, write="hebbian"), ValueError,
     r"write must be one of \['delta', 'additive'\]"),
    (lambda: DeltaNet(8, 3), ValueError, r"d_model must be a multiple of num_heads"),
    (lambda: DeltaNet(8, 2, gated=1), TypeError, r"gated must be a bool"),
    (lambda: DeltaNet(8, 2, form="parallel"), ValueError, r"form must be one of"),
    (lambda: DeltaNet(8, 2, chunk_size=0), ValueError, r"chunk_size must be at least 1"),
])
def test_delta_rule_checks_its_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()

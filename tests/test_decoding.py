"""Chapter 6, decoding: one step at a time, or several new tokens at once, gives the parallel
forward pass, in float64; caches and states that do not fit the new tokens are refused."""

import pytest
import torch
from longdep.models.attention import causal_mask, scaled_dot_product_attention
from longdep.models.decode import (
    linear_attention_step,
    softmax_attention_step,
    ssm_step,
    state_bytes,
)
from longdep.models.linear import linear_attention
from longdep.models.ssm import SelectiveSSM

STEPS = 37
F64 = torch.float64


def run(step, *sequences, block=1):
    """The step over the sequences cut into blocks of ``block`` new tokens (the last shorter)."""
    state, outputs, sizes = None, [], []
    for t in range(0, sequences[0].size(1), block):
        output, state = step(*(s[:, t:t + block] for s in sequences), state)
        outputs.append(output)
        sizes.append(state_bytes(state))
    return torch.cat(outputs, 1), sizes


def qkv(seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(3, STEPS, 8, dtype=F64, generator=generator) for _ in range(3)]


def ssm_layer():
    torch.manual_seed(0)
    return SelectiveSSM(6, 3).double()


def parallel(kind):
    """(the step, its inputs, the parallel forward pass on them) for each kind of mixer."""
    if kind == "softmax":
        q, k, v = qkv()
        return softmax_attention_step, (q, k, v), scaled_dot_product_attention(
            q, k, v, causal_mask(STEPS))[0]
    if kind == "linear":
        q, k, v = qkv(1)
        return linear_attention_step, (q, k, v), linear_attention(q, k, v)
    layer, x = ssm_layer(), torch.randn(2, STEPS, 6, dtype=F64)
    with torch.no_grad():
        return (lambda x_t, h: ssm_step(layer, x_t, h)), (x,), layer(x)


@pytest.mark.parametrize("block", [1, 2, 5])
@pytest.mark.parametrize("kind", ["softmax", "linear", "ssm"])
def test_blocks_of_new_tokens_equal_the_parallel_forward_pass(kind, block):
    """Causal inside each block: new token i sees the kept past and new tokens 0..i only."""
    step, inputs, expected = parallel(kind)
    incremental, _ = run(step, *inputs, block=block)
    torch.testing.assert_close(incremental, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["softmax", "linear", "ssm"])
def test_a_prompt_at_once_then_one_token_at_a_time(kind):
    step, inputs, expected = parallel(kind)
    prompt, state = step(*(s[:, :20] for s in inputs), None)
    outputs = [prompt]
    for t in range(20, STEPS):
        output, state = step(*(s[:, t:t + 1] for s in inputs), state)
        outputs.append(output)
    torch.testing.assert_close(torch.cat(outputs, 1), expected, rtol=0, atol=1e-12)


def test_a_later_new_token_never_reaches_an_earlier_one_in_its_block():
    q, k, v = qkv()
    for step in (softmax_attention_step, linear_attention_step):
        before, _ = step(q[:, :5], k[:, :5], v[:, :5])
        changed = v.clone()
        changed[:, 4] = 1e6
        after, _ = step(q[:, :5], k[:, :5], changed[:, :5])
        assert torch.equal(before[:, :4], after[:, :4]) and not torch.equal(before, after)


def test_the_kv_cache_grows_and_the_other_states_do_not():
    _, sizes = run(softmax_attention_step, *qkv())
    assert sizes == [2 * 3 * t * 8 * 8 for t in range(1, STEPS + 1)]  # grows with t
    _, sizes = run(linear_attention_step, *qkv(1), block=5)
    assert set(sizes) == {(3 * 8 * 8 + 3 * 8) * 8}  # constant
    layer = ssm_layer()
    _, sizes = run(lambda x_t, h: ssm_step(layer, x_t, h), torch.randn(2, STEPS, 6, dtype=F64))
    assert set(sizes) == {2 * 6 * 3 * 8}


NEW = torch.randn(2, 1, 4)
CACHES = [
    ((torch.zeros(1, 3, 4), torch.zeros(1, 3, 4)), ValueError,
     r"cache keys must have shape \(2, t, 4\) to fit the new tokens \(2, 1, 4\), got .*"
     r"\(1, 3, 4\)"),
    ((torch.zeros(2, 3, 5), torch.zeros(2, 3, 4)), ValueError, r"cache keys must have shape"),
    ((torch.zeros(2, 3, 4), torch.zeros(2, 2, 4)), ValueError,
     r"cache values must have shape \(2, 3, 4\)"),
    ((torch.zeros(2, 3, 4, dtype=F64),) * 2, TypeError,
     r"cache keys is float64 on cpu, but the new tokens are float32"),
    ((torch.zeros(2, 3, 4, dtype=torch.long),) * 2, TypeError, r"cache keys must be a floating"),
    (torch.zeros(2, 3, 4), TypeError, r"cache must be None or a pair \(keys, values\)"),
    ([[0.0]], TypeError, r"cache must be None or a pair"),
]


@pytest.mark.parametrize("cache, error, message", CACHES)
def test_a_kv_cache_that_does_not_fit_is_refused_by_name(cache, error, message):
    with pytest.raises(error, match=message):
        softmax_attention_step(NEW, NEW, NEW, cache)


@pytest.mark.parametrize("state, error, message", [
    ((torch.ones(1, 4, 4), torch.ones(1, 4)), ValueError, r"state S must have shape \(2, 4, 4\)"),
    ((torch.ones(2, 4, 5), torch.ones(2, 4)), ValueError, r"state S must have shape \(2, 4, 4\)"),
    ((torch.ones(2, 4, 4), torch.ones(2, 3)), ValueError, r"state z must have shape \(2, 4\)"),
    ((torch.ones(2, 4, 4, dtype=F64), torch.ones(2, 4, dtype=F64)), TypeError,
     r"state S is float64"),
    (torch.ones(2, 4, 4), TypeError, r"state must be None or a pair \(S, z\)"),
])
def test_a_linear_attention_state_that_does_not_fit_is_refused_by_name(state, error, message):
    with pytest.raises(error, match=message):
        linear_attention_step(NEW, NEW, NEW, state)


@pytest.mark.parametrize("call, error, message", [
    (lambda layer: ssm_step(layer, torch.randn(2, 1, 4), torch.zeros(1, 4, 3)), ValueError,
     r"h must have shape \(batch, d_model, state_size\) = \(2, 4, 3\), got .*\(1, 4, 3\)"),
    (lambda layer: ssm_step(layer, torch.randn(2, 1, 4), torch.zeros(2, 4, 2)), ValueError,
     r"h must have shape"),
    (lambda layer: ssm_step(layer, torch.randn(2, 1, 4), torch.zeros(2, 4, 3, dtype=F64)),
     TypeError, r"h is float64 on cpu, but the inputs are float32"),
    (lambda layer: ssm_step(layer, torch.randn(2, 4)), ValueError,
     r"x_t must have shape \(batch, time, 4\)"),
    (lambda layer: ssm_step(torch.nn.Linear(4, 4), torch.randn(2, 1, 4)), TypeError,
     r"layer must be a SelectiveSSM"),
    (lambda layer: linear_attention_step(NEW, NEW, NEW, None, 3), TypeError,
     r"feature_map must be callable"),
    (lambda layer: softmax_attention_step(NEW, NEW, NEW.double()), TypeError,
     r"v_t is float64 on cpu, but q_t is float32"),
    (lambda layer: softmax_attention_step(NEW, torch.randn(2, 2, 4), torch.randn(2, 2, 4)),
     ValueError, r"q_t .* and k_t .*: this attention needs time_q = time_k"),
    (lambda layer: state_bytes("abc"), TypeError, r"state must be a tensor or a tuple"),
])
def test_decoding_checks_its_other_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call(SelectiveSSM(4, 3))


def test_decoding_costs_grow_for_the_cache_only():
    from longdep.experiments.attention_costs import DECODING_KINDS, decoding_costs
    costs = decoding_costs([8, 16, 32], features=4, state_size=2)
    softmax, linear, ssm = DECODING_KINDS
    assert costs.flops[softmax] == [4 * n * 4 for n in (8, 16, 32)]  # q.K^T and w.V over n keys
    assert costs.state_bytes[softmax] == [2 * (n - 1) * 4 * 4 for n in (8, 16, 32)]
    for kind in (linear, ssm):
        assert len(set(costs.flops[kind])) == len(set(costs.state_bytes[kind])) == 1

"""Chapter 6, decoding: one step at a time gives the parallel forward pass, in float64."""

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


def run(step, *sequences):
    state, outputs, sizes = None, [], []
    for t in range(sequences[0].size(1)):
        output, state = step(*(s[:, t:t + 1] for s in sequences), state)
        outputs.append(output)
        sizes.append(state_bytes(state))
    return torch.cat(outputs, 1), sizes


def qkv(seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(3, STEPS, 8, dtype=torch.float64, generator=generator) for _ in range(3)]


def test_softmax_steps_with_a_kv_cache_equal_the_masked_forward_pass():
    q, k, v = qkv()
    incremental, sizes = run(softmax_attention_step, q, k, v)
    parallel, _ = scaled_dot_product_attention(q, k, v, causal_mask(STEPS))
    torch.testing.assert_close(incremental, parallel, rtol=0, atol=1e-12)
    assert sizes == [2 * 3 * t * 8 * 8 for t in range(1, STEPS + 1)]  # grows with t


def test_linear_attention_steps_equal_the_chunked_forward_pass():
    q, k, v = qkv(1)
    incremental, sizes = run(linear_attention_step, q, k, v)
    torch.testing.assert_close(incremental, linear_attention(q, k, v), rtol=0, atol=1e-12)
    assert set(sizes) == {(3 * 8 * 8 + 3 * 8) * 8}  # constant


def test_ssm_steps_equal_the_parallel_scan():
    torch.manual_seed(0)
    layer = SelectiveSSM(6, 3).double()
    x = torch.randn(2, STEPS, 6, dtype=torch.float64)
    incremental, sizes = run(lambda x_t, h: ssm_step(layer, x_t, h), x)
    with torch.no_grad():
        torch.testing.assert_close(incremental, layer(x), rtol=0, atol=1e-12)
    assert set(sizes) == {2 * 6 * 3 * 8}


def test_decoding_costs_grow_for_the_cache_only():
    from longdep.experiments.attention_costs import DECODING_KINDS, decoding_costs
    costs = decoding_costs([8, 16, 32], features=4, state_size=2)
    softmax, linear, ssm = DECODING_KINDS
    assert costs.flops[softmax] == [4 * n * 4 for n in (8, 16, 32)]  # q.K^T and w.V over n keys
    assert costs.state_bytes[softmax] == [2 * (n - 1) * 4 * 4 for n in (8, 16, 32)]
    for kind in (linear, ssm):
        assert len(set(costs.flops[kind])) == len(set(costs.state_bytes[kind])) == 1

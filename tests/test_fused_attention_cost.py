"""Chapter 6, "What is quadratic and what need not be": the fused attention kernel's counts."""

import torch
from longdep.experiments.attention_costs import attention_call, attention_costs
from longdep.measure.cost import attention_flops, peak_allocated_bytes, peak_tensor_bytes


def test_fused_softmax_is_softmax_attention():
    fused = attention_call("fused softmax", 40, features=8)()
    naive = attention_call("softmax", 40, features=8)()
    torch.testing.assert_close(fused, naive, rtol=1e-5, atol=1e-6)


def test_fused_kernel_counts_the_same_flops_and_far_less_memory():
    lengths, d = [256, 512, 1024], 8
    costs = attention_costs(lengths, features=d)
    assert costs.flops["fused softmax"] == costs.flops["softmax"] == [4 * n * n * d
                                                                       for n in lengths]
    # the naive kernel holds at least one (T, T) float32 matrix, the fused one far less
    for n, naive, fused in zip(lengths, costs.peak_bytes["softmax"],
                               costs.peak_bytes["fused softmax"]):
        assert naive >= 4 * n * n and 4 * fused < naive
    assert costs.peak_bytes == attention_costs(lengths, features=d).peak_bytes  # a count


def test_peak_allocated_bytes_sees_what_operators_return_and_buffers_they_keep_inside():
    x = torch.randn(64, 64)
    assert peak_allocated_bytes(lambda: x @ x) == peak_tensor_bytes(lambda: x @ x) == 64 * 64 * 4
    q = torch.randn(1, 1, 512, 16)
    def fused():
        return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)

    assert peak_allocated_bytes(fused) > peak_tensor_bytes(fused)  # the kernel's work buffer
    assert attention_flops(fused) == 4 * 512 * 512 * 16

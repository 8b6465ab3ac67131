"""Tests of Chapter 6's drivers (attention_costs, summary, the Performer and sparse paths): every
equality the chapter states, and clear errors."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from longdep import stats
from longdep.book import Bilingual, Table
from longdep.experiments import summary
from longdep.experiments.attention import fewest_layers, performer_errors, random_mask_path_lengths
from longdep.experiments.attention_costs import (
    ATTENTION_KINDS,
    attention_call,
    attention_costs,
    attention_seconds,
    crossover_phrase,
    decoding_costs,
    fused_scratch_mib,
    kv_attention_flops,
    kv_cache_bytes,
)
from longdep.experiments.registry import KIND, ORDER_BLIND, ModelShape
from longdep.experiments.summary import (
    SUMMARY_MODELS,
    LearningMeasures,
    big_o,
    cost_table,
    gradient_path_factors,
    gradient_ratio_draws,
    gradient_ratios,
    learning_table,
    model_name,
    path_length,
    sequential_depths,
    spread_text,
    state_transition_factors,
)
from longdep.experiments.summary_recall import (
    key_out_of_reach,
    key_recall_seed_accuracies,
    recall_core,
    recall_counts,
    verdict,
)
from longdep.measure.cost import (
    graph_depth,
    interleaved_seconds,
    matmul_flops,
    peak_allocated_bytes,
    peak_tensor_bytes,
    seconds_per_call,
)
from longdep.measure.fit import crossover_length, fitted_exponent, growth_label
from longdep.measure.gradients import ssm_decay_products
from longdep.measure.reach import masked_path_length, sweep_outputs
from longdep.models.attention import (
    MultiHeadAttention,
    causal_mask,
    scaled_dot_product_attention,
    sliding_window_mask,
)
from longdep.models.bag import BagOfTokens
from longdep.models.linear import (
    elu_feature_map,
    favor_features,
    linear_attention,
    linear_attention_recurrent,
    linformer_attention,
    random_projection,
)
from longdep.models.lstm import LSTM
from longdep.models.mixers import MIXERS, WindowedSelfAttention, mixer_stack
from longdep.models.rnn import ElmanRNN
from longdep.models.sparse import (
    bigbird_mask,
    global_token_mask,
    sliding_window_attention,
)
from longdep.models.ssm import SelectiveSSM, parallel_scan, sequential_scan

F64 = torch.float64


def qkv(*shape, seed=0, scale=1.0):
    generator = torch.Generator().manual_seed(seed)
    return tuple(scale * torch.randn(*shape, generator=generator, dtype=F64) for _ in range(3))


# Sparse attention -----------------------------------------------------------------------------

@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("window", [1, 4, 13])
def test_banded_window_attention_equals_the_masked_dense_one(causal, window):
    q, k, v = qkv(2, 3, 13, 8)
    banded = sliding_window_attention(q, k, v, window, causal)
    dense, _ = scaled_dot_product_attention(q, k, v, sliding_window_mask(13, window, causal))
    torch.testing.assert_close(banded, dense, rtol=0, atol=1e-12)


def test_window_mask_sees_window_keys_back_and_is_symmetric_without_causality():
    mask = sliding_window_mask(10, 3)
    assert mask.sum(1).tolist() == [1, 2] + [3] * 8
    assert not (mask & ~causal_mask(10)).any()
    both = sliding_window_mask(10, 3, causal=False)
    assert torch.equal(both, both.T) and both[5].nonzero().flatten().tolist() == [3, 4, 5, 6, 7]


def test_global_tokens_see_and_are_seen_by_everyone():
    mask = global_token_mask(12, 2, [0, 6], causal=False)
    assert mask[[0, 6]].all() and mask[:, [0, 6]].all()
    causal = global_token_mask(12, 2, [6])
    assert causal[6, :7].all() and causal[6:, 6].all() and not (causal & ~causal_mask(12)).any()


def test_bigbird_adds_random_keys_within_causality():
    generator = torch.Generator().manual_seed(0)
    mask = bigbird_mask(30, 3, [0], num_random=4, generator=generator)
    base = global_token_mask(30, 3, [0])
    assert not (base & ~mask).any() and not (mask & ~causal_mask(30)).any()
    extra = (mask & ~base).sum(1)
    assert (extra <= 4).all() and extra[10:].sum() > 0
    again = bigbird_mask(30, 3, [0], 4, generator=torch.Generator().manual_seed(0))
    assert torch.equal(mask, again)


@pytest.mark.parametrize("call, message", [
    (lambda: sliding_window_mask(5, 6), "larger than the sequence"),
    (lambda: sliding_window_mask(5, 0), "window must be at least 1"),
    (lambda: global_token_mask(5, 2, [5]), "global_positions must lie in"),
    (lambda: bigbird_mask(5, 2, [], num_random=-1), "num_random"),
    (lambda: sliding_window_attention(*qkv(1, 4, 2), window=5), "larger than the sequence"),
    (lambda: sliding_window_attention(torch.ones(1, 4, 2), torch.ones(1, 5, 2),
                                      torch.ones(1, 5, 2), window=2),
     "needs time_q = time_k"),
])
def test_sparse_attention_rejects_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# Linear attention, Performer, Linformer -------------------------------------------------------

@pytest.mark.parametrize("chunk_size", [1, 4, 17, 64])
def test_causal_linear_attention_parallel_equals_recurrent(chunk_size):
    q, k, v = qkv(2, 3, 17, 5)
    torch.testing.assert_close(linear_attention(q, k, v, chunk_size=chunk_size),
                               linear_attention_recurrent(q, k, v), rtol=0, atol=1e-12)


@pytest.mark.parametrize("causal", [True, False])
def test_linear_attention_is_attention_with_kernel_weights(causal):
    q, k, v = qkv(2, 11, 4)
    scores = elu_feature_map(q) @ elu_feature_map(k).transpose(-2, -1)
    if causal:
        scores = scores * causal_mask(11)
    weights = scores / scores.sum(-1, keepdim=True)
    torch.testing.assert_close(linear_attention(q, k, v, causal), weights @ v, rtol=0, atol=1e-12)


def test_linear_attention_is_not_softmax_attention():
    q, k, v = qkv(2, 20, 8)
    softmax, _ = scaled_dot_product_attention(q, k, v, causal_mask(20))
    assert (linear_attention(q, k, v) - softmax).norm() > 0.1 * softmax.norm()


def test_favor_features_are_positive_and_estimate_the_softmax_kernel():
    generator = torch.Generator().manual_seed(0)
    q, k = 0.5 * torch.randn(2, 1, 6, generator=generator, dtype=F64)
    projection = random_projection(200_000, 6, generator=generator)
    phi_q, phi_k = favor_features(q, projection), favor_features(k, projection)
    assert (phi_q > 0).all()
    estimate, exact = (phi_q @ phi_k.T).item(), math.exp((q @ k.T).item() / math.sqrt(6))
    assert abs(estimate - exact) < 0.01 * exact


def test_orthogonal_projection_rows_are_orthogonal_within_a_block():
    projection = random_projection(10, 4, generator=torch.Generator().manual_seed(0))
    block = projection[:4] / projection[:4].norm(dim=1, keepdim=True)
    torch.testing.assert_close(block @ block.T, torch.eye(4, dtype=F64), rtol=0, atol=1e-12)
    assert projection.shape == (10, 4)


def test_orthogonal_projection_rows_point_in_uniform_directions():
    projection = random_projection(3 * 20_000, 3, generator=torch.Generator().manual_seed(0))
    directions = projection / projection.norm(dim=1, keepdim=True)
    for first in range(3):  # the first, second and third row of every block
        assert directions[first::3].mean(0).abs().max() < 0.02


def test_performer_error_shrinks_with_more_features():
    q, k, v = qkv(1, 32, 8, scale=0.5)
    errors = performer_errors(q, k, v, [4, 1024], draws=5).median(dim=1).values
    assert errors[1] < 0.3 * errors[0]


def test_linformer_with_the_identity_projection_is_softmax_attention():
    q, k, v = qkv(2, 9, 4)
    exact, _ = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(linformer_attention(q, k, v, torch.eye(9, dtype=F64)), exact,
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda: random_projection(0, 4), "num_features must be at least 1"),
    (lambda: linear_attention(*qkv(1, 4, 2), chunk_size=0), "chunk_size"),
    (lambda: favor_features(torch.ones(3, 4), torch.ones(5, 3)), "features"),
    (lambda: linear_attention(torch.ones(2, 3, 4), torch.ones(2, 3, 5), torch.ones(2, 3, 4)),
     "shapes"),
    (lambda: linear_attention(torch.ones(3, 4), torch.ones(5, 4), torch.ones(5, 4)), "time_k"),
    (lambda: linformer_attention(*qkv(1, 9, 4), torch.ones(3, 8)), "length"),
    (lambda: performer_errors(*qkv(1, 4, 2), [2], draws=0), "draws"),
])
def test_linear_attention_rejects_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# State-space layer ----------------------------------------------------------------------------

@pytest.mark.parametrize("steps", [1, 2, 7, 16, 33])
def test_parallel_scan_equals_sequential_scan_with_gradients(steps):
    generator = torch.Generator().manual_seed(steps)
    a = torch.rand(3, steps, 4, 2, generator=generator, dtype=F64).requires_grad_()
    b = torch.randn(3, steps, 4, 2, generator=generator, dtype=F64).requires_grad_()
    sequential, parallel = sequential_scan(a, b), parallel_scan(a, b)
    torch.testing.assert_close(parallel, sequential, rtol=0, atol=1e-12)
    weights = torch.randn(sequential.shape, generator=generator, dtype=F64)
    by_loop = torch.autograd.grad((sequential * weights).sum(), (a, b), materialize_grads=True)
    by_scan = torch.autograd.grad((parallel * weights).sum(), (a, b), materialize_grads=True)
    for ours, theirs in zip(by_scan, by_loop):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-12)


def test_the_scan_gradient_is_the_product_of_the_gates():
    generator = torch.Generator().manual_seed(0)
    a = torch.rand(1, 9, 3, generator=generator, dtype=F64)
    b = torch.randn(1, 9, 3, generator=generator, dtype=F64).requires_grad_()
    (grad,) = torch.autograd.grad(parallel_scan(a, b)[:, -1].sum(), b)
    later = torch.cat([a[:, 1:], torch.ones_like(a[:, :1])], dim=1)
    torch.testing.assert_close(grad, later.flip(1).cumprod(1).flip(1), rtol=0, atol=1e-14)


def test_selective_ssm_scans_agree_and_its_memory_never_exceeds_one():
    torch.manual_seed(0)
    parallel = SelectiveSSM(6, 4).double()
    sequential = SelectiveSSM(6, 4, scan="sequential").double()
    sequential.load_state_dict(parallel.state_dict())
    x = torch.randn(2, 21, 6, dtype=F64)
    torch.testing.assert_close(parallel(x), sequential(x), rtol=0, atol=1e-12)
    memory = ssm_decay_products(parallel, x)
    assert memory[-1] == 1 and (memory <= 1).all() and (memory.diff() >= 0).all()


def test_one_state_selective_ssm_is_a_gated_rnn():
    """Gu and Dao (2023), Theorem 1: N = 1, A = -1, B = 1 gives h = (1 - g) h + g x."""
    torch.manual_seed(0)
    ssm = SelectiveSSM(3, state_size=1).double()
    with torch.no_grad():
        ssm.A_log.zero_()
        ssm.B_proj.weight.zero_()
        ssm.B_proj.weight[0, 0] = 1.0  # B_t = x_t[0]; feed x with x_t[0] = 1
    x = torch.randn(2, 5, 3, dtype=F64)
    x[..., 0] = 1.0
    decay, drive, _ = ssm.discretize(x)
    gate = torch.sigmoid(ssm.delta_proj(x))[..., None]
    torch.testing.assert_close(decay, 1 - gate, rtol=0, atol=1e-14)
    torch.testing.assert_close(drive, gate * x[..., None], rtol=0, atol=1e-14)


@pytest.mark.parametrize("call, message", [
    (lambda: sequential_scan(torch.ones(2, 3), torch.ones(2, 4)), "same shape"),
    (lambda: parallel_scan(torch.ones(3), torch.ones(3)),
     r"a must have shape \(batch, time, ...\)"),
    (lambda: SelectiveSSM(4, 2, scan="fast"), "scan"),
    (lambda: SelectiveSSM(4, 0), "state_size must be at least 1, got 0"),
    (lambda: SelectiveSSM(4, 2)(torch.ones(1, 3, 5)), r"x must have shape \(batch, time, 4\)"),
])
def test_ssm_rejects_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# Mixers inside the Transformer layer ----------------------------------------------------------

def test_windowed_mixer_equals_multi_head_attention_with_the_window_mask():
    torch.manual_seed(0)
    dense = MultiHeadAttention(8, 2).double()
    banded = WindowedSelfAttention(8, 2, window=3).double()
    banded.load_state_dict(dense.state_dict())
    x = torch.randn(2, 10, 8, dtype=F64)
    expected, _ = dense(x, x, x, sliding_window_mask(10, 3))
    torch.testing.assert_close(banded(x, x, x)[0], expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("mixer", MIXERS)
def test_every_mixer_stack_is_causal(mixer):
    torch.manual_seed(0)
    stack = mixer_stack(mixer, 8, 2, 2, 16, max_len=12, window=3).double()
    x = torch.randn(1, 12, 8, dtype=F64, requires_grad=True)
    weights = torch.randn(8, dtype=F64)  # not a plain sum: LayerNorm outputs sum to zero
    (grad,) = torch.autograd.grad((stack(x)[:, 5] * weights).sum(), x)
    assert grad[:, 6:].abs().max() == 0 and grad[:, :6].abs().max() > 0


def test_mixers_reject_masks_and_cross_attention():
    mixer = mixer_stack("linear", 8, 2, 1, 16, 10).layers[0].self_attn
    x = torch.randn(1, 4, 8)
    with pytest.raises(ValueError, match="no mask"):
        mixer(x, x, x, causal_mask(4))
    with pytest.raises(ValueError, match="self-attention"):
        mixer(x, x.clone(), x)
    with pytest.raises(ValueError, match="mixer must be one of"):
        mixer_stack("lstm", 8, 2, 1, 16, 10)


# Cost measurements ----------------------------------------------------------------------------

def test_peak_tensor_bytes_counts_live_tensors_only():
    assert peak_tensor_bytes(lambda: torch.zeros(1000).add(1)) == 8000  # both alive at once

    def one_after_the_other():
        first = torch.zeros(1000)
        del first
        return torch.zeros(1000)

    assert peak_tensor_bytes(one_after_the_other) == 4000
    x = torch.ones(50, 50)
    assert peak_tensor_bytes(lambda: x.T) == 0  # a view allocates nothing
    assert peak_tensor_bytes(lambda: x.T.contiguous()) == x.nbytes


def test_matmul_flops_and_graph_depth_count_exactly():
    a, b = torch.ones(3, 4), torch.ones(4, 5)
    assert matmul_flops(lambda: a @ b) == 2 * 3 * 4 * 5
    x = torch.ones(2, requires_grad=True)
    y = x
    for _ in range(5):
        y = y * 2
    assert graph_depth(y) == 6  # five multiplications and the leaf's gradient accumulator
    assert graph_depth(y + x) == 7
    with pytest.raises(ValueError, match="autograd graph"):
        graph_depth(torch.ones(2))


@pytest.mark.parametrize("entries, rounds", [(0, 1), (1, 1), (2, 1), (16, 4), (17, 5), (33, 6)])
def test_a_cumulative_sum_counts_the_rounds_of_a_parallel_prefix_sum(entries, rounds):
    x = torch.ones(3, entries, requires_grad=True)
    assert graph_depth(x.cumsum(1)) == 1 + rounds  # the leaf's accumulator, then the scan
    assert graph_depth(x.cumprod(1)) == 1 + rounds
    assert graph_depth(x.cumsum(0)) == graph_depth(x.cumsum(-2)) == 1 + 2  # 3 entries


def test_a_running_sum_is_a_scan_whichever_way_it_is_written():
    depths = {"cumsum": [], "scan": []}
    for n in (16, 32, 64, 128):
        b = torch.ones(1, n, 1, requires_grad=True)
        depths["cumsum"].append(graph_depth(b.cumsum(1)))
        depths["scan"].append(graph_depth(parallel_scan(torch.ones(1, n, 1), b)))
    for row in depths.values():  # a constant number of rounds more per doubling: log T
        assert len(set(np.diff(row))) == 1 and np.diff(row)[0] > 0


def test_fits_and_growth_labels():
    lengths = [8, 16, 32, 64]
    assert fitted_exponent(lengths, [3 * n**2 for n in lengths]) == pytest.approx(2)
    assert crossover_length(lengths, [n**2 for n in lengths], [16 * n for n in lengths]) \
        == pytest.approx(16)
    assert math.isnan(crossover_length(lengths, [n for n in lengths], [2 * n for n in lengths]))
    assert growth_label(lengths, [7, 7, 7, 7]) == "1"
    assert growth_label(lengths, [10 + 3 * math.log2(n) for n in lengths]) == "log T"
    assert growth_label(lengths, [5 + 2 * n for n in lengths]) == "T"
    assert growth_label(lengths, [n * n for n in lengths]) == "T^2"
    with pytest.raises(ValueError, match="twice"):
        growth_label([8, 10, 12], [1, 2, 3])
    with pytest.raises(ValueError, match="positive"):
        fitted_exponent([1, 2], [0, 1])
    with pytest.raises(ValueError, match="repeats"):
        seconds_per_call(lambda: None, repeats=0)
    assert seconds_per_call(lambda: sum(range(1000)), repeats=2) > 0


def test_crossover_is_where_first_stays_above_and_nan_without_one():
    lengths = [8, 16, 32, 64]
    # equal up to 16, above beyond: the crossing is at 16 exactly (softmax against a window)
    assert crossover_length(lengths, [1, 2, 8, 32], [1, 2, 4, 8]) == pytest.approx(16)
    # a noisy dip: the crossing that counts is the last one, after which first stays above
    assert crossover_length(lengths, [2, 1, 3, 8], [1, 2, 6, 4]) == pytest.approx(45.25, rel=0.01)
    assert math.isnan(crossover_length(lengths, [2, 3, 4, 5], [1, 1, 1, 1]))  # below the range
    assert math.isnan(crossover_length(lengths, [1, 3, 1, 1], [2, 2, 2, 2]))  # beyond it
    with pytest.raises(ValueError, match="two or more"):
        crossover_length([8], [1], [2])


def test_crossover_phrase_says_where_or_that_there_is_none_in_range():
    lengths = [32, 64, 128]
    at = crossover_phrase(lengths, [1, 4, 16], [2, 4, 8])
    assert (at.en, at.zh) == ("at about T = 64", "约在 T = 64 处")
    beyond = crossover_phrase(lengths, [1, 2, 3], [2, 4, 8])
    assert (beyond.en, beyond.zh) == ("beyond the timed range (T > 128)",
                                      "在计时范围之外（T > 128）")
    below = crossover_phrase(lengths, [3, 6, 9], [2, 4, 8])
    assert (below.en, below.zh) == ("below the timed range (T < 32)", "在计时范围之下（T < 32）")
    assert crossover_phrase(lengths, [1.0, 1.0, 4.0], [2.0, 2.0, 2.0]).en == "at about T = 91"


def test_kv_cache_formulas_count_what_a_decoding_step_reads_and_does():
    lengths = [64, 128, 256]
    decoding = decoding_costs(lengths, features=32)
    kind = "softmax attention (KV cache)"
    # one layer, one head of width 32, float32: the cache of the T - 1 earlier tokens
    assert decoding.state_bytes[kind] == [kv_cache_bytes(1, 1, 32, n - 1, bytes_per_number=4)
                                          for n in lengths]
    assert decoding.flops[kind] == [kv_attention_flops(1, 1, 32, n) for n in lengths]
    # shared keys and values shrink the cache by heads / kv_heads, not the FLOPs
    assert kv_cache_bytes(96, 96, 128, 2048) == 12 * kv_cache_bytes(96, 8, 128, 2048)
    assert kv_cache_bytes(4, 2, 8, 16, batch=3, bytes_per_number=4) == 2 * 4 * 2 * 8 * 16 * 3 * 4
    assert kv_attention_flops(96, 96, 128, 2048) == 2 * kv_cache_bytes(96, 96, 128, 2048, 1, 1)
    with pytest.raises(ValueError, match="kv_heads must be at least 1"):
        kv_cache_bytes(1, 0, 8, 16)


def test_interleaved_seconds_times_every_call_in_rounds():
    order = []
    seconds = interleaved_seconds({"a": lambda: order.append("a"),
                                   "b": lambda: order.append("b")}, repeats=3)
    assert order == ["a", "b"] * 4  # one warm-up round, then three timed rounds
    assert set(seconds) == {"a", "b"} and all(s >= 0 for s in seconds.values())
    with pytest.raises(ValueError, match="repeats"):
        interleaved_seconds({"a": lambda: None}, repeats=0)


def test_attention_costs_are_the_counts_of_the_formulas():
    lengths, d, w = [16, 32, 64, 128], 8, 16
    costs = attention_costs(lengths, features=d, window=w)
    assert costs.lengths == lengths and set(costs.flops) == set(ATTENTION_KINDS)
    assert costs.flops["softmax"] == [4 * n * n * d for n in lengths]
    assert costs.flops["sliding window"] == [4 * n * min(n, w) * d for n in lengths]
    chunked = [4 * max(n, 64) * (64 + d) * d for n in lengths]  # chunks of 64, padded
    assert costs.flops["linear"] == chunked
    assert costs.peak_bytes["softmax"][-1] >= 128 * 128 * 4  # the (T, T) float32 scores
    assert costs.peak_bytes == attention_costs(lengths, features=d, window=w).peak_bytes
    seconds = attention_seconds(lengths[:2], features=d, window=w, repeats=1)
    assert {kind: len(row) for kind, row in seconds.items()} == dict.fromkeys(ATTENTION_KINDS, 2)


def test_attention_cost_summaries_are_the_counts_rescaled_and_fitted():
    lengths, d, w = [8, 16, 32, 64, 128, 256], 8, 16
    costs = attention_costs(lengths, features=d, window=w)
    assert costs.mebibytes()["softmax"] == [b / 2**20 for b in costs.peak_bytes["softmax"]]
    flops = costs.exponents("flops")
    assert flops["softmax"] == pytest.approx(2.0, abs=1e-12)  # 4 T^2 d exactly
    assert flops["sliding window"] == pytest.approx(1.0, abs=1e-12)  # 4 T w d beyond T = w
    assert costs.exponents("memory", last=2)["softmax"] == fitted_exponent(
        lengths[-2:], costs.peak_bytes["softmax"][-2:])
    crossings = costs.flop_crossings()
    assert crossings["sliding window"] == pytest.approx(w)  # equal FLOPs up to T = w
    assert crossings["linear"] == pytest.approx(64 + d)  # chunks of 64: 4 T (64 + d) d
    with pytest.raises(ValueError, match="measure must be 'flops' or 'memory'"):
        costs.exponents("seconds")
    with pytest.raises(ValueError, match="last must be at least 2"):
        costs.exponents("flops", last=1)


def test_fused_scratch_is_the_fused_kernels_memory_beyond_its_output():
    lengths = [64, 512]
    scratch = fused_scratch_mib(lengths, features=8)
    for n, mib in zip(lengths, scratch):
        whole = peak_allocated_bytes(attention_call("fused softmax", n, 8))
        assert mib == (whole - 4 * n * 8) / 2**20
        assert 0 < mib * 2**20 < n * n * 4  # more than nothing, less than the T x T scores
    with pytest.raises(ValueError, match="features must be at least 1, got 0"):
        fused_scratch_mib([8], features=0)


def test_attention_calls_agree_where_they_must_and_reject_unknown_kinds():
    window = attention_call("sliding window", 16, features=4, window=16)()
    softmax = attention_call("softmax", 16, features=4)()
    torch.testing.assert_close(window, softmax, rtol=0, atol=1e-6)  # a full window is softmax
    with pytest.raises(ValueError, match="kind must be one of"):
        attention_call("dense", 16)


# Path lengths ---------------------------------------------------------------------------------

def test_masked_path_length_matches_chapter_4_and_the_window_formula():
    for steps in (9, 20, 33):
        mask = sliding_window_mask(steps, 5)
        measured = masked_path_length(mask)
        assert measured == fewest_layers("windowed attention", steps, window=5)
        assert measured == math.ceil((steps - 1) / 4)
    assert masked_path_length(global_token_mask(33, 5, [16])) == 2
    with pytest.raises(ValueError, match="no path"):
        masked_path_length(sliding_window_mask(6, 1))
    with pytest.raises(TypeError, match="mask must be a boolean"):
        masked_path_length(torch.ones(4, 4))


def test_random_mask_path_lengths_measure_independent_masks():
    lengths = random_mask_path_lengths(64, 8, [], 2, draws=9,
                                       generator=torch.Generator().manual_seed(0))
    assert len(lengths) == 9 and len(set(lengths)) > 1  # the path length itself is random
    replay = torch.Generator().manual_seed(0)  # draw i is the i-th mask from the generator
    assert lengths == [masked_path_length(bigbird_mask(64, 8, [], 2, replay)) for _ in range(9)]
    assert max(lengths) <= math.ceil(63 / 7)  # random links only add paths to the window's
    assert random_mask_path_lengths(33, 5, [16], 0, draws=3) == [2, 2, 2]
    with pytest.raises(ValueError, match="draws must be at least 1"):
        random_mask_path_lengths(8, 2, [], 1, draws=0)


def test_sweeps_of_a_recurrence_reach_its_outputs_one_step_per_sweep():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 3, dtype=F64)
    for model in (ElmanRNN(3, 4).double(), LSTM(3, 4).double()):
        sweeps = list(sweep_outputs(model, x, 6))
        torch.testing.assert_close(sweeps[-1], model(x)[0], rtol=0, atol=1e-12)
        torch.testing.assert_close(sweeps[2][:, :3], model(x)[0][:, :3], rtol=0, atol=1e-12)


def test_path_lengths_of_the_book_models():
    shape = ModelShape(width=8, d_ff=8, window=4)
    assert path_length("tanh RNN", 12, shape) == fewest_layers("recurrent", 12) == 12
    assert path_length("LSTM", 12, shape) == 12
    assert path_length("sliding-window attention", 12, shape) == math.ceil(11 / 3)
    for name in ("Transformer (softmax attention)", "linear attention", "selective SSM"):
        assert path_length(name, 12, shape) == 1
    with pytest.raises(ValueError, match="model must be one of"):
        path_length("GRU", 12, shape)


def test_book_models_map_embeddings_to_the_shared_width_and_measure():
    shape = ModelShape(width=8, d_ff=8, window=4)
    for name in SUMMARY_MODELS:
        output = KIND[name].build(shape)(torch.randn(2, 5, shape.input_size))
        assert (output[0] if isinstance(output, tuple) else output).shape == (2, 5, 8)
        ratios = gradient_ratios(name, 9, shape)
        assert ratios.shape == (9,) and ratios[0] == 1
    assert gradient_ratios("sliding-window attention", 9, shape)[4:].abs().max() == 0
    rnn_depths = sequential_depths("tanh RNN", [4, 8], shape)
    assert rnn_depths[1] > rnn_depths[0] == sequential_depths("tanh RNN", [4], shape)[0]


def test_key_recall_counts_verdicts_and_the_key_out_of_reach():
    accuracies = torch.tensor([1.0] * 8 + [0.5, 0.1], dtype=torch.float64)
    solved, beats = recall_counts(accuracies, 40)  # the order-blind bound at 40 is 0.21
    assert (solved.successes, beats.successes, solved.trials) == (8, 9, 10)
    word, none = verdict(beats), verdict(solved)  # 9 of 10: "mostly"; 8 of 10: no word
    assert word.en == "mostly (9 of 10 seeds, interval 0.60–0.98)"
    assert word.zh == "大多（10 个种子中 9 个，区间 0.60–0.98）"
    assert none.en == "in 8 of 10 seeds (interval 0.49–0.94)"
    shape = ModelShape(width=8, d_ff=8, window=4)
    # one layer, a window of 4 keys: the query sees 3 steps back, not 4
    assert key_out_of_reach("sliding-window attention", 4, shape)
    assert not key_out_of_reach("sliding-window attention", 3, shape)
    for name in ("tanh RNN", "LSTM", "Transformer (softmax attention)", "selective SSM"):
        assert not key_out_of_reach(name, 20, shape)
    with pytest.raises(ValueError, match="accuracies must be a non-empty"):
        recall_counts(torch.ones(2, 2), 40)


def test_recall_cores_return_the_full_models_last_position():
    shape = ModelShape(width=8, d_ff=8, window=4)
    x = torch.randn(2, 6, shape.input_size)
    for name in ("tanh RNN", "LSTM", "Transformer (softmax attention)", "linear attention",
                 "selective SSM", ORDER_BLIND):
        torch.manual_seed(0)
        full = KIND[name].build(shape)
        torch.manual_seed(0)
        core = recall_core(name, shape)
        outputs, mine = full(x), core(x)
        last = (outputs[0] if isinstance(outputs, tuple) else outputs)[:, -1]
        mine = mine[0] if isinstance(mine, tuple) else mine
        torch.testing.assert_close(mine[:, -1], last, rtol=0, atol=1e-6)
        assert not isinstance(core, torch.nn.RNNBase)  # vmap batches it
    assert recall_core("Transformer (softmax attention)", shape).last_only
    with pytest.raises(ValueError, match="name must be one of"):
        recall_core("GRU", shape)


def test_model_names_in_both_languages():
    assert (model_name("selective SSM").en, model_name("selective SSM").zh) == (
        "selective SSM", "选择性 SSM")
    assert all(model_name(name).zh for name in SUMMARY_MODELS)
    with pytest.raises(ValueError, match="name must be one of"):
        model_name("GRU")


def test_summary_tables_show_measures_in_both_languages():
    measures = {"LSTM": dict(cost_exponent=1.98, depths=[5, 6, 7], path_lengths=[4, 8, 16],
                             gradient_factors=17)}
    table = cost_table(measures, [4, 8, 16], [4, 8, 16])
    text = repr(table)
    assert "O(T²) (1.98)" in text and "16, O(T)" in text and "O(log T)" in text
    assert " 17" in text and "path length at T = 16" in text and "T = 16 时的路径长度" in text
    assert "<td>O(log T)</td>" in table._repr_html_()
    spread = stats.spread([0.2, 0.25, 0.3])
    learning = {"LSTM": LearningMeasures(spread, stats.spread([0.0, 0.0]),
                                         Bilingual("9/10", "9/10"),
                                         (Bilingual("2", "2"), Bilingual("4", "4"))),
                "tanh RNN": LearningMeasures(spread, spread, Bilingual("0/10", "0/10"))}
    text = repr(learning_table(learning, 3, [100, 400]))
    assert "2.5e-01 (2.0e-01–3.0e-01)" in text and "0 (exactly)" in text
    assert "2 / 4" in text and "not measured" in text and "未测量" in text
    assert "pairs recalled after 100 / 400 steps" in text
    named = learning_table(learning, 3, [100, 400], {"LSTM": Bilingual("my LSTM", "我的 LSTM")})
    assert "my LSTM" in named.text("en") and "我的 LSTM" in named.text("zh")
    assert "tanh RNN" in named.text("en"), "a model without a label keeps its name"
    assert spread_text(stats.spread([1e-3])).en == "1.0e-03 (1.0e-03–1.0e-03)"
    assert spread_text(stats.spread([0.0])).zh == "0（恰好为零）"
    with pytest.raises(TypeError, match="measures must be"):
        cost_table({"model A": "solved"}, [4, 8, 16], [4, 8, 16])
    with pytest.raises(TypeError, match="measures must be"):
        learning_table({"model A": "solved"}, 3, [100, 400])
    with pytest.raises(ValueError, match="distance must be"):
        learning_table(learning, 0, [100, 400])
    with pytest.raises(ValueError, match="one cell per column"):
        Table(["a", "b"], [["1"]])


def test_gradient_path_factors_put_steps_and_layers_on_one_scale():
    shape = ModelShape(width=8, d_ff=8, window=4, state_size=2)
    factors = {name: gradient_path_factors(name, 12, shape) for name in SUMMARY_MODELS}
    assert factors["tanh RNN"] == factors["LSTM"] == factors["selective SSM"] == 12
    assert factors["Transformer (softmax attention)"] == factors["linear attention"] == 1
    assert factors["sliding-window attention"] == path_length("sliding-window attention", 12,
                                                              shape) > 1
    assert state_transition_factors("selective SSM", 12, shape) == 11
    with pytest.raises(ValueError, match="steps must be at least 2"):
        state_transition_factors("LSTM", 1, shape)
    with pytest.raises(ValueError, match="model must be one of"):
        gradient_path_factors("GRU", 12, shape)


def test_the_order_blind_control_trains_on_key_recall_and_other_names_raise():
    core = KIND[ORDER_BLIND].training_core()
    assert isinstance(core, BagOfTokens) and core.last_only  # as key recall trains it elsewhere
    with pytest.raises(ValueError, match="name must be one of"):
        key_recall_seed_accuracies("GRU", 5)
    with pytest.raises(ValueError, match="distance must be at least 1, got 0"):
        key_recall_seed_accuracies(ORDER_BLIND, 0)
    ratios = gradient_ratio_draws("linear attention", 6, ModelShape(width=8, d_ff=8), draws=3)
    assert ratios.shape == (3, 6) and (ratios[:, 0] == 1).all()
    assert torch.equal(ratios[2], gradient_ratios("linear attention", 6,
                                                  ModelShape(width=8, d_ff=8), seed=2))


@pytest.mark.parametrize("call, error, message", [
    (lambda: attention_call("softmax", 0), ValueError, "length must be at least 1"),
    (lambda: attention_call("linear", 8, features=2.5), TypeError,
     "features must be an int, got float 2.5"),
    (lambda: attention_costs([]), ValueError, "lengths must hold at least 1 ints, got 0"),
    (lambda: attention_costs("32"), TypeError, "lengths must be a list of ints"),
    (lambda: attention_seconds([8], repeats=0), ValueError, "repeats must be at least 1, got 0"),
    (lambda: crossover_phrase([8], [1.0], [2.0]), ValueError, "lengths must hold at least 2 ints"),
    (lambda: crossover_phrase([8, 16], [1.0], [2.0, 3.0]), ValueError,
     "first and second must hold one value per length"),
    (lambda: performer_errors(*torch.randn(3, 1, 4, 2), [], draws=1), ValueError,
     "feature_counts must hold at least 1 ints"),
    (lambda: KIND["LSTM"].build(shape={}), TypeError, "shape must be a ModelShape"),
    (lambda: KIND["LSTM"].build(input_size=0), ValueError, "input_size must be an int"),
    (lambda: sequential_depths("GRU", [4]), ValueError, "model must be one of"),
    (lambda: gradient_ratios("LSTM", 1), ValueError, "steps must be at least 2"),
    (lambda: gradient_ratio_draws("LSTM", 4, draws=0), ValueError, "draws must be at least 1"),
    (lambda: verdict((3, 10)), TypeError, "counted must be a Count"),
    (lambda: key_out_of_reach("LSTM", 0), ValueError, "distance must be at least 1"),
    (lambda: big_o(2), TypeError, "label must be a str"),
    (lambda: decoding_costs([1, 4]), ValueError, "lengths\\[0\\] must be at least 2, got 1"),
])
def test_public_functions_check_their_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_calls_in_worker_processes_return_what_they_return_here():
    from longdep.experiments.workers import in_worker_processes, worker_count
    generator = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 12, 4, generator=generator) for _ in range(3))
    calls = {(m, seed): (performer_errors, (q, k, v, [m], 2, True, seed))
             for m in (2, 8) for seed in (0, 1)}
    here = {key: function(*arguments) for key, (function, arguments) in calls.items()}
    there = in_worker_processes(calls)
    assert list(there) == list(calls)
    assert all(torch.equal(there[key], here[key]) for key in calls)  # bit for bit
    assert 1 <= worker_count(3) <= 3 and worker_count(1) == 1
    with pytest.raises(TypeError, match="calls must map keys"):
        in_worker_processes({"a": (performer_errors, [q, k, v])})


def test_key_recall_runs_trains_every_model_on_the_cores(monkeypatch):
    import longdep.experiments.summary_recall as summary_recall
    calls = []
    monkeypatch.setattr(summary_recall, "over_cores", lambda function, points, cost: calls.append(
        (function, points, cost)) or {point: point[0] for point in points})
    runs = summary_recall.key_recall_runs(["tanh RNN", "selective SSM"], 5)
    assert runs == {"tanh RNN": "tanh RNN", "selective SSM": "selective SSM"}
    function, points, cost = calls[0]
    assert function is key_recall_seed_accuracies and [p[0] for p in points] == [
        "tanh RNN", "selective SSM"]
    assert cost(points[1]) > cost(points[0])  # the SSM is the costliest
    with pytest.raises(ValueError, match="name must be one of"):
        summary_recall.key_recall_runs(["GRU"], 5)


def test_over_cores_returns_every_point_in_order_whatever_the_cost_order():
    from longdep.experiments.workers import over_cores
    points = [(3, 4), (1, 2), (5, 0)]
    assert over_cores(pow, points, cost=lambda point: point[0]) == {(3, 4): 81, (1, 2): 1,
                                                                   (5, 0): 1}


def test_counted_measures_are_the_summary_tables_counts():
    from longdep.experiments.summary import counted_measures, counted_measures_of
    shape = ModelShape(input_size=8, width=8, d_ff=16, window=3)
    counted = counted_measures("tanh RNN", [4, 8], [16, 32], shape, depth_lengths=[8, 16, 32])
    assert counted["path_lengths"] == [4, 8] and counted["gradient_factors"] == 8
    assert len(counted["depths"]) == 3 and counted["depths"][2] > counted["depths"][1]
    assert counted_measures("tanh RNN", [4, 8], [16, 32], shape)["depths"] == \
        sequential_depths("tanh RNN", [4, 8], shape), "depths at the path lengths by default"
    names = ["tanh RNN", "linear attention"]
    assert counted_measures_of(names, [4, 8], [16, 32], shape, [8, 16]) == {
        name: counted_measures(name, [4, 8], [16, 32], shape, [8, 16]) for name in names}


def test_linear_attention_and_the_ssm_need_the_same_rounds_class():
    shape = ModelShape(input_size=8, width=8, d_ff=16, state_size=2)
    lengths = [128, 256, 512]
    for name in ("linear attention", "selective SSM"):
        assert growth_label(lengths, sequential_depths(name, lengths, shape)) == "log T"
    assert growth_label(lengths, sequential_depths("tanh RNN", lengths, shape)) == "T"


def test_the_joined_summary_prints_the_summary_tables_counted_cells():
    """Chapter 7's join: the counted cells of counted_measures as the summary table prints
    them, beside the new column, headers and model names in both languages."""
    from longdep.experiments.summary import counted_measures
    shape = ModelShape(input_size=8, width=8, d_ff=16)
    counted = {name: counted_measures(name, [4, 8, 16], [16, 32], shape)
               for name in ("LSTM", "linear attention")}
    table = summary.joined_summary_table(
        counted, [4, 8, 16], ("reach", "距离"), {"LSTM": "4–8", "linear attention": "16"},
        labels={"linear attention": Bilingual("linear attention", "线性注意力")})
    text = repr(table)
    assert "16, O(T)" in text and "O(T) (1.00)" in text and "4–8" in text
    assert "path length at T = 16" in text and "T = 16 时的路径长度" in text
    assert "线性注意力" in text and "距离" in text
    in_costs = repr(summary.cost_table(counted, [4, 8, 16], [4, 8, 16]))
    assert all(cell in in_costs for cell in ("16, O(T)", "O(T) (1.00)", "1, O(1)"))
    with pytest.raises(ValueError, match="counted and column must be dicts of the same models"):
        summary.joined_summary_table(counted, [4, 8, 16], ("a", "甲"), {"LSTM": "1"})
    # rounds counted at lengths where linear attention runs chunked, as Chapter 6's table does
    long = [128, 256, 512]
    rounds = {"linear attention": counted_measures("linear attention", [4, 8, 16], [16, 32],
                                                   replace(shape, max_len=512), long)}
    joined = repr(summary.joined_summary_table(rounds, [4, 8, 16], ("reach", "距离"),
                                               {"linear attention": "16"}, depth_lengths=long))
    assert "O(log T)" in joined and "sequential rounds" in joined and "串行轮数" in joined
    assert "O(log T)" in repr(summary.cost_table(rounds, [4, 8, 16], long))


def test_spawned_workers_return_the_same(monkeypatch):
    import longdep.experiments.workers as workers
    monkeypatch.setattr(workers.sys, "platform", "darwin")  # spawn, as off Linux
    generator = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 10, 4, generator=generator) for _ in range(3))
    calls = {seed: (performer_errors, (q, k, v, [4], 2, True, seed)) for seed in (0, 1)}
    there = workers.in_worker_processes(calls)
    assert all(torch.equal(there[seed], performer_errors(q, k, v, [4], 2, True, seed))
               for seed in calls)

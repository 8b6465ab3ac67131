"""Bad input gives a clear error, never a silently wrong answer (issue 16), and what the models
do with NaN and inf is what their docstrings say.

Each case of the issue is a regression test here; tests/test_model_properties.py draws random
shapes, dtypes and masks with hypothesis.
"""

import math

import pytest
import torch
from longdep.measure.bptt import bptt
from longdep.measure.gradients import input_gradient_norms, state_gradient_norms
from longdep.models.attention import (
    CausalSelfAttention,
    MultiHeadAttention,
    PositionalEncoding,
    causal_mask,
    scaled_dot_product_attention,
    sliding_window_mask,
)
from longdep.models.bag import BagOfTokens
from longdep.models.conv import CausalConvolution
from longdep.models.delta import chunks_of, delta_rule_recurrent
from longdep.models.forgetting import ForgettingAttention, forget_gate_bias
from longdep.models.heads import LastStepClassifier, PairRecallClassifier
from longdep.models.linear import (
    exclusive_cumsum,
    linear_attention,
    linear_attention_recurrent,
    random_projection,
)
from longdep.models.lru import power_scan
from longdep.models.lstm import LSTM
from longdep.models.mixers import WindowedSelfAttention, mixer_stack
from longdep.models.rnn import ElmanRNN
from longdep.models.sparse import bigbird_mask, global_token_mask, sliding_window_attention
from longdep.models.ssd import ScalarSSM, decay_parameters
from longdep.models.ssm import SelectiveSSM
from longdep.models.transformer import (
    EncoderLayer,
    EncoderStack,
    NextTokenHead,
    NextTokenModel,
    TransformerEncoder,
)
from torch import nn

# 1. from_torch refuses the wrong module type and the options it cannot copy ------------------

@pytest.mark.parametrize("ours, theirs, needed", [
    (LSTM, nn.RNN(3, 1), "LSTM, got RNN"),
    (ElmanRNN, nn.LSTM(3, 4), "RNN, got LSTM"),
    (MultiHeadAttention, nn.Linear(4, 4), "MultiheadAttention, got Linear"),
    (EncoderLayer, nn.MultiheadAttention(4, 2), "TransformerEncoderLayer, got MultiheadAttention"),
])
def test_from_torch_refuses_the_wrong_module_by_name(ours, theirs, needed):
    with pytest.raises(TypeError, match=f"from_torch needs a torch.nn.{needed}"):
        ours.from_torch(theirs)


@pytest.mark.parametrize("ours, theirs, option", [
    (ElmanRNN, lambda: nn.RNN(3, 4, num_layers=2, batch_first=True), "num_layers=2"),
    (ElmanRNN, lambda: nn.RNN(3, 4, bidirectional=True, batch_first=True), "bidirectional=True"),
    (ElmanRNN, lambda: nn.RNN(3, 4, bias=False, batch_first=True), "bias=False"),
    (ElmanRNN, lambda: nn.RNN(3, 4), "batch_first=False"),
    (LSTM, lambda: nn.LSTM(3, 4, proj_size=2, batch_first=True), "proj_size=2"),
    (LSTM, lambda: nn.LSTM(3, 4), "batch_first=False"),
    (MultiHeadAttention, lambda: nn.MultiheadAttention(8, 2), "batch_first=False"),
    (MultiHeadAttention, lambda: nn.MultiheadAttention(8, 2, batch_first=True,
                                                       add_zero_attn=True), "add_zero_attn=True"),
    (MultiHeadAttention, lambda: nn.MultiheadAttention(8, 2, batch_first=True,
                                                       add_bias_kv=True), "add_bias_kv=True"),
    (MultiHeadAttention, lambda: nn.MultiheadAttention(8, 2, batch_first=True, kdim=4),
     "kdim=4: it needs kdim=8"),
    (MultiHeadAttention, lambda: nn.MultiheadAttention(8, 2, batch_first=True, vdim=4),
     "vdim=4: it needs vdim=8"),
    (MultiHeadAttention, lambda: nn.MultiheadAttention(8, 2, batch_first=True, bias=False),
     "bias=False"),
    (EncoderLayer, lambda: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True,
                                                      activation="gelu"),
     "activation='gelu': it needs activation='relu'"),
    (EncoderLayer, lambda: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True,
                                                      layer_norm_eps=1e-6), "layer_norm_eps=1e-06"),
    (EncoderLayer, lambda: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, bias=False),
     "bias=False"),
    (EncoderLayer, lambda: nn.TransformerEncoderLayer(8, 2, 16), "batch_first=False"),
])
def test_from_torch_refuses_options_it_cannot_copy_by_name(ours, theirs, option):
    with pytest.raises(ValueError, match=f"from_torch cannot take a torch.nn.* with {option}"):
        ours.from_torch(theirs())


def test_from_torch_copies_into_the_sources_dtype_with_one_helper():
    for ours, theirs in [(ElmanRNN, nn.RNN(3, 4, batch_first=True)),
                         (LSTM, nn.LSTM(3, 4, batch_first=True)),
                         (MultiHeadAttention, nn.MultiheadAttention(8, 2, batch_first=True)),
                         (EncoderLayer, nn.TransformerEncoderLayer(8, 2, 16, batch_first=True))]:
        model = ours.from_torch(theirs.double())
        assert {p.dtype for p in model.parameters()} == {torch.float64}
        assert sum(p.numel() for p in model.parameters()) == sum(
            p.numel() for p in theirs.parameters())
        assert sum(p.sum().item() for p in model.parameters()) == pytest.approx(
            sum(p.sum().item() for p in theirs.parameters()), abs=1e-12)


# 2. chunked linear attention never subtracts a later chunk back out --------------------------

def linear_qkv(steps=12, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(1, steps, 3, dtype=torch.float64, generator=generator) for _ in range(3)]


def test_a_huge_later_value_leaves_earlier_chunked_outputs_exact():
    """The old code formed the earlier chunks' state as cumsum - states: with a value of 1e8 at
    step 7 that cancellation left errors of about 1e-8 in steps 4-6; it fails this test."""
    q, k, v = linear_qkv()
    v[..., 7, :] = 1e8
    chunked = linear_attention(q, k, v, chunk_size=4)
    recurrent = linear_attention_recurrent(q, k, v)
    torch.testing.assert_close(chunked[:, 4:7], recurrent[:, 4:7], rtol=0, atol=1e-13)
    torch.testing.assert_close(chunked[:, :4], recurrent[:, :4], rtol=0, atol=1e-13)


def test_an_infinite_value_never_reaches_an_earlier_chunk():
    """Within its own chunk an inf value at step 7 does reach steps 4-6 through the masked
    product (0 * inf = NaN), as the module docstring says; earlier chunks never see it, and the
    recurrent form keeps it out of every earlier step."""
    q, k, v = linear_qkv()
    v[..., 7, :] = math.inf
    chunked = linear_attention(q, k, v, chunk_size=4)
    recurrent = linear_attention_recurrent(q, k, v)
    assert torch.isfinite(chunked[:, :4]).all() and torch.isfinite(recurrent[:, :7]).all()
    assert torch.isnan(chunked[:, 4:7]).all()  # documented: the same chunk, 0 * inf
    assert not torch.isfinite(chunked[:, 7:]).any() and not torch.isfinite(recurrent[:, 7:]).any()
    v[..., 7, :] = 0.0
    v[..., 8, :] = math.inf  # the first step of chunk 2: chunks 0 and 1 untouched
    assert torch.isfinite(linear_attention(q, k, v, chunk_size=4)[:, :8]).all()


# 3. a mask broadcasts to the scores, never enlarges them --------------------------------------

def test_a_mask_may_not_enlarge_the_scores():
    q = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=r"mask of shape \(4, 1, 5, 5\) does not broadcast to "
                                         r"\(\.\.\., time_q, time_k\) = \(2, 5, 5\)"):
        scaled_dot_product_attention(q, q, q, torch.ones(4, 1, 5, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 5, 5\) does not broadcast"):
        scaled_dot_product_attention(q, q, q, torch.ones(3, 5, 5, dtype=torch.bool))
    output, weights = scaled_dot_product_attention(q, q, q, torch.ones(1, 5, 5, dtype=torch.bool))
    assert output.shape == (2, 5, 8) and weights.shape == (2, 5, 5)


# 4. a window of 0 or less is refused ------------------------------------------------------------

@pytest.mark.parametrize("window", [0, -1])
def test_windowed_attention_refuses_an_empty_window(window):
    with pytest.raises(ValueError, match=f"window must be at least 1, got {window}"):
        CausalSelfAttention(4, window)
    with pytest.raises(ValueError, match=f"window must be at least 1, got {window}"):
        WindowedSelfAttention(4, 2, window)
    with pytest.raises(ValueError, match=f"window must be at least 1, got {window}"):
        sliding_window_mask(5, window)
    q = torch.randn(1, 5, 4)
    with pytest.raises(ValueError, match=f"window must be at least 1, got {window}"):
        sliding_window_attention(q, q, q, window)


def test_a_window_of_one_attends_to_itself_only():
    torch.manual_seed(0)
    layer = CausalSelfAttention(4, window=1).double()
    x = torch.randn(2, 6, 4, dtype=torch.float64)
    attention = layer.attention
    expected = attention.out_proj(attention.v_proj(x))  # each query's only key is itself
    torch.testing.assert_close(layer(x), expected, rtol=0, atol=1e-14)


# 5. positional encoding refuses integer input --------------------------------------------------

def test_positional_encoding_refuses_token_ids():
    with pytest.raises(TypeError, match=r"x must be a floating-point tensor of shape "
                                        r"\(batch, time, 8\), got an int64 tensor"):
        PositionalEncoding(8, 10)(torch.zeros(1, 5, 8, dtype=torch.long))


# 6. the sliding-window kernel builds its mask on q's device -------------------------------------

def test_sliding_window_kernel_runs_on_another_device():
    """On the "meta" device (shapes only) the old code failed: its padding mask was on the CPU."""
    q = torch.randn(2, 7, 4, device="meta")
    assert sliding_window_attention(q, q, q, 3).shape == (2, 7, 4)
    assert sliding_window_attention(q, q, q, 3, causal=False).device.type == "meta"
    x = torch.randn(1, 7, 4, device="meta")
    assert CausalSelfAttention(4, window=2).to("meta")(x).device.type == "meta"


# 7. empty batch or time: refused by name, everywhere --------------------------------------------

EMPTY_CALLS = {
    "ElmanRNN, time 0": lambda: ElmanRNN(3, 4)(torch.randn(2, 0, 3)),
    "ElmanRNN, batch 0": lambda: ElmanRNN(3, 4)(torch.randn(0, 5, 3)),
    "LSTM, time 0": lambda: LSTM(3, 4)(torch.randn(2, 0, 3)),
    "bptt": lambda: bptt(ElmanRNN(3, 4), torch.randn(2, 0, 3), torch.randn(2, 0, 4)),
    "state_gradient_norms": lambda: state_gradient_norms(ElmanRNN(3, 4), torch.randn(2, 0, 3)),
    "input_gradient_norms": lambda: input_gradient_norms(ElmanRNN(3, 4), torch.randn(2, 0, 3)),
    "recurrent linear attention": lambda: linear_attention_recurrent(*[torch.randn(2, 0, 3)] * 3),
    "MultiHeadAttention, batch 0": lambda: MultiHeadAttention(8, 2)(*[torch.randn(0, 5, 8)] * 3),
    "EncoderLayer, batch 0": lambda: EncoderLayer(8, 2, 16)(torch.randn(0, 5, 8)),
    "SelectiveSSM, time 0": lambda: SelectiveSSM(4, 2)(torch.randn(1, 0, 4)),
    "CausalConvolution, batch 0": lambda: CausalConvolution(3, 2)(torch.randn(0, 5, 3)),
}


@pytest.mark.parametrize("name", sorted(EMPTY_CALLS))
def test_empty_inputs_are_refused_by_name(name):
    with pytest.raises(ValueError, match=r"(x|query|q) is empty, a float32 tensor of shape "):
        EMPTY_CALLS[name]()


def test_empty_token_batches_are_refused_by_name():
    with pytest.raises(ValueError, match=r"tokens is empty, an int64 tensor of shape \(0, 5\)"):
        TransformerEncoder(20, 8, 2, 1, 16, 10)(torch.zeros(0, 5, dtype=torch.long))


# 8. a dtype or device mix is named, both dtypes --------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda x: ElmanRNN(3, 3)(x),
    lambda x: LSTM(3, 3)(x),
    lambda x: MultiHeadAttention(3, 1)(x, x, x),
    lambda x: EncoderLayer(3, 1, 4)(x),
    lambda x: SelectiveSSM(3, 2)(x),
    lambda x: CausalConvolution(3, 2)(x),
    lambda x: EncoderStack(4, 1, 1, 8, 10, input_size=3)(x),
])
def test_a_float64_input_to_a_float32_model_names_both_dtypes(call):
    x = torch.randn(2, 5, 3, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"(x|query) is float64 on cpu, but the model's parameters "
                                        r"are float32 on cpu"):
        call(x)


def test_mixed_states_and_queries_name_both_dtypes():
    x = torch.randn(2, 5, 3)
    with pytest.raises(TypeError, match="h0 is float64 on cpu, but the inputs are float32"):
        ElmanRNN(3, 4)(x, torch.zeros(2, 4, dtype=torch.float64))
    with pytest.raises(TypeError, match="c0 is float64 on cpu, but the inputs are float32"):
        LSTM(3, 4)(x, (torch.zeros(2, 4), torch.zeros(2, 4, dtype=torch.float64)))
    with pytest.raises(TypeError, match="k is float64 on cpu, but q is float32 on cpu"):
        scaled_dot_product_attention(x, x.double(), x)
    with pytest.raises(TypeError, match="mask is bool on meta, but the scores are float32 on cpu"):
        scaled_dot_product_attention(x, x, x, causal_mask(5, device="meta"))


# 9. arguments that were not checked --------------------------------------------------------------

def test_arguments_that_used_to_pass_unchecked():
    q = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\], got -0.5"):
        scaled_dot_product_attention(q, q, q, dropout=-0.5)
    with pytest.raises(ValueError, match="forget_bias must be finite, got nan"):
        LSTM(3, 4, forget_bias=math.nan)
    with pytest.raises(ValueError, match="input_size must be at least 1, got 0"):
        EncoderStack(8, 2, 1, 16, 10, input_size=0)
    with pytest.raises(ValueError, match="d_model must be at least 1, got 0"):
        TransformerEncoder(20, 0, 1, 1, 16, 10)
    with pytest.raises(TypeError, match="hidden_size must be an int, got float 4.0"):
        ElmanRNN(3, 4.0)


@pytest.mark.parametrize("causal", [False, True])
def test_causal_and_plain_stacks_check_masks_alike(causal):
    torch.manual_seed(0)
    stack = EncoderStack(8, 2, 1, 16, 10, causal=causal).double().eval()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"mask must be a boolean tensor \(True = may attend\)"):
        stack(x, torch.ones(5, 5))
    with pytest.raises(ValueError, match=r"mask of shape \(6, 6\) does not broadcast to "
                                         r"\(batch, time, time\) = \(2, 5, 5\)"):
        stack(x, torch.ones(6, 6, dtype=torch.bool))
    keys = torch.tensor([True, True, False, True, True])
    # (time,) masks keys, (time, 1) masks queries: both broadcast to (batch, time, time).
    for mask in (keys, keys[:, None]):
        torch.testing.assert_close(stack(x, mask), stack(x, mask.expand(2, 5, 5)))


# 10. NaN and inf: propagated, never checked, exactly where the docstrings say ------------------

def test_nan_in_a_blocked_value_reaches_the_query_but_not_in_a_blocked_key():
    """The attention module's docstring: a blocked key's NaN score is overwritten by the mask,
    a blocked value's NaN is multiplied by a weight of exactly 0, and 0 * NaN = NaN; PyTorch's
    own attention does the same."""
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 4, 2, dtype=torch.float64, generator=generator) for _ in range(3))
    mask = causal_mask(4)
    k_nan, v_nan = k.clone(), v.clone()
    k_nan[:, 3], v_nan[:, 3] = math.nan, math.nan  # the last position: only query 3 may see it
    output, weights = scaled_dot_product_attention(q, k_nan, v, mask)
    assert torch.isfinite(output[:, :3]).all() and torch.isfinite(weights[:, :3]).all()
    output, _ = scaled_dot_product_attention(q, k, v_nan, mask)
    assert torch.isnan(output).all()
    torch_output = nn.functional.scaled_dot_product_attention(q, k, v_nan, attn_mask=mask)
    assert torch.isnan(torch_output).all()
    q_nan = q.clone()
    q_nan[:, 1] = math.nan
    output, _ = scaled_dot_product_attention(q_nan, k, v, mask)
    assert torch.isnan(output[:, 1]).all() and torch.isfinite(output[:, [0, 2, 3]]).all()


def test_nan_in_the_band_kernel_stays_out_of_windows_that_do_not_hold_it():
    generator = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 8, 2, dtype=torch.float64, generator=generator) for _ in range(3))
    v[:, 6], k[:, 6] = math.nan, math.nan
    output = sliding_window_attention(q, k, v, window=2)
    assert torch.isfinite(output[:, :6]).all() and torch.isnan(output[:, 6:]).all()
    dense, _ = scaled_dot_product_attention(q, k, v, sliding_window_mask(8, 2))
    assert torch.isnan(dense).all()  # the dense mask multiplies the NaN value by 0


@pytest.mark.parametrize("make", [lambda: ElmanRNN(3, 3), lambda: LSTM(3, 3),
                                  lambda: SelectiveSSM(3, 2), lambda: CausalConvolution(3, 2)])
def test_a_nan_input_reaches_its_own_and_later_steps_only(make):
    torch.manual_seed(0)
    model = make().double()
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    x[:, 3, 0] = math.nan
    outputs = model(x)
    outputs = outputs[0] if isinstance(outputs, tuple) else outputs
    assert torch.isfinite(outputs[:, :3]).all() and torch.isnan(outputs[:, 3]).any()


def test_a_nan_input_to_a_causal_transformer_reaches_every_step():
    """Causal attention blocks step 3 from queries 0-2 with weights of exactly 0, but the NaN
    value is still multiplied by them: 0 * NaN = NaN reaches every output (transformer.py says
    so)."""
    torch.manual_seed(0)
    stack = EncoderStack(4, 1, 1, 8, 10, causal=True, input_size=3).double()
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    assert torch.isfinite(stack(x)).all()
    x[:, 3, 0] = math.nan
    assert torch.isnan(stack(x)).all()


# Issue 27 -------------------------------------------------------------------------------------
# 11. float overflow from finite inputs: a NaN raises, naming what the caller passed -----------

OVERFLOWING = {
    "EncoderLayer": (lambda: EncoderLayer(4, 2, 8), "x"),
    "EncoderStack": (lambda: EncoderStack(4, 2, 2, 8, 8, norm_first=True), "x"),
    "CausalSelfAttention": (lambda: CausalSelfAttention(4), "x"),
    "BagOfTokens": (lambda: BagOfTokens(4, 3), "x"),
    "SelectiveSSM": (lambda: SelectiveSSM(4, 3), "x"),
    "mixer_stack ssm": (lambda: mixer_stack("ssm", 4, 2, 1, 8, 8), "x"),
    "mixer_stack linear": (lambda: mixer_stack("linear", 4, 2, 1, 8, 8), "x"),
    "ScalarSSM": (lambda: ScalarSSM(4, 2, 3), "x"),
    "ForgettingAttention": (lambda: ForgettingAttention(4, 2), "x"),
}


@pytest.mark.parametrize("name", sorted(OVERFLOWING))
def test_a_nan_made_by_float32_overflow_of_finite_inputs_is_refused_by_name(name):
    make, argument = OVERFLOWING[name]
    model = make()
    x = torch.full((2, 5, 4), 3e38)
    assert not torch.isnan(check_first(model(torch.ones(2, 5, 4)))).any()
    with pytest.raises(ValueError, match=rf"^{argument} is finite \(largest \|entry\| 3e\+38\), "
                                         r"but the output holds NaN: float32 overflowed"):
        model(x)
    with torch.no_grad():  # in float64 the same input is fine
        assert not torch.isnan(check_first(model.double()(x.double()))).any()


def check_first(outputs):
    return outputs[0] if isinstance(outputs, tuple) else outputs


def test_multi_head_attention_names_query_key_and_value_alone_and_x_inside_a_layer():
    attention = MultiHeadAttention(4, 2)
    x, y = torch.full((2, 5, 4), 1e20), torch.randn(2, 5, 4)
    with pytest.raises(ValueError, match=r"^query is finite"):  # self-attention: one tensor
        attention(x, x, x)
    with pytest.raises(ValueError, match=r"^query, key, value are finite"):
        attention(x, x.clone(), y)
    with pytest.raises(ValueError, match=r"^x is finite"):  # the layer's own argument
        EncoderLayer(4, 2, 8)(x)


def test_given_nan_and_inf_and_non_finite_weights_still_propagate_unchecked():
    layer = EncoderLayer(4, 2, 8)
    x = torch.randn(2, 5, 4)
    x[0, 1, 2] = math.inf
    assert torch.isnan(layer(x)).any()  # as torch.nn.TransformerEncoderLayer: no error
    with torch.no_grad():
        layer.linear1.weight[0, 0] = math.nan  # a diverged model: its NaN is its own
    assert torch.isnan(layer(torch.randn(2, 5, 4))).any()


def test_an_inf_from_overflow_is_returned_as_inf():
    rnn = ElmanRNN(2, 2, "identity")
    with torch.no_grad():
        rnn.weight_hh.copy_(torch.eye(2) * 1e30)
    _, h = rnn(torch.ones(1, 3, 2))
    assert torch.isinf(h).all()


def test_the_overflow_check_is_skipped_under_vmap():
    layer = EncoderLayer(4, 2, 8)
    params = {name: p.detach()[None].expand(2, *p.shape) for name, p in layer.named_parameters()}
    x = torch.full((2, 1, 5, 4), 1e20)
    out = torch.func.vmap(lambda p, x: torch.func.functional_call(layer, p, (x,)))(params, x)
    assert torch.isnan(out).any()  # the values cannot decide a branch under vmap


# 12. compositions: a head on a core, a head on an encoder -- both sides named -----------------

def test_a_head_checks_that_it_meets_its_core():
    with pytest.raises(ValueError, match=r"embedding_dim=4, but the core \(ElmanRNN\) reads 5 "
                                         r"features"):
        LastStepClassifier(10, 4, ElmanRNN(5, 6), 6, 3)
    head = LastStepClassifier(10, 4, ElmanRNN(4, 6), 5, 3)
    with pytest.raises(ValueError, match=r"the core \(ElmanRNN\) must return \(batch, time, "
                                         r"core_dim\) = \(batch, time, 5\), got .*\(2, 3, 6\)"):
        head(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(TypeError, match=r"core must be a torch.nn.Module, got function"):
        LastStepClassifier(10, 4, lambda x: x, 4, 3)
    with pytest.raises(ValueError, match=r"width=8, but the core \(ElmanRNN\) reads 6"):
        PairRecallClassifier(ElmanRNN(6, 8), 8, 6, 5)
    with pytest.raises(ValueError, match=r"the encoder gives d_model=4 features, but the head "
                                         r"reads in_features=6"):
        NextTokenModel(TransformerEncoder(7, 4, 2, 1, 8, 8), NextTokenHead(6, 7))


@pytest.mark.parametrize("tokens, error, message", [
    (torch.zeros(2, 4, dtype=torch.long), ValueError, r"tokens must have shape \(batch, time, 2\)"),
    (torch.zeros(2, 4, 2), TypeError, r"tokens must be int64 ids"),
    (torch.full((2, 4, 2), 6), ValueError, r"tokens' keys \(tokens\[..., 0\]\) must lie in "
                                           r"\[0, 6\), got values from 6 to 6"),
    (torch.stack([torch.zeros(2, 4), torch.full((2, 4), 6)], -1).long(), ValueError,
     r"tokens' values \(tokens\[..., 1\]\) must lie in \[0, 6\)"),
])
def test_pair_recall_checks_its_tokens(tokens, error, message):
    model = PairRecallClassifier(nn.Identity(), 8, 6, 5)
    with pytest.raises(error, match=message):
        model(tokens)


# 13. options: bools are bools, ranges are torch's ------------------------------------------

@pytest.mark.parametrize("call, error, message", [
    (lambda: BagOfTokens(3, 4, last_only="yes"), TypeError, r"last_only must be True or False"),
    (lambda: EncoderLayer(4, 2, 8, norm_first=1), TypeError, r"norm_first must be True or False"),
    (lambda: EncoderStack(4, 2, 1, 8, 8, causal="yes"), TypeError, r"causal must be True"),
    (lambda: EncoderStack(4, 2, 1, 8, 8, dropout=math.nan), ValueError, r"dropout must be finite"),
    (lambda: sliding_window_mask(4, 2, "yes"), TypeError, r"causal must be True or False"),
    (lambda: sliding_window_attention(*torch.ones(3, 1, 4, 2), 2, "no"), TypeError,
     r"causal must be True or False"),
    (lambda: linear_attention(*torch.ones(3, 1, 4, 2), None), TypeError, r"causal must be True"),
    (lambda: linear_attention(*torch.ones(3, 1, 4, 2), True, 3), TypeError,
     r"feature_map must be callable"),
    (lambda: exclusive_cumsum(torch.ones(2, 3), 2), ValueError, r"dim must be in \[-2, 1\]"),
    (lambda: exclusive_cumsum(torch.ones(2, 3), 1.5), TypeError, r"dim must be an int"),
    (lambda: random_projection(4, 4, dtype=torch.int64), TypeError, r"dtype must be a floating"),
    (lambda: random_projection(4, 4, generator=3), TypeError, r"generator must be None or a"),
    (lambda: random_projection(4, 4, orthogonal=None), TypeError, r"orthogonal must be True"),
    (lambda: global_token_mask(6, 2, 3), TypeError, r"global_positions must be a list of ints"),
    (lambda: bigbird_mask(6, 2, [0], 1, generator=3), TypeError, r"generator must be None"),
    (lambda: SelectiveSSM(4, dt_min="a"), TypeError, r"dt_min must be a number"),
    (lambda: SelectiveSSM(4, dt_max=math.inf), ValueError, r"dt_max must be finite"),
    (lambda: SelectiveSSM(4, dt_min=0.5, dt_max=0.1), ValueError, r"need 0 < dt_min <= dt_max"),
    (lambda: decay_parameters(4, 0), ValueError, r"num_heads must be at least 1"),
    (lambda: decay_parameters("4", 2), TypeError, r"d_model must be an int"),
    (lambda: chunks_of(torch.ones(2, 5), 0, 1), ValueError, r"chunk_size must be at least 1"),
    (lambda: chunks_of(torch.ones(2, 5), 2, 7), ValueError, r"time_dim must be in \[-2, 1\]"),
    (lambda: delta_rule_recurrent(*torch.ones(3, 2, 5, 4), None), TypeError,
     r"beta must be a torch.Tensor"),
    (lambda: power_scan(torch.zeros(3), torch.zeros(2, 4, 3)), TypeError,
     r"log_lambda and b must be complex"),
    (lambda: power_scan(torch.zeros(3, dtype=torch.cfloat),
                        torch.zeros(2, 4, 2, dtype=torch.cfloat)), ValueError,
     r"log_lambda \(N,\) and b \(batch, time, N\) must share N"),
    (lambda: forget_gate_bias(torch.zeros(3, dtype=torch.long)), TypeError, r"log_f must be a"),
    (lambda: scaled_dot_product_attention(*torch.ones(3, 1, 4, 2), training=1), TypeError,
     r"training must be True or False"),
])
def test_options_and_arguments_are_checked_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()

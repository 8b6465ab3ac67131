"""Property-based tests (hypothesis): on random shapes, dtypes, masks and sizes every public model
either equals its PyTorch twin or raises a ValueError or TypeError naming the argument at fault,
never anything else (issue 16)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from longdep.models.attention import (
    MultiHeadAttention,
    PositionalEncoding,
    scaled_dot_product_attention,
)
from longdep.models.conv import CausalConvolution
from longdep.models.heads import LastStepClassifier
from longdep.models.linear import linear_attention, linear_attention_recurrent
from longdep.models.lstm import LSTM
from longdep.models.rnn import ElmanRNN
from longdep.models.sparse import sliding_window_attention
from longdep.models.ssm import SelectiveSSM
from longdep.models.transformer import EncoderLayer, EncoderStack, TransformerEncoder
from torch import nn

# No example database: the tests leave no folder behind, and every run draws afresh.
FAST = settings(max_examples=25, deadline=None, database=None)
DTYPES = st.sampled_from([torch.float32, torch.float64])
TOLERANCE = {torch.float32: dict(rtol=1e-4, atol=1e-5), torch.float64: dict(rtol=1e-10,
                                                                             atol=1e-12)}
sizes = st.integers(1, 4)


def seeded(seed: int) -> torch.Generator:
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


# Equality with the torch twins -------------------------------------------------------------

@FAST
@given(batch=sizes, steps=sizes, inputs=sizes, hidden=sizes, dtype=DTYPES,
       nonlinearity=st.sampled_from(["tanh", "relu"]), with_h0=st.booleans(),
       seed=st.integers(0, 99))
def test_elman_rnn_equals_torch_rnn(batch, steps, inputs, hidden, dtype, nonlinearity, with_h0,
                                    seed):
    generator = seeded(seed)
    theirs = nn.RNN(inputs, hidden, nonlinearity=nonlinearity, batch_first=True).to(dtype)
    ours = ElmanRNN.from_torch(theirs)
    x = torch.randn(batch, steps, inputs, dtype=dtype, generator=generator)
    h0 = torch.randn(batch, hidden, dtype=dtype, generator=generator) if with_h0 else None
    outputs, last = ours(x, h0)
    expected, expected_last = theirs(x, None if h0 is None else h0[None])
    torch.testing.assert_close(outputs, expected, **TOLERANCE[dtype])
    torch.testing.assert_close(last, expected_last[0], **TOLERANCE[dtype])


@FAST
@given(batch=sizes, steps=sizes, inputs=sizes, hidden=sizes, dtype=DTYPES, with_state=st.booleans(),
       seed=st.integers(0, 99))
def test_lstm_equals_torch_lstm(batch, steps, inputs, hidden, dtype, with_state, seed):
    generator = seeded(seed)
    theirs = nn.LSTM(inputs, hidden, batch_first=True).to(dtype)
    ours = LSTM.from_torch(theirs)
    x = torch.randn(batch, steps, inputs, dtype=dtype, generator=generator)
    state = tuple(torch.randn(batch, hidden, dtype=dtype, generator=generator) for _ in range(2))
    outputs, (h, c) = ours(x, state if with_state else None)
    expected, (h_t, c_t) = theirs(x, tuple(s[None] for s in state) if with_state else None)
    for got, want in ((outputs, expected), (h, h_t[0]), (c, c_t[0])):
        torch.testing.assert_close(got, want, **TOLERANCE[dtype])
    torch.testing.assert_close(ours.to_torch()(x)[0], ours(x)[0], **TOLERANCE[dtype])


@st.composite
def broadcast_masks(draw, shape):
    """A boolean mask broadcastable to ``shape``: some leading axes dropped, some sizes 1."""
    kept = shape[draw(st.integers(0, len(shape) - 2)):]
    mask_shape = tuple(draw(st.sampled_from([1, size])) for size in kept)
    seed = draw(st.integers(0, 999))
    return torch.rand(mask_shape, generator=torch.Generator().manual_seed(seed)) < 0.7


@FAST
@given(data=st.data(), batch=sizes, time_q=sizes, time_k=sizes, d_k=sizes, d_v=sizes,
       lead=st.lists(st.integers(1, 3), max_size=2), dtype=DTYPES, seed=st.integers(0, 99))
def test_scaled_dot_product_attention_equals_torch(data, batch, time_q, time_k, d_k, d_v, lead,
                                                   dtype, seed):
    generator = seeded(seed)
    shape = (batch, *lead)
    q = torch.randn(*shape, time_q, d_k, dtype=dtype, generator=generator)
    k = torch.randn(*shape, time_k, d_k, dtype=dtype, generator=generator)
    v = torch.randn(*shape, time_k, d_v, dtype=dtype, generator=generator)
    mask = data.draw(st.none() | broadcast_masks((*shape, time_q, time_k)))
    output, weights = scaled_dot_product_attention(q, k, v, mask)
    expected = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    seen = torch.ones(*shape, time_q, dtype=torch.bool) if mask is None else (
        mask.expand(*shape, time_q, time_k).any(-1))
    # Rows with an allowed key equal torch's; rows with none are zeros here, NaN in torch.
    torch.testing.assert_close(output[seen], expected[seen], **TOLERANCE[dtype])
    assert (output[~seen] == 0).all() and (weights[~seen] == 0).all()
    assert weights.shape == (*shape, time_q, time_k)


def torch_attention_mask(mask, batch, time_q, time_k, heads):
    """Ours (True = may attend, broadcast to (batch, time_q, time_k)) in nn.MultiheadAttention's
    convention: True = blocked, (batch * heads, time_q, time_k)."""
    full = mask.expand(batch, time_q, time_k)
    return ~full.repeat_interleave(heads, dim=0), full


@FAST
@given(data=st.data(), batch=sizes, time_q=sizes, time_k=sizes, heads=st.integers(1, 3),
       d_k=st.integers(1, 3), self_attention=st.booleans(), dtype=DTYPES, seed=st.integers(0, 99))
def test_multi_head_attention_equals_torch(data, batch, time_q, time_k, heads, d_k,
                                           self_attention, dtype, seed):
    generator = seeded(seed)
    d_model = heads * d_k
    theirs = nn.MultiheadAttention(d_model, heads, batch_first=True).to(dtype).eval()
    ours = MultiHeadAttention.from_torch(theirs).eval()
    time_k = time_q if self_attention else time_k
    query = torch.randn(batch, time_q, d_model, dtype=dtype, generator=generator)
    key = query if self_attention else torch.randn(batch, time_k, d_model, dtype=dtype,
                                                   generator=generator)
    mask = data.draw(st.none() | broadcast_masks((batch, time_q, time_k)))
    output, weights = ours(query, key, key, mask)
    if mask is None:
        expected, expected_weights = theirs(query, key, key, average_attn_weights=False)
        seen = torch.ones(batch, time_q, dtype=torch.bool)
    else:
        blocked, full = torch_attention_mask(mask, batch, time_q, time_k, heads)
        expected, expected_weights = theirs(query, key, key, attn_mask=blocked,
                                            average_attn_weights=False)
        seen = full.any(-1)
    torch.testing.assert_close(output[seen], expected[seen], **TOLERANCE[dtype])
    torch.testing.assert_close(weights.transpose(1, 2)[seen],
                               expected_weights.transpose(1, 2)[seen], **TOLERANCE[dtype])
    # A query that may see no key gets zero weights: its output is out_proj's bias.
    torch.testing.assert_close(output[~seen], ours.out_proj.bias.expand_as(output[~seen]))


@FAST
@given(batch=sizes, steps=sizes, heads=st.integers(1, 2), d_k=st.integers(1, 3),
       d_ff=st.integers(1, 6), norm_first=st.booleans(), causal=st.booleans(),
       seed=st.integers(0, 99))
def test_encoder_layer_equals_torch(batch, steps, heads, d_k, d_ff, norm_first, causal, seed):
    generator = seeded(seed)
    d_model = heads * d_k
    theirs = nn.TransformerEncoderLayer(d_model, heads, d_ff, batch_first=True,
                                        norm_first=norm_first).double().eval()
    ours = EncoderLayer.from_torch(theirs).eval()
    x = torch.randn(batch, steps, d_model, dtype=torch.float64, generator=generator)
    mask = torch.ones(steps, steps, dtype=torch.bool).tril() if causal else None
    expected = theirs(x, src_mask=None if mask is None else ~mask)
    torch.testing.assert_close(ours(x, mask), expected, **TOLERANCE[torch.float64])


@FAST
@given(batch=sizes, steps=st.integers(1, 9), d_k=sizes, d_v=sizes, chunk=st.integers(1, 5),
       seed=st.integers(0, 99))
def test_chunked_linear_attention_equals_the_recurrent_form(batch, steps, d_k, d_v, chunk, seed):
    generator = seeded(seed)
    q, k = (torch.randn(batch, steps, d_k, dtype=torch.float64, generator=generator)
            for _ in range(2))
    v = torch.randn(batch, steps, d_v, dtype=torch.float64, generator=generator)
    torch.testing.assert_close(linear_attention(q, k, v, chunk_size=chunk),
                               linear_attention_recurrent(q, k, v), rtol=1e-10, atol=1e-12)


@FAST
@given(batch=sizes, steps=st.integers(1, 9), d=sizes, window=st.integers(1, 9),
       causal=st.booleans(), seed=st.integers(0, 99))
def test_banded_window_attention_equals_the_masked_form(batch, steps, d, window, causal, seed):
    generator = seeded(seed)
    q, k, v = (torch.randn(batch, steps, d, dtype=torch.float64, generator=generator)
               for _ in range(3))
    if window > steps:
        with pytest.raises(ValueError, match="window"):
            sliding_window_attention(q, k, v, window, causal)
        return
    offset = torch.arange(steps)[:, None] - torch.arange(steps)[None, :]
    mask = ((offset >= 0) & (offset < window)) if causal else offset.abs() < window
    expected = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(sliding_window_attention(q, k, v, window, causal), expected,
                               rtol=1e-10, atol=1e-12)


# Bad input: a clear ValueError or TypeError naming the argument, or a correct result --------

def random_tensors(max_dims=4):
    """Tensors of random rank, sizes (0 included) and dtype, floating or not."""
    return st.builds(
        lambda shape, dtype: torch.zeros(shape, dtype=dtype) if dtype == torch.bool
        else torch.ones(shape, dtype=dtype),
        st.lists(st.integers(0, 4), min_size=0, max_size=max_dims).map(tuple),
        st.sampled_from([torch.float32, torch.float64, torch.int64, torch.bool]))


def clear_error_or_result(call, names):
    """Run ``call``; an error must be a ValueError or TypeError whose message names one of
    ``names``. Returns the result, or None after such an error."""
    try:
        return call()
    except (ValueError, TypeError) as error:
        assert any(name in str(error) for name in names), str(error)
        return None


MODELS = {
    "ElmanRNN": lambda: ElmanRNN(3, 4),
    "LSTM": lambda: LSTM(3, 4),
    "MultiHeadAttention": lambda: MultiHeadAttention(3, 1),
    "EncoderLayer": lambda: EncoderLayer(4, 2, 8),
    "EncoderStack": lambda: EncoderStack(4, 2, 1, 8, 6, causal=True, input_size=3),
    "PositionalEncoding": lambda: PositionalEncoding(4, 6),
    "CausalConvolution": lambda: CausalConvolution(3, 2),
    "SelectiveSSM": lambda: SelectiveSSM(3, 2),
}
FEATURES = {"EncoderLayer": 4, "PositionalEncoding": 4}


@pytest.mark.parametrize("name", sorted(MODELS))
@FAST
@given(x=random_tensors())
def test_a_sequence_model_given_anything_is_right_or_says_why(name, x):
    model = MODELS[name]()
    call = (lambda: model(x, x, x)) if name == "MultiHeadAttention" else (lambda: model(x))
    result = clear_error_or_result(call, ["x", "query", "key"])
    # The positional encoding has no parameters: it casts its table to any floating dtype.
    dtype_ok = x.is_floating_point() if name == "PositionalEncoding" else x.dtype == torch.float32
    valid = (x.dim() == 3 and x.numel() > 0 and dtype_ok and x.size(-1) == FEATURES.get(name, 3)
             and x.size(1) <= 6)
    assert (result is not None) == valid
    if valid:
        output = result[0] if isinstance(result, tuple) else result
        assert output.shape[:2] == x.shape[:2] and torch.isfinite(output).all()


@FAST
@given(tokens=random_tensors(3), high=st.integers(1, 12))
def test_token_models_given_anything_are_right_or_say_why(tokens, high):
    tokens = (tokens * (high - 1)).long() if tokens.is_floating_point() else tokens
    torch.manual_seed(0)
    for model in (TransformerEncoder(10, 4, 2, 1, 8, 6),
                  LastStepClassifier(10, 3, ElmanRNN(3, 4), 4, 2)):
        result = clear_error_or_result(lambda: model(tokens), ["tokens"])
        valid = (tokens.dim() == 2 and tokens.numel() > 0 and tokens.dtype == torch.int64
                 and int(tokens.max()) < 10 and (tokens.size(1) <= 6
                                                 or isinstance(model, LastStepClassifier)))
        assert (result is not None) == valid


@FAST
@given(mask=random_tensors(), batch=st.integers(1, 3))
def test_masks_given_anything_are_used_or_refused_by_name(mask, batch):
    torch.manual_seed(0)
    x = torch.randn(batch, 3, 4)
    for model in (MultiHeadAttention(4, 2), EncoderStack(4, 2, 1, 8, 6, causal=True)):
        call = (lambda: model(x, x, x, mask)) if isinstance(model, MultiHeadAttention) else (
            lambda: model(x, mask))
        result = clear_error_or_result(call, ["mask"])
        fits = mask.dim() <= 3 and all(m in (1, s) for m, s in zip(reversed(mask.shape),
                                                                   reversed((batch, 3, 3))))
        assert (result is not None) == (mask.dtype == torch.bool and fits)


@FAST
@given(q=random_tensors(), k=random_tensors(), dropout=st.floats(-1, 2) | st.just(float("nan")),
       window=st.integers(-2, 5), chunk=st.integers(-1, 4))
def test_attention_functions_given_anything_are_right_or_say_why(q, k, dropout, window, chunk):
    names = ["q", "k", "v", "dropout", "window", "chunk_size", "length", "time"]
    calls = [lambda: scaled_dot_product_attention(q, k, k, dropout=dropout),
             lambda: sliding_window_attention(q, k, k, window),
             lambda: linear_attention(q, k, k, chunk_size=chunk),
             lambda: linear_attention(q, k, k, causal=False),
             lambda: linear_attention_recurrent(q, k, k)]
    for call in calls:
        clear_error_or_result(call, names)

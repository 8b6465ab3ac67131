"""Attention from its equations equals PyTorch's; masks, float16 and bad arguments are handled."""

import math

import pytest
import torch
from longdep.book import seed_everything
from longdep.models.attention import (
    MultiHeadAttention,
    PositionalEncoding,
    _softmax_last,  # its speed patch, checked for its numbers
    causal_mask,
    scaled_dot_product_attention,
    sinusoidal_table,
)
from torch import nn

TOLERANCE = {torch.float32: dict(rtol=1e-5, atol=1e-6), torch.float64: dict(rtol=1e-12, atol=1e-13)}
DTYPES = [torch.float32, torch.float64]


def random_mask(*shape, generator=None):
    """A random boolean mask in which every query row may attend to at least one key."""
    mask = torch.rand(*shape, generator=generator) < 0.5
    mask[..., 0] = True
    return mask


def test_causal_mask_is_lower_triangular():
    mask = causal_mask(4)
    assert mask.dtype == torch.bool
    assert torch.equal(mask, torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]],
                                          dtype=torch.bool))
    with pytest.raises(ValueError, match="steps"):
        causal_mask(0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("masked", [False, True])
def test_attention_equals_torch_functional(dtype, masked):
    seed_everything(3)
    q, k, v = (torch.randn(2, 3, n, 8, dtype=dtype) for n in (5, 6, 6))
    mask = random_mask(5, 6) if masked else None
    output, weights = scaled_dot_product_attention(q, k, v, mask)
    expected = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(output, expected, **TOLERANCE[dtype])
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 5, dtype=dtype))
    if masked:
        assert torch.all(weights[..., ~mask] == 0)


def test_attention_weights_are_softmax_of_scaled_scores():
    seed_everything(4)
    q, k, v = (torch.randn(4, 16, dtype=torch.float64) for _ in range(3))
    _, weights = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(weights, torch.softmax(q @ k.T / math.sqrt(16), dim=-1))


@pytest.mark.parametrize("keys", [1, 2, 11, 15, 16, 17])
def test_rows_padded_for_speed_give_the_softmax_and_its_gradient(keys):
    seed_everything(6)
    scores = (3 * torch.randn(3, 5, keys, dtype=torch.float64)).requires_grad_()
    ours, theirs = _softmax_last(scores), torch.softmax(scores, dim=-1)
    assert ours.shape == scores.shape
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-15)
    upstream = torch.randn_like(ours)
    for a, b in zip(*(torch.autograd.grad(y, scores, upstream) for y in (ours, theirs))):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-15)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_fully_masked_row_gives_zeros_not_nan(dtype):
    seed_everything(5)
    q, k, v = (torch.randn(2, 4, 8).to(dtype).requires_grad_() for _ in range(3))
    mask = random_mask(4, 4)
    mask[1] = False  # query 1 may attend to nothing
    output, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.all(output[:, 1] == 0) and torch.all(weights[:, 1] == 0)
    assert torch.isfinite(output).all() and torch.isfinite(weights).all()
    output.float().sum().backward()
    for x in (q, k, v):
        assert torch.isfinite(x.grad).all()


def test_float16_fill_is_safe_and_matches_float32():
    """-1e9 is -inf in float16; the fill must stay finite and give float32's answer."""
    assert torch.tensor(-1e9, dtype=torch.float16).isinf()
    seed_everything(6)
    q, k, v = (torch.randn(3, 5, 8) for _ in range(3))
    mask = random_mask(5, 5)
    expected, _ = scaled_dot_product_attention(q, k, v, mask)
    output, weights = scaled_dot_product_attention(q.half(), k.half(), v.half(), mask)
    assert output.dtype == torch.float16 and torch.all(weights[:, ~mask] == 0)
    torch.testing.assert_close(output.float(), expected, rtol=1e-2, atol=1e-2)


def test_attention_rejects_bad_arguments():
    q = torch.randn(2, 5, 8)
    with pytest.raises(TypeError, match="mask must be a boolean tensor \\(True = may attend\\)"):
        scaled_dot_product_attention(q, q, q, torch.ones(5, 5))
    with pytest.raises(ValueError, match="does not broadcast"):
        scaled_dot_product_attention(q, q, q, torch.ones(4, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="d_k"):
        scaled_dot_product_attention(q, torch.randn(2, 5, 7), q)
    with pytest.raises(ValueError, match="time_k"):
        scaled_dot_product_attention(q, q, torch.randn(2, 4, 8))


def torch_attention_mask(mask, num_heads):
    """Our mask (True = may attend) in nn.MultiheadAttention's convention (True = blocked)."""
    if mask is None:
        return None
    return ~(mask if mask.dim() == 2 else mask.repeat_interleave(num_heads, dim=0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask_kind", [None, "causal", "per-batch"])
def test_multi_head_self_attention_equals_torch(dtype, mask_kind):
    seed_everything(7)
    reference = nn.MultiheadAttention(16, 4, batch_first=True).to(dtype)
    model = MultiHeadAttention.from_torch(reference)
    x = torch.randn(3, 7, 16, dtype=dtype, requires_grad=True)
    mask = {None: None, "causal": causal_mask(7), "per-batch": random_mask(3, 7, 7)}[mask_kind]
    output, weights = model(x, x, x, mask)
    expected, expected_weights = reference(
        x, x, x, attn_mask=torch_attention_mask(mask, 4), average_attn_weights=False
    )
    torch.testing.assert_close(output, expected, **TOLERANCE[dtype])
    torch.testing.assert_close(weights, expected_weights, **TOLERANCE[dtype])
    # The packed self-attention path must also agree in its gradient.
    (grad,) = torch.autograd.grad(output.square().sum(), x)
    (expected_grad,) = torch.autograd.grad(expected.square().sum(), x)
    torch.testing.assert_close(grad, expected_grad, **TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_multi_head_cross_attention_equals_torch(dtype):
    seed_everything(8)
    reference = nn.MultiheadAttention(12, 3, batch_first=True).to(dtype)
    model = MultiHeadAttention.from_torch(reference)
    query, key, value = (torch.randn(2, n, 12, dtype=dtype) for n in (4, 6, 6))
    output, _ = model(query, key, value)
    expected, _ = reference(query, key, value)
    torch.testing.assert_close(output, expected, **TOLERANCE[dtype])


def test_multi_head_attention_equals_torch_fast_path_in_eval():
    seed_everything(9)
    reference = nn.MultiheadAttention(16, 2, batch_first=True).eval()
    model = MultiHeadAttention.from_torch(reference).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        expected, _ = reference(x, x, x, attn_mask=~causal_mask(5), need_weights=False)
        output, _ = model(x, x, x, causal_mask(5))
    torch.testing.assert_close(output, expected, **TOLERANCE[torch.float32])


def test_from_torch_copies_instead_of_sharing():
    reference = nn.MultiheadAttention(8, 2, batch_first=True, dropout=0.25)
    model = MultiHeadAttention.from_torch(reference)
    assert model.dropout == 0.25
    with torch.no_grad():
        reference.in_proj_weight.zero_()
        reference.out_proj.weight.zero_()
    assert model.q_proj.weight.abs().sum() > 0 and model.out_proj.weight.abs().sum() > 0


def test_from_torch_rejects_unsupported_layouts():
    with pytest.raises(ValueError, match="batch_first"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2))
    with pytest.raises(ValueError, match="add_bias_kv"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, batch_first=True,
                                                            add_bias_kv=True))


def test_causal_attention_does_not_see_the_future():
    seed_everything(10)
    model = MultiHeadAttention(8, 2).double()
    x = torch.randn(1, 6, 8, dtype=torch.float64, requires_grad=True)
    output, _ = model(x, x, x, causal_mask(6))
    (grad,) = torch.autograd.grad(output[0, 2].sum(), x)
    assert torch.all(grad[0, 3:] == 0) and torch.all(grad[0, :3].norm(dim=-1) > 0)


def test_multi_head_attention_rejects_bad_arguments():
    with pytest.raises(ValueError, match="multiple of num_heads"):
        MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\], got 1.5"):
        MultiHeadAttention(8, 2, dropout=1.5)
    with pytest.raises(ValueError, match=r"dropout must be finite"):
        MultiHeadAttention(8, 2, dropout=math.nan)
    model = MultiHeadAttention(8, 2)
    x = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=r"query must have shape \(batch, time, 8\)"):
        model(x[0], x[0], x[0])
    with pytest.raises(ValueError,
                       match=r"key must have shape \(batch, time, 8\), got .*\(2, 5, 4\)"):
        model(x, x[..., :4], x)
    with pytest.raises(ValueError, match="does not broadcast to \\(batch, time_q, time_k\\)"):
        model(x, x, x, causal_mask(4))
    with pytest.raises(ValueError, match="mask of shape \\(3, 5, 5\\) does not broadcast"):
        model(x, x, x, torch.ones(3, 5, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="one batch size"):
        model(x, x[:1], x[:1])


def test_sinusoidal_table_follows_its_formula():
    table = sinusoidal_table(50, 16)
    pos, i = 37, 3
    angle = pos / 10000 ** (2 * i / 16)
    assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-14)
    assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-14)
    torch.testing.assert_close(table[:, 0::2] ** 2 + table[:, 1::2] ** 2,
                               torch.ones(50, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="even"):
        sinusoidal_table(10, 7)
    with pytest.raises(ValueError, match="max_len"):
        sinusoidal_table(0, 8)


@pytest.mark.parametrize("dtype", DTYPES)
def test_positional_encoding_adds_the_table(dtype):
    encoding = PositionalEncoding(8, max_len=20)
    x = torch.randn(2, 11, 8, dtype=dtype)
    output = encoding(x)
    assert output.dtype == dtype
    torch.testing.assert_close(output - x, sinusoidal_table(11, 8).to(dtype).expand(2, 11, 8))
    assert "table" not in encoding.state_dict()


def test_positional_encoding_rejects_a_sequence_longer_than_its_table():
    encoding = PositionalEncoding(8, max_len=10)
    encoding(torch.zeros(1, 10, 8))
    with pytest.raises(ValueError, match="longer than the positional-encoding table"):
        encoding(torch.zeros(1, 11, 8))
    with pytest.raises(ValueError, match=r"x must have shape \(batch, time, 8\)"):
        encoding(torch.zeros(1, 5, 6))


def test_dropout_one_drops_every_weight_as_torch_does():
    """torch.nn.Dropout's range is [0, 1]; at 1 every attention weight is dropped, so each
    output is out_proj's bias, in torch's module as in ours."""
    theirs = nn.MultiheadAttention(8, 2, dropout=1.0, batch_first=True)
    ours = MultiHeadAttention.from_torch(theirs)
    x = torch.randn(2, 5, 8)
    expected = theirs.out_proj.bias.expand(2, 5, 8)
    torch.testing.assert_close(ours(x, x, x)[0], expected, rtol=0, atol=0)
    torch.testing.assert_close(theirs(x, x, x)[0], expected, rtol=0, atol=0)

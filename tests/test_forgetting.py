"""FoX's forget-gate bias and ALiBi (Chapters 5 and 6): the bias is the sum of log gates, a
constant gate e^-m gives ALiBi's -m (i - j), and softmax attention with either bias equals
torch's scaled_dot_product_attention with that float attn_mask."""

import copy
import math

import pytest
import torch
from longdep.models.attention import MultiHeadAttention, causal_mask
from longdep.models.forgetting import (
    ForgettingAttention,
    alibi_bias,
    alibi_slopes,
    biased_attention,
    forget_gate_bias,
)
from longdep.train import train_seeds
from torch import nn

F64 = torch.float64


def test_the_bias_is_the_sum_of_log_gates_between_key_and_query():
    log_f = torch.log(torch.rand(3, 9, dtype=F64, generator=torch.Generator().manual_seed(0)))
    bias = forget_gate_bias(log_f)
    for i in range(9):
        for j in range(9):
            expected = log_f[:, j + 1:i + 1].sum(-1) if i >= j else torch.full((3,), -math.inf,
                                                                                dtype=F64)
            torch.testing.assert_close(bias[:, i, j], expected, rtol=1e-15, atol=1e-15)


def test_alibi_slopes_for_8_heads_are_one_half_to_one_256th():
    assert alibi_slopes(8).tolist() == [2.0**-h for h in range(1, 9)]
    torch.testing.assert_close(alibi_slopes(4), torch.tensor([1 / 4, 1 / 16, 1 / 64, 1 / 256],
                                                             dtype=F64), rtol=0, atol=0)


def test_a_constant_gate_gives_alibi_exactly():
    """log f = -m for slopes that are powers of two: every sum is exact, so equality is exact."""
    slopes, steps = alibi_slopes(8), 200
    log_f = (-slopes)[:, None].expand(8, steps)
    assert torch.equal(forget_gate_bias(log_f), alibi_bias(steps, slopes))


def test_a_constant_gate_e_to_the_minus_m_gives_alibi_to_round_off():
    """Any slope (here 6 heads, not powers of two), the gate given as f = e^-m: the i - j terms
    log f are summed one by one, so they match -m (i - j) to a few units of round-off."""
    slopes, steps = alibi_slopes(6), 256
    log_f = torch.log(torch.exp(-slopes))[:, None].expand(6, steps)
    causal = causal_mask(steps)
    got, want = forget_gate_bias(log_f), alibi_bias(steps, slopes)
    assert (torch.isfinite(got) == causal).all() and (torch.isfinite(want) == causal).all()
    torch.testing.assert_close(got[:, causal], want[:, causal], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kind", ["forget gate", "alibi"])
def test_biased_attention_equals_torch_sdpa_with_a_float_mask(kind):
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 33, 8, dtype=F64, generator=generator) for _ in range(3))
    if kind == "alibi":
        bias = alibi_bias(33, alibi_slopes(4))  # (heads, time, time), broadcast over the batch
    else:
        bias = forget_gate_bias(nn.functional.logsigmoid(
            torch.randn(2, 4, 33, dtype=F64, generator=generator)))
    output, weights = biased_attention(q, k, v, bias)
    expected = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    torch.testing.assert_close(output, expected, rtol=0, atol=1e-14)
    assert (weights[..., ~causal_mask(33)] == 0).all()  # -inf is the causal mask


def test_a_gate_near_one_is_causal_softmax_attention():
    torch.manual_seed(0)
    fox = ForgettingAttention(8, 2, forget_bias=60.0).double()  # f = 1 - 9e-27
    with torch.no_grad():
        fox.forget_proj.weight.zero_()
    plain = MultiHeadAttention(8, 2).double()
    plain.load_state_dict({k: v for k, v in fox.state_dict().items() if "forget" not in k})
    x = torch.randn(2, 10, 8, dtype=F64)
    output, weights = fox(x)
    expected, expected_weights = plain(x, x, x, causal_mask(10))
    torch.testing.assert_close(output, expected, rtol=0, atol=1e-14)
    torch.testing.assert_close(weights, expected_weights, rtol=0, atol=1e-14)


def test_a_forget_gate_below_one_shifts_weight_to_recent_keys():
    torch.manual_seed(0)
    fox = ForgettingAttention(8, 1, forget_bias=-1.0).double()
    with torch.no_grad():
        fox.forget_proj.weight.zero_()
        fox.q_proj.weight.zero_()  # q = 0, equal scores: the weights are the gate's alone
        fox.q_proj.bias.zero_()
    weights = fox(torch.randn(1, 6, 8, dtype=F64))[1][0, 0, -1]
    f = torch.sigmoid(torch.tensor(-1.0, dtype=F64))
    expected = f ** torch.arange(5, -1, -1, dtype=F64)
    torch.testing.assert_close(weights, expected / expected.sum(), rtol=1e-14, atol=0)


def test_changing_step_t_changes_no_earlier_output():
    torch.manual_seed(0)
    fox = ForgettingAttention(8, 2).double()
    x = torch.randn(2, 12, 8, dtype=F64)
    changed = x.clone()
    changed[:, 7] += 1.0
    with torch.no_grad():
        before, after = fox(x)[0], fox(changed)[0]
    assert torch.equal(before[:, :7], after[:, :7]) and not torch.equal(before[:, 7], after[:, 7])


def test_the_books_batched_training_trains_it():
    """train_seeds runs the seeds under torch.func.vmap; each seed's losses equal its own run's."""
    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.fox, self.readout = ForgettingAttention(8, 2), nn.Linear(8, 2)

        def forward(self, x):
            return self.readout(self.fox(x)[0][:, -1])

    def batch(generator):
        x = torch.randn(8, 10, 8, generator=generator)
        return x, (x[:, 0, 0] > 0).long()

    models = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        models.append(Classifier())
    second = copy.deepcopy(models[1])  # train_seeds writes the trained weights back
    together = train_seeds(models, batch, steps=3, seeds=[0, 1], lr=1e-2)
    alone = train_seeds([second], batch, steps=3, seeds=[1], lr=1e-2)
    assert together[1].losses == pytest.approx(alone[0].losses, rel=1e-4)


@pytest.mark.parametrize("call, error, message", [
    (lambda: alibi_slopes(0), ValueError, r"num_heads must be at least 1"),
    (lambda: alibi_bias(0, alibi_slopes(2)), ValueError, r"steps must be at least 1"),
    (lambda: alibi_bias(4, alibi_slopes(2)[None]), ValueError, r"slopes must have shape"),
    (lambda: alibi_bias(4, [0.5]), TypeError, r"slopes must be a torch.Tensor"),
    (lambda: forget_gate_bias(torch.ones(3, dtype=torch.int64)), TypeError,
     r"log_f must be a floating"),
    (lambda: biased_attention(*torch.ones(3, 2, 4, 3), torch.zeros(5, 4, 4)), ValueError,
     r"bias must broadcast to the scores"),
    (lambda: biased_attention(*torch.ones(3, 2, 4, 3), torch.zeros(4, 4, dtype=torch.bool)),
     TypeError, r"bias must be a floating"),
    (lambda: biased_attention(*torch.ones(3, 2, 4, 3), torch.zeros(4, 4, dtype=F64)),
     TypeError, r"bias is float64 on cpu, but q is float32"),
    (lambda: ForgettingAttention(8, 2, forget_bias=math.inf), ValueError,
     r"forget_bias must be finite"),
    (lambda: ForgettingAttention(8, 2)(torch.ones(2, 5, 4)), ValueError, r"x must have shape"),
])
def test_forgetting_attention_checks_its_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()

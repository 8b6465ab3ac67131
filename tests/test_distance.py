"""Gradient against distance at initialisation (Chapter 4): the forgetting transformer with a
constant gate is ALiBi, and its gradient falls like f^d; the last-position stack measures the
same gradient as the full one; a fitted per-step factor."""

import math

import numpy as np
import pytest
import torch
from longdep.experiments.distance import (
    MODELS,
    alibi_attention,
    alibi_differences,
    chapter_model,
    constant_gate_attention,
    distance_profiles,
    gate_profiles,
)
from longdep.measure.fit import fitted_rate
from longdep.measure.gradients import distance_profile
from longdep.models.attention import causal_mask
from longdep.models.forgetting import alibi_slopes
from longdep.models.transformer import EncoderStack


def test_a_constant_gate_layer_has_that_gate_at_every_position_whatever_the_input():
    torch.manual_seed(0)
    gates = [0.5, 0.9, 0.99, 1.0]
    layer = constant_gate_attention(8, 4, gates)
    x = 10 * torch.randn(2, 6, 8, dtype=torch.float64)
    log_f = torch.nn.functional.logsigmoid(layer.forget_proj(x))  # (batch, time, heads)
    expected = torch.tensor([math.log(f) for f in gates], dtype=torch.float64)
    torch.testing.assert_close(log_f, expected.expand_as(log_f), rtol=0, atol=1e-15)


def test_a_gate_of_one_is_plain_causal_softmax_attention():
    torch.manual_seed(1)
    layer = constant_gate_attention(8, 2, [1.0, 1.0])
    x = torch.randn(3, 7, 8, dtype=torch.float64)
    plain = super(type(layer), layer).forward(x, x, x, causal_mask(7))[0]
    torch.testing.assert_close(layer(x)[0], plain, rtol=0, atol=1e-14)


def test_fox_with_constant_gates_is_alibi_computed_by_torch():
    worst = alibi_differences(seeds=(0, 1), d_model=16, steps=20)
    assert worst["bias, 8 heads"] == 0.0  # slopes 2^-1 .. 2^-8: every sum exact
    assert 0 < worst["bias, 6 heads"] < 1e-12
    assert worst["layer, 8 heads"] < 1e-12
    torch.manual_seed(2)
    slopes = alibi_slopes(4)
    layer = constant_gate_attention(8, 4, torch.exp(-slopes).tolist())
    x = torch.randn(2, 9, 8, dtype=torch.float64)
    torch.testing.assert_close(layer(x)[0], alibi_attention(layer, x, slopes), rtol=0,
                               atol=1e-14)


def test_the_gradient_under_a_constant_gate_falls_like_f_to_the_distance():
    norms = gate_profiles((0.8, 1.0), seeds=(0, 1), d_model=8, num_heads=2, steps=40)
    for gate, rows in norms.items():
        assert rows.shape == (2, 40)
        for row in rows:
            assert abs(fitted_rate(range(1, 40), row[::-1][1:]) - gate) < 0.01


def test_the_last_position_stack_has_the_full_stacks_gradient():
    torch.manual_seed(3)
    last = chapter_model(MODELS[0], 8, 2, 2, 30)
    full = EncoderStack(8, num_heads=2, num_layers=2, d_ff=16, max_len=30, causal=True).double()
    full.load_state_dict(last.state_dict())
    torch.testing.assert_close(distance_profile(last, 12, 8), distance_profile(full, 12, 8),
                               rtol=1e-12, atol=0)


def test_distance_profiles_dilute_in_the_transformer_and_decay_in_the_recurrences():
    profiles, dilution = distance_profiles(seeds=(0, 1), width=8, length=60, heads=2, layers=1,
                                           lengths=(20, 80))
    assert {name: rows.shape for name, rows in profiles.items()} == {
        name: (2, 60) for name in MODELS}
    assert [rows.shape for rows in dilution.values()] == [(2, 20), (2, 80)]
    for name in MODELS[1:]:
        assert (profiles[name][:, 0] < 1e-6 * profiles[name][:, -2]).all()
    shares = [steps * rows[:, :-1].mean(1) for steps, rows in dilution.items()]
    assert np.all(np.abs(np.log(shares[1] / shares[0])) < np.log(2))  # about 1/T each


def test_fitted_rate_recovers_a_geometric_decay_exactly():
    distances = np.arange(0, 30)
    assert math.isclose(fitted_rate(distances, 3.0 * 0.7**distances), 0.7, rel_tol=1e-12)
    with pytest.raises(ValueError, match="distances must hold 3 finite numbers"):
        fitted_rate([0, 1], [1.0, 0.5, 0.25])
    with pytest.raises(ValueError, match="finite and positive"):
        fitted_rate([0, 1], [1.0, 0.0])

"""What self-attention knows about order (Chapter 4): equivariant as a map of sequences, each
output invariant to the order of what it reads, and a causal mask that leaks the position."""

import math

import numpy as np
import torch
from longdep.experiments.order import ORDER_VARIANTS, causal_output_spread, order_errors
from longdep.models.attention import MultiHeadAttention
from longdep.seeds import manual_seed, seeded_generator

SEEDS = (0, 1, 2)


def test_order_errors_separate_equivariance_from_invariance():
    errors = order_errors(SEEDS)
    assert list(errors) == list(ORDER_VARIANTS)
    assert all(values.shape == (len(SEEDS), 2) for values in errors.values())
    plain, mean = errors["self-attention"], errors["mean over positions"]
    context = errors["one output, its context reordered"]
    assert plain[:, 0].max() < 1e-12 and plain[:, 1].min() > 1e-2
    assert mean.max() < 1e-12  # a summary that forgets the order is both
    assert np.isnan(context[:, 0]).all() and context[:, 1].max() < 1e-12
    for broken in ("positional encoding first", "causal mask"):
        assert errors[broken][:, 0].min() > 1e-2


def test_position_zero_of_a_causal_layer_outputs_its_own_value_exactly():
    """Query 0 may read key 0 only, so its weight is exactly 1 and its output is
    W_O (W_V x_0 + b_V) + b_O: its spread over the inputs is that of this affine map."""
    seed, d_model, heads, steps, batch = 3, 8, 2, 5, 16
    spreads = causal_output_spread((seed,), d_model, heads, steps, batch)
    manual_seed(seed)
    attention = MultiHeadAttention(d_model, heads).double()
    x = torch.randn(batch, steps, d_model, dtype=torch.float64,
                    generator=seeded_generator(seed))
    with torch.no_grad():
        own = attention.out_proj(attention.v_proj(x[:, 0]))  # (batch, d_model)
    expected = own.std(dim=0).square().mean().sqrt().item()
    assert math.isclose(spreads[0, 0], expected, rel_tol=1e-12)


def test_the_spread_of_causal_outputs_falls_like_one_over_root_position():
    spreads = causal_output_spread(SEEDS, steps=32)
    assert spreads.shape == (len(SEEDS), 32) and (spreads > 0).all()
    for row in spreads:
        slope = np.polyfit(np.log(np.arange(1, 33)), np.log(row), 1)[0]
        assert -0.6 < slope < -0.35  # uniform weights would give exactly -1/2

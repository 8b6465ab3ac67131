"""A deep stack at initialisation, over draws (Chapter 4): Pre-LN's skip path is the identity
exactly, the batched gradient profile equals one stack at a time, the token cosine, the
1/sqrt(L) branches; softmax fading in closed form."""

import math

import torch
from longdep.experiments.attention import encoder_layers
from longdep.experiments.depth import (
    VARIANTS,
    attention_stack,
    layer_gradient_profile,
    mean_token_cosine,
    skip_path_jacobians,
    token_cosines,
)
from longdep.experiments.softmax_fading import SCALE, planted_weights, predicted_weight
from longdep.measure.layers import layer_input_gradients
from longdep.seeds import seeded_generator


def test_the_pre_ln_skip_path_is_the_identity_exactly_and_post_ln_is_not():
    pre = skip_path_jacobians(3, 8, 2, 16, norm_first=True, glorot=True, seeds=(0, 1))
    post = skip_path_jacobians(3, 8, 2, 16, norm_first=False, glorot=True, seeds=(0, 1))
    assert (pre == [[0.0, 1.0], [0.0, 1.0]]).all()
    assert (post[:, 0] > 0.1).all()


def test_the_batched_profile_equals_each_stack_on_its_own():
    depth, width, seeds = 3, 8, (0, 4)
    profile = layer_gradient_profile(depth, width, False, True, False, seeds)
    generator = seeded_generator(width)  # the input and direction the profile draws
    x = torch.randn(1, 8, width, dtype=torch.float64, generator=generator)
    direction = torch.randn(width, dtype=torch.float64, generator=generator)
    for row, seed in zip(profile, seeds):
        layers = encoder_layers(depth, width, 2, 4 * width, False, True, seed)
        expected = layer_input_gradients(layers, x, direction).numpy()
        assert abs(row / expected - 1).max() < 1e-12


def test_mean_token_cosine_is_one_for_equal_directions_and_zero_for_orthogonal_ones():
    same = torch.tensor([[[1.0, 2.0], [2.0, 4.0], [0.5, 1.0]]], dtype=torch.float64)
    assert math.isclose(mean_token_cosine(same), 1.0, rel_tol=1e-15)
    assert mean_token_cosine(torch.eye(3, dtype=torch.float64)[None]) == 0.0


def test_pure_attention_collapses_and_scaled_branches_do_not():
    depths = (1, 4)
    only = token_cosines("attention only", depths, 16, 2, 8, seeds=(0, 1))
    scaled = token_cosines(VARIANTS[-1], depths, 16, 2, 8, seeds=(0, 1))
    assert only.shape == scaled.shape == (2, 2)
    assert only[:, -1].min() > 0.99 and scaled.max() < 0.3


def test_the_scaled_variant_shrinks_every_output_projection_by_root_depth():
    torch.manual_seed(0)
    plain = attention_stack("Pre-LN", 4, 8, 2)
    torch.manual_seed(0)
    scaled = attention_stack(VARIANTS[-1], 4, 8, 2)
    for (a, _), (b, _) in zip(plain, scaled):
        torch.testing.assert_close(b.out_proj.weight, a.out_proj.weight / 2, rtol=0, atol=0)
        torch.testing.assert_close(b.q_proj.weight, a.q_proj.weight, rtol=0, atol=0)


def test_softmax_fading_and_scalable_softmax_follow_their_closed_forms():
    lengths = [2, 16, 4096]
    for scale in (None, SCALE):
        for n, p in zip(lengths, planted_weights(lengths, scale)):
            assert math.isclose(p, predicted_weight(n, scale), rel_tol=1e-12)
    plain, scalable = planted_weights([65536]), planted_weights([65536], SCALE)
    assert plain[0] < 0.01 < 0.99 < scalable[0]

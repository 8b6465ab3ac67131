"""EncoderLayer equals torch.nn.TransformerEncoderLayer; the mini Transformer's fixes hold."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from longdep.book import seed_everything
from longdep.experiments.init_gradients import (
    LogitsAndStream,
    gradient_draws,
    gradient_profiles,
    logits_and_stream,
)
from longdep.experiments.key_recall import (
    KEY_RECALL_BUDGET,
    KeyRecallBudget,
    key_recall_transformer,
    train_key_recall,
)
from longdep.experiments.mini_transformer import (
    article_noise_fit,
    count_text,
    count_word,
    first_softmax,
    future_gradients,
    scaled_embedding_classifier,
    spread_text,
    swamping_ratios,
    token_position_norm_ratio,
)
from longdep.experiments.warmup import (
    count_series,
    depth_sweep,
    depth_sweep_run,
    mean_warmup_rate,
)
from longdep.measure.fit import fitted_exponent
from longdep.models.attention import causal_mask
from longdep.models.transformer import (
    EncoderLayer,
    EncoderStack,
    NextTokenHead,
    TransformerEncoder,
    next_token_model,
)
from longdep.seeds import seeded_generator
from longdep.stats import Count, spread
from torch import nn

TOLERANCE = {torch.float32: {"rtol": 1e-5, "atol": 1e-5},
             torch.float64: {"rtol": 1e-12, "atol": 1e-12}}


def torch_layer(norm_first, dtype, dropout=0.1):
    layer = nn.TransformerEncoderLayer(16, 4, 24, dropout=dropout, activation="relu",
                                       batch_first=True, norm_first=norm_first)
    return layer.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("mask_kind", [None, "causal", "per-batch"])
def test_encoder_layer_equals_torch_in_eval_mode(dtype, norm_first, mask_kind):
    seed_everything(11)
    reference = torch_layer(norm_first, dtype).eval()
    model = EncoderLayer.from_torch(reference).eval()
    x = torch.randn(3, 9, 16, dtype=dtype)
    mask = {None: None, "causal": causal_mask(9),
            "per-batch": (torch.rand(3, 9, 9) < 0.5) | torch.eye(9, dtype=torch.bool)}[mask_kind]
    # nn.TransformerEncoderLayer wants True = blocked, one (time, time) mask per head.
    torch_mask = None if mask is None else ~(mask if mask.dim() == 2
                                             else mask.repeat_interleave(4, dim=0))
    output = model(x, mask)
    torch.testing.assert_close(output, reference(x, src_mask=torch_mask), **TOLERANCE[dtype])
    with torch.no_grad():  # PyTorch's fused inference path
        torch.testing.assert_close(output, reference(x, src_mask=torch_mask), **TOLERANCE[dtype])


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_gradients_equal_torch(norm_first):
    seed_everything(12)
    reference = torch_layer(norm_first, torch.float64, dropout=0.0)
    model = EncoderLayer.from_torch(reference)
    x = torch.randn(2, 7, 16, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(model(x, causal_mask(7)).square().sum(), x)
    (expected,) = torch.autograd.grad(reference(x, src_mask=~causal_mask(7)).square().sum(), x)
    torch.testing.assert_close(grad, expected, **TOLERANCE[torch.float64])


def test_encoder_layer_has_torch_parameter_count_and_copies():
    reference = torch_layer(False, torch.float32)
    model = EncoderLayer.from_torch(reference)
    assert sum(p.numel() for p in model.parameters()) == sum(
        p.numel() for p in reference.parameters())
    assert model.dropout.p == model.self_attn.dropout == 0.1
    with torch.no_grad():
        reference.linear1.weight.zero_()
    assert model.linear1.weight.abs().sum() > 0


def test_from_torch_rejects_other_layers():
    with pytest.raises(ValueError, match="batch_first"):
        EncoderLayer.from_torch(nn.TransformerEncoderLayer(16, 4, 24))
    with pytest.raises(ValueError, match="relu"):
        EncoderLayer.from_torch(nn.TransformerEncoderLayer(16, 4, 24, activation="gelu",
                                                           batch_first=True))


def test_dropout_acts_only_in_training_mode():
    seed_everything(13)
    layer = EncoderLayer(16, 4, 24, dropout=0.5)
    x = torch.randn(2, 5, 16)
    layer.eval()
    torch.testing.assert_close(layer(x), layer(x))
    layer.train()
    assert not torch.allclose(layer(x), layer(x))


def test_causal_stack_ignores_the_future_and_full_stack_does_not():
    seed_everything(14)
    x = torch.randn(1, 8, 16, dtype=torch.float64)
    changed = x.clone()
    changed[0, 5:] += 1.0
    for causal in (True, False):
        stack = EncoderStack(16, 4, 2, 24, max_len=8, causal=causal).double()
        same = torch.allclose(stack(x)[0, :5], stack(changed)[0, :5], rtol=0, atol=1e-14)
        assert same == causal


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_last_only_stack_is_the_last_row_of_the_full_stack(norm_first, causal):
    seed_everything(16)
    full = EncoderStack(16, 4, 3, 24, max_len=9, norm_first=norm_first, causal=causal,
                        input_size=5).double()
    last = EncoderStack(16, 4, 3, 24, max_len=9, norm_first=norm_first, causal=causal,
                        input_size=5, last_only=True).double()
    last.load_state_dict(full.state_dict())
    x = torch.randn(2, 9, 5, dtype=torch.float64)
    mask = torch.rand(2, 9, 9) > 0.3
    mask[..., 0] = True  # every query may see something
    # a (time, time) mask per sequence, one row of keys for every query (time,), one per
    # sequence (batch, 1, time): the last query takes its own row of each (issue 27)
    for m in (None, mask, mask[0, 0], mask[:, :1]):
        inputs = [x.clone().requires_grad_() for _ in range(2)]
        y_full, y_last = full(inputs[0], m)[:, -1:], last(inputs[1], m)
        assert y_last.shape == (2, 1, 16)
        torch.testing.assert_close(y_last, y_full, rtol=0, atol=1e-13)
        (y_full.sum() + y_last.sum()).backward()
        torch.testing.assert_close(inputs[1].grad, inputs[0].grad, rtol=0, atol=1e-13)
    # only the last layer computes one position: the others' outputs are every position's
    widths = []
    hooks = [layer.register_forward_hook(lambda m, i, out: widths.append(out.shape[1]))
             for layer in last.layers]
    last(x)
    assert widths == [9, 9, 1]
    for hook in hooks:
        hook.remove()
    assert [y.shape[1] for y in last.layer_outputs(torch.randn(2, 9, 16, dtype=torch.float64))
            ] == [9, 9, 9]


def test_pre_ln_stack_ends_with_a_layer_norm():
    seed_everything(15)
    stack = EncoderStack(16, 4, 3, 24, max_len=10, norm_first=True, input_size=5)
    output = stack(torch.randn(2, 10, 5) * 10)
    torch.testing.assert_close(output.mean(-1), torch.zeros(2, 10), atol=1e-5, rtol=0)
    torch.testing.assert_close(output.var(-1, unbiased=False), torch.ones(2, 10), atol=1e-3,
                               rtol=0)


def article_parameter_count(vocab, d, layers, d_ff):
    """Embedding and per layer 4 projections, two FFN linears and two LayerNorms; no head."""
    per_layer = 4 * (d * d + d) + (d * d_ff + d_ff) + (d_ff * d + d) + 2 * 2 * d
    return vocab * d + layers * per_layer


def count(module):
    return sum(p.numel() for p in module.parameters())  # a tied tensor is counted once


@pytest.mark.parametrize("norm_first", [False, True])
def test_parameter_count_of_the_article_configuration(norm_first):
    with torch.device("meta"):  # the shapes only, no 24 million random numbers
        model = TransformerEncoder(10000, 512, 8, 6, 2048, max_len=100, norm_first=norm_first)
        untied = next_token_model(10000, 512, 8, 6, 2048, 100, norm_first=norm_first)
        tied = next_token_model(10000, 512, 8, 6, 2048, 100, norm_first=norm_first,
                                tie_weights=True)
    final_norm = 2 * 512 if norm_first else 0
    assert article_parameter_count(10000, 512, 6, 2048) == 24_034_304
    assert count(model) == 5_120_000 + 6 * 3_152_384 + final_norm == 24_034_304 + final_norm
    assert count(untied) - count(untied.encoder) == 5_130_000
    assert count(tied) - count(tied.encoder) == 10_000
    assert tied.head.weight is tied.encoder.embedding.weight


def test_next_token_model_equals_the_old_encoder_with_its_head():
    """Before the head became a module of its own, TransformerEncoder created the embedding,
    the stack and a linear head in that order; next_token_model gives the same weights."""
    tokens = torch.randint(0, 20, (2, 6), generator=torch.Generator().manual_seed(3))
    torch.manual_seed(5)
    embedding = nn.Embedding(20, 8)
    nn.init.normal_(embedding.weight, std=8**-0.5)
    stack = EncoderStack(8, 2, 2, 16, 10, 0.0, False, True)
    head = nn.Linear(8, 20)
    expected = head(stack(embedding(tokens) * math.sqrt(8), None))
    after_old = torch.rand(3)
    torch.manual_seed(5)
    model = next_token_model(20, 8, 2, 2, 16, 10, dropout=0.0, causal=True)
    assert torch.equal(model(tokens), expected)
    assert torch.equal(torch.rand(3), after_old)  # the same random numbers consumed
    with pytest.raises(TypeError, match="tie_to needs a torch.nn.Embedding, got Linear"):
        NextTokenHead(8, 20, tie_to=nn.Linear(8, 20))
    with pytest.raises(ValueError, match="num_embeddings=21: it needs num_embeddings=20"):
        NextTokenHead(8, 20, tie_to=nn.Embedding(21, 8))


@pytest.mark.parametrize("d_model", [64, 256])
def test_embedding_scale_does_not_swamp_the_positional_encoding(d_model):
    seed_everything(16)
    scale = math.sqrt(d_model)
    # The article: N(0, 1) entries times sqrt(d), about sqrt(2 d) times the encoding's norm.
    article = token_position_norm_ratio(nn.Embedding(2000, d_model), scale, max_len=100)
    assert article == pytest.approx(math.sqrt(2 * d_model), rel=0.05)
    # The fix: unit-variance coordinates against mean-square 1/2, a ratio near sqrt(2).
    model = TransformerEncoder(2000, d_model, 4, 1, 64, max_len=100)
    fixed = token_position_norm_ratio(model.embedding, scale, max_len=100)
    assert fixed == pytest.approx(math.sqrt(2), rel=0.05)


def test_transformer_encoder_outputs_features_and_is_causal_on_request():
    seed_everything(17)
    model = next_token_model(20, 16, 2, 2, 32, max_len=12, dropout=0.0, causal=True)
    tokens = torch.randint(0, 20, (3, 12))
    features, logits = model.encoder(tokens), model(tokens)
    assert features.shape == (3, 12, 16) and logits.shape == (3, 12, 20)
    assert model.encoder.d_model == 16
    torch.testing.assert_close(logits, features @ model.head.weight.T + model.head.bias)
    changed = tokens.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % 20
    torch.testing.assert_close(model(changed)[:, :6], logits[:, :6])


def test_transformer_encoder_rejects_bad_arguments():
    with pytest.raises(ValueError, match="d_model must be a multiple of num_heads"):
        TransformerEncoder(100, 30, 4, 2, 64, max_len=10)
    with pytest.raises(ValueError, match="d_model must be at least 1, got 0"):
        TransformerEncoder(20, 0, 1, 1, 16, 10)
    model = TransformerEncoder(100, 16, 4, 2, 32, max_len=10)
    with pytest.raises(ValueError, match=r"tokens must have shape \(batch, time\)"):
        model(torch.zeros(2, 5, 16, dtype=torch.long))
    with pytest.raises(TypeError, match=r"tokens must be int64 token ids"):
        model(torch.zeros(2, 5))
    with pytest.raises(ValueError, match=r"tokens must lie in \[0, 100\), got values from 0 to "
                                         r"100"):
        model(torch.tensor([[0, 100]]))
    with pytest.raises(ValueError, match="mask of shape \\(4, 4\\) does not broadcast"):
        model(torch.zeros(2, 5, dtype=torch.long), causal_mask(4))
    with pytest.raises(ValueError, match="longer than the positional-encoding table"):
        model(torch.zeros(2, 11, dtype=torch.long))
    with pytest.raises(ValueError, match="num_layers must be at least 1"):
        EncoderStack(16, 4, 0, 32, max_len=10)
    with pytest.raises(ValueError, match="input_size must be at least 1, got 0"):
        EncoderStack(16, 4, 1, 32, max_len=10, input_size=0)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, time, 8\)"):
        EncoderStack(16, 4, 1, 32, max_len=10, input_size=8)(torch.zeros(1, 3, 16))


def test_stack_is_a_key_recall_core(one_thread):
    budget = KeyRecallBudget(steps=100, batch_size=32, lr=5e-3, embedding_dim=12)
    seed_everything(18)
    core = EncoderStack(16, 2, 1, 32, max_len=16, norm_first=True, input_size=12)
    result = train_key_recall(core, 16, distance=12, seed=0, budget=budget)
    assert result.accuracy >= 0.99


def test_gradient_draws_equal_backward_draw_by_draw():
    """The vmapped draws equal one plain forward and backward per draw: the gradient norm of
    every layer's W_2, and the stream's root mean square."""
    draws = gradient_draws(3, True, seeds=(4, 5), vocab_size=30, d_model=16, num_heads=2,
                           d_ff=32, batch_size=4, length=8)
    assert draws.norms.shape == (2, 3) and draws.stream.shape == (2,)
    tokens, targets = torch.randint(0, 30, (2, 4, 8), generator=seeded_generator(0))
    for i, seed in enumerate((4, 5)):
        seed_everything(seed)
        model = next_token_model(30, 16, 2, 3, 32, 8, dropout=0.0, norm_first=True, causal=True)
        logits, stream = logits_and_stream(model, tokens)
        torch.testing.assert_close(logits, model(tokens))  # the same function as the model
        nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).backward()
        expected = [layer.linear2.weight.grad.norm().item() for layer in model.encoder.stack.layers]
        np.testing.assert_allclose(draws.norms[i], expected, rtol=1e-5)
        assert draws.stream[i] == pytest.approx(stream.item(), rel=1e-5)


def test_gradient_profiles_side_by_side_equal_one_after_another(one_thread):
    profiles = gradient_profiles((1, 2), seeds=(0, 1), d_model=8)
    assert list(profiles) == ["PyTorch default", "Glorot"]
    for name, glorot in (("PyTorch default", False), ("Glorot", True)):
        for norm_first, by_depth in zip((False, True), profiles[name]):
            assert list(by_depth) == [1, 2]
            for depth in (1, 2):
                serial = gradient_draws(depth, norm_first, (0, 1), d_model=8, d_ff=32,
                                        glorot=glorot)
                assert np.array_equal(by_depth[depth].norms, serial.norms)
                assert np.array_equal(by_depth[depth].stream, serial.stream)


def test_pre_ln_last_layer_gradient_shrinks_with_depth_and_post_ln_does_not(one_thread):
    """Xiong et al. (2020), Theorem 1, on small models: the claim Chapter 5 plots, and the
    Pre-LN stream that grows as the gradient falls."""
    post = {L: gradient_draws(L, False, seeds=(0, 1, 2)) for L in (4, 16)}
    pre = {L: gradient_draws(L, True, seeds=(0, 1, 2)) for L in (4, 16)}
    last = {name: {L: np.median(d[L].norms[:, -1]) for L in d} for name, d in
            (("post", post), ("pre", pre))}
    assert last["pre"][16] < 0.8 * last["pre"][4]
    assert last["post"][16] > 0.8 * last["post"][4]
    assert last["post"][16] > last["pre"][16]
    assert np.median(pre[16].stream) > 1.2 * np.median(pre[4].stream)
    assert np.allclose(post[16].stream, 1.0, atol=1e-3)  # a LayerNorm's output


def test_fresh_noise_demo_is_reproducible_and_cannot_go_below_the_noise(one_thread):
    def models():
        seed_everything(20)
        return [TransformerEncoder(50, 16, 2, 1, 32, max_len=16, dropout=0.0) for _ in range(2)]

    first = article_noise_fit(models(), 50, seeds=(0, 1), steps=30, lr=1e-2)
    second = article_noise_fit(models(), 50, seeds=(0, 1), steps=30, lr=1e-2)
    assert [r.losses for r in first] == [r.losses for r in second]
    assert len(first) == 2 and len(first[0].grad_norms) == 30
    assert first[0].losses != first[1].losses  # each seed its own noise
    # The target is independent of the input: the expected loss is at least its variance, 1.
    assert min(min(r.losses) for r in first) > 0.9


def test_mean_warmup_rate_is_the_schedule_mean():
    """A linear warm-up over w of n steps sums to lr (w + 1) / 2 + lr (n - w)."""
    assert mean_warmup_rate(0.01, 30, 60) == pytest.approx(0.01 * (15.5 + 30) / 60)
    assert mean_warmup_rate(0.01, 0, 60) == 0.01
    assert mean_warmup_rate(0.01, 100, 10) == pytest.approx(0.01 * 5.5 / 100)


def test_swamping_ratios_are_sqrt_two_d_and_sqrt_two():
    article, fixed = swamping_ratios(seeds=(0, 1), vocab_size=400, d_model=64)
    np.testing.assert_allclose(article, math.sqrt(2 * 64), rtol=0.02)
    np.testing.assert_allclose(fixed, math.sqrt(2), rtol=0.02)


def test_the_article_embedding_saturates_the_first_softmax():
    """With N(0, 1) embeddings scaled by sqrt(d) the first softmax puts most of each row on one
    key; with the fix it stays near uniform (Chapter 5's mechanism)."""
    tokens = torch.randint(0, 9, (8, 21), generator=seeded_generator(0))
    seed_everything(3)
    saturated = first_softmax(scaled_embedding_classifier(True, 20), tokens)
    seed_everything(3)
    fixed = first_softmax(scaled_embedding_classifier(False, 20), tokens)
    assert saturated[0] > 0.4 and fixed[0] < 0.15
    assert saturated[1] < 1.5 and fixed[1] > 0.9 * math.log(21)
    uniform = torch.full((1, 1, 5, 5), 0.2)
    assert -(uniform * uniform.log()).sum(-1).mean() == pytest.approx(math.log(5))


def test_scaled_embedding_classifier_reads_the_last_position():
    seed_everything(4)
    model = scaled_embedding_classifier(False, 6)
    tokens = torch.randint(0, 9, (3, 7))
    logits = model(tokens)
    assert logits.shape == (3, KEY_RECALL_BUDGET.num_keys)
    model.model.encoder.stack.last_only = False  # the full output's last row is the same
    torch.testing.assert_close(model.model(tokens)[:, -1], logits)


def test_future_gradients_are_exactly_zero_with_the_causal_mask():
    leak = future_gradients(seeds=(0, 1), position=3, length=6, d_model=8)
    assert leak[True].shape == (2, 6)
    assert (leak[True][:, 4:] == 0).all() and (leak[True][:, :4] > 0).all()
    assert (leak[False][:, 4:] > 0).all()


def test_key_recall_transformer_fits_the_budget():
    core = key_recall_transformer()
    output = core(torch.zeros(2, max(KEY_RECALL_BUDGET.distances) + 1,
                              KEY_RECALL_BUDGET.embedding_dim))
    assert output.shape == (2, 1, KEY_RECALL_BUDGET.model_dim)  # the last step, all it needs


def test_depth_sweep_equals_one_training_run_per_seed(one_thread):
    settings = {"warmup_steps": 3, "steps": 4, "batch_size": 4, "distance": 3, "num_heads": 2}
    sweep = depth_sweep((1, 2), 1e-3, seeds=(0, 1), **settings)
    assert list(sweep) == ["Post-LN", "Post-LN + warm-up", "Pre-LN"]
    assert all(grid.shape == (2, 2) for grid in sweep.values())
    budget = replace(KEY_RECALL_BUDGET, lr=1e-3, steps=4, batch_size=4)
    for label, norm_first, warmup in (("Post-LN + warm-up", False, 3), ("Pre-LN", True, 0)):
        torch.manual_seed(1)
        core = key_recall_transformer(budget, 2, 2, norm_first=norm_first)
        alone = train_key_recall(core, budget.model_dim, 3, seed=1, budget=budget,
                                 warmup_steps=warmup)
        assert sweep[label][1, 1].item() == pytest.approx(alone.accuracy, abs=1 / 64)


@pytest.mark.parametrize("bad, match", [
    ({"depths": ()}, "depths"), ({"depths": (0, 2)}, "depths"), ({"depths": "12"}, "depths"),
    ({"lr": 0.0}, "lr"), ({"lr": math.nan}, "lr"), ({"steps": 0}, "steps"),
    ({"batch_size": 2.5}, "batch_size"), ({"warmup_steps": -1}, "warmup_steps"),
    ({"seeds": ()}, "seeds"), ({"labels": ("Post-LN, warm",)}, "labels"),
])
def test_depth_sweep_rejects_bad_arguments(bad, match):
    arguments = {"depths": (1,), "lr": 1e-3, "warmup_steps": 0, "steps": 2, "batch_size": 4} | bad
    wrong_type = bad in ({"depths": "12"}, {"batch_size": 2.5})  # TypeError, as everywhere
    with pytest.raises(TypeError if wrong_type else ValueError, match=match):
        depth_sweep(**arguments)


@pytest.mark.parametrize("labels, match", [
    ((), "labels must be among"), (("Post-LN", "Post-LN, warm"), "labels must be among"),
    (("Post-LN", "Pre-LN"), "share one layer order"),
])
def test_depth_sweep_run_rejects_labels_it_cannot_train_together(labels, match):
    budget = replace(KEY_RECALL_BUDGET, steps=1, batch_size=2)
    with pytest.raises(ValueError, match=match):
        depth_sweep_run(labels, 1, budget, 3, 2, (0,), 0)


def test_glorot_initialisation_makes_pre_ln_decay_faster(one_thread):
    """Chapter 5's claim: with Glorot's larger weights the Pre-LN decay is steeper."""
    depths = (4, 16)
    slope = {}
    for glorot in (False, True):
        draws = {L: gradient_draws(L, True, seeds=(0, 1), d_model=32, d_ff=64, glorot=glorot)
                 for L in depths}
        slope[glorot] = fitted_exponent(depths, [np.median(draws[L].norms[:, -1])
                                                 for L in depths])
    assert slope[True] < slope[False] - 0.05


def test_counts_read_as_the_book_prints_them():
    """A count shows its Wilson interval and, if it earns one, its word, in both languages;
    the figure's series carry the same numbers."""
    assert count_text(Count(10, 10)).en == "10/10 (0.72-1.00) almost always"
    assert count_text(Count(10, 10)).zh == "10/10 (0.72-1.00) 几乎总是"
    assert count_text(Count(4, 10)).en == "4/10 (0.17-0.69)"
    assert count_word(Count(0, 10)).en == "almost never"
    assert spread_text(spread([0.5, -0.25, 0.125])).en == "0.12 (-0.25 to 0.50)"
    assert spread_text(spread([0.5, -0.25, 0.125])).zh == "0.12（-0.25 到 0.50）"
    assert "straddles" in count_word(Count(5, 10)).en
    series = count_series({1: Count(10, 10), 4: Count(4, 10)})
    assert series["depths"] == [1, 4] and series["trained"] == [10, 4]
    assert series["worded"] == [True, False] and series["high"][0] == 1.0


def test_depth_sweep_control_trains_at_the_mean_rate(one_thread):
    """The constant-rate control is Post-LN without warm-up at the warm-up's mean rate: the
    same as a plain Post-LN sweep at that learning rate."""
    settings = {"steps": 4, "batch_size": 4, "distance": 3, "num_heads": 2, "seeds": (0, 1)}
    control = depth_sweep((1,), 1e-2, warmup_steps=3, labels=("Post-LN, constant mean rate",),
                          **settings)
    plain = depth_sweep((1,), mean_warmup_rate(1e-2, 3, 4), warmup_steps=0,
                        labels=("Post-LN",), **settings)
    assert torch.equal(control["Post-LN, constant mean rate"], plain["Post-LN"])


def test_a_deepest_only_control_trains_once_at_the_largest_depth(one_thread):
    """A control in ``deepest_only`` joins the sweep's pool and gives what its own sweep at the
    largest depth gives, bit for bit; the other labels are unchanged."""
    settings = {"warmup_steps": 3, "steps": 4, "batch_size": 4, "distance": 3, "num_heads": 2,
                "seeds": (0, 1)}
    mean = "Post-LN, constant mean rate"
    sweep = depth_sweep((1, 2), 1e-2, deepest_only=(mean,), **settings)
    assert list(sweep) == ["Post-LN", "Post-LN + warm-up", "Pre-LN", mean]
    assert sweep[mean].shape == (1, 2) and sweep["Pre-LN"].shape == (2, 2)
    alone = depth_sweep((2,), 1e-2, labels=(mean,), **settings)
    assert torch.equal(sweep[mean], alone[mean])
    assert torch.equal(sweep["Pre-LN"], depth_sweep((1, 2), 1e-2, labels=("Pre-LN",),
                                                    **settings)["Pre-LN"])
    with pytest.raises(ValueError, match="either in labels or in deepest_only"):
        depth_sweep((1,), 1e-2, labels=(mean,), deepest_only=(mean,), **settings)
    with pytest.raises(ValueError, match="labels must be among"):
        depth_sweep((1,), 1e-2, deepest_only=("warm",), **settings)


@pytest.mark.parametrize("call, error, match", [
    (lambda: token_position_norm_ratio(torch.zeros(3, 4), 2.0, 8), TypeError, "embedding"),
    (lambda: token_position_norm_ratio(nn.Embedding(3, 4), -1.0, 8), ValueError, "scale"),
    (lambda: token_position_norm_ratio(nn.Embedding(3, 4), 2.0, 0), ValueError, "max_len"),
    (lambda: logits_and_stream(nn.Linear(2, 2), torch.zeros(1, 2, dtype=torch.long)),
     TypeError, "model"),
    (lambda: logits_and_stream(next_token_model(5, 8, 2, 1, 8, 4), torch.zeros(1, 2)),
     TypeError, "tokens"),
    (lambda: gradient_draws(0, False), ValueError, "depth"),
    (lambda: gradient_draws(2, False, seeds=()), ValueError, "seeds"),
    (lambda: gradient_draws(2, False, d_model=0), ValueError, "d_model"),
    (lambda: gradient_draws(2, 1), TypeError, "norm_first"),
    (lambda: gradient_profiles(()), ValueError, "depths"),
    (lambda: LogitsAndStream(nn.Linear(2, 2))(torch.zeros(1, 2, dtype=torch.long)),
     TypeError, "model"),
    (lambda: article_noise_fit("model", 5), TypeError, "models"),
    (lambda: article_noise_fit([nn.Linear(2, 2)], 5, steps=0), ValueError, "steps"),
    (lambda: article_noise_fit([nn.Linear(2, 2)], 5, lr=math.inf), ValueError, "lr"),
    (lambda: mean_warmup_rate(0.1, -1, 5), ValueError, "warmup_steps"),
    (lambda: mean_warmup_rate(math.nan, 1, 5), ValueError, "lr"),
    (lambda: swamping_ratios(seeds=()), ValueError, "seeds"),
    (lambda: scaled_embedding_classifier(1, 5), TypeError, "article"),
    (lambda: first_softmax(nn.Linear(2, 2), torch.zeros(1, 2, dtype=torch.long)),
     TypeError, "model"),
    (lambda: future_gradients(position=12, length=12), ValueError, "position"),
    (lambda: count_text((3, 10)), TypeError, "counted"),
    (lambda: count_word(None), TypeError, "counted"),
    (lambda: spread_text([1.0]), TypeError, "values"),
    (lambda: count_series({}), TypeError, "counts"),
    (lambda: count_series({0: Count(1, 2)}), ValueError, "depth"),
])
def test_experiments_check_their_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call()


# mixer_stack: each layer built with its own mixer (issue 26) -------------------------------

@pytest.mark.parametrize("mixer, kind", [
    ("softmax", "MultiHeadAttention"), ("window", "WindowedSelfAttention"),
    ("linear", "LinearSelfAttention"), ("ssm", "SSMSelfMixer")])
def test_mixer_stack_builds_each_layer_with_its_mixer_and_nothing_else(mixer, kind):
    from longdep.models.mixers import MIXERS, mixer_stack
    stack = mixer_stack(mixer, 8, 2, 2, 16, 10, window=3, state_size=4, input_size=5)
    assert type(stack) is EncoderStack and isinstance(stack.input_projection, nn.Linear)
    assert [type(layer.self_attn).__name__ for layer in stack.layers] == [kind, kind]
    # no parameter is drawn and then thrown away: the mixer's parameters, then the layer's
    seed_everything(3)
    projection = nn.Linear(5, 8)
    seed_everything(3)
    built = mixer_stack(mixer, 8, 2, 2, 16, 10, window=3, state_size=4, input_size=5)
    torch.testing.assert_close(built.input_projection.weight, projection.weight, rtol=0, atol=0)
    seed_everything(3)
    nn.Linear(5, 8)
    first_mixer = MIXERS[mixer](8, 2, window=3, state_size=4)
    for ours, expected in zip(built.layers[0].self_attn.parameters(), first_mixer.parameters()):
        torch.testing.assert_close(ours, expected, rtol=0, atol=0)
    x = torch.randn(2, 6, 5)
    assert built(x).shape == (2, 6, 8)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, time, 5\)"):
        built(torch.randn(2, 6, 8))


def test_a_stack_of_given_mixers_takes_each_from_its_maker():
    made = []

    def mixer():
        made.append(nn.Identity())
        return made[-1]

    stack = EncoderStack(8, 2, 3, 16, 10, mixer=mixer)
    assert [layer.self_attn for layer in stack.layers] == made and len(made) == 3
    with pytest.raises(TypeError, match="mixer must be callable"):
        EncoderStack(8, 2, 1, 16, 10, mixer=3)
    with pytest.raises(TypeError, match=r"self_attn must be a torch.nn.Module, got int"):
        EncoderLayer(8, 2, 16, self_attn=3)

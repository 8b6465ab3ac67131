"""Chapter 5's induction heads: the copy task, the attention maps and scores, the runs, and
their figures."""

import math
from dataclasses import replace

import matplotlib
import numpy as np
import pytest
import torch
from longdep.experiments import induction as ind
from longdep.plots.induction import plot_attention_maps, plot_copy_losses
from longdep.plots.style import alt_text
from longdep.seeds import seeded_generator
from longdep.tasks import IGNORED, repeated_segment_batch

TINY = replace(ind.INDUCTION_BUDGET, vocab_size=8, length=12, segment=(2, 4), fixed_offset=6,
               d_model=8, d_ff=16, steps=6, batch_size=4, eval_batches=1, seeds=(0, 1))


@pytest.mark.parametrize("offset", [None, 16])
def test_second_occurrence_repeats_the_first_and_targets_are_the_next_tokens(offset):
    tokens, targets, sources = repeated_segment_batch(64, 32, 16, (5, 8), offset,
                                                      seeded_generator(0), sources=True)
    asked = targets != IGNORED
    assert ((sources >= 0) == asked).all()
    rows, positions = asked.nonzero(as_tuple=True)
    # the target is the next token, and the earlier occurrence shows it at the source
    assert torch.equal(targets[rows, positions], tokens[rows, positions + 1])
    assert torch.equal(tokens[rows, sources[rows, positions]], targets[rows, positions])
    assert torch.equal(tokens[rows, sources[rows, positions] - 1], tokens[rows, positions])
    per_row = asked.sum(1)
    assert per_row.min() >= 5 - 1 and per_row.max() <= 8 - 1  # n - 1 copied positions
    offsets = positions + 1 - sources[rows, positions]
    if offset is None:  # the offset varies widely: the position alone cannot say where to look
        assert len(offsets.unique()) > 10 and offsets.min() >= 5 and offsets.max() <= 27
    else:
        assert (offsets == offset).all()


@pytest.mark.parametrize("kwargs, error, match", [
    ({"segment": [5, 8]}, TypeError, "segment must be a pair"),
    ({"segment": (1, 8)}, ValueError, r"segment\[0\] must be at least 2"),
    ({"segment": (6, 5)}, ValueError, r"segment\[1\] must be at least 6"),
    ({"offset": 4}, ValueError, "offset must be at least 8"),
    ({"length": 15}, ValueError, "length must hold both occurrences"),
    ({"vocab_size": 1}, ValueError, "vocab_size must be at least 2"),
    ({"generator": 3}, TypeError, "generator"),
    ({"sources": 1}, TypeError, "sources must be True or False"),
])
def test_repeated_segment_batch_rejects_bad_arguments(kwargs, error, match):
    arguments = {"batch_size": 2, "length": 32, "vocab_size": 16} | kwargs
    with pytest.raises(error, match=match):
        repeated_segment_batch(**arguments)


def test_attention_maps_are_causal_rows_of_weights_and_uniform_without_scores():
    torch.manual_seed(0)
    model = ind.induction_model(2, TINY)
    tokens = torch.randint(0, TINY.vocab_size, (3, TINY.length))
    maps = ind.attention_maps(model, tokens)
    assert maps.shape == (2, 3, TINY.num_heads, TINY.length, TINY.length)
    torch.testing.assert_close(maps.sum(-1), torch.ones(maps.shape[:-1]))
    assert (maps.triu(diagonal=1) == 0).all()  # no query sees a later key
    with torch.no_grad():  # zero queries: every score 0, so the weights are uniform
        for layer in model.encoder.stack.layers:
            layer.self_attn.q_proj.weight.zero_()
            layer.self_attn.q_proj.bias.zero_()
    uniform = ind.attention_maps(model, tokens)
    expected = torch.tril(torch.ones(TINY.length, TINY.length))
    expected = expected / expected.sum(-1, keepdim=True)
    torch.testing.assert_close(uniform, expected.expand_as(uniform))


def test_head_scores_are_the_mean_weights_on_the_previous_and_the_copied_position():
    time = 6
    previous = torch.zeros(time, time)
    previous[0, 0] = 1.0
    previous[torch.arange(1, time), torch.arange(time - 1)] = 1.0  # each query looks one back
    sources = torch.full((1, time), -1)
    sources[0, 4], sources[0, 5] = 1, 2
    copying = torch.zeros(time, time)
    copying[4, 1], copying[5, 2], copying[0, 0] = 1.0, 0.5, 1.0
    maps = torch.stack([previous, copying])[None, None].expand(2, 1, 2, time, time)
    prev_score, induction_score = ind.head_scores(maps, sources)
    torch.testing.assert_close(prev_score, torch.tensor([[1.0, 0.0], [1.0, 0.0]]))
    torch.testing.assert_close(induction_score, torch.tensor([[0.0, 0.75], [0.0, 0.75]]))
    with pytest.raises(ValueError, match="at least one copied"):
        ind.head_scores(maps, torch.full((1, time), -1))


def test_plateau_and_drop_and_the_copy_loss_read_the_curves():
    losses = np.concatenate([np.full((2, 50), 2.5), np.full((2, 50), 1.0)], axis=1)
    losses[1, :] = 2.5  # the second seed never leaves the plateau
    run = ind.InductionRun(losses, *(np.zeros(2),) * 4, np.zeros((1, 1, 3, 3)), np.zeros(3),
                           np.zeros(3))
    start, fall = ind.plateau_and_drop(run, high=2.0, low=1.5, smooth=1)
    assert start.tolist() == [51, -1] and fall.tolist() == [0, -1]
    np.testing.assert_allclose(ind.copy_loss_at(run, 100, window=10), [1.0, 2.5])
    np.testing.assert_allclose(ind.copy_loss_at(run, 55, window=10), [1.75, 2.5])
    with pytest.raises(ValueError, match="need low < high"):
        ind.plateau_and_drop(run, high=1.0, low=2.0)
    with pytest.raises(ValueError, match="step"):
        ind.copy_loss_at(run, 101)


def test_runs_side_by_side_equal_one_after_another(one_thread):
    four = replace(TINY, seeds=(0, 1, 2, 3))  # trained as two halves of two seeds
    runs = ind.induction_runs(("2 layers", "1 layer, fixed offset"), four)
    alone = ind.train_induction(2, four)
    assert np.array_equal(runs["2 layers"].losses, alone.losses)
    assert np.array_equal(runs["2 layers"].induction, alone.induction)
    fixed = runs["1 layer, fixed offset"]
    assert fixed.losses.shape == (4, TINY.steps)
    assert fixed.example.shape[:2] == (1, TINY.num_heads)
    assert ((0 <= fixed.copy_accuracy) & (fixed.copy_accuracy <= 1)).all()
    long = ind.train_induction(1, TINY, steps=2 * TINY.steps)
    assert long.losses.shape == (2, 2 * TINY.steps)
    # the loss at the start is near a uniform guess over the vocabulary
    assert abs(np.median(long.losses[:, 0]) - math.log(TINY.vocab_size)) < 0.5


@pytest.mark.parametrize("call, error, match", [
    (lambda: ind.induction_model(0), ValueError, "num_layers"),
    (lambda: ind.induction_model(1, budget="b"), TypeError, "budget"),
    (lambda: ind.attention_maps(torch.nn.Linear(2, 2), torch.zeros(1, 2)), TypeError, "model"),
    (lambda: ind.head_scores(torch.zeros(2, 2), torch.zeros(1, 2)), ValueError, "maps"),
    (lambda: ind.train_induction(1, TINY, steps=0), ValueError, "steps"),
    (lambda: ind.train_induction(1, TINY, fixed=1), TypeError, "fixed"),
    (lambda: ind.induction_runs(("3 layers",)), ValueError, "labels must be among"),
    (lambda: ind.copy_loss_at("run", 5), TypeError, "run"),
    (lambda: ind.plateau_and_drop("run", 2.0, 1.0), TypeError, "run"),
])
def test_induction_drivers_check_their_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_figures_say_what_they_show():
    losses = {"2 layers": np.linspace(2.8, 1.0, 40)[None].repeat(3, 0)}
    fig = plot_copy_losses(losses, chance=math.log(16), budget_steps=30,
                           copies={"2 layers": (3, 3)}, smooth=5)
    assert isinstance(fig, matplotlib.figure.Figure)
    assert "2 layers: 3/3 seeds copy" in alt_text(fig)
    tokens, sources = np.arange(6), np.array([-1, -1, -1, 1, 2, -1])
    fig = plot_attention_maps(tokens, {"layer 2": np.eye(6)}, sources)
    assert "for the 2 queries inside the repeated segment" in alt_text(fig)
    with pytest.raises(ValueError, match="copies must count"):
        plot_copy_losses(losses, math.log(16), 30, copies={})
    with pytest.raises(ValueError, match="sources must have 6 entries"):
        plot_attention_maps(tokens, {"layer 2": np.eye(6)}, sources[:5])
    with pytest.raises(ValueError, match=r"maps\['layer 2'\] must have 6 entries along axis 1"):
        plot_attention_maps(tokens, {"layer 2": np.ones((6, 5))}, sources)

"""Tests of multi-query associative recall (Chapter 6, "The price of a fixed state"):
longdep.tasks.mqar_batch's and mqar_mixture_batch's layouts and errors, and the MQAR
experiment's pieces."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from longdep.experiments.mqar import (
    MQAR_MODELS,
    RECALLED,
    MQARSetting,
    _ByLength,  # the training view of mqar_training
    held_out_accuracies,
    kept_at,
    mqar_runs,
    mqar_training,
    pairs_recalled,
    recall_counts,
)
from longdep.experiments.registry import KIND
from longdep.models.heads import PairRecallClassifier
from longdep.models.mixers import mixer_stack
from longdep.plots.efficient import plot_mqar
from longdep.seeds import seeded_generator
from longdep.tasks import IGNORED, mqar_batch, mqar_mixture_batch
from longdep.train import HELD_OUT, cross_entropy, train_seeds

TINY = MQARSetting(pair_counts=(1, 2), num_keys=4, steps=2, longer=2, batch_size=4,
                   eval_size=8, seeds=(0, 1))


def test_layout_of_a_batch():
    generator = torch.Generator().manual_seed(0)
    tokens, targets = mqar_batch(50, 5, num_keys=7, num_values=4, generator=generator)
    assert tokens.shape == (50, 10, 2) and targets.shape == (50, 10)
    assert tokens.dtype == targets.dtype == torch.int64
    pairs, queries = tokens[:, :5], tokens[:, 5:]
    assert (targets[:, :5] == IGNORED).all()  # the pair steps are not scored
    for row in range(50):
        keys = pairs[row, :, 0].tolist()
        assert len(set(keys)) == 5 and all(0 <= k < 7 for k in keys)  # distinct keys
        assert sorted(queries[row, :, 0].tolist()) == sorted(keys)  # every key asked once
        value_of = dict(zip(keys, pairs[row, :, 1].tolist()))
        assert targets[row, 5:].tolist() == [value_of[k] for k in queries[row, :, 0].tolist()]
    assert (queries[..., 1] == 4).all() and (pairs[..., 1] < 4).all()  # "asked for" mark
    orders = {tuple(q) for q in queries[..., 0].tolist()}
    assert len(orders) > 40  # queries come in a random order, not the pairs' order


def test_a_mixture_holds_each_count_laid_out_as_alone_and_padded_at_its_end():
    tokens, targets = mqar_mixture_batch(60, [1, 2, 3], num_keys=5, num_values=4,
                                         generator=torch.Generator().manual_seed(1))
    assert tokens.shape == (60, 6, 2) and targets.shape == (60, 6)
    for row in range(60):
        pairs = 1 + row // 20  # 20 sequences of each count, in order
        keys, values = tokens[row, :pairs, 0].tolist(), tokens[row, :pairs, 1].tolist()
        asked = tokens[row, pairs:2 * pairs, 0].tolist()
        assert len(set(keys)) == pairs and sorted(asked) == sorted(keys)
        assert max(values) < 4 and (tokens[row, pairs:2 * pairs, 1] == 4).all()
        value_of = dict(zip(keys, values))
        assert targets[row, pairs:2 * pairs].tolist() == [value_of[k] for k in asked]
        assert (targets[row, :pairs] == IGNORED).all()
        assert (targets[row, 2 * pairs:] == IGNORED).all() and (tokens[row, 2 * pairs:] == 0).all()
    orders = {tuple(tokens[row, 3:6, 0].tolist()) for row in range(40, 60)}
    assert len(orders) > 10  # the queries come in random orders
    with pytest.raises(ValueError, match="batch_size must be a multiple of the 3 pair counts"):
        mqar_mixture_batch(4, [1, 2, 3])
    with pytest.raises(ValueError, match="pair_counts must hold at least 1 ints"):
        mqar_mixture_batch(4, [])
    with pytest.raises(ValueError, match="pair_counts must be at most num_keys = 4"):
        mqar_mixture_batch(4, [2, 8], num_keys=4)


def test_a_seeded_generator_makes_it_reproducible():
    first = mqar_batch(8, 4, generator=torch.Generator().manual_seed(3))
    second = mqar_batch(8, 4, generator=torch.Generator().manual_seed(3))
    assert all(torch.equal(a, b) for a, b in zip(first, second))


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(batch_size=0, num_pairs=2), ValueError, "batch_size must be at least 1, got 0"),
    (dict(batch_size=2, num_pairs=0), ValueError, "num_pairs must be at least 1, got 0"),
    (dict(batch_size=2, num_pairs=2.0), TypeError, "num_pairs must be an int, got float 2.0"),
    (dict(batch_size=2, num_pairs=True), TypeError, "num_pairs must be an int, got bool"),
    (dict(batch_size=2, num_pairs=2, num_values=1), ValueError,
     "num_values must be at least 2, got 1"),
    (dict(batch_size=2, num_pairs=9, num_keys=8), ValueError,
     "num_pairs must be at most num_keys = 8"),
    (dict(batch_size=2, num_pairs=2, generator=0), TypeError,
     "generator must be None or a torch.Generator, got int 0"),
])
def test_bad_arguments_raise_clear_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        mqar_batch(**kwargs)


def test_the_classifier_reads_every_step_causally_and_padding_changes_nothing():
    torch.manual_seed(0)
    for mixer in ("softmax", "linear", "ssm"):
        model = PairRecallClassifier(mixer_stack(mixer, 8, 2, 1, 8, 16), 8, 6, 5)
        tokens, targets = mqar_batch(3, 4, num_keys=6, num_values=5)
        logits = model(tokens)
        assert logits.shape == (3 * 8, 5) and targets.flatten().shape == (24,)
        changed = tokens.clone()
        changed[:, -1] = torch.tensor([0, 5])  # the last query step only
        other = model(changed).view(3, 8, 5)
        torch.testing.assert_close(other[:, :7], logits.view(3, 8, 5)[:, :7], rtol=0, atol=1e-6)
        padded = torch.nn.functional.pad(tokens, (0, 0, 0, 6))  # as a mixture pads it
        torch.testing.assert_close(model(padded).view(3, 14, 5)[:, :8], logits.view(3, 8, 5),
                                   rtol=0, atol=1e-6)
    with pytest.raises(TypeError, match="core must be a torch.nn.Module"):
        PairRecallClassifier("core", 8, 6, 5)
    with pytest.raises(ValueError, match="num_values must be at least 1"):
        PairRecallClassifier(torch.nn.Identity(), 8, 6, 0)


def test_training_each_count_at_its_own_length_gives_the_padded_batchs_loss_and_gradient():
    setting = MQARSetting(width=8, num_heads=2, state_size=4, num_keys=8, num_values=5,
                          pair_counts=(1, 2, 3, 4), batch_size=8)
    assert setting.parts() == ((6, 6), (2, 8))  # three counts at 3 pairs' length, one at 4
    assert replace(setting, pair_counts=(2,), task="reassigned").parts() == ((8, 8),)
    tokens, targets = setting.batch(8, setting.pair_counts, seeded_generator(0))
    for name in MQAR_MODELS:
        torch.manual_seed(0)
        model = PairRecallClassifier(KIND[name].build(setting.shape()), 8, 8, 5).double()
        trained = _ByLength(model, setting.parts())
        grouped, padded = trained(tokens), model(tokens)
        real = targets != IGNORED
        torch.testing.assert_close(grouped[real], padded[real], rtol=0, atol=1e-12)
        assert (grouped.view(8, 8, 5)[:6, 6:] == 0).all(), "the padding gets zero logits"
        gradients = [torch.autograd.grad(cross_entropy(logits, targets), model.parameters())
                     for logits in (trained(tokens), model(tokens))]
        for ours, theirs in zip(*gradients):
            torch.testing.assert_close(ours, theirs, rtol=1e-9, atol=1e-12)
        assert dict(trained.named_parameters()).keys() == {
            f"model.{name}" for name, _ in model.named_parameters()}


def test_the_setting_and_the_sizes_of_the_fixed_states():
    setting = MQARSetting(width=16, num_heads=2, state_size=8)
    assert setting.head_width == 8 and setting.budgets == (100, 400)
    assert setting.state_numbers("linear") == 2 * 8 * 8
    assert setting.state_numbers("ssm") == 16 * 8
    assert MQARSetting().state_numbers("linear") == MQARSetting().state_numbers("ssm")
    assert MQARSetting().shape().max_len == 2 * max(MQARSetting().pair_counts)
    with pytest.raises(ValueError, match="mixer must be 'linear' or 'ssm'"):
        setting.state_numbers("softmax")
    with pytest.raises(ValueError, match="pair_counts must increase, up to num_keys = 16"):
        MQARSetting(pair_counts=(4, 2))
    with pytest.raises(ValueError, match="pair_counts must increase"):
        MQARSetting(pair_counts=(2, 32))
    with pytest.raises(ValueError, match="num_heads must divide width"):
        MQARSetting(width=10, num_heads=4)
    with pytest.raises(ValueError, match="steps must be at least 1"):
        MQARSetting(steps=0)


def test_the_weights_kept_on_the_way_are_those_of_a_shorter_run():
    def run(steps, observe=None):
        models = [PairRecallClassifier(mixer_stack("linear", 8, 2, 1, 8, 8), 8, 4, 3)
                  for seed in (0, 1) if torch.manual_seed(seed) is not None]

        def make_batch(generator):
            tokens, targets = mqar_mixture_batch(4, [1, 2], 4, 3, generator)
            return tokens, targets.flatten()

        results = train_seeds(models, make_batch, steps, [0, 1], lr=0.01, eval_batches=0,
                              observe=observe)
        return models, results

    short, _ = run(3)
    _, results = run(5, kept_at(3, 2))
    for model, result in zip(short, results):
        assert [step for step, kept in enumerate(result.observed) if kept is not None] == [3]
        for name, tensor in model.named_parameters():
            assert torch.equal(result.observed[3][name], tensor)  # bit for bit


def test_held_out_accuracies_equal_each_model_scored_alone():
    torch.manual_seed(0)
    models = [PairRecallClassifier(mixer_stack("softmax", 16, 4, 1, 32, 4), 16, 4, 16)
              for _ in TINY.seeds]
    grid = held_out_accuracies(models[0], [dict(m.named_parameters()) for m in models], TINY)
    assert grid.shape == (2, 2) and grid.dtype == torch.float64
    for seed, model, row in zip(TINY.seeds, models, grid):
        generator = seeded_generator(seed + HELD_OUT)
        for pairs, accuracy in zip(TINY.pair_counts, row):
            tokens, targets = mqar_batch(TINY.eval_size, pairs, 4, 16, generator)
            targets = targets.flatten()
            with torch.no_grad():
                hits = model(tokens).argmax(-1) == targets
            scored = targets != IGNORED
            assert accuracy == (hits & scored).sum() / scored.sum()


def test_mqar_training_shapes_and_bad_arguments():
    run = mqar_training(MQAR_MODELS[1], TINY)
    assert run.accuracies.shape == (2, 2, 2) and run.losses.shape == (2, 4)
    assert ((run.accuracies >= 0) & (run.accuracies <= 1)).all()
    with pytest.raises(ValueError, match="name must be a mixer model of the registry"):
        mqar_training("tanh RNN", TINY)
    with pytest.raises(TypeError, match="setting must be a MQARSetting|setting must be an"):
        mqar_training(MQAR_MODELS[0], {"steps": 2})


def test_mqar_runs_equal_each_model_trained_alone():
    points = [(name, TINY) for name in MQAR_MODELS[:2]]
    runs = mqar_runs(points)
    assert list(runs) == points
    for (name, setting), run in runs.items():
        alone = mqar_training(name, setting)
        assert torch.equal(run.accuracies, alone.accuracies)
        assert torch.equal(run.losses, alone.losses)


def test_recall_counts_and_pairs_recalled_words():
    high, low = RECALLED + 0.05, RECALLED - 0.05
    grid = torch.tensor([[1.0, high, 0.2]] * 9 + [[1.0, low, 0.1]])
    assert [c.successes for c in recall_counts(grid)] == [10, 9, 0]
    assert pairs_recalled([4, 8, 16], grid).en == "8"  # 9 of 10: "mostly"
    grid[:2, 1] = low  # 7 of 10: no word, so not recalled
    assert pairs_recalled([4, 8, 16], grid).en == "4"
    most = pairs_recalled([4, 8, 16], torch.ones(10, 3))
    assert (most.en, most.zh) == ("16 (the most tried)", "16（所试的最大值）")
    none = pairs_recalled([4, 8, 16], torch.zeros(10, 3))
    assert (none.en, none.zh) == ("fewer than 4", "不到 4")
    with pytest.raises(ValueError, match="one column per count"):
        pairs_recalled([4, 8], grid)
    with pytest.raises(ValueError, match="pair_counts must be increasing"):
        pairs_recalled([8, 4, 16], grid)
    with pytest.raises(ValueError, match="accuracies must be a non-empty"):
        recall_counts(torch.ones(3))


def test_plot_mqar_checks_its_grids():
    grids = {"a": np.array([[[1.0, 0.5], [0.9, 0.4]], [[1.0, 0.6], [1.0, 0.5]]])}
    figure = plot_mqar([4, 8], grids, [150, 600], 0.0625, 16, 4)
    assert all(axis.get_xlabel() for axis in figure.axes[:2])
    with pytest.raises(ValueError, match="budgets"):
        plot_mqar([4, 8], grids, [150], 0.0625, 16, 4)
    with pytest.raises(ValueError, match="at least one"):
        plot_mqar([4, 8], {}, [150, 600], 0.0625, 16, 4)

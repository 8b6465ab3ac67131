"""Tests of multi-query associative recall (Chapter 6, "The price of a fixed state"):
longdep.tasks.mqar_batch's layout and errors, and the MQAR experiment's pieces."""

import pytest
import torch
from longdep.experiments.mqar import (
    MQAR_MODELS,
    RECALLED,
    MQARSetting,
    mqar_accuracies,
    pairs_recalled,
)
from longdep.models.heads import PairRecallClassifier
from longdep.models.mixers import mixer_stack
from longdep.plots.efficient import plot_mqar
from longdep.tasks import mqar_batch


def test_layout_of_a_batch():
    generator = torch.Generator().manual_seed(0)
    tokens, targets = mqar_batch(50, 5, num_keys=7, num_values=4, generator=generator)
    assert tokens.shape == (50, 10, 2) and targets.shape == (50, 5)
    assert tokens.dtype == targets.dtype == torch.int64
    pairs, queries = tokens[:, :5], tokens[:, 5:]
    for row in range(50):
        keys = pairs[row, :, 0].tolist()
        assert len(set(keys)) == 5 and all(0 <= k < 7 for k in keys)  # distinct keys
        assert sorted(queries[row, :, 0].tolist()) == sorted(keys)  # every key asked once
        value_of = dict(zip(keys, pairs[row, :, 1].tolist()))
        assert targets[row].tolist() == [value_of[k] for k in queries[row, :, 0].tolist()]
    assert (queries[..., 1] == 4).all() and (pairs[..., 1] < 4).all()  # "asked for" mark
    orders = {tuple(q) for q in queries[..., 0].tolist()}
    assert len(orders) > 40  # queries come in a random order, not the pairs' order


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


def test_the_classifier_reads_the_query_steps_only_and_causally():
    torch.manual_seed(0)
    model = PairRecallClassifier(mixer_stack("softmax", 8, 2, 1, 8, 16), 8, 6, 5)
    tokens, targets = mqar_batch(3, 4, num_keys=6, num_values=5)
    logits = model(tokens)
    assert logits.shape == (3 * 4, 5) and targets.flatten().shape == (12,)
    changed = tokens.clone()
    changed[:, -1] = torch.tensor([0, 5])  # the last query step only
    other = model(changed).view(3, 4, 5)
    assert torch.equal(other[:, :3], logits.view(3, 4, 5)[:, :3])  # earlier queries unchanged
    with pytest.raises(TypeError, match="core must be a torch.nn.Module"):
        PairRecallClassifier("core", 8, 6, 5)
    with pytest.raises(ValueError, match="num_values must be at least 1"):
        PairRecallClassifier(torch.nn.Identity(), 8, 6, 0)


def test_state_numbers_of_the_fixed_states():
    setting = MQARSetting(width=16, num_heads=2, state_size=8)
    assert setting.state_numbers("linear") == 2 * 8 * 8
    assert setting.state_numbers("ssm") == 16 * 8
    with pytest.raises(ValueError, match="mixer must be 'linear' or 'ssm'"):
        setting.state_numbers("softmax")


def test_mqar_accuracies_shape_and_bad_arguments():
    setting = MQARSetting(steps=2, batch_size=4, seeds=(0, 1))
    grid = mqar_accuracies(MQAR_MODELS[1], [1, 2], setting)
    assert grid.shape == (2, 2) and ((grid >= 0) & (grid <= 1)).all()
    with pytest.raises(ValueError, match="name must be one of"):
        mqar_accuracies("tanh RNN", [2], setting)
    with pytest.raises(ValueError, match="pair_counts must be ints from 1 to num_keys"):
        mqar_accuracies(MQAR_MODELS[0], [2, 17], setting)
    with pytest.raises(ValueError, match="pair_counts must be ints"):
        mqar_accuracies(MQAR_MODELS[0], [], setting)
    with pytest.raises(TypeError, match="setting must be an MQARSetting"):
        mqar_accuracies(MQAR_MODELS[0], [2], {"steps": 2})


def test_pairs_recalled_words():
    grid = torch.tensor([[1.0, RECALLED + 0.1, 0.2], [1.0, RECALLED - 0.05, 0.1]])
    assert pairs_recalled([4, 8, 16], grid) == "8"  # mean at 8 pairs is RECALLED + 0.025
    assert pairs_recalled([4, 8, 16], torch.ones(2, 3)) == "16 (the most tried)"
    assert pairs_recalled([4, 8, 16], torch.zeros(2, 3)) == "fewer than 4"
    with pytest.raises(ValueError, match="accuracies must be a"):
        pairs_recalled([4, 8], grid)
    with pytest.raises(ValueError, match="pair_counts must be increasing"):
        pairs_recalled([8, 4, 16], grid)


def test_plot_mqar_checks_its_grids():
    figure = plot_mqar([4, 8], {"a": [[1.0, 0.5], [0.9, 0.4]]}, 0.0625, 16)
    axis = figure.axes[0]
    assert axis.get_xlabel() and axis.get_ylabel()
    with pytest.raises(ValueError, match="must be a non-empty array of 2 dimension"):
        plot_mqar([4, 8], {"a": [[1.0, 0.5, 0.2]]}, 0.0625, 16)
    with pytest.raises(ValueError, match="at least one curve"):
        plot_mqar([4, 8], {}, 0.0625, 16)


def test_mqar_grids_equal_each_model_trained_alone():
    from longdep.experiments.mqar import mqar_grids
    setting = MQARSetting(steps=3, batch_size=4, seeds=(0, 1))
    grids = mqar_grids(MQAR_MODELS[:2], [1, 2], setting)
    assert list(grids) == list(MQAR_MODELS[:2])
    for name, grid in grids.items():
        assert torch.equal(grid, mqar_accuracies(name, [1, 2], setting))

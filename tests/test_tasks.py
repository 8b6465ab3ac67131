"""The key-recall task: where the key, the distractors and the query are, and bad arguments;
the parity task of Chapter 2."""

import pytest
import torch
from longdep.tasks import key_recall_batch, parity_batch


def test_layout_of_a_batch():
    generator = torch.Generator().manual_seed(0)
    tokens, targets = key_recall_batch(500, distance=7, num_keys=4, vocab_size=10,
                                       generator=generator)
    assert tokens.shape == (500, 8) and targets.shape == (500,)
    assert tokens.dtype == targets.dtype == torch.int64
    assert torch.equal(targets, tokens[:, 0])  # the answer is the first token
    assert set(targets.tolist()) == {0, 1, 2, 3}  # every key occurs
    distractors = tokens[:, 1:-1]  # drawn from the keys' own ids: only position marks the key
    assert set(distractors.unique().tolist()) == {0, 1, 2, 3}
    assert torch.all(tokens[:, -1] == 9)  # the query token, `distance` steps after the key


def test_distance_one_has_no_distractors():
    tokens, targets = key_recall_batch(3, distance=1, num_keys=2, vocab_size=3)
    assert tokens.shape == (3, 2)
    assert torch.all(tokens[:, 1] == 2) and torch.equal(tokens[:, 0], targets)


def test_a_seeded_generator_makes_it_reproducible():
    def batch(seed):
        return key_recall_batch(16, 20, generator=torch.Generator().manual_seed(seed))

    first, again, other = batch(1), batch(1), batch(2)
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])
    assert not torch.equal(first[0], other[0])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(batch_size=0), "batch_size must be at least 1"),
        (dict(distance=0), "distance must be at least 1"),
        (dict(num_keys=1), "num_keys must be at least 2"),
        (dict(num_keys=8, vocab_size=8), "at least num_keys \\+ 1 = 9, got 8"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, message):
    arguments = dict(batch_size=4, distance=5) | kwargs
    with pytest.raises(ValueError, match=message):
        key_recall_batch(**arguments)


def test_content_only_accuracy_equals_the_most_frequent_id_guess():
    """The exact content-only bound against guessing the most frequent id on sampled batches."""
    from longdep.experiments.key_recall import content_only_accuracy

    generator = torch.Generator().manual_seed(0)
    for distance in (1, 2, 5, 20):
        tokens, targets = key_recall_batch(20000, distance, num_keys=4, vocab_size=5,
                                           generator=generator)
        counts = torch.nn.functional.one_hot(tokens[:, :-1], 4).sum(1).double()  # (batch, 4)
        # ties split evenly: the expected accuracy of a random choice among the most frequent
        best = counts == counts.max(1, keepdim=True).values
        sampled = (best.gather(1, targets[:, None])[:, 0] / best.sum(1)).mean().item()
        assert abs(content_only_accuracy(distance, 4) - sampled) < 0.01, distance
    assert content_only_accuracy(1, 8) == 1.0  # the only token is the key
    # two ids: equal (p 1/2) always right, different (p 1/2) right half the time
    assert content_only_accuracy(2, 2) == 0.75


def test_parity_targets_are_the_count_of_ones_modulo_two():
    bits, targets = parity_batch(400, 9, torch.Generator().manual_seed(0))
    assert bits.shape == (400, 9) and targets.shape == (400,)
    assert bits.dtype == targets.dtype == torch.int64
    assert set(bits.unique().tolist()) == {0, 1}
    expected = torch.tensor([sum(row) % 2 for row in bits.tolist()])
    assert torch.equal(targets, expected)
    flipped = bits.clone()
    flipped[:, 4] = 1 - flipped[:, 4]  # one bit changed anywhere changes the answer
    assert torch.equal(flipped.sum(1) % 2, 1 - targets)
    assert 0.4 < targets.double().mean() < 0.6
    again, _ = parity_batch(400, 9, torch.Generator().manual_seed(0))
    assert torch.equal(bits, again)


@pytest.mark.parametrize("call, message", [
    (lambda: parity_batch(0, 5), "batch_size must be at least 1, got 0"),
    (lambda: parity_batch(2, 5, generator=3), "generator must be None or a torch.Generator"),
])
def test_parity_batch_checks_its_arguments(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()

"""The shared training loop: it learns key recall, warms up, clips, trains seeds batched, and
tabulates accuracies."""

import copy
import dataclasses
import math

import pytest
import torch
from longdep.book import seed_everything
from longdep.experiments.key_recall import (
    KEY_RECALL_BUDGET,
    accuracy_word,
    format_accuracy_table,
    key_recall_accuracies,
    train_key_recall,
)
from longdep.models.heads import LastStepClassifier
from longdep.models.lstm import LSTM
from longdep.experiments.key_recall import key_recall_transformer
from longdep.tasks import key_recall_batch
from longdep.optim import SGD, Adam, clip_gradient_norm_, warmup_factor
from longdep.train import accuracy, train, train_seeds
from torch import nn

TINY = dataclasses.replace(KEY_RECALL_BUDGET, steps=2, batch_size=4, distances=(1, 3), seeds=(0,))


def test_lstm_learns_key_recall_at_a_short_distance(one_thread):
    seed_everything(0)
    budget = KEY_RECALL_BUDGET
    core = LSTM(budget.embedding_dim, budget.model_dim, forget_bias=1.0)
    result = train_key_recall(core, budget.model_dim, distance=5, seed=0)
    assert len(result.losses) == budget.steps
    assert result.losses[-1] < 0.1 * result.losses[0]
    assert result.accuracy >= 0.99  # chance is 1 / num_keys = 0.125


def test_classifier_reads_the_last_step_only():
    seed_everything(1)
    model = LastStepClassifier(vocab_size=6, embedding_dim=4, core=nn.Identity(), core_dim=4,
                               num_classes=3)
    tokens = torch.randint(0, 6, (5, 7))
    logits = model(tokens)
    assert logits.shape == (5, 3)
    torch.testing.assert_close(logits, model.head(model.embedding(tokens[:, -1])))


def test_accuracy_counts_correct_argmax():
    model = nn.Identity()
    logits = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    assert accuracy(model, [(logits, torch.tensor([0, 1, 1, 1]))]) == 0.5


@pytest.mark.parametrize("ours, theirs", [(Adam, torch.optim.Adam), (SGD, torch.optim.SGD)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_optimizers_take_torch_optims_steps_bit_for_bit(ours, theirs, dtype):
    # the same model twice; lr changes every step as under warm-up (torch: LambdaLR), and one
    # parameter has no gradient in the odd steps, which both optimizers must skip
    seed_everything(4)
    models = [nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3)).to(dtype)]
    models.append(copy.deepcopy(models[0]))
    lr, warmup = 0.05, 4
    mine = ours(models[0].parameters(), lr=lr)
    torchs = theirs(models[1].parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(torchs, lambda s: warmup_factor(s, warmup))
    for step in range(12):
        x, y = torch.randn(16, 5, dtype=dtype), torch.randint(0, 3, (16,))
        mine.lr = lr * warmup_factor(step, warmup)
        for model, optimizer in zip(models, (mine, torchs)):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            if step % 2:
                model[2].bias.grad = None
            optimizer.step()
        schedule.step()
        for p, q in zip(*(model.parameters() for model in models)):
            assert torch.equal(p, q), f"step {step}: {ours.__name__} differs from torch.optim"
    assert any(p.grad is not None for p in models[0].parameters())
    mine.zero_grad()
    assert all(p.grad is None for p in models[0].parameters())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_adam_with_one_lr_per_seed_steps_each_slice_as_its_own_lr_does(dtype):
    # parameters stacked along a seed dimension, one warm-up per seed, against one Adam per
    # seed with a float lr: equal bit for bit after every step
    seed_everything(5)
    stacked = [torch.randn(3, 4, 2, dtype=dtype), torch.randn(3, 5, dtype=dtype)]
    alone = [[p[i].clone() for p in stacked] for i in range(3)]
    lr, warmups = 0.05, (0, 4, 7)
    mine = Adam(stacked, lr=lr)
    singles = [Adam(parameters, lr=lr) for parameters in alone]
    for step in range(10):
        grads = [torch.randn_like(p) for p in stacked]
        for p, g in zip(stacked, grads):
            p.grad = g
        mine.lr = torch.tensor([lr * warmup_factor(step, w) for w in warmups],
                               dtype=torch.float64)
        mine.step()
        for i, (optimizer, parameters) in enumerate(zip(singles, alone)):
            for p, g in zip(parameters, grads):
                p.grad = g[i].clone()
            optimizer.lr = lr * warmup_factor(step, warmups[i])
            optimizer.step()
            for p, q in zip(parameters, stacked):
                assert torch.equal(p, q[i]), f"step {step}, seed {i}"
    assert not torch.equal(stacked[0][0], stacked[0][1])  # the schedules really differ


@pytest.mark.parametrize("optimizer", [Adam, SGD])
def test_the_optimizers_reject_bad_arguments(optimizer):
    weight = nn.Parameter(torch.zeros(2))
    for lr, error, message in ((-1e-3, ValueError, r"lr must be at least 0 \(as in torch.optim\)"),
                               (math.nan, ValueError, "lr must be finite, got nan"),
                               (math.inf, ValueError, "lr must be finite, got inf"),
                               ("1e-3", TypeError, "lr must be a number, got str '1e-3'"),
                               (True, TypeError, "lr must be a number, got bool")):
        with pytest.raises(error, match=message):
            optimizer([weight], lr=lr)
    with pytest.raises(ValueError, match="parameters must be a non-empty iterable of tensors"):
        optimizer([], lr=1e-3)
    with pytest.raises(TypeError, match=r"parameters must hold tensors only, got str 'bias' at "
                                        r"position 1"):
        optimizer([weight, "bias"], lr=1e-3)
    with pytest.raises(TypeError, match="parameters must be an iterable of tensors, got int 3"):
        optimizer(3, lr=1e-3)


def test_warmup_scales_the_first_adam_step():
    # Adam's first step moves every parameter by lr * warm-up factor (the sign of its gradient)
    seed_everything(2)
    model = nn.Linear(3, 2)
    before = [p.detach().clone() for p in model.parameters()]
    generator_batch = (torch.randn(8, 3), torch.tensor([0, 1] * 4))
    train(model, lambda generator: generator_batch, steps=1, lr=0.1, warmup_steps=4)
    moves = torch.cat([(p.detach() - b).abs().flatten()
                       for p, b in zip(model.parameters(), before)])
    torch.testing.assert_close(moves, torch.full_like(moves, 0.1 * warmup_factor(0, 4)), rtol=1e-4,
                               atol=0)
    assert [warmup_factor(s, 4) for s in range(5)] == [0.25, 0.5, 0.75, 1.0, 1.0]
    assert warmup_factor(0, 0) == 1.0


def test_clipping_rescales_and_the_norm_is_recorded_before_it():
    seed_everything(3)
    model = nn.Linear(3, 2)
    batch = (100 * torch.randn(8, 3), torch.tensor([0, 1] * 4))
    before = copy.deepcopy(model)
    result = train(model, lambda generator: batch, steps=1, optimizer=SGD, lr=1.0,
                   clip_norm=1e-3)
    step = torch.cat([(p - q).flatten() for p, q in zip(before.parameters(),
                                                          model.parameters())])
    torch.testing.assert_close(step.norm().item(), 1e-3, rtol=1e-4, atol=0)  # lr 1: the step
    assert result.grad_norms[0] > 1.0  # the unclipped norm, not the clipped one


def test_key_recall_accuracies_are_reproducible_and_tabulated():
    def make_core():
        return nn.RNN(TINY.embedding_dim, 5, batch_first=True)

    first = key_recall_accuracies(make_core, 5, TINY, vectorized=False)
    assert first.shape == (1, 2) and torch.all((0 <= first) & (first <= 1))
    assert torch.equal(first, key_recall_accuracies(make_core, 5, TINY, vectorized=False))
    table = format_accuracy_table({"rnn": first, "same": first}, TINY).splitlines()
    assert table[0].split() == ["model", "d=1", "d=3"]
    assert table[1].split()[1:] == [accuracy_word(column) for column in first.T]
    with pytest.raises(ValueError, match=r"\(seeds, distances\) = \(1, 2\)"):
        format_accuracy_table({"rnn": torch.zeros(2, 2)}, TINY)


def test_accuracy_table_names_what_is_stable():
    budget = dataclasses.replace(TINY, distances=(1, 2, 3, 4), seeds=(0, 1))
    grid = torch.tensor([[1.0, 0.2, 0.9, 0.9, math.nan], [0.96, 0.1, 0.2, 0.5, math.nan]])
    budget = dataclasses.replace(budget, distances=(1, 2, 3, 4, 5))
    row = format_accuracy_table({"m": grid}, budget).splitlines()[1].split()
    assert row == ["m", "solved", "chance", "partly", "mostly", "-"]


def test_key_recall_stops_after_a_distance_no_seed_learns():
    def make_core():
        return nn.RNN(TINY.embedding_dim, 5, batch_first=True)

    grid = key_recall_accuracies(make_core, 5, TINY, vectorized=False, stop_below=1.01)
    assert not grid[:, 0].isnan().any() and grid[:, 1].isnan().all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(steps=0), "steps must be at least 1, got 0"),
        (dict(clip_norm=0.0), "clip_norm must be positive, got 0.0"),
        (dict(lr=-0.5), r"lr must be at least 0 \(as in torch.optim\), got -0.5"),
        (dict(lr=math.inf), "lr must be finite, got inf"),
        (dict(lr=math.nan), "lr must be finite, got nan"),
        (dict(clip_norm=math.nan), "clip_norm must be finite, got nan"),
        (dict(clip_norm=math.inf), "clip_norm must be finite, got inf"),
        (dict(warmup_steps=-1), "warmup_steps must be at least 0, got -1"),
        (dict(warmup_steps=math.nan), "warmup_steps must be an int, got float nan"),
        (dict(eval_batches=-1), "eval_batches must be at least 0, got -1"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, message):
    arguments = dict(steps=1) | kwargs
    with pytest.raises((TypeError, ValueError), match=message):
        train(nn.Linear(2, 2), lambda generator: (torch.zeros(1, 2), torch.zeros(1)), **arguments)


@pytest.mark.parametrize("kwargs", [dict(lr=math.nan), dict(clip_norm=math.nan)])
def test_train_seeds_checks_its_arguments_as_train_does(kwargs):
    model = LastStepClassifier(16, 4, nn.Identity(), 4, 8)
    with pytest.raises(ValueError, match="must be finite, got nan"):
        train_seeds([model], lambda g: key_recall_batch(2, 3, generator=g), 1, (0,), **kwargs)
    with pytest.raises(ValueError, match="one seed per model"):
        train_seeds([model], lambda g: key_recall_batch(2, 3, generator=g), 1, (0, 1))
    for warmups in ((2, 3), (-1,)):
        with pytest.raises(ValueError, match="warmup_steps"):
            train_seeds([model], lambda g: key_recall_batch(2, 3, generator=g), 1, (0,),
                        warmup_steps=warmups)


def test_clipping_rescales_a_finite_gradient_whose_square_overflows():
    # The exploding case clipping exists for: ||[1e30, 1e30]|| = 1.4e30 is a float32, its
    # squares are not.
    parameter = nn.Parameter(torch.zeros(2))
    parameter.grad = torch.tensor([1e30, 1e30])
    norm = clip_gradient_norm_([parameter], 1.0)
    assert norm.item() == pytest.approx(math.sqrt(2) * 1e30, rel=1e-6)
    torch.testing.assert_close(parameter.grad, torch.full((2,), 2**-0.5))
    parameter.grad = torch.tensor([math.inf, 1.0])
    assert clip_gradient_norm_([parameter], 1.0) == math.inf  # no direction: the step is skipped
    assert torch.equal(parameter.grad, torch.zeros(2))


def lstm_classifier(seed):
    torch.manual_seed(seed)
    return LastStepClassifier(16, 8, LSTM(8, 12, forget_bias=1.0), 12, 8)


def transformer_classifier(seed):
    torch.manual_seed(seed)
    budget = dataclasses.replace(KEY_RECALL_BUDGET, model_dim=16, embedding_dim=8,
                                 distances=(5,))
    core = key_recall_transformer(budget, num_layers=2, num_heads=2, norm_first=False)
    return LastStepClassifier(16, 8, core, 16, 8)


@pytest.mark.parametrize("make_model", [lstm_classifier, transformer_classifier])
def test_seeds_trained_batched_equal_separate_runs(make_model, one_thread):
    """S seeds in one vmapped model = S calls of train, to float32 round-off, with clipping
    (per seed: the threshold is below every norm) and warm-up."""
    seeds = (0, 3, 7)

    def make_batch(generator):
        return key_recall_batch(8, 5, generator=generator)

    settings = dict(steps=6, lr=1e-2, clip_norm=0.05, warmup_steps=3, eval_batches=2)
    batched = train_seeds([make_model(s) for s in seeds], make_batch, seeds=seeds, **settings)
    for seed, result in zip(seeds, batched):
        alone = train(make_model(seed), make_batch, seed=seed, **settings)
        assert min(alone.grad_norms) > settings["clip_norm"]  # every step was clipped
        torch.testing.assert_close(torch.tensor(result.losses), torch.tensor(alone.losses),
                                   rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(torch.tensor(result.grad_norms),
                                   torch.tensor(alone.grad_norms), rtol=1e-4, atol=0)
        assert result.accuracy == alone.accuracy
    assert batched[0].losses != batched[1].losses  # the seeds really differ


def test_one_warmup_per_seed_equals_separate_runs(one_thread):
    """A seed trained twice in one vmapped model, with and without warm-up, = two calls of
    train with those warm-ups, to float32 round-off."""
    def make_batch(generator):
        return key_recall_batch(8, 5, generator=generator)

    settings = dict(steps=6, lr=1e-2, clip_norm=1.0, eval_batches=2)
    seeds, warmups = (0, 3, 0, 3), (0, 0, 4, 4)
    batched = train_seeds([transformer_classifier(s) for s in seeds], make_batch, seeds=seeds,
                          warmup_steps=warmups, **settings)
    for seed, warmup, result in zip(seeds, warmups, batched):
        alone = train(transformer_classifier(seed), make_batch, seed=seed,
                      warmup_steps=warmup, **settings)
        torch.testing.assert_close(torch.tensor(result.losses), torch.tensor(alone.losses),
                                   rtol=1e-5, atol=1e-6)
        assert result.accuracy == alone.accuracy
    assert batched[0].losses[1] != batched[2].losses[1]  # the warm-up changed the run

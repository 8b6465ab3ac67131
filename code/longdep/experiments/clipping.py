"""Gradient clipping (Pascanu, Mikolov & Bengio 2013, Algorithm 1) and where it matters (Chapter 2).

Two pieces (the clipping rule itself is :func:`longdep.train.clip_gradient_norm_`): the
"cliff" of a one-unit recurrent network, whose loss surface over (w, b) has a wall where the
gradient is huge; and plain SGD for training a recurrent classifier with and without clipping.
"""

import math
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import nn

from longdep.experiments.vanishing import orthogonal_matrix
from longdep.models import _checks as check
from longdep.models.heads import LastStepClassifier
from longdep.models.rnn import ElmanRNN
from longdep.train import SGD, Batch, TrainingResult, clip_gradient_norm_, train

_PARAMETERS = ("embedding.weight", "core.weight_ih", "core.weight_hh", "core.bias_ih",
               "core.bias_hh", "head.weight", "head.bias")


def _check_positive_numbers(**values: float | None) -> None:
    """Raise unless every named value is None or a finite number > 0 (a learning rate or a
    clipping threshold; None means no clipping)."""
    given = {name: value for name, value in values.items() if value is not None}
    check.finite(**given)
    for name, value in given.items():
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")


def _check_classifiers(models) -> None:
    """Raise unless ``models`` is a non-empty list of same-shaped tanh-RNN classifiers, as
    :func:`classifier_with_recurrent_gain` builds them."""
    if not isinstance(models, (list, tuple)) or not models:
        raise ValueError(f"models must be a non-empty list of LastStepClassifier, got "
                         f"{check.describe(models)}")
    for r, model in enumerate(models):
        check.instance(model, f"models[{r}]", LastStepClassifier)
        check.instance(model.core, f"models[{r}].core", ElmanRNN)
        if model.core.nonlinearity != "tanh":
            raise ValueError(f"models[{r}].core must be a tanh ElmanRNN, got "
                             f"{model.core.nonlinearity!r}")
    shapes = [{name: p.shape for name, p in model.named_parameters()} for model in models]
    if any(shape != shapes[0] for shape in shapes):
        raise ValueError("models must all have the same parameter shapes (one vocabulary, "
                         "embedding, hidden and class size)")


def _check_stacked_input(params, tokens) -> None:
    """Raise unless ``params`` holds every stacked parameter and ``tokens`` is an int64
    (runs, batch, time) tensor of ids in the embedding's range, with the params' run count."""
    missing = [name for name in _PARAMETERS if not isinstance(params, dict) or name not in params]
    if missing:
        raise ValueError(f"params must map the names of stacked_parameters' result to tensors "
                         f"(runs, ...), missing {missing}")
    runs, vocab_size = params["embedding.weight"].shape[:2]
    check.tensor(tokens, "tokens", f"(runs, batch, time) with runs = {runs}", 3, floating=False)
    if tokens.dim() != 3 or tokens.size(0) != runs:
        raise ValueError(f"tokens must have shape (runs, batch, time) with runs = {runs}, got "
                         f"{check.describe(tokens)}")
    check.tokens(tokens.flatten(0, 1), vocab_size, "tokens (runs * batch, time)")


def _check_per_model(runs: int, lrs, thresholds, seeds) -> None:
    """Raise unless lrs, thresholds and seeds are lists of ``runs`` entries: learning rates > 0,
    thresholds > 0 or None, seeds ints >= 0."""
    for name, values in (("lrs", lrs), ("thresholds", thresholds), ("seeds", seeds)):
        if not isinstance(values, (list, tuple)):
            raise TypeError(f"{name} must be a list, one entry per model, got "
                            f"{check.describe(values)}")
        if len(values) != runs:
            raise ValueError(f"give one learning rate, threshold and seed per model: {runs} "
                             f"models, but {name} has {len(values)} entries")
    _check_positive_numbers(**{f"lrs[{r}]": lr for r, lr in enumerate(lrs)},
                            **{f"thresholds[{r}]": t for r, t in enumerate(thresholds)})
    check.int_range(0, None, **{f"seeds[{r}]": seed for r, seed in enumerate(seeds)})


def _check_settings(settings) -> None:
    """Raise unless ``settings`` is a non-empty dict label -> (lr, threshold)."""
    if not isinstance(settings, dict) or not settings:
        raise ValueError(f"settings must be a non-empty dict label -> (lr, threshold), got "
                         f"{check.describe(settings)}")
    for label, setting in settings.items():
        if not (isinstance(setting, (tuple, list)) and len(setting) == 2):
            raise TypeError(f"settings[{label!r}] must be a pair (lr, threshold), got "
                            f"{check.describe(setting)}")


def cliff_final_state(w: torch.Tensor, b: torch.Tensor, steps: int = 50, x0: float = 0.5
                      ) -> torch.Tensor:
    """x_steps of the one-unit network x_t = w * sigmoid(x_(t-1)) + b, elementwise over w and b.

    w and b are tensors of one shape (a grid of parameters, or two scalars); so is the result
    (Chapter 2, "The cliff").
    """
    check.tensor(w, "w", "(...)", 0)
    check.tensor(b, "b", f"{tuple(w.shape)}, the shape of w", 0)
    if b.shape != w.shape:
        raise ValueError(f"w and b must have one shape, got {check.describe(w)} and {check.describe(b)}")
    check.positive(steps=steps)
    check.finite(x0=x0)
    x = torch.full_like(w, x0)
    for _ in range(steps):
        x = w * torch.sigmoid(x) + b
    return x


def cliff_loss(w: torch.Tensor, b: torch.Tensor, target: float = 0.7, steps: int = 50
               ) -> torch.Tensor:
    """The squared error (x_steps - target)^2 of :func:`cliff_final_state`, elementwise."""
    check.finite(target=target)
    return (cliff_final_state(w, b, steps) - target) ** 2


class DescentPath(NamedTuple):
    """Gradient descent on the cliff: ``points`` (steps + 1, 2) holds (w, b) before each step and
    after the last; ``losses`` (steps + 1,) the loss there; ``grad_norms`` (steps,) the gradient
    norm before clipping."""

    points: torch.Tensor
    losses: torch.Tensor
    grad_norms: torch.Tensor


def cliff_descent(start: tuple[float, float], lr: float, steps: int,
                  threshold: float | None = None) -> DescentPath:
    """Plain gradient descent on :func:`cliff_loss` from (w, b) = ``start``, in float64; with a
    ``threshold``, each gradient is clipped by :func:`clip_gradient_norm_` first."""
    if not (isinstance(start, (tuple, list)) and len(start) == 2):
        raise TypeError(f"start must be a pair (w, b) of numbers, got {check.describe(start)}")
    check.finite(**{"start[0]": start[0], "start[1]": start[1]})
    _check_positive_numbers(lr=lr, threshold=threshold)
    check.positive(steps=steps)
    limit = math.inf if threshold is None else threshold
    point = torch.tensor(start, dtype=torch.float64, requires_grad=True)
    points, losses, grad_norms = [], [], []
    for _ in range(steps):
        point.grad = None
        loss = cliff_loss(point[0], point[1])
        loss.backward()
        points.append(point.detach().clone())
        losses.append(loss.detach())
        grad_norms.append(clip_gradient_norm_([point], limit))
        with torch.no_grad():
            point -= lr * point.grad
    points.append(point.detach().clone())
    losses.append(cliff_loss(points[-1][0], points[-1][1]))
    return DescentPath(torch.stack(points), torch.stack(losses), torch.stack(grad_norms))


def classifier_with_recurrent_gain(gain: float, vocab_size: int = 9, embedding_dim: int = 16,
                          hidden_size: int = 32, num_classes: int = 8, seed: int = 0
                          ) -> LastStepClassifier:
    """A tanh Elman RNN classifier whose W_hh is ``gain`` times a random orthogonal matrix, so
    that sigma_max(W_hh) = gain (Chapter 2, "Clipping in training"). Tokens (batch, time) ->
    logits (batch, num_classes); the initialisation depends only on ``seed``."""
    check.finite(gain=gain)
    check.positive(vocab_size=vocab_size, embedding_dim=embedding_dim, hidden_size=hidden_size,
                   num_classes=num_classes)
    check.int_range(0, None, seed=seed)
    torch.manual_seed(seed)
    core = ElmanRNN(embedding_dim, hidden_size)
    with torch.no_grad():
        q = orthogonal_matrix(hidden_size, torch.Generator().manual_seed(seed))
        core.weight_hh.copy_(gain * q)
    return LastStepClassifier(vocab_size, embedding_dim, core, hidden_size, num_classes)


def train_sgd(model: nn.Module, make_batch: Callable[[torch.Generator], Batch], steps: int,
              lr: float, threshold: float | None = None, seed: int = 0,
              eval_batches: int = 4) -> TrainingResult:
    """Plain SGD with cross-entropy, the setting of Pascanu's Algorithm 1 (Chapter 2).

    Like :func:`longdep.train.train`, but with SGD instead of Adam (Adam divides each step by
    a running gradient scale, which hides much of what clipping does) and with
    :func:`clip_gradient_norm_` when ``threshold`` is given. Records the loss and the gradient
    norm before clipping at every step, and the held-out accuracy at the end.
    """
    check.instance(model, "model", nn.Module)
    check.callables(make_batch=make_batch)
    return train(model, make_batch, steps, lr, clip_norm=threshold, seed=seed,
                 eval_batches=eval_batches, optimizer_class=SGD,
                 clip=clip_gradient_norm_)


class SeedRuns(NamedTuple):
    """Training runs computed together (Chapter 2, "Clipping in training"): ``losses`` and
    ``grad_norms`` (runs, steps), the loss and the gradient norm before clipping at every step,
    and ``accuracy`` (runs,), the held-out accuracy at the end."""

    losses: torch.Tensor
    grad_norms: torch.Tensor
    accuracy: torch.Tensor


def stacked_parameters(models: list[LastStepClassifier]) -> dict[str, torch.Tensor]:
    """The parameters of same-shaped tanh-RNN classifiers, each stacked along a leading run
    dimension: name -> (runs, *shape), leaf tensors that require gradients."""
    _check_classifiers(models)
    names = [name for name, _ in models[0].named_parameters()]
    by_model = [dict(model.named_parameters()) for model in models]
    return {name: torch.stack([params[name].detach() for params in by_model]).requires_grad_()
            for name in names}


def stacked_logits(params: dict[str, torch.Tensor], tokens: torch.Tensor) -> torch.Tensor:
    """The forward pass of :func:`classifier_with_recurrent_gain`'s model (embedding, tanh
    Elman RNN, linear head on the last state) for many runs at once: tokens (runs, batch, time)
    -> logits (runs, batch, classes). Run r uses the parameters ``params[name][r]``; the result
    equals each model's own forward (tests/test_clipping.py)."""
    _check_stacked_input(params, tokens)
    runs, batch, steps = tokens.shape
    table = params["embedding.weight"]  # (runs, vocab, embedding)
    one_hot = nn.functional.one_hot(tokens.flatten(1), table.size(1)).to(table.dtype)
    x = torch.bmm(one_hot, table)  # the embedding lookup, (runs, batch * time, embedding)
    bias = (params["core.bias_ih"] + params["core.bias_hh"])[:, None]  # (runs, 1, hidden)
    inputs = torch.baddbmm(bias, x, params["core.weight_ih"].transpose(1, 2))
    w_hh = params["core.weight_hh"].transpose(1, 2)
    h = table.new_zeros(runs, batch, w_hh.size(-1))  # (runs, batch, hidden)
    for input_t in inputs.view(runs, batch, steps, -1).unbind(2):  # W_ih x_t + b, per step
        h = torch.tanh(torch.baddbmm(input_t, h, w_hh))
    return torch.baddbmm(params["head.bias"][:, None], h, params["head.weight"].transpose(1, 2))


def _batches(make_batch: Callable[[torch.Generator], Batch], generators: dict, seeds: list
             ) -> Batch:
    """One batch per distinct seed, shared by the runs with that seed: (runs, batch, ...)."""
    drawn = {seed: make_batch(generator) for seed, generator in generators.items()}
    return (torch.stack([drawn[seed][0] for seed in seeds]),
            torch.stack([drawn[seed][1] for seed in seeds]))


def train_sgd_seeds(models: list[LastStepClassifier],
                    make_batch: Callable[[torch.Generator], Batch], steps: int,
                    lrs: list[float], thresholds: list[float | None], seeds: list[int],
                    eval_batches: int = 4) -> SeedRuns:
    """:func:`train_sgd` for many runs in one computation (Chapter 2, "Clipping in training").

    Run r trains ``models[r]`` (built by :func:`classifier_with_recurrent_gain`) by plain SGD at
    learning rate ``lrs[r]``, with Algorithm 1 at ``thresholds[r]`` (None: no clipping), on the
    batches of a generator seeded with ``seeds[r]``, as :func:`longdep.train.train` draws them:
    runs with the same seed see the same data. The weights carry a leading run dimension, so
    one batched pass replaces a training loop per run. A run whose gradient is not finite stops
    moving (its norm is recorded as inf). The models themselves are not changed.
    """
    _check_classifiers(models)
    runs = len(models)
    _check_per_model(runs, lrs=lrs, thresholds=thresholds, seeds=seeds)
    check.callables(make_batch=make_batch)
    check.positive(steps=steps, eval_batches=eval_batches)
    params = stacked_parameters(models)
    lr = torch.tensor(lrs, dtype=torch.float32)
    limit = torch.tensor([math.inf if t is None else t for t in thresholds])
    generators = {s: torch.Generator().manual_seed(s) for s in dict.fromkeys(seeds)}
    losses, grad_norms = torch.empty(runs, steps), torch.empty(runs, steps)
    for step in range(steps):
        tokens, targets = _batches(make_batch, generators, seeds)
        logits = stacked_logits(params, tokens)
        loss = nn.functional.cross_entropy(logits.transpose(1, 2), targets,
                                           reduction="none").mean(1)  # (runs,)
        grads = torch.autograd.grad(loss.sum(), list(params.values()))
        norm = torch.stack([g.flatten(1).square().sum(1) for g in grads]).sum(0).sqrt()
        scale = torch.where(norm >= limit, limit / norm, torch.ones_like(norm))
        finite = torch.isfinite(norm)
        scale = torch.where(finite, scale, torch.zeros_like(scale)) * lr
        with torch.no_grad():
            for p, g in zip(params.values(), grads):
                p -= scale.view(-1, *[1] * (g.dim() - 1)) * torch.where(finite.view(
                    -1, *[1] * (g.dim() - 1)), g, torch.zeros_like(g))
        losses[:, step] = loss.detach()
        grad_norms[:, step] = torch.where(finite, norm, torch.full_like(norm, math.inf))
    held_out = {s: torch.Generator().manual_seed(s + 1_000_003) for s in generators}
    correct = torch.zeros(runs)
    with torch.no_grad():
        for _ in range(eval_batches):
            tokens, targets = _batches(make_batch, held_out, seeds)
            correct += (stacked_logits(params, tokens).argmax(-1) == targets).sum(1)
    return SeedRuns(losses, grad_norms, correct / (eval_batches * targets.size(1)))


def train_settings(settings: dict[str, tuple[float, float | None]], gain: float, seeds: int,
                   make_batch: Callable[[torch.Generator], Batch], steps: int,
                   hidden_size: int = 32) -> dict[str, SeedRuns]:
    """Chapter 2's clipping experiment: for each setting ``label -> (lr, threshold)``, train
    :func:`classifier_with_recurrent_gain` models of seeds 0 .. seeds - 1 by SGD, every run of
    every setting in one call of :func:`train_sgd_seeds`. Every setting trains the same seeds
    on the same batches. Returns label -> :class:`SeedRuns` with (seeds, ...) tensors."""
    _check_settings(settings)
    check.positive(seeds=seeds)
    plan = [(lr, threshold, seed) for lr, threshold in settings.values() for seed in range(seeds)]
    models = [classifier_with_recurrent_gain(gain, hidden_size=hidden_size, seed=seed)
              for *_, seed in plan]
    lrs, thresholds, run_seeds = (list(column) for column in zip(*plan))
    runs = train_sgd_seeds(models, make_batch, steps, lrs, thresholds, run_seeds)
    return {label: SeedRuns(*(values[i * seeds:(i + 1) * seeds] for values in runs))
            for i, label in enumerate(settings)}

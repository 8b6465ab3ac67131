"""Gradient clipping (Pascanu, Mikolov & Bengio 2013, Algorithm 1) and where it matters (Chapter 2).

Two experiments, both trained by the book's one engine (:mod:`longdep.train`, whose
:func:`~longdep.optim.clip_gradient_norm_` is the clipping rule): gradient descent on the
"cliff" of a one-unit recurrent network, whose loss surface over (w, b) has a wall where the
gradient is huge; and plain SGD on a tanh-RNN classifier with a large recurrent gain, with and
without clipping, every run of every setting in one computation.
"""

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import nn

from longdep.experiments.vanishing import orthogonal_matrix
from longdep.models import _checks as check
from longdep.models.heads import LastStepClassifier
from longdep.models.rnn import ElmanRNN
from longdep.optim import SGD
from longdep.seeds import manual_seed, seeded_generator
from longdep.train import Batch, train, train_seeds


def cliff_final_state(w: torch.Tensor, b: torch.Tensor, steps: int = 50, x0: float = 0.5
                      ) -> torch.Tensor:
    """x_steps of the one-unit network x_t = w * sigmoid(x_(t-1)) + b, elementwise over w and b.

    w and b are tensors of one shape (a grid of parameters, or two scalars); so is the result
    (Chapter 2, "The cliff").
    """
    check.tensor(w, "w", "(...)", 0)
    check.tensor(b, "b", f"{tuple(w.shape)}, the shape of w", 0)
    if b.shape != w.shape:
        raise ValueError(f"w and b must have one shape, got {check.describe(w)} and "
                         f"{check.describe(b)}")
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


class Cliff(nn.Module):
    """The one-unit network as a model to train: its parameter ``point`` is (w, b), and its
    output is x_steps of :func:`cliff_final_state` (whatever the input)."""

    def __init__(self, start: tuple[float, float], steps: int = 50):
        super().__init__()
        self.point, self.steps = nn.Parameter(torch.tensor(start, dtype=torch.float64)), steps

    def forward(self, _: torch.Tensor) -> torch.Tensor:
        return cliff_final_state(self.point[0], self.point[1], self.steps)


def cliff_descent(start: tuple[float, float], lr: float, steps: int,
                  threshold: float | None = None, target: float = 0.7) -> DescentPath:
    """Plain gradient descent on :func:`cliff_loss` from (w, b) = ``start``, in float64, by
    :func:`longdep.train.train` with SGD; with a ``threshold``, each gradient is clipped first
    (Algorithm 1)."""
    if not (isinstance(start, (tuple, list)) and len(start) == 2):
        raise TypeError(f"start must be a pair (w, b) of numbers, got {check.describe(start)}")
    check.finite(**{"start[0]": start[0], "start[1]": start[1]}, target=target)
    model = Cliff((float(start[0]), float(start[1])))
    batch = (torch.zeros(0, dtype=torch.float64), torch.tensor(target, dtype=torch.float64))
    result = train(model, lambda generator: batch, steps, optimizer=SGD, lr=lr,
                   clip_norm=threshold, eval_batches=0,
                   loss=lambda x_steps, target: (x_steps - target) ** 2,
                   observe=lambda parameters: parameters["point"].clone())
    points = torch.stack([*result.observed, model.point.detach().clone()])
    losses = cliff_loss(points[:, 0], points[:, 1], target)
    return DescentPath(points, losses, torch.tensor(result.grad_norms, dtype=torch.float64))


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
    manual_seed(seed)
    core = ElmanRNN(embedding_dim, hidden_size)
    with torch.no_grad():
        q = orthogonal_matrix(hidden_size, seeded_generator(seed))
        core.weight_hh.copy_(gain * q)
    return LastStepClassifier(vocab_size, embedding_dim, core, hidden_size, num_classes)


class SeedRuns(NamedTuple):
    """Training runs of one setting (Chapter 2, "Clipping in training"): ``losses`` and
    ``grad_norms`` (seeds, steps), the loss and the gradient norm before clipping at every step
    (inf where it was not finite), and ``accuracy`` (seeds,), the held-out accuracy at the end."""

    losses: torch.Tensor
    grad_norms: torch.Tensor
    accuracy: torch.Tensor


def train_settings(settings: dict[str, tuple[float, float | None]], gain: float, seeds: int,
                   make_batch: Callable[[torch.Generator], Batch], steps: int,
                   hidden_size: int = 32) -> dict[str, SeedRuns]:
    """Chapter 2's clipping experiment: for each setting ``label -> (lr, threshold)``, train
    :func:`classifier_with_recurrent_gain` models of seeds 0 .. seeds - 1 by plain SGD (Adam
    divides each step by a running gradient scale, which hides much of what clipping does),
    clipped at ``threshold`` (None: not clipped). Every run of every setting is one model of one
    :func:`longdep.train.train_seeds` call, so every setting trains the same seeds on the same
    batches. Returns label -> :class:`SeedRuns`."""
    if not isinstance(settings, dict) or not settings:
        raise TypeError(f"settings must be a non-empty dict label -> (lr, threshold), got "
                        f"{check.describe(settings)}")
    for label, setting in settings.items():
        if not (isinstance(setting, (tuple, list)) and len(setting) == 2):
            raise TypeError(f"settings[{label!r}] must be a pair (lr, threshold), got "
                            f"{check.describe(setting)}")
    check.positive(seeds=seeds)
    plan = [(lr, threshold, seed) for lr, threshold in settings.values() for seed in range(seeds)]
    models = [classifier_with_recurrent_gain(gain, hidden_size=hidden_size, seed=seed)
              for *_, seed in plan]
    lrs, thresholds, run_seeds = (list(column) for column in zip(*plan))
    results = train_seeds(models, make_batch, steps, run_seeds, optimizer=SGD, lr=lrs,
                          clip_norm=thresholds)
    runs = SeedRuns(torch.tensor([r.losses for r in results]),
                    torch.tensor([r.grad_norms for r in results]),
                    torch.tensor([r.accuracy for r in results]))
    return {label: SeedRuns(*(values[i * seeds:(i + 1) * seeds] for values in runs))
            for i, label in enumerate(settings)}

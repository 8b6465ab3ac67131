"""Gradient clipping (Pascanu, Mikolov & Bengio 2013, Algorithm 1) and where it matters (Chapter 2).

Two pieces (the clipping rule itself is :func:`longdep.train.clip_gradient_norm_`): the "cliff" of a one-unit recurrent network, whose loss
surface over (w, b) has a wall where the gradient is huge; and plain SGD for training a
recurrent classifier with and without clipping.
"""

import math
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import nn

from longdep.experiments.vanishing import orthogonal_matrix
from longdep.models.heads import LastStepClassifier
from longdep.models.rnn import ElmanRNN
from longdep.train import Batch, TrainingResult, clip_gradient_norm_, train


def cliff_final_state(w: torch.Tensor, b: torch.Tensor, steps: int = 50, x0: float = 0.5
                      ) -> torch.Tensor:
    """x_steps of the one-unit network x_t = w * sigmoid(x_(t-1)) + b, elementwise over w and b.

    w and b are tensors of one shape (a grid of parameters, or two scalars); so is the result
    (Chapter 2, "The cliff").
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    x = torch.full_like(w, x0)
    for _ in range(steps):
        x = w * torch.sigmoid(x) + b
    return x


def cliff_loss(w: torch.Tensor, b: torch.Tensor, target: float = 0.7, steps: int = 50
               ) -> torch.Tensor:
    """The squared error (x_steps - target)^2 of :func:`cliff_final_state`, elementwise."""
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
    if lr <= 0 or steps < 1:
        raise ValueError(f"lr and steps must be positive, got {lr}, {steps}")
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


def classifier_with_recurrent_gain(gain: float, vocab_size: int = 16, embedding_dim: int = 16,
                          hidden_size: int = 32, num_classes: int = 8, seed: int = 0
                          ) -> LastStepClassifier:
    """A tanh Elman RNN classifier whose W_hh is ``gain`` times a random orthogonal matrix, so
    that sigma_max(W_hh) = gain (Chapter 2, "Clipping in training"). Tokens (batch, time) ->
    logits (batch, num_classes); the initialisation depends only on ``seed``."""
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
    return train(model, make_batch, steps, lr, clip_norm=threshold, seed=seed,
                 eval_batches=eval_batches, optimizer_class=torch.optim.SGD,
                 clip=clip_gradient_norm_)

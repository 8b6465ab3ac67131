"""Gradient clipping (Pascanu, Mikolov & Bengio 2013, Algorithm 1) and where it matters (Chapter 2).

Three pieces: the clipping rule itself; the "cliff" of a one-unit recurrent network, whose loss
surface over (w, b) has a wall where the gradient is huge; and a plain SGD loop for training a
recurrent classifier with and without clipping.
"""

import math
from collections.abc import Callable, Iterable
from typing import NamedTuple

import torch
from torch import nn

from longdep.rnn import ElmanRNN
from longdep.training import Batch, LastStepClassifier, TrainingResult, train
from longdep.vanishing import orthogonal_matrix


@torch.no_grad()
def clip_gradient_norm_(parameters: Iterable[torch.Tensor], threshold: float) -> torch.Tensor:
    """Algorithm 1 of Pascanu et al. 2013, in place (Chapter 2, "Gradient clipping").

    g is the gradient of all ``parameters`` together (their ``.grad``); if ||g|| >= threshold,
    every gradient is multiplied by threshold / ||g||, so the step keeps its direction and has norm
    ``threshold``. Returns ||g|| before clipping; ``threshold=math.inf`` only measures it. Unlike
    ``torch.nn.utils.clip_grad_norm_`` no 1e-6 is added to the norm, and a non-finite norm raises
    a ``FloatingPointError``: there is no direction left to rescale.
    """
    if not threshold > 0:
        raise ValueError(f"threshold must be positive, got {threshold}")
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        raise ValueError("no parameter has a gradient: call backward() before clipping")
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    if not torch.isfinite(norm):
        raise FloatingPointError(f"the gradient norm is {norm.item()}: nothing to rescale")
    if norm >= threshold:
        for g in grads:
            g.mul_(threshold / norm)
    return norm


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


def gained_rnn_classifier(gain: float, vocab_size: int = 16, embedding_dim: int = 16,
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

    Like :func:`longdep.training.train`, but with SGD instead of Adam (Adam divides each step by
    a running gradient scale, which hides much of what clipping does) and with
    :func:`clip_gradient_norm_` when ``threshold`` is given. Records the loss and the gradient
    norm before clipping at every step, and the held-out accuracy at the end.
    """
    return train(model, make_batch, steps, lr, clip_norm=threshold, seed=seed,
                 eval_batches=eval_batches, optimizer_class=torch.optim.SGD,
                 clip=clip_gradient_norm_)

"""The one training loop of the book (Chapters 2, 3, 5 and 6), and gradient clipping.

:func:`train` takes a model and a function that draws a batch; it knows no task and no model
kind. :func:`clip_gradient_norm_` is Algorithm 1 of Pascanu, Mikolov & Bengio (2013).
"""

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch
from torch import nn

Batch = tuple[torch.Tensor, torch.Tensor]


@dataclass
class TrainingResult:
    """Per-step loss and gradient norm (before clipping), and held-out accuracy at the end."""

    losses: list[float] = field(default_factory=list)
    grad_norms: list[float] = field(default_factory=list)
    accuracy: float = float("nan")


def warmup_factor(step: int, warmup_steps: int) -> float:
    """Linear learning-rate warm-up: (step + 1) / warmup_steps for the first steps, then 1."""
    return 1.0 if warmup_steps <= 0 else min(1.0, (step + 1) / warmup_steps)


@torch.no_grad()
def accuracy(model: nn.Module, batches: list[Batch]) -> float:
    """Fraction of correct argmax predictions over the given batches."""
    model.eval()
    correct = total = 0
    for tokens, targets in batches:
        correct += (model(tokens).argmax(-1) == targets).sum().item()
        total += targets.numel()
    model.train()
    return correct / total


def train(
    model: nn.Module,
    make_batch: Callable[[torch.Generator], Batch],
    steps: int,
    lr: float = 1e-3,
    clip_norm: float | None = None,
    warmup_steps: int = 0,
    seed: int = 0,
    eval_batches: int = 4,
    optimizer_class: type[torch.optim.Optimizer] = torch.optim.Adam,
    clip: Callable[..., torch.Tensor] = nn.utils.clip_grad_norm_,
) -> TrainingResult:
    """Train ``model`` with Adam and cross-entropy on fresh batches from ``make_batch(generator)``.

    clip_norm: if given, rescale the gradient to this norm when it is larger (Pascanu et al. 2013),
    with ``clip(parameters, max_norm)``, which returns the norm before clipping.
    warmup_steps: linear learning-rate warm-up length. Accuracy is measured at the end on
    ``eval_batches`` held-out batches drawn from a generator the training never sees.
    optimizer_class: Adam by default; Chapter 2 trains with plain SGD.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    if lr <= 0:
        raise ValueError(f"lr must be positive, got {lr}")
    if clip_norm is not None and clip_norm <= 0:
        raise ValueError(f"clip_norm must be positive, got {clip_norm}")
    if warmup_steps < 0:
        raise ValueError(f"warmup_steps must be non-negative, got {warmup_steps}")
    if eval_batches < 1:
        raise ValueError(f"eval_batches must be at least 1, got {eval_batches}")
    train_generator = torch.Generator().manual_seed(seed)
    held_out_generator = torch.Generator().manual_seed(seed + 1_000_003)
    optimizer = optimizer_class(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer,
                                                 lambda s: warmup_factor(s, warmup_steps))
    result = TrainingResult()
    model.train()
    for _ in range(steps):
        tokens, targets = make_batch(train_generator)
        loss = nn.functional.cross_entropy(model(tokens), targets)
        optimizer.zero_grad()
        loss.backward()
        grad_norm = clip(model.parameters(), math.inf if clip_norm is None else clip_norm)
        optimizer.step()
        schedule.step()
        result.losses.append(loss.item())
        result.grad_norms.append(grad_norm.item())
    result.accuracy = accuracy(model, [make_batch(held_out_generator) for _ in range(eval_batches)])
    return result


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

"""One small training loop that every chapter reuses (Chapter 3 onwards)."""

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from longdep.tasks import key_recall_batch

Batch = tuple[torch.Tensor, torch.Tensor]


class LastStepClassifier(nn.Module):
    """Embed tokens, run a sequence model, classify from its output at the last step.

    ``core`` maps (batch, time, embedding_dim) to (batch, time, core_dim), or to a tuple whose
    first element is that (as :class:`longdep.rnn.ElmanRNN` and :class:`torch.nn.LSTM` return).
    """

    def __init__(self, vocab_size: int, embedding_dim: int, core: nn.Module, core_dim: int,
                 num_classes: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.core = core
        self.head = nn.Linear(core_dim, num_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (batch, time) int64 -> logits (batch, num_classes)."""
        outputs = self.core(self.embedding(tokens))
        if isinstance(outputs, tuple):
            outputs = outputs[0]
        return self.head(outputs[:, -1])


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
) -> TrainingResult:
    """Train ``model`` with Adam and cross-entropy on fresh batches from ``make_batch(generator)``.

    clip_norm: if given, rescale the gradient to this norm when it is larger (Pascanu et al. 2013).
    warmup_steps: linear learning-rate warm-up length. Accuracy is measured at the end on
    ``eval_batches`` held-out batches drawn from a generator the training never sees.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    if clip_norm is not None and clip_norm <= 0:
        raise ValueError(f"clip_norm must be positive, got {clip_norm}")
    train_generator = torch.Generator().manual_seed(seed)
    held_out_generator = torch.Generator().manual_seed(seed + 1_000_003)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: warmup_factor(s, warmup_steps))
    result = TrainingResult()
    model.train()
    for _ in range(steps):
        tokens, targets = make_batch(train_generator)
        loss = nn.functional.cross_entropy(model(tokens), targets)
        optimizer.zero_grad()
        loss.backward()
        max_norm = float("inf") if clip_norm is None else clip_norm
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        schedule.step()
        result.losses.append(loss.item())
        result.grad_norms.append(grad_norm.item())
    result.accuracy = accuracy(model, [make_batch(held_out_generator) for _ in range(eval_batches)])
    return result


@dataclass(frozen=True)
class KeyRecallBudget:
    """The one fixed training budget under which every model of the book meets key recall.

    Comparing models "at distance d" means: this many steps of this batch size and learning rate,
    and no more. A model that fails here might succeed with more training (Chapter 3).
    """

    steps: int = 300
    batch_size: int = 64
    lr: float = 3e-3
    clip_norm: float | None = 1.0
    num_keys: int = 8
    vocab_size: int = 16
    embedding_dim: int = 16
    eval_batches: int = 4


KEY_RECALL_BUDGET = KeyRecallBudget()


def train_key_recall(
    core: nn.Module,
    core_dim: int,
    distance: int,
    seed: int = 0,
    budget: KeyRecallBudget = KEY_RECALL_BUDGET,
    warmup_steps: int = 0,
) -> TrainingResult:
    """Train ``core`` on key recall at ``distance`` under ``budget``; see :class:`KeyRecallBudget`.

    ``core`` maps (batch, time, budget.embedding_dim) to (batch, time, core_dim) (or a tuple
    starting with that); the embedding and the classifier head around it are created here.
    """
    torch.manual_seed(seed)
    model = LastStepClassifier(budget.vocab_size, budget.embedding_dim, core, core_dim,
                               budget.num_keys)

    def make_batch(generator: torch.Generator) -> Batch:
        return key_recall_batch(budget.batch_size, distance, budget.num_keys, budget.vocab_size,
                                generator=generator)

    return train(model, make_batch, budget.steps, lr=budget.lr, clip_norm=budget.clip_norm,
                 warmup_steps=warmup_steps, seed=seed, eval_batches=budget.eval_batches)

"""One small training loop that every chapter reuses (Chapter 3 onwards)."""

import math
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


@dataclass(frozen=True)
class KeyRecallBudget:
    """The one fixed training budget under which every model of the book meets key recall.

    Comparing models "at distance d" means: ``steps`` Adam steps on fresh batches of
    ``batch_size`` sequences at learning rate ``lr``, gradients clipped to ``clip_norm``, and no
    more. A model that fails here might succeed with more training (Chapter 3). ``model_dim`` is
    the width every compared model gets (hidden size of a recurrent core, d_model of a
    Transformer); ``distances`` and ``seeds`` are the grid of the book's accuracy tables.

    The values are chosen so that one run costs about a second on one CPU core and the grid
    separates the models: a tanh RNN solves distance 10 but not 20, an LSTM with forget-gate bias
    3 solves 40 (Chapter 3).
    """

    steps: int = 150
    batch_size: int = 64
    lr: float = 5e-3
    clip_norm: float | None = 1.0
    num_keys: int = 8
    vocab_size: int = 16
    embedding_dim: int = 16
    eval_batches: int = 4
    model_dim: int = 32
    distances: tuple[int, ...] = (5, 10, 20, 40, 80)
    seeds: tuple[int, ...] = (0, 1)


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
    starting with that); the embedding and the classifier head around it are created here, after
    seeding torch with ``seed``. The training and held-out batches also depend only on ``seed``.
    """
    torch.manual_seed(seed)
    model = LastStepClassifier(budget.vocab_size, budget.embedding_dim, core, core_dim,
                               budget.num_keys)

    def make_batch(generator: torch.Generator) -> Batch:
        return key_recall_batch(budget.batch_size, distance, budget.num_keys, budget.vocab_size,
                                generator=generator)

    return train(model, make_batch, budget.steps, lr=budget.lr, clip_norm=budget.clip_norm,
                 warmup_steps=warmup_steps, seed=seed, eval_batches=budget.eval_batches)


def key_recall_accuracies(
    make_core: Callable[[], nn.Module],
    core_dim: int,
    budget: KeyRecallBudget = KEY_RECALL_BUDGET,
    warmup_steps: int = 0,
) -> torch.Tensor:
    """Held-out key-recall accuracy of one kind of model over the budget's grid (Chapter 3,
    "A task that needs memory: key recall").

    ``make_core()`` builds a fresh core (see :func:`train_key_recall`); it is called after
    ``torch.manual_seed(seed)``, so its initialisation, too, is fixed by the seed. Returns a
    (len(budget.seeds), len(budget.distances)) tensor of accuracies.
    """
    accuracies = torch.empty(len(budget.seeds), len(budget.distances), dtype=torch.float64)
    for i, seed in enumerate(budget.seeds):
        for j, distance in enumerate(budget.distances):
            torch.manual_seed(seed)
            result = train_key_recall(make_core(), core_dim, distance, seed, budget, warmup_steps)
            accuracies[i, j] = result.accuracy
    return accuracies


def format_accuracy_table(accuracies: dict[str, torch.Tensor],
                          budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> str:
    """A plain-text table: one row per model, one column per distance, the mean over seeds.

    ``accuracies`` maps a model's name to the output of :func:`key_recall_accuracies`.
    """
    width = max(len("model"), *(len(name) for name in accuracies))
    lines = [f"{'model':<{width}}" + "".join(f"  {f'd={d}':>6}" for d in budget.distances)]
    for name, grid in accuracies.items():
        if grid.shape != (len(budget.seeds), len(budget.distances)):
            raise ValueError(
                f"accuracies[{name!r}] must have shape (seeds, distances) = "
                f"{(len(budget.seeds), len(budget.distances))}, got {tuple(grid.shape)}"
            )
        lines.append(f"{name:<{width}}" + "".join(f"  {a:6.2f}" for a in grid.mean(0).tolist()))
    return "\n".join(lines)

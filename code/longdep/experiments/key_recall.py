"""Key recall under one fixed training budget (Chapters 3, 5 and 6, "A task that needs memory:
key recall").

Every model of the book is trained by :func:`train_key_recall` with the same steps, batch,
learning rate and clipping (:class:`KeyRecallBudget`), so the accuracy tables compare models,
not training efforts.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from longdep.models.heads import LastStepClassifier
from longdep.models.transformer import EncoderStack
from longdep.tasks import key_recall_batch
from longdep.train import Batch, TrainingResult, train


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


def key_recall_transformer(budget: KeyRecallBudget = KEY_RECALL_BUDGET, num_layers: int = 1,
                           num_heads: int = 2, norm_first: bool = True) -> EncoderStack:
    """The small Transformer core that Chapter 5 trains on key recall under ``budget``.

    Width ``budget.model_dim`` (as the recurrent cores get), feed-forward width twice that, a
    positional table long enough for the budget's longest distance, and an input projection from
    the budget's embeddings. Not causal: the classifier reads only the last position, which a
    causal mask would not restrict.
    """
    return EncoderStack(budget.model_dim, num_heads, num_layers, 2 * budget.model_dim,
                        max_len=max(budget.distances) + 1, norm_first=norm_first,
                        input_size=budget.embedding_dim)

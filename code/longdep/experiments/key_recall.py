"""Key recall under one fixed training budget (Chapters 3, 5 and 6, "A task that needs memory:
key recall").

Every model of the book is trained by :func:`train_key_recall` with the same steps, batch,
learning rate and clipping (:class:`KeyRecallBudget`), so the accuracy tables compare models,
not training efforts.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import torch
from torch import nn

from longdep.models.heads import LastStepClassifier
from longdep.models.transformer import EncoderStack
from longdep.tasks import key_recall_batch
from longdep.train import Batch, TrainingResult, train, train_seeds


@dataclass(frozen=True)
class KeyRecallBudget:
    """The one fixed training budget under which every model of the book meets key recall.

    Comparing models "at distance d" means: ``steps`` Adam steps on fresh batches of
    ``batch_size`` sequences at learning rate ``lr``, gradients clipped to ``clip_norm``, and no
    more. A model that fails here might succeed with more training (Chapter 3). ``model_dim`` is
    the width every compared model gets (hidden size of a recurrent core, d_model of a
    Transformer); ``distances`` and ``seeds`` are the grid of the book's accuracy tables.

    The values are chosen so that one run costs about a second on one CPU core and the grid
    separates the models: a tanh RNN solves distance 5 but not 20, an LSTM with forget-gate bias
    3 solves 20 in every seed and 40 in most (Chapter 3). Runs at the boundary between solved
    and failed are chaotic (one changed bit can flip a seed), which is why the tables report
    several seeds.
    """

    steps: int = 150
    batch_size: int = 64
    lr: float = 5e-3
    clip_norm: float | None = 1.0
    num_keys: int = 8
    vocab_size: int = 9
    embedding_dim: int = 16
    eval_batches: int = 4
    model_dim: int = 32
    distances: tuple[int, ...] = (5, 10, 20, 40, 80)
    seeds: tuple[int, ...] = (0, 1, 2)


KEY_RECALL_BUDGET = KeyRecallBudget()


def key_recall_classifier(core: nn.Module, core_dim: int, seed: int,
                          budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> LastStepClassifier:
    """The embedding, ``core`` and the classifier head that key recall trains, the embedding
    and the head initialised after seeding torch with ``seed``."""
    torch.manual_seed(seed)
    return LastStepClassifier(budget.vocab_size, budget.embedding_dim, core, core_dim,
                              budget.num_keys)


def key_recall_batches(distance: int, budget: KeyRecallBudget = KEY_RECALL_BUDGET
                       ) -> Callable[[torch.Generator], Batch]:
    """The batch function of key recall at ``distance`` under ``budget``."""
    def make_batch(generator: torch.Generator) -> Batch:
        return key_recall_batch(budget.batch_size, distance, budget.num_keys, budget.vocab_size,
                                generator=generator)

    return make_batch


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
    model = key_recall_classifier(core, core_dim, seed, budget)
    return train(model, key_recall_batches(distance, budget), budget.steps, lr=budget.lr,
                 clip_norm=budget.clip_norm, warmup_steps=warmup_steps, seed=seed,
                 eval_batches=budget.eval_batches)


def train_key_recall_seeds(
    make_core: Callable[[], nn.Module],
    core_dim: int,
    distance: int,
    seeds: Sequence[int],
    budget: KeyRecallBudget = KEY_RECALL_BUDGET,
    warmup_steps: int = 0,
    vectorized: bool = True,
) -> list[TrainingResult]:
    """:func:`train_key_recall` of a fresh ``make_core()`` for every seed (Chapters 3 and 5).

    ``make_core()`` is called after ``torch.manual_seed(seed)``, so the core's initialisation,
    too, is fixed by the seed. The seeds are trained at once by
    :func:`longdep.train.train_seeds`; ``vectorized=False`` runs the forward pass once per seed
    instead of under vmap, which a compiled loop such as ``torch.nn.LSTM`` needs (and for which
    it is faster). The results equal one :func:`train_key_recall` per seed to round-off.
    """
    models = []
    for seed in seeds:
        torch.manual_seed(seed)
        models.append(key_recall_classifier(make_core(), core_dim, seed, budget))
    settings = dict(lr=budget.lr, clip_norm=budget.clip_norm, warmup_steps=warmup_steps,
                    eval_batches=budget.eval_batches)
    make_batch = key_recall_batches(distance, budget)
    return train_seeds(models, make_batch, budget.steps, seeds, vectorized=vectorized,
                       **settings)


def key_recall_accuracies(
    make_core: Callable[[], nn.Module],
    core_dim: int,
    budget: KeyRecallBudget = KEY_RECALL_BUDGET,
    warmup_steps: int = 0,
    vectorized: bool = True,
    stop_below: float | None = None,
) -> torch.Tensor:
    """Held-out key-recall accuracy of one kind of model over the budget's grid (Chapter 3,
    "A task that needs memory: key recall").

    Every distance trains a fresh ``make_core()`` for every seed of the budget with
    :func:`train_key_recall_seeds` (``vectorized`` as there). With ``stop_below``, once every
    seed's accuracy at a distance is below it, the longer distances are not trained (a longer
    distance is only harder) and their entries are NaN. Returns a
    (len(budget.seeds), len(budget.distances)) tensor of accuracies.
    """
    accuracies = torch.full((len(budget.seeds), len(budget.distances)), math.nan,
                            dtype=torch.float64)
    for j, distance in enumerate(budget.distances):
        results = train_key_recall_seeds(make_core, core_dim, distance, budget.seeds, budget,
                                         warmup_steps, vectorized)
        accuracies[:, j] = torch.tensor([result.accuracy for result in results])
        if stop_below is not None and accuracies[:, j].max() < stop_below:
            break
    return accuracies


def content_only_accuracy(distance: int, num_keys: int = KEY_RECALL_BUDGET.num_keys) -> float:
    """The best accuracy at key recall of any model blind to order (Chapter 3, "A task that
    needs memory: key recall"): it sees which ids the ``distance`` tokens before the query hold
    and how often, not where.

    The key is token 0 and the distractors are drawn from the same ``num_keys`` ids, so given
    the counts n_v, the key is v with probability n_v / distance, and the best guess is the most
    frequent id: accuracy E[max_v n_v] / distance. With P(max < m) = distance! [x^distance]
    (sum_{j<m} x^j / j!)^num_keys / num_keys^distance, computed exactly in fractions.
    """
    if isinstance(distance, bool) or not isinstance(distance, int) or distance < 1:
        raise ValueError(f"distance must be an int of at least 1, got {distance!r}")
    if isinstance(num_keys, bool) or not isinstance(num_keys, int) or num_keys < 2:
        raise ValueError(f"num_keys must be an int of at least 2, got {num_keys!r}")
    expected_max = Fraction(0)
    for m in range(1, distance + 1):  # E[max] = sum over m >= 1 of P(max >= m)
        power = [Fraction(1)]  # coefficients of (sum_{j<m} x^j / j!)^k, truncated at x^distance
        factor = [Fraction(1, math.factorial(j)) for j in range(min(m, distance + 1))]
        for _ in range(num_keys):
            power = [sum(power[i] * factor[n - i] for i in range(max(0, n - len(factor) + 1),
                                                                   min(n, len(power) - 1) + 1))
                     for n in range(min(distance, len(power) + len(factor) - 2) + 1)]
        below = (power[distance] if distance < len(power) else 0) * math.factorial(distance)
        expected_max += 1 - below / num_keys**distance
    return float(expected_max / distance)


def accuracy_word(accuracies: torch.Tensor, solved: float = 0.95, mostly: float = 0.6,
                  chance_below: float = 0.3) -> str:
    """What the seeds' accuracies (seeds,) at one grid point say, in a word (Chapter 3).

    "solved": every seed reaches ``solved``; "chance": every seed stays below ``chance_below``
    (chance is 1 / num_keys); "mostly": the mean reaches ``mostly``; otherwise "partly"; "-"
    if the point was not trained (NaN). Between solved and failed, single runs are chaotic (one
    changed bit can flip a seed) and a mean over a few seeds moves by tenths between machines;
    the thresholds sit far from where the seeds cluster, so the words do not move.
    """
    if accuracies.isnan().any():
        return "-"
    if accuracies.min() >= solved:
        return "solved"
    if accuracies.max() < chance_below:
        return "chance"
    return "mostly" if accuracies.mean() >= mostly else "partly"


def format_accuracy_table(accuracies: dict[str, torch.Tensor],
                          budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> str:
    """A plain-text table: one row per model, one column per distance, each cell the
    :func:`accuracy_word` of its seeds. ``accuracies`` maps a model's name to the output of
    :func:`key_recall_accuracies`."""
    width = max(len("model"), *(len(name) for name in accuracies))
    lines = [f"{'model':<{width}}" + "".join(f"  {f'd={d}':>7}" for d in budget.distances)]
    for name, grid in accuracies.items():
        if grid.shape != (len(budget.seeds), len(budget.distances)):
            raise ValueError(
                f"accuracies[{name!r}] must have shape (seeds, distances) = "
                f"{(len(budget.seeds), len(budget.distances))}, got {tuple(grid.shape)}"
            )
        lines.append(f"{name:<{width}}"
                     + "".join(f"  {accuracy_word(column):>7}" for column in grid.T))
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

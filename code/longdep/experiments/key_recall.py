"""Key recall under one fixed training budget (Chapters 3, 5 and 6, "A task that needs memory:
key recall").

Every model of the book is trained by :func:`train_key_recall` with the same steps, batch,
learning rate and clipping (:class:`KeyRecallBudget`), so the accuracy tables compare models,
not training efforts. Chapter 3's table of counts over seeds is built by
:mod:`longdep.experiments.recall_grid`.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from longdep.experiments.registry import (
    BOOK_SIZES,
    KIND,
    LAST_POSITION_ENCODER,
    ORDER_BLIND,
    ModelShape,
)
from longdep.experiments.workers import in_worker_processes
from longdep.models import _checks as check
from longdep.models.heads import LastStepClassifier
from longdep.models.transformer import EncoderStack
from longdep.seeds import manual_seed
from longdep.tasks import key_recall_batch
from longdep.train import Batch, TrainingResult, train, train_seeds


@dataclass(frozen=True)
class KeyRecallBudget:
    """The one fixed training budget under which every model of the book meets key recall.

    Comparing models "at distance d" means: ``steps`` Adam steps on fresh batches of
    ``batch_size`` sequences at learning rate ``lr``, gradients clipped to ``clip_norm``, and no
    more; the held-out accuracy is measured on ``eval_batches`` further batches. A model that
    fails here might succeed with more training (Chapter 3). ``embedding_dim`` and ``model_dim``
    are the widths every compared model gets (:data:`longdep.experiments.registry.BOOK_SIZES`:
    the token embedding, and the hidden size of a recurrent core or d_model of a Transformer);
    ``distances`` and ``seeds`` are the grid of the book's accuracy tables.

    The values were chosen, not derived: ten seeds a cell, so that a cell is a count with an
    interval (:mod:`longdep.stats`), and steps and batch small enough that the whole grid of
    Chapter 3 trains within the chapter's time budget, yet large enough that every model with
    memory learns the shortest distance and each one stops learning somewhere in the grid.
    """

    steps: int = 150
    batch_size: int = 32
    lr: float = 5e-3
    clip_norm: float | None = 1.0
    num_keys: int = 8
    vocab_size: int = 9
    embedding_dim: int = BOOK_SIZES.input_size
    eval_batches: int = 8
    model_dim: int = BOOK_SIZES.width
    distances: tuple[int, ...] = (5, 10, 20, 40)
    seeds: tuple[int, ...] = tuple(range(10))

    @property
    def shape(self) -> ModelShape:
        """The registry's :class:`ModelShape` of this budget's widths, for the recurrent cores
        and the bag of tokens (a stack also needs its depth and heads)."""
        return ModelShape(input_size=self.embedding_dim, width=self.model_dim,
                          d_ff=2 * self.model_dim, max_len=max(self.distances) + 1)


KEY_RECALL_BUDGET = KeyRecallBudget()


def key_recall_classifier(core: nn.Module, core_dim: int, seed: int,
                          budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> LastStepClassifier:
    """The embedding, ``core`` and the classifier head that key recall trains, the embedding
    and the head initialised after seeding torch with ``seed``."""
    check.instance(budget, "budget", KeyRecallBudget)
    if not isinstance(core, nn.Module):
        raise TypeError(f"core must be a torch.nn.Module, got {type(core).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    manual_seed(seed)
    return LastStepClassifier(budget.vocab_size, budget.embedding_dim, core, core_dim,
                              budget.num_keys)


def key_recall_batches(distance: int, budget: KeyRecallBudget = KEY_RECALL_BUDGET
                       ) -> Callable[[torch.Generator], Batch]:
    """The batch function of key recall at ``distance`` under ``budget``."""
    check.instance(budget, "budget", KeyRecallBudget)
    check.positive(distance=distance)
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
    check.positive(core_dim=core_dim, distance=distance)
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
    warmup_steps: int | Sequence[int] = 0,
    vectorized: bool = True,
    lr: float | Sequence[float] | None = None,
) -> list[TrainingResult]:
    """:func:`train_key_recall` of a fresh ``make_core()`` for every seed (Chapters 3 and 5):
    :func:`train_key_recall_group` of the one maker."""
    return train_key_recall_group([make_core], core_dim, distance, seeds, budget, warmup_steps,
                                  vectorized, lr)


def train_key_recall_group(
    makers: Sequence[Callable[[], nn.Module]],
    core_dim: int,
    distance: int,
    seeds: Sequence[int],
    budget: KeyRecallBudget = KEY_RECALL_BUDGET,
    warmup_steps: int | Sequence[int] = 0,
    vectorized: bool = True,
    lr: float | Sequence[float] | None = None,
) -> list[TrainingResult]:
    """:func:`train_key_recall` of a fresh ``make_core()`` for every maker and every seed, in
    one :func:`longdep.train.train_seeds` call (Chapter 3): the results maker by maker, each in
    the order of ``seeds``. ``make_core()`` is called after seeding torch with the seed, so the
    core's initialisation, too, is fixed by the seed; models of one seed see the same batches.
    The makers' cores must compute one function of their parameters
    (:func:`check_one_architecture`), as LSTMs that differ only in their initial forget bias
    do. ``vectorized=False`` runs the forward pass once per model (for ``torch.nn.LSTM``'s
    loop); ``warmup_steps`` and ``lr`` (None: the budget's) may be one per model."""
    if not isinstance(makers, (list, tuple)) or not makers:
        raise TypeError(f"makers must be a non-empty list of functions, got "
                        f"{check.describe(makers)}")
    check.callables(**{f"makers[{i}]": make for i, make in enumerate(makers)})
    check.instance(budget, "budget", KeyRecallBudget)
    check.positive(core_dim=core_dim, distance=distance)
    models, all_seeds = [], []
    for make_core in makers:
        for seed in seeds:
            manual_seed(seed)
            models.append(key_recall_classifier(make_core(), core_dim, seed, budget))
            all_seeds.append(seed)
    if len(makers) > 1:  # one maker's cores share its code
        check_one_architecture(models, distance)
    return train_seeds(models, key_recall_batches(distance, budget), budget.steps, all_seeds,
                       lr=budget.lr if lr is None else lr, clip_norm=budget.clip_norm,
                       warmup_steps=warmup_steps, eval_batches=budget.eval_batches,
                       vectorized=vectorized)


def check_one_architecture(models: Sequence[nn.Module], distance: int) -> None:
    """A ``ValueError`` unless every model computes with its parameters what ``models[0]``'s
    code computes with them, as :func:`longdep.train.train_seeds` assumes (checked on one
    sequence of ``distance`` + 1 tokens; Chapter 3)."""
    tokens = torch.arange(distance + 1)[None] % models[0].vocab_size  # (1, time)
    with torch.no_grad():
        for i, model in enumerate(models[1:], start=1):
            as_first = functional_call(models[0], dict(model.named_parameters()), (tokens,))
            if not torch.equal(model(tokens), as_first):
                raise ValueError(f"models must compute one function of their parameters: "
                                 f"models[{i}] differs from models[0]")


def key_recall_accuracies(
    make_core: Callable[[], nn.Module],
    core_dim: int,
    budget: KeyRecallBudget = KEY_RECALL_BUDGET,
    warmup_steps: int = 0,
    vectorized: bool = True,
) -> torch.Tensor:
    """Held-out key-recall accuracy of one kind of model over the budget's grid (Chapters 3 and
    5): every distance trains a fresh ``make_core()`` for every seed of the budget with
    :func:`train_key_recall_seeds` (``vectorized`` as there). Returns a
    (len(budget.seeds), len(budget.distances)) tensor of accuracies."""
    check.callables(make_core=make_core)
    check.instance(budget, "budget", KeyRecallBudget)
    check.positive(core_dim=core_dim)
    columns = [[result.accuracy for result in train_key_recall_seeds(
        make_core, core_dim, distance, budget.seeds, budget, warmup_steps, vectorized)]
        for distance in budget.distances]
    return torch.tensor(columns, dtype=torch.float64).T


def key_recall_rows(makers: dict[str, Callable[[], nn.Module]], core_dim: int,
                    budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> dict[str, torch.Tensor]:
    """:func:`key_recall_accuracies` of every ``name: make_core`` of ``makers`` (vectorized,
    every distance trained), each (model, distance) trained on its own in worker processes, one
    per core (:func:`longdep.experiments.workers.in_worker_processes`: the same numbers, bit for
    bit, sooner; each ``make_core`` must be a function of a module). The longest distances go
    first, so that no core waits for one long run at the end (Chapter 5). Returns
    {name: (len(budget.seeds), len(budget.distances)) tensor}."""
    check.instance(budget, "budget", KeyRecallBudget)
    check.positive(core_dim=core_dim)
    if not isinstance(makers, dict) or not makers:
        raise TypeError(f"makers must be a non-empty dict of name -> make_core, got "
                        f"{type(makers).__name__}")
    for make_core in makers.values():
        check.callables(make_core=make_core)
    columns = in_worker_processes({
        (name, distance): (key_recall_accuracies,
                           (make_core, core_dim, replace(budget, distances=(distance,))))
        for distance in sorted(budget.distances, reverse=True)
        for name, make_core in makers.items()})
    return {name: torch.cat([columns[name, distance] for distance in budget.distances], dim=1)
            for name in makers}


def content_only_accuracy(distance: int, num_keys: int = KEY_RECALL_BUDGET.num_keys) -> float:
    """The best accuracy at key recall of any model blind to order (Chapter 3, "A task that
    needs memory: key recall"): it sees which ids the ``distance`` tokens before the query hold
    and how often, not where.

    The key is token 0 and the distractors are drawn from the same ``num_keys`` ids, so given
    the counts n_v, the key is v with probability n_v / distance, and the best guess is the most
    frequent id: accuracy E[max_v n_v] / distance, with E[max] = sum_{m >= 1} P(max >= m).
    P(max < m) comes from independent Poisson(distance / num_keys) counts conditioned on their
    sum being ``distance`` (which makes them multinomial): the chance that all stay below m and
    sum to ``distance``, divided by P(Poisson(distance) = distance), by a truncated
    convolution in float64 (every term positive, so relative error near 1e-15). The result is
    rounded to 12 digits, so it is the same on every machine.
    """
    if isinstance(distance, bool) or not isinstance(distance, int) or distance < 1:
        raise ValueError(f"distance must be an int of at least 1, got {distance!r}")
    if isinstance(num_keys, bool) or not isinstance(num_keys, int) or num_keys < 2:
        raise ValueError(f"num_keys must be an int of at least 2, got {num_keys!r}")
    rate = distance / num_keys
    j = np.arange(distance + 1)
    pmf = np.exp(-rate + j * math.log(rate) - np.array([math.lgamma(n + 1) for n in j]))
    total = math.exp(-distance + distance * math.log(distance) - math.lgamma(distance + 1))
    expected_max = 0.0
    for m in range(1, distance + 1):  # E[max] = sum over m >= 1 of P(max >= m)
        power, factor = np.ones(1), pmf[:m]
        for _ in range(num_keys):  # the counts' joint law, truncated at distance
            power = np.convolve(power, factor)[: distance + 1]
        below = power[distance] / total if len(power) > distance else 0.0
        expected_max += 1.0 - below
    return float(round(expected_max / distance, 12))


def accuracy_word(accuracies: torch.Tensor, solved: float = 0.95, mostly: float = 0.6,
                  chance_below: float = 0.3, bound: float | None = None,
                  margin: float = 0.1) -> str:
    """What the seeds' accuracies (seeds,) at one grid point say, in a word, by thresholds on
    every seed and on the mean (Chapters 5 and 6; Chapter 3 counts seeds instead, with
    :mod:`longdep.experiments.recall_grid`).

    "solved": every seed reaches ``solved``; "chance": every seed stays below ``chance_below``
    (chance is 1 / num_keys); "mostly": the mean reaches ``mostly``; otherwise "partly"; "-"
    if the point was not trained (NaN). With ``bound`` (the best accuracy of any order-blind
    model at this distance, :func:`content_only_accuracy`), "blind" replaces "chance": every
    seed stays below ``bound + margin``, no better than a model that ignores order. A word
    about every seed of a few seeds can change with other seeds; a count over ten seeds with
    its interval (:mod:`longdep.stats`) is the book's standard.
    """
    if not isinstance(accuracies, torch.Tensor) or accuracies.dim() != 1 or not len(accuracies):
        raise TypeError(f"accuracies must be a non-empty 1-d tensor (seeds,), got "
                        f"{type(accuracies).__name__} of shape "
                        f"{tuple(getattr(accuracies, 'shape', ()))}")
    if not 0 < chance_below <= mostly <= solved <= 1:
        raise ValueError(f"need 0 < chance_below <= mostly <= solved <= 1, got "
                         f"{chance_below}, {mostly}, {solved}")
    if accuracies.isnan().any():
        return "-"
    if accuracies.min() >= solved:
        return "solved"
    if bound is not None:  # "blind": no seed beats the best order-blind model by margin
        if accuracies.max() < bound + margin:
            return "blind"
        return "mostly" if accuracies.mean() >= mostly else "partly"
    if accuracies.max() < chance_below:
        return "chance"
    return "mostly" if accuracies.mean() >= mostly else "partly"


def format_accuracy_table(accuracies: dict[str, torch.Tensor],
                          budget: KeyRecallBudget = KEY_RECALL_BUDGET,
                          bound: Sequence[float] | None = None) -> str:
    """A plain-text table: one row per model, one column per distance, each cell the
    :func:`accuracy_word` of its seeds. ``accuracies`` maps a model's name to the output of
    :func:`key_recall_accuracies`. With ``bound`` (one number per distance, such as
    :func:`content_only_accuracy`), the words are taken relative to it (see
    :func:`accuracy_word`) and a last row prints it with two decimals."""
    check.instance(budget, "budget", KeyRecallBudget)
    if not isinstance(accuracies, dict) or not accuracies:
        raise TypeError(f"accuracies must be a non-empty dict of name -> (seeds, distances) "
                        f"tensor, got {type(accuracies).__name__}")
    if bound is not None and len(bound) != len(budget.distances):
        raise ValueError(f"bound must have one number per distance ({len(budget.distances)}), "
                         f"got {len(bound)}")
    width = max(len("model"), len("order-blind bound"), *(len(name) for name in accuracies))
    lines = [f"{'model':<{width}}" + "".join(f"  {f'd={d}':>7}" for d in budget.distances)]
    for name, grid in accuracies.items():
        if grid.shape != (len(budget.seeds), len(budget.distances)):
            raise ValueError(
                f"accuracies[{name!r}] must have shape (seeds, distances) = "
                f"{(len(budget.seeds), len(budget.distances))}, got {tuple(grid.shape)}"
            )
        words = [accuracy_word(column, bound=None if bound is None else b)
                 for column, b in zip(grid.T, [None] * len(budget.distances) if bound is None
                                             else list(bound))]
        lines.append(f"{name:<{width}}" + "".join(f"  {word:>7}" for word in words))
    if bound is not None:
        lines.append(f"{'order-blind bound':<{width}}" + "".join(f"  {b:>7.2f}" for b in bound))
    return "\n".join(lines)


def key_recall_transformer(budget: KeyRecallBudget = KEY_RECALL_BUDGET, num_layers: int = 1,
                           num_heads: int = 2, norm_first: bool = True) -> EncoderStack:
    """The registry's :data:`longdep.experiments.registry.LAST_POSITION_ENCODER` at ``budget``'s
    widths (feed-forward width twice the model's, a positional table as long as the longest
    sequence), with ``num_layers`` layers and ``num_heads`` heads: the Transformer core that
    Chapter 5 trains on key recall."""
    check.instance(budget, "budget", KeyRecallBudget)
    check.positive(num_layers=num_layers, num_heads=num_heads)
    shape = replace(budget.shape, num_layers=num_layers, num_heads=num_heads,
                    norm_first=norm_first)
    return KIND[LAST_POSITION_ENCODER].build(shape)


def bag_of_tokens(budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> nn.Module:
    """The registry's order-blind control at ``budget``'s widths, computing only the last step,
    all that the classifier reads (Chapters 3 and 5)."""
    check.instance(budget, "budget", KeyRecallBudget)
    return KIND[ORDER_BLIND].training_core(budget.shape)

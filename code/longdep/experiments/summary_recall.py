"""Key recall of every model of the book's summary (Chapter 6, "Key recall under the common
budget").

Every model of :data:`longdep.experiments.summary.KEY_RECALL_MODELS` meets key recall at one
distance under the book's one budget (:data:`longdep.experiments.key_recall.KEY_RECALL_BUDGET`),
once per seed of the budget, all seeds of a model at once under vmap and the models side by
side on the cores. A seed solves the task when its held-out accuracy reaches 0.95 and beats the
order-blind bound when it exceeds the best accuracy of any model blind to order by 0.1, as
Chapter 3 counts (:mod:`longdep.experiments.recall_grid`); each verdict is that count, with its
interval and the word of the book's rule (:mod:`longdep.stats`). A model that cannot see the key
at all (:func:`key_out_of_reach`) is not trained.
"""

from collections.abc import Sequence

import torch
from torch import nn

from longdep.book import Bilingual
from longdep.experiments.key_recall import KEY_RECALL_BUDGET, train_key_recall_seeds
from longdep.experiments.recall_grid import SOLVED, beats_bound
from longdep.experiments.registry import KIND, ModelShape
from longdep.experiments.summary import KEY_RECALL_MODELS, kind_of
from longdep.experiments.workers import over_cores
from longdep.measure.reach import first_dependent_layer
from longdep.models import _checks as check
from longdep.stats import Count, count, frequency_word


def recall_core(name: str, shape: ModelShape = ModelShape()) -> nn.Module:
    """The core that key recall trains for model ``name`` of :data:`KEY_RECALL_MODELS`, as vmap
    batches it over seeds (Chapter 6, "Key recall under the common budget"): the recurrent
    models as the book's own modules (PyTorch's fused loops have no vmap rule), the bag of
    tokens as its twin that computes only the last step, and the stacks of softmax attention,
    linear attention and the SSM computing only the last position in their layer (the window
    is never trained: :func:`key_out_of_reach`); each returns at the last position what the
    full model returns."""
    check.choice(name=(name, KEY_RECALL_MODELS))
    kind = KIND[name]
    if kind.twin is not None and not kind.recurrent:
        return kind.twin(shape)
    core = kind.build(shape)
    if kind.mixer in ("softmax", "linear", "ssm"):
        core.last_only = True  # the classifier reads the last position only
    return core


def key_recall_seed_accuracies(name: str, distance: int, shape: ModelShape = ModelShape(),
                               seeds: Sequence[int] = KEY_RECALL_BUDGET.seeds) -> torch.Tensor:
    """Held-out key-recall accuracies (len(seeds),) of model ``name`` of
    :data:`KEY_RECALL_MODELS` at ``distance`` under the book's budget, one run per seed, all
    trained at once under vmap (:func:`longdep.experiments.key_recall.train_key_recall_seeds`
    of :func:`recall_core`; Chapter 6, "Key recall under the common budget")."""
    check.choice(name=(name, KEY_RECALL_MODELS))
    check.positive(distance=distance)
    seeds = check.ints("seeds", seeds, least=0)
    results = train_key_recall_seeds(lambda: recall_core(name, shape), shape.width, distance,
                                     seeds)
    return torch.tensor([result.accuracy for result in results], dtype=torch.float64)


def key_recall_runs(names: Sequence[str], distance: int, shape: ModelShape = ModelShape()
                    ) -> dict[str, torch.Tensor]:
    """:func:`key_recall_seed_accuracies` of every model of ``names`` (the budget's seeds), the
    models side by side on the cores (:func:`over_cores`), the costliest first: {name:
    (seeds,) accuracies}."""
    for name in names:
        check.choice(name=(name, KEY_RECALL_MODELS))
    cost = {"selective SSM": 4, "linear attention": 3, "LSTM": 2}  # measured, roughly
    runs = over_cores(key_recall_seed_accuracies, [(name, distance, shape) for name in names],
                      cost=lambda point: cost.get(point[0], 1))
    return {name: runs[name, distance, shape] for name in names}


def recall_counts(accuracies: torch.Tensor, distance: int) -> tuple[Count, Count]:
    """(the seeds that solve key recall at ``distance``, the seeds that beat the order-blind
    bound there) of one model's (seeds,) held-out ``accuracies``, as Chapter 3 counts them
    (:data:`longdep.experiments.recall_grid.SOLVED`,
    :func:`longdep.experiments.recall_grid.beats_bound`)."""
    if not isinstance(accuracies, torch.Tensor) or accuracies.dim() != 1 or not len(accuracies):
        raise ValueError(f"accuracies must be a non-empty (seeds,) tensor, got "
                         f"{check.describe(accuracies)}")
    check.positive(distance=distance)
    return count(accuracies >= SOLVED), count(beats_bound(accuracies, distance))


def key_out_of_reach(name: str, distance: int, shape: ModelShape = ModelShape()) -> bool:
    """True if a stack ``name`` of ``shape.num_layers`` layers cannot see the key at all: the
    last output of a ``distance + 1``-step sequence does not depend on its first input, found
    through the derivative (:func:`longdep.measure.reach.first_dependent_layer`). Its accuracy
    is then chance whatever the training, so Chapter 6 does not train it. A recurrence reaches
    every step, so this is False for the tanh RNN and the LSTM."""
    kind = kind_of(name)
    check.positive(distance=distance)
    if kind.recurrent:
        return False
    stack = kind.stack(shape, shape.num_layers).double()
    layers = first_dependent_layer(lambda x: stack.layer_outputs(stack.positional_encoding(x)),
                                   distance + 1, shape.width)
    return layers is None




def verdict(counted: Count) -> Bilingual:
    """A count of seeds as the prose states it, in both languages: with the word of the book's
    rule when it earns one, "almost always (10 of 10 seeds, interval 0.72–1.00)" (几乎总是（10 个
    种子中 10 个，区间 0.72–1.00）), else only the count, "in 8 of 10 seeds (interval
    0.49–0.94)" (在 10 个种子中的 8 个里（区间 0.49–0.94）) (Chapter 6, "Key recall under the
    common budget")."""
    check.instance(counted, "counted", Count)
    low, high = counted.interval
    k, n = counted.successes, counted.trials
    word = frequency_word(k, n, "en")
    if word is None:
        return Bilingual(f"in {k} of {n} seeds (interval {low:.2f}–{high:.2f})",
                         f"在 {n} 个种子中的 {k} 个里（区间 {low:.2f}–{high:.2f}）")
    return Bilingual(f"{word} ({k} of {n} seeds, interval {low:.2f}–{high:.2f})",
                     f"{frequency_word(k, n, 'zh')}（{n} 个种子中 {k} 个，区间 "
                     f"{low:.2f}–{high:.2f}）")

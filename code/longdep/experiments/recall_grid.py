"""Chapter 3's key-recall table, every cell a count over seeds ("A task that needs memory: key
recall").

Every model of the chapter meets key recall at every distance of the book's budget
(:class:`longdep.experiments.key_recall.KeyRecallBudget`), once per seed of the budget. A seed
*solves* key recall at a distance when its held-out accuracy reaches :data:`SOLVED`, and *beats
the order-blind bound* when its accuracy exceeds the best accuracy of any model blind to order
(:func:`longdep.experiments.key_recall.content_only_accuracy`) by :data:`MARGIN` or more. A cell
of the table counts the seeds of each kind, with its 95 % Wilson interval and the word the
book's rule gives the count (:mod:`longdep.stats`).

The rows of one architecture train together, in one :func:`longdep.train.train_seeds` call per
distance under vmap (:data:`CHAPTER_3_GROUPS`: the LSTMs of the three forget biases are one
computation), the groups side by side on the cores; a row stops after the first distance at
which no seed beats the bound, since a longer distance is only harder. :func:`initial_reach`
measures the gradient each model sends back over the task's own tokens before training.
"""

import math
from dataclasses import replace
from functools import partial

import torch
from torch import nn

from longdep.book import Bilingual, Table
from longdep.experiments.key_recall import (
    KEY_RECALL_BUDGET,
    KeyRecallBudget,
    content_only_accuracy,
    key_recall_classifier,
    train_key_recall_group,
)
from longdep.experiments.registry import KIND, ORDER_BLIND
from longdep.experiments.workers import in_worker_processes
from longdep.measure.gradients import input_gradient_norms
from longdep.models import _checks as check
from longdep.seeds import manual_seed, seeded_generator
from longdep.stats import Count, count, frequency_word
from longdep.tasks import key_recall_batch

SOLVED = 0.95
"""Held-out accuracy from which a seed counts as solving key recall."""

MARGIN = 0.1
"""How far above the best order-blind accuracy a seed must be to count as using order."""

CHAPTER_3_ROWS = {
    "tanh RNN": ("tanh RNN", {}),
    "tanh RNN, orthogonal": ("tanh RNN, orthogonal", {}),
    "IRNN (relu, identity)": ("IRNN (relu, identity)", {}),
    "LSTM, forget bias 0": ("LSTM", {"forget_bias": 0.0}),
    "LSTM, forget bias 1": ("LSTM", {"forget_bias": 1.0}),
    "LSTM, forget bias 3": ("LSTM", {"forget_bias": 3.0}),
    "GRU": ("GRU", {}),
    "bag of tokens": (ORDER_BLIND, {}),
}
"""Chapter 3's rows: the label a table prints -> (the registry's kind, changes to the budget's
:class:`longdep.experiments.registry.ModelShape`)."""

CHAPTER_3_GROUPS = (
    ("LSTM, forget bias 0", "LSTM, forget bias 1", "LSTM, forget bias 3"),
    ("tanh RNN", "tanh RNN, orthogonal"),
    ("IRNN (relu, identity)",),
    ("GRU",),
    ("bag of tokens",),
)
"""The rows that train in one call, the costliest group first: one module class computing one
function of its parameters (a relu RNN is not a tanh RNN with other weights)."""

CONTROL_ROWS = ("bag of tokens",)
"""The rows that train at every distance: the order-blind control never beats the bound."""

MEMORY_ROWS = tuple(row for row in CHAPTER_3_ROWS if row not in CONTROL_ROWS)
"""The rows of models that can remember where the key was."""

ROW_NAMES = {
    "tanh RNN": "tanh RNN",
    "tanh RNN, orthogonal": "tanh RNN（正交初始化）",
    "IRNN (relu, identity)": "IRNN（relu，单位矩阵初始化）",
    "LSTM, forget bias 0": "LSTM，遗忘门偏置 0",
    "LSTM, forget bias 1": "LSTM，遗忘门偏置 1",
    "LSTM, forget bias 3": "LSTM，遗忘门偏置 3",
    "GRU": "GRU",
    "bag of tokens": "词元袋",
}
"""Each row's name in Chinese."""


def row_name(row: str) -> Bilingual:
    """The name of ``row`` of :data:`CHAPTER_3_ROWS` in both languages, as tables and figures
    show it."""
    check.choice(row=(row, ROW_NAMES))
    return Bilingual(row, ROW_NAMES[row])


def row_core(row: str, budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> nn.Module:
    """A fresh core of ``row`` of :data:`CHAPTER_3_ROWS` at ``budget``'s widths, as vmap trains
    it: the book's own module, or for the bag of tokens its twin that computes only the last
    step (a recurrent kind's twin is PyTorch's fused loop, which vmap cannot batch)."""
    check.choice(row=(row, CHAPTER_3_ROWS))
    name, changes = CHAPTER_3_ROWS[row]
    kind, shape = KIND[name], replace(budget.shape, **changes)
    if kind.twin is not None and not kind.recurrent:
        return kind.twin(shape)
    return kind.build(shape)


PERTURBATION_SEED = 77
"""The seed of the one fixed direction in which :func:`perturbed_core` changes the weights."""


def perturbed_core(row: str, scale: float, budget: KeyRecallBudget = KEY_RECALL_BUDGET
                   ) -> nn.Module:
    """:func:`row_core` of ``row`` with every parameter multiplied by 1 + ``scale`` * z, z a
    standard normal draw from its own generator (:data:`PERTURBATION_SEED`), so that the
    seed's generator, and with it the rest of its initialisation and its batches, are those of
    the unperturbed run (Chapter 3, "Runs differ from seed to seed")."""
    check.finite(scale=scale)
    if not 0 < scale < 1:
        raise ValueError(f"scale must lie in (0, 1), got {scale}")
    core = row_core(row, budget)
    generator = seeded_generator(PERTURBATION_SEED)
    with torch.no_grad():
        for parameter in core.parameters():
            noise = torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype)
            parameter.mul_(1 + scale * noise)
    return core


def perturbed_accuracies(row: str, distance: int, scale: float,
                         budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> torch.Tensor:
    """Held-out accuracies (len(budget.seeds),) of ``row`` at ``distance``, every seed trained
    as :func:`group_grid` trains it but from :func:`perturbed_core`: how far a run moves when
    its initial weights change in their last bits (Chapter 3)."""
    check.instance(budget, "budget", KeyRecallBudget)
    check.positive(distance=distance)
    perturbed_core(row, scale, budget)  # its argument checks, before any training
    results = train_key_recall_group([partial(perturbed_core, row, scale, budget)],
                                     budget.model_dim, distance, budget.seeds, budget)
    return torch.tensor([r.accuracy for r in results], dtype=torch.float64)


def beats_bound(accuracies: torch.Tensor, distance: int,
                budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> torch.Tensor:
    """Which accuracies exceed the best order-blind accuracy at ``distance`` by :data:`MARGIN`."""
    return accuracies >= content_only_accuracy(distance, budget.num_keys) + MARGIN


def group_grid(rows: tuple[str, ...], budget: KeyRecallBudget = KEY_RECALL_BUDGET
               ) -> dict[str, torch.Tensor]:
    """Held-out accuracies of every row of ``rows`` (one group of :data:`CHAPTER_3_GROUPS`) at
    every distance of ``budget``, one :func:`train_key_recall_group` call per distance; a row
    but those of :data:`CONTROL_ROWS` stops after the first distance at which no seed beats the
    bound (its later entries are NaN).
    Returns {row: (len(budget.seeds), len(budget.distances)) tensor}."""
    check.instance(budget, "budget", KeyRecallBudget)
    seeds = len(budget.seeds)
    grids = {row: torch.full((seeds, len(budget.distances)), math.nan, dtype=torch.float64)
             for row in rows}
    training = list(rows)
    for j, distance in enumerate(budget.distances):
        makers = [partial(row_core, row, budget) for row in training]
        results = train_key_recall_group(makers, budget.model_dim, distance, budget.seeds,
                                         budget)
        for i, row in enumerate(training):
            grids[row][:, j] = torch.tensor([r.accuracy for r in results[i * seeds:][:seeds]])
        training = [row for row in training if row in CONTROL_ROWS
                    or beats_bound(grids[row][:, j], distance, budget).any()]
        if not training:
            break
    return grids


def key_recall_grid(groups: tuple[tuple[str, ...], ...] = CHAPTER_3_GROUPS,
                    budget: KeyRecallBudget = KEY_RECALL_BUDGET,
                    perturbed: tuple[tuple[str, int, float], ...] = ()
                    ) -> tuple[dict[str, torch.Tensor], dict[tuple, torch.Tensor]]:
    """:func:`group_grid` of every group, the groups side by side on the cores (the same
    numbers as one after another, bit for bit), and :func:`perturbed_accuracies` of every
    (row, distance, scale) of ``perturbed`` in the same pool of workers, where they fill a core
    that the costliest group leaves idle. Returns ({row: (seeds, distances)} in the groups'
    order, {(row, distance, scale): (seeds,)})."""
    calls = {("group", tuple(group)): (group_grid, (tuple(group), budget)) for group in groups}
    calls |= {("perturbed", tuple(run)): (perturbed_accuracies, (*run, budget))
              for run in perturbed}
    runs = in_worker_processes(calls)
    grids = {row: grid for (kind, _), result in runs.items() if kind == "group"
             for row, grid in result.items()}
    return grids, {run: result for (kind, run), result in runs.items() if kind == "perturbed"}


def cell_counts(grid: torch.Tensor, budget: KeyRecallBudget = KEY_RECALL_BUDGET
                ) -> list[tuple[Count, Count] | None]:
    """For each distance of ``budget``, (seeds that solve, seeds that beat the bound) of one
    row's (seeds, distances) accuracies; None where the row was not trained."""
    if not isinstance(grid, torch.Tensor) or grid.shape != (len(budget.seeds),
                                                            len(budget.distances)):
        raise ValueError(f"grid must be a tensor of shape (seeds, distances) = "
                         f"{(len(budget.seeds), len(budget.distances))}, got "
                         f"{tuple(getattr(grid, 'shape', ()))}")
    return [None if column.isnan().any() else
            (count(column >= SOLVED), count(beats_bound(column, distance, budget)))
            for column, distance in zip(grid.T, budget.distances)]


def count_table(grids: dict[str, torch.Tensor], criterion: str,
                budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> Table:
    """A table in both languages of one row per model (a row of :data:`CHAPTER_3_ROWS`) and one
    column per distance; a cell is the count of seeds that meet ``criterion`` ("solved" or
    "beats bound"), its 95 % Wilson interval and the rule's word, if the count earns one; "-"
    where the row was not trained."""
    check.choice(criterion=(criterion, ("solved", "beats bound")))

    def cell(counts: tuple[Count, Count] | None) -> Bilingual:
        if counts is None:
            return Bilingual("-", "-")
        chosen = counts[criterion == "beats bound"]
        words = [frequency_word(chosen.successes, chosen.trials, language)
                 for language in ("en", "zh")]
        return Bilingual(*(f"{chosen} {word}" if word else str(chosen) for word in words))

    return Table([("model", "模型"), *(f"d = {d}" for d in budget.distances)],
                 [[row_name(row), *map(cell, cell_counts(grid, budget))]
                  for row, grid in grids.items()])


def initial_reach(rows: tuple[str, ...] = MEMORY_ROWS, distances: tuple[int, ...] = (10, 20, 40),
                  budget: KeyRecallBudget = KEY_RECALL_BUDGET, batch: int = 16
                  ) -> dict[str, torch.Tensor]:
    """The gradient ratio ||dL/dx_{T-d}|| / ||dL/dx_T|| at each distance d of ``distances``,
    before training, of every row's core for every seed of ``budget`` (Chapter 3): the core and
    the embedding the seed's training starts from, on ``batch`` embedded key-recall sequences of
    the longest distance, in float64, L the sum of the last output. Returns
    {row: (len(budget.seeds), len(distances)) tensor}."""
    check.ints("distances", distances, least=1)
    check.positive(batch=batch)
    longest = max(distances)
    ratios = {}
    for row in rows:
        per_seed = []
        for seed in budget.seeds:
            manual_seed(seed)  # as train_key_recall_group builds the core, then the classifier
            core = row_core(row, budget)
            embedding = key_recall_classifier(core, budget.model_dim, seed, budget).embedding
            tokens, _ = key_recall_batch(batch, longest, budget.num_keys, budget.vocab_size,
                                         generator=seeded_generator(seed))
            with torch.no_grad():
                x = embedding(tokens).double()  # (batch, time, embedding)
            norms = input_gradient_norms(core.double(), x)  # (time,), the last step at the end
            per_seed.append(norms[[longest - d for d in distances]] / norms[longest])
        ratios[row] = torch.stack(per_seed)
    return ratios

"""Chapter 5's depth sweep ("Depth, warm-up and the order of the normalisation"): key recall
with Post-LN stacks of growing depth, without and with learning-rate warm-up, Pre-LN stacks
without, and the control that tells warm-up from a lower mean rate: Post-LN at the warm-up's
mean rate, held constant.
"""

import math
from collections.abc import Sequence
from dataclasses import replace
from functools import partial

import torch

from longdep.experiments.key_recall import (
    KEY_RECALL_BUDGET,
    KeyRecallBudget,
    key_recall_transformer,
    train_key_recall_seeds,
)
from longdep.experiments.workers import over_cores
from longdep.models import _checks as check
from longdep.optim import warmup_factor
from longdep.stats import Count

DEPTH_SWEEP_RUNS = {"Post-LN": (False, False, False), "Post-LN + warm-up": (False, True, False),
                    "Pre-LN": (True, False, False),
                    "Post-LN, constant mean rate": (False, False, True)}
"""The runs of :func:`depth_sweep`: label -> (Pre-LN, with warm-up, at the warm-up's mean rate).
The last is the control of the warm-up: no warm-up, at the constant rate whose steps sum to
what the warm-up's schedule sums to (:func:`mean_warmup_rate`)."""


def mean_warmup_rate(lr: float, warmup_steps: int, steps: int) -> float:
    """The mean learning rate of ``steps`` steps at ``lr`` with a linear warm-up over the first
    ``warmup_steps`` (:func:`longdep.optim.warmup_factor`): the constant rate that moves the
    weights by the same summed step sizes (Chapter 5, "Depth, warm-up and the order of the
    normalisation")."""
    check.finite(lr=lr)
    check.positive(steps=steps)
    check.int_range(0, None, warmup_steps=warmup_steps)
    return lr * sum(warmup_factor(step, warmup_steps) for step in range(steps)) / steps


def depth_sweep(depths: Sequence[int], lr: float, warmup_steps: int, steps: int,
                batch_size: int, distance: int = 10, num_heads: int = 4,
                seeds: Sequence[int] = (0,),
                labels: Sequence[str] = tuple(DEPTH_SWEEP_RUNS)[:3],
                deepest_only: Sequence[str] = ()) -> dict[str, torch.Tensor]:
    """Key recall with stacks of each depth, Post-LN without and with warm-up and Pre-LN
    (with its final LayerNorm, as in GPT-2) without (Chapter 5, "Depth, warm-up and the
    order of the normalisation"); with the label "Post-LN, constant mean rate", Post-LN without
    warm-up at :func:`mean_warmup_rate`.

    Each run is :func:`longdep.experiments.key_recall.train_key_recall` under the book's
    budget (its width and clipping) with only ``lr``, ``steps`` and ``batch_size`` changed;
    "+ warm-up" raises the learning rate linearly over the first ``warmup_steps`` steps. At
    each depth, the seeds of the labels that share a layer order (the Post-LN runs) are
    trained at once (:func:`depth_sweep_run`); the seed sets the initial weights and the
    batches, so the Post-LN runs of a seed and depth start from the same weights. A label of
    ``deepest_only`` (a control) trains at the largest depth only, on its own, in the same pool
    of runs. Returns {label: (len(depths), len(seeds)) tensor of held-out accuracies}, a label
    of ``deepest_only`` last, with one row.
    """
    check.ints("depths", depths)
    check.positive(steps=steps, batch_size=batch_size, distance=distance,
                       num_heads=num_heads)
    check.positive(warmup_steps=warmup_steps + 1)
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    if not seeds:
        raise ValueError("seeds must name at least one seed, got none")
    check_labels(labels)
    if deepest_only:
        check_labels(deepest_only)
    if set(labels) & set(deepest_only):
        raise ValueError(f"a label is either in labels or in deepest_only, got "
                         f"{sorted(set(labels) & set(deepest_only))} in both")
    budget = replace(KEY_RECALL_BUDGET, lr=lr, steps=steps, batch_size=batch_size)
    by_order: dict[bool, list[str]] = {}  # the labels of one layer order train at once
    for label in labels:
        by_order.setdefault(DEPTH_SWEEP_RUNS[label][0], []).append(label)
    runs_of = {tuple(group): depths for group in by_order.values()}
    runs_of |= {(label,): (max(depths),) for label in deepest_only}
    # every (group, depth) trains on its own, so they run side by side, one per core, the
    # costliest (depth x seeds) first so that no core waits for one long run at the end
    point = (budget, distance, num_heads, tuple(seeds), warmup_steps)
    runs = over_cores(depth_sweep_run, [(group, depth, *point) for group, at in runs_of.items()
                                        for depth in at],
                      cost=lambda point: point[1] * len(point[0]))
    grids = {label: [runs[(group, depth, *point)][label] for depth in at]
             for group, at in runs_of.items() for label in group}
    return {label: torch.tensor(grids[label], dtype=torch.float64)
            for label in (*labels, *deepest_only)}


def check_labels(labels: Sequence[str]) -> None:
    """Raise a ``ValueError`` unless ``labels`` names at least one run of
    :data:`DEPTH_SWEEP_RUNS`, and only such runs."""
    if not labels or any(label not in DEPTH_SWEEP_RUNS for label in labels):
        raise ValueError(f"labels must be among {list(DEPTH_SWEEP_RUNS)}, got {labels!r}")


def depth_sweep_run(labels: tuple[str, ...], depth: int, budget: KeyRecallBudget,
                    distance: int, num_heads: int, seeds: tuple[int, ...],
                    warmup_steps: int) -> dict[str, list[float]]:
    """The runs of :func:`depth_sweep` at one depth whose ``labels`` share one layer order:
    {label: the held-out accuracy of each seed}.

    They differ only in their learning-rate schedule, so they are trained at once, every seed
    once per label (with one schedule per copy; the same seed gives the same initial weights
    and batches in every label): a vmapped model of twice the seeds costs far less than two.
    """
    check_labels(labels)
    orders = {DEPTH_SWEEP_RUNS[label][0] for label in labels}
    if len(orders) != 1:
        raise ValueError(f"labels must share one layer order, got {labels!r}")
    norm_first = orders.pop()
    make_core = partial(key_recall_transformer, budget, depth, num_heads, norm_first=norm_first)
    mean_rate = mean_warmup_rate(budget.lr, warmup_steps, budget.steps)
    warmups = [warmup_steps if DEPTH_SWEEP_RUNS[label][1] else 0
               for label in labels for _ in seeds]
    rates = [mean_rate if DEPTH_SWEEP_RUNS[label][2] else budget.lr
             for label in labels for _ in seeds]
    results = train_key_recall_seeds(make_core, budget.model_dim, distance,
                                     seeds * len(labels), budget, warmups, lr=rates)
    accuracies = [result.accuracy for result in results]
    return {label: accuracies[i * len(seeds):(i + 1) * len(seeds)]
            for i, label in enumerate(labels)}


def count_series(counts: dict[int, Count]) -> dict[str, list]:
    """The counts of one setting at each depth ({depth: :class:`~longdep.stats.Count`}) as
    :func:`longdep.plots.transformer.plot_depth_sweep` draws them: lists "depths", "trained",
    "seeds", the interval's "low" and "high", and "worded" (whether the count earns a word)."""
    if not isinstance(counts, dict) or not counts:
        raise TypeError(f"counts must be a non-empty dict depth -> Count, got "
                        f"{check.describe(counts)}")
    for depth, counted in counts.items():
        check.positive(depth=depth)
        check.instance(counted, f"counts[{depth}]", Count)
    values = counts.values()
    return {"depths": list(counts), "trained": [c.successes for c in values],
            "seeds": [c.trials for c in values], "low": [c.interval[0] for c in values],
            "high": [c.interval[1] for c in values], "worded": [c.word is not None for c in values]}

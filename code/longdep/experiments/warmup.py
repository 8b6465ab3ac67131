"""Chapter 5's depth sweep ("Depth, warm-up and the order of the normalisation"): stacks of
growing depth trained on key recall at a learning rate where deep Post-LN stacks fail, and the
three settings that might rescue them at the deepest depth.

- "Post-LN": no warm-up;
- "Post-LN + warm-up": the learning rate raised linearly over the first ``warmup_steps`` steps;
- "Post-LN, mean rate": no warm-up, at a constant rate equal to the warm-up schedule's mean
  (:func:`mean_warmup_factor` times the rate), the control that tells whether warm-up does more
  than lower the average step;
- "Pre-LN": no warm-up, the normalisation on the branch input, with GPT-2's final LayerNorm.

Each run is :func:`longdep.experiments.key_recall.train_key_recall_seeds` under the book's
key-recall budget with only the rate, the steps and the batch size changed. For a given seed and
depth every setting starts from the same weights and sees the same batches.
"""

import math
from collections.abc import Sequence
from dataclasses import replace
from functools import partial

import numpy as np

from longdep.experiments.key_recall import (
    KEY_RECALL_BUDGET,
    KeyRecallBudget,
    key_recall_transformer,
    train_key_recall_seeds,
)
from longdep.experiments.workers import over_cores
from longdep.models import _checks as check
from longdep.train import warmup_factor

SETTINGS = {"Post-LN": (False, False, False), "Post-LN + warm-up": (False, True, False),
            "Post-LN, mean rate": (False, False, True), "Pre-LN": (True, False, False)}
"""Each setting of the sweep: (Pre-LN order, warm-up, constant mean rate)."""


def mean_warmup_factor(steps: int, warmup_steps: int) -> float:
    """The mean over ``steps`` steps of the linear warm-up's factor on the learning rate
    (:func:`longdep.train.warmup_factor`): a constant rate this many times the peak rate takes
    steps of the same mean size."""
    check.positive(steps=steps)
    check.int_range(0, None, warmup_steps=warmup_steps)
    return math.fsum(warmup_factor(step, warmup_steps) for step in range(steps)) / steps


def depth_sweep(points: Sequence[tuple[str, int]], lr: float, warmup_steps: int, steps: int,
                batch_size: int, distance: int = 10, num_heads: int = 4,
                seeds: Sequence[int] = tuple(range(10))) -> dict[tuple[str, int], np.ndarray]:
    """The held-out key-recall accuracy of every seed at every (setting, depth) of ``points``,
    settings from :data:`SETTINGS` (Chapter 5, "Depth, warm-up and the order of the
    normalisation"): {(setting, depth): (seeds,) array}.

    The points that share a depth, an order and a constant rate differ only in their warm-up,
    so they train in one call, a warm-up length per model; the calls run side by side, one per
    core, the deepest first.
    """
    check.positive(steps=steps, batch_size=batch_size, distance=distance, num_heads=num_heads)
    check.int_range(0, None, warmup_steps=warmup_steps)
    check.finite(lr=lr)
    if lr <= 0:
        raise ValueError(f"lr must be positive, got {lr}")
    seeds = tuple(check.ints("seeds", seeds, least=0))
    if not points or any(not (isinstance(point, tuple) and len(point) == 2)
                         or point[0] not in SETTINGS for point in points):
        raise ValueError(f"points must be (setting, depth) pairs with settings among "
                         f"{list(SETTINGS)}, got {points!r}")
    check.ints("depths", [depth for _, depth in points])
    groups: dict[tuple, list[str]] = {}
    for label, depth in points:
        norm_first, _, mean_rate = SETTINGS[label]
        groups.setdefault((depth, norm_first, mean_rate), []).append(label)
    budget = replace(KEY_RECALL_BUDGET, lr=lr, steps=steps, batch_size=batch_size)
    rate = mean_warmup_factor(steps, warmup_steps)
    calls = [(tuple(labels), depth, replace(budget, lr=lr * rate) if mean_rate else budget,
              distance, num_heads, seeds, warmup_steps)
             for (depth, _, mean_rate), labels in groups.items()]
    runs = over_cores(sweep_group, calls, cost=lambda call: call[1] * len(call[0]))
    return {(label, call[1]): runs[call][label] for call in calls for label in call[0]}


def sweep_group(labels: tuple[str, ...], depth: int, budget: KeyRecallBudget, distance: int,
                num_heads: int, seeds: tuple[int, ...], warmup_steps: int
                ) -> dict[str, np.ndarray]:
    """The settings ``labels`` of :func:`depth_sweep` at one depth, which share one layer order
    and one rate, trained at once (every seed once per label, each with its own warm-up):
    {label: (seeds,) accuracies}."""
    orders = {SETTINGS[label][0] for label in labels}
    if len(orders) != 1:
        raise ValueError(f"labels must share one layer order, got {labels!r}")
    make_core = partial(key_recall_transformer, budget, depth, num_heads,
                        norm_first=orders.pop())
    warmups = [warmup_steps if SETTINGS[label][1] else 0 for label in labels for _ in seeds]
    results = train_key_recall_seeds(make_core, budget.model_dim, distance,
                                     seeds * len(labels), budget, warmups)
    accuracies = np.array([result.accuracy for result in results])
    return {label: accuracies[i * len(seeds):(i + 1) * len(seeds)]
            for i, label in enumerate(labels)}

"""Chapter 5's induction heads ("How attention uses its reach: induction heads").

Key recall asks for the token at a fixed position, which attention with positional encodings
finds by position alone. Copying a segment seen earlier in the context, at an offset that
varies from sequence to sequence, needs a lookup by content: the token after the earlier
occurrence of the current token. Olsson et al. (2022) found that two attention layers do it
together, an *induction head*: a head of layer 1 copies into each position the token before it
(a previous-token head), and a head of layer 2 matches the current token against those and
attends to the position after the match. One layer cannot compose two lookups.

:func:`induction_runs` trains causal Pre-LN Transformers (:func:`induction_model`) of one or two
layers on :func:`longdep.tasks.repeated_segment_batch`, all seeds of a run at once
(:func:`longdep.train.train_seeds`), the runs side by side on the cores, and measures each
trained seed on held-out batches: its copy loss and accuracy, and the largest previous-token
and induction scores of its heads (:func:`head_scores`).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import Tensor

from longdep.experiments.workers import over_cores
from longdep.models import _checks as check
from longdep.models.attention import causal_mask
from longdep.models.transformer import NextTokenModel, next_token_model
from longdep.seeds import manual_seed, seeded_generator
from longdep.tasks import IGNORED, repeated_segment_batch
from longdep.train import HELD_OUT, cross_entropy, train_seeds


@dataclass(frozen=True)
class InductionBudget:
    """The task, the models and the training budget of Chapter 5's induction heads.

    Sequences of ``length`` tokens from ``vocab_size`` ids hold a segment of ``segment`` tokens
    (shortest, longest) twice, at an offset that varies or, for the control, is
    ``fixed_offset``. The models are causal Pre-LN stacks of width ``d_model`` with
    ``num_heads`` heads and feed-forward width ``d_ff``; each run trains ``steps`` Adam steps of
    ``batch_size`` sequences at ``lr``, gradients clipped to ``clip_norm``, one model per seed of
    ``seeds``, and is measured on ``eval_batches`` held-out batches. The values were chosen, not
    derived: about the smallest task and model in which two layers learn to copy within the
    chapter's time budget, with an offset that varies widely enough (from the segment's length
    to the sequence's less it) that a single layer cannot guess it by position.
    """

    vocab_size: int = 16
    length: int = 24
    segment: tuple[int, int] = (5, 8)
    fixed_offset: int = 12
    d_model: int = 32
    num_heads: int = 1
    d_ff: int = 32
    steps: int = 200
    batch_size: int = 32
    lr: float = 5e-3
    clip_norm: float = 1.0
    eval_batches: int = 4
    seeds: tuple[int, ...] = tuple(range(10))


INDUCTION_BUDGET = InductionBudget()


def induction_model(num_layers: int, budget: InductionBudget = INDUCTION_BUDGET
                    ) -> NextTokenModel:
    """A causal Pre-LN :func:`longdep.models.transformer.next_token_model` of ``num_layers``
    layers at ``budget``'s sizes, without dropout: tokens
    (batch, time) -> next-token logits (batch, time, vocab_size)."""
    check.instance(budget, "budget", InductionBudget)
    check.positive(num_layers=num_layers)
    return next_token_model(budget.vocab_size, budget.d_model, budget.num_heads, num_layers,
                            budget.d_ff, budget.length, dropout=0.0, norm_first=True,
                            causal=True)


def attention_maps(model: NextTokenModel, tokens: Tensor) -> Tensor:
    """Every head's attention weights in every layer of a causal Pre-LN ``model`` made by
    :func:`induction_model`, on tokens (batch, time): (layers, batch, heads, time, time), row t
    the weights query t gives every key."""
    check.instance(model, "model", NextTokenModel)
    stack = model.encoder.stack
    if not (stack.causal and stack.layers[0].norm_first):
        raise ValueError("model must be causal and Pre-LN, as induction_model builds it")
    check.tokens(tokens, model.encoder.vocab_size)
    with torch.no_grad():
        x = model.encoder.embedding(tokens) * math.sqrt(model.encoder.d_model)
        h = stack.positional_encoding(x)  # (batch, time, d_model): the input of layer 1
        mask = causal_mask(tokens.size(1))
        maps = []
        for layer in stack.layers:
            keys = layer.norm1(h)  # Pre-LN: each layer attends over its normalised input
            maps.append(layer.self_attn(keys, keys, keys, mask)[1])
            h = layer(h, mask)
    return torch.stack(maps)


def head_scores(maps: Tensor, sources: Tensor) -> tuple[Tensor, Tensor]:
    """From attention maps (layers, batch, heads, time, time) and the copy sources of
    :func:`longdep.tasks.repeated_segment_batch` (batch, time): for every layer and head, the
    mean weight a query gives the key just before it, position t - 1 (its previous-token
    score, over t >= 1), and the mean weight a query of the second occurrence gives the
    position its target is copied from (its induction score). Returns two (layers, heads)."""
    check.tensor(maps, "maps", "(layers, batch, heads, time, time)", 5)
    layers, batch, heads, time, keys = maps.shape
    if keys != time or sources.shape != (batch, time):
        raise ValueError(f"maps must be square in time and sources (batch, time) = "
                         f"{(batch, time)}, got {tuple(maps.shape)} and {tuple(sources.shape)}")
    previous = maps.diagonal(offset=-1, dim1=-2, dim2=-1).mean((1, 3))  # (layers, heads)
    asked = sources >= 0  # (batch, time)
    if not asked.any():
        raise ValueError("sources must name at least one copied position")
    index = sources.clamp(min=0)[None, :, None, :, None].expand(layers, batch, heads, time, 1)
    copied = maps.gather(-1, index)[..., 0]  # (layers, batch, heads, time)
    induction = (copied * asked[None, :, None]).sum((1, 3)) / asked.sum()
    return previous, induction


@dataclass
class InductionRun:
    """One run of :func:`train_induction`: per seed, the training copy loss at every step
    (seeds, steps), and on held-out batches the copy loss and accuracy (seeds,) and the largest
    previous-token score of a layer-1 head and induction score of a last-layer head (seeds,);
    ``example`` holds the first seed's attention maps (layers, heads, time, time) on
    ``example_tokens`` (time,), whose copy sources are ``example_sources`` (time,)."""

    losses: np.ndarray
    copy_loss: np.ndarray
    copy_accuracy: np.ndarray
    previous_token: np.ndarray
    induction: np.ndarray
    example: np.ndarray
    example_tokens: np.ndarray
    example_sources: np.ndarray


def train_induction(num_layers: int, budget: InductionBudget = INDUCTION_BUDGET,
                    steps: int | None = None, fixed: bool = False) -> InductionRun:
    """Train :func:`induction_model` of ``num_layers`` layers on the copy task for every seed of
    ``budget``, all at once, for ``steps`` steps (``budget.steps`` by default), the offset
    varying or, with ``fixed``, always ``budget.fixed_offset``; then measure each seed on
    held-out batches (the training never sees them). The loss of a step is the mean
    cross-entropy over the copied positions, the only ones a model can predict."""
    check.instance(budget, "budget", InductionBudget)
    steps = budget.steps if steps is None else steps
    check.positive(num_layers=num_layers, steps=steps)
    check.flags(fixed=fixed)
    offset = budget.fixed_offset if fixed else None

    def make_batch(generator: torch.Generator, sources: bool = False):
        return repeated_segment_batch(budget.batch_size, budget.length, budget.vocab_size,
                                      budget.segment, offset, generator, sources)

    models = []
    for seed in budget.seeds:
        manual_seed(seed)
        models.append(induction_model(num_layers, budget))
    results = train_seeds(models, make_batch, steps, list(budget.seeds), lr=budget.lr,
                          clip_norm=budget.clip_norm, eval_batches=0)
    measured = [held_out_measures(model, make_batch, seed, budget.eval_batches)
                for model, seed in zip(models, budget.seeds)]
    example_tokens, _, example_sources = make_batch(seeded_generator(HELD_OUT), True)
    example = attention_maps(models[0], example_tokens[:1])[:, 0]
    return InductionRun(np.array([r.losses for r in results]),
                        *(np.array(column) for column in zip(*measured)),
                        example.numpy(), example_tokens[0].numpy(), example_sources[0].numpy())


def held_out_measures(model: NextTokenModel, make_batch, seed: int, batches: int
                      ) -> tuple[float, float, float, float]:
    """(copy loss, copy accuracy, largest previous-token score of layer 1, largest induction
    score of the last layer) of one trained ``model`` over ``batches`` held-out batches of
    ``make_batch(generator, sources=True)``."""
    check.instance(model, "model", NextTokenModel)
    check.callables(make_batch=make_batch)
    check.positive(batches=batches)
    generator = seeded_generator(seed + HELD_OUT)
    losses, hits, previous, induction = [], [], [], []
    model.eval()
    for _ in range(batches):
        tokens, targets, sources = make_batch(generator, True)
        with torch.no_grad():
            logits = model(tokens)
        asked = targets != IGNORED
        losses.append(cross_entropy(logits, targets).item())
        hits.append((logits.argmax(-1) == targets)[asked].double().mean().item())
        layer_previous, layer_induction = head_scores(attention_maps(model, tokens), sources)
        previous.append(layer_previous[0].max().item())
        induction.append(layer_induction[-1].max().item())
    return tuple(float(np.mean(values)) for values in (losses, hits, previous, induction))


INDUCTION_RUNS = {
    "2 layers": (2, 1.0, False),
    "1 layer, 4x steps": (1, 4.0, False),
    "1 layer, fixed offset": (1, 1.0, True),
}
"""Chapter 5's runs: label -> (layers, steps as a multiple of the budget's, fixed offset). The
one-layer run of four times the budget's steps also gives the one-layer model at the budget:
its copy loss at step ``budget.steps``."""


def induction_runs(labels: Sequence[str] = tuple(INDUCTION_RUNS),
                   budget: InductionBudget = INDUCTION_BUDGET) -> dict[str, InductionRun]:
    """:func:`train_induction` of each run of :data:`INDUCTION_RUNS` named in ``labels``, side by
    side on the cores, the costliest first (the same numbers as one after another). Each run
    trains as two halves of its seeds, which keeps both cores busy to the end (the run of four
    times the steps alone would take longer than all the others). Under vmap a seed's numbers
    do not depend on the other seeds trained beside it as long as there are any (a single
    seed can differ in the last bit: measured), so for two seeds or more in each half the
    halves, joined, are the run bit for bit (the tests check this)."""
    check.instance(budget, "budget", InductionBudget)
    if not labels or any(label not in INDUCTION_RUNS for label in labels):
        raise ValueError(f"labels must be among {list(INDUCTION_RUNS)}, got {labels!r}")
    middle = (len(budget.seeds) + 1) // 2
    halves = [replace(budget, seeds=seeds) for seeds in (budget.seeds[:middle],
                                                         budget.seeds[middle:]) if seeds]
    points = {label: [(layers, half, round(budget.steps * factor), fixed) for half in halves]
              for label, (layers, factor, fixed) in ((label, INDUCTION_RUNS[label])
                                                     for label in labels)}
    runs = over_cores(train_induction, [point for pair in points.values() for point in pair],
                      cost=lambda point: point[0] * point[2] * len(point[1].seeds))
    return {label: _joined([runs[point] for point in pair]) for label, pair in points.items()}


def _joined(parts: Sequence[InductionRun]) -> InductionRun:
    """One :class:`InductionRun` of the seeds of ``parts`` in order (runs of one setting on
    parts of its seeds); the example is the first part's, its first seed's."""
    if not parts or not all(isinstance(part, InductionRun) for part in parts):
        raise TypeError(f"parts must be a non-empty list of InductionRun, got "
                        f"{check.describe(parts)}")
    first = parts[0]
    per_seed = [np.concatenate([getattr(part, name) for part in parts])
                for name in ("losses", "copy_loss", "copy_accuracy", "previous_token",
                             "induction")]
    return InductionRun(*per_seed, first.example, first.example_tokens, first.example_sources)


def copy_loss_at(run: InductionRun, step: int, window: int = 25) -> np.ndarray:
    """The copy loss of every seed of ``run`` just before ``step``: the mean training loss over
    the ``window`` steps before it, each on a fresh batch, so a measure on data the model had
    not seen. Returns (seeds,)."""
    check.instance(run, "run", InductionRun)
    check.positive(window=window)
    check.int_range(window, run.losses.shape[1], step=step)
    return run.losses[:, step - window:step].mean(1)


def plateau_and_drop(run: InductionRun, high: float, low: float, smooth: int = 10
                     ) -> tuple[np.ndarray, np.ndarray]:
    """For every seed of ``run``, the step at which its copy loss, averaged over ``smooth``
    steps, first falls below ``high`` (how long it stays on the plateau above), and the steps
    it then takes to fall below ``low`` (how abrupt the drop is); -1 where it never does.
    Returns two (seeds,) int arrays."""
    check.instance(run, "run", InductionRun)
    check.positive(smooth=smooth)
    check.finite(high=high, low=low)
    if not low < high:
        raise ValueError(f"need low < high, got low = {low}, high = {high}")
    window = np.ones(smooth) / smooth
    smoothed = np.array([np.convolve(row, window, mode="valid") for row in run.losses])

    def first_below(level: float) -> np.ndarray:
        below = smoothed < level
        return np.where(below.any(1), below.argmax(1) + smooth, -1)

    start, end = first_below(high), first_below(low)
    return start, np.where((start >= 0) & (end >= 0), end - start, -1)

"""How a state is written: the delta rule against the additive write (Chapter 6, "How a state
is written"; Schlag, Irie & Schmidhuber 2021; Yang et al. 2024 and 2025).

The additive write of linear attention, S_t = S_{t-1} + beta_t k_t v_t^T, adds to whatever a key
already holds; the delta rule, S_t = S_{t-1} + beta_t k_t (v_t - S_{t-1}^T k_t)^T, first reads
it and replaces it by a fraction beta_t (all of it for beta = 1: the last write wins).
:func:`write_recall` measures both without training, on random unit keys; trained on
multi-query associative recall with distinct keys and with reassigned keys, DeltaNet, Gated
DeltaNet and DeltaNet's additive twin go through the chapter's MQAR training
(:func:`longdep.experiments.mqar.mqar_runs`), and :func:`pair_recall_table` shows them.
"""

from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import nn

from longdep.book import Bilingual, Table
from longdep.experiments.mqar import MQARRun, MQARSetting
from longdep.models import _checks as check
from longdep.models.delta import WRITES, delta_rule_chunked
from longdep.seeds import seeded_generator
from longdep.stats import count, frequency_word, spread

F64 = torch.float64


def _unit_vectors(generator: torch.Generator, *shape: int) -> torch.Tensor:
    """Random directions: Gaussian vectors of the last size in ``shape``, normalised, float64."""
    return nn.functional.normalize(torch.randn(*shape, dtype=F64, generator=generator), dim=-1)


def write_recall(write: str, num_keys: int, reassigned: bool, draws: int = 10,
                 sequences: int = 16, key_size: int = 32, beta: float = 1.0, seed: int = 0
                 ) -> torch.Tensor:
    """The fraction of reads that find the right value, per draw, for a state written by the
    delta rule or additively (Chapter 6, "How a state is written"); no training.

    Each of ``draws`` x ``sequences`` sequences writes ``num_keys`` random unit keys (``key_size``
    dimensions) with random unit values (as many dimensions), write strength ``beta`` and no
    decay (:func:`longdep.models.delta.delta_rule_chunked`, DeltaNet's rule or its additive
    twin). With ``reassigned``, the first key is then written once more with a new value, and
    only it is read: a read is right if its nearest value (largest dot product) among all
    written is the new one. Without, every key is read: right if its nearest value is its own.
    Returns the (draws,) fractions right, float64."""
    check.choice(write=(write, WRITES))
    check.positive(num_keys=num_keys, draws=draws, sequences=sequences, key_size=key_size)
    check.flags(reassigned=reassigned)
    check.finite(beta=beta)
    generator = seeded_generator(seed)
    keys = _unit_vectors(generator, draws, sequences, num_keys, key_size)
    values = _unit_vectors(generator, draws, sequences, num_keys + reassigned, key_size)
    k = torch.cat([keys, keys[..., :1, :]], dim=-2) if reassigned else keys
    _, state = delta_rule_chunked(k, k, values, torch.full(k.shape[:-1], float(beta), dtype=F64),
                                  write=write)  # (draws, sequences, key_size, key_size)
    read = keys[..., :1, :] if reassigned else keys
    nearest = (read @ state @ values.transpose(-1, -2)).argmax(-1)  # (draws, sequences, reads)
    right = torch.full_like(nearest, num_keys) if reassigned else torch.arange(num_keys)
    return (nearest == right).to(F64).flatten(1).mean(1)


def write_recall_grid(key_counts: Sequence[int], draws: int = 10, key_size: int = 32,
                      beta: float = 1.0) -> dict[tuple[bool, str], torch.Tensor]:
    """:func:`write_recall` of both rules, reassigned and distinct, at every number of keys of
    ``key_counts``: {(reassigned, write): (draws, len(key_counts))}, as
    :func:`longdep.plots.recurrences.plot_write_rules` draws them. A reassigned key is read
    once per sequence, so its draws hold four times as many sequences."""
    counts = check.ints("key_counts", key_counts)
    return {(reassigned, write): torch.stack(
        [write_recall(write, n, reassigned, draws, 64 if reassigned else 16, key_size, beta)
         for n in counts], dim=1)
        for reassigned in (True, False) for write in WRITES}


WRITE_MODELS = ("additive write", "DeltaNet", "Gated DeltaNet")
"""The registry's models that Chapter 6 trains on MQAR to compare how they write: DeltaNet's
additive twin (no delta term), DeltaNet and Gated DeltaNet. They train as the chapter's MQAR
does (:func:`longdep.experiments.mqar.mqar_runs`), on the task of an
:class:`longdep.experiments.mqar.MQARSetting` whose ``task`` is "distinct" or "reassigned"."""


WRITE_SETTING = MQARSetting(num_heads=2, state_size=8, pair_counts=(4,), batch_size=32, steps=200,
                            longer=1, lr=3e-2)
"""The MQAR setting in which Chapter 6 trains :data:`WRITE_MODELS` ("How a state is written"):
4 pairs, 2 heads of width 8, 200 steps of 32 sequences."""

WRITE_POINTS = tuple((name, replace(WRITE_SETTING, task=task)) for name, task in (
    ("additive write", "distinct"), ("additive write", "reassigned"),
    ("DeltaNet", "reassigned"), ("Gated DeltaNet", "reassigned")))
"""The (model, setting) pairs of Chapter 6's trained writes, for
:func:`longdep.experiments.mqar.mqar_runs`: the additive write with distinct keys and with every
key reassigned, the two delta rules with every key reassigned. The chapter trains them in the
pool of its MQAR runs."""


TASK_NAMES = {"distinct": ("distinct keys", "键互不相同"),
              "reassigned": ("every key reassigned", "每个键都重新赋值")}
MODEL_NAMES = {"additive write": ("additive write", "加性写入"),
               "DeltaNet": ("DeltaNet", "DeltaNet"),
               "Gated DeltaNet": ("Gated DeltaNet", "门控 DeltaNet")}
"""The names of the tasks and of :data:`WRITE_MODELS` as tables show them."""


def pair_recall_table(runs: dict[tuple[str, MQARSetting], MQARRun], solved: float) -> Table:
    """A table in both languages of two rows per (model, setting) of ``runs`` (as
    :func:`longdep.experiments.mqar.mqar_runs` returns them, each setting with one count of
    pairs), one per budget of steps: the seeds whose held-out accuracy reaches ``solved``, as a
    count with its 95 % Wilson interval and the word the book's rule gives it
    (:mod:`longdep.stats`), and the median accuracy over the seeds with its range, two digits
    (Chapter 6, "How a state is written")."""
    check.probability(solved=solved)
    if not isinstance(runs, dict) or not runs or not all(
            isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], MQARSetting)
            and len(key[1].pair_counts) == 1 and isinstance(run, MQARRun)
            for key, run in runs.items()):
        raise TypeError(f"runs must be a non-empty dict {{(model, MQARSetting of one count of "
                        f"pairs): MQARRun}}, got {check.describe(runs)}")
    rows = []
    for (name, setting), run in runs.items():
        for steps, accuracies in zip(setting.budgets, run.accuracies[..., 0]):
            solved_count = count(accuracies >= solved)
            words = [frequency_word(solved_count.successes, solved_count.trials, language)
                     for language in ("en", "zh")]
            middle = spread(accuracies.tolist())
            rows.append([MODEL_NAMES.get(name, (name, name)), TASK_NAMES[setting.task], steps,
                         Bilingual(*(f"{solved_count} {word}" if word else str(solved_count)
                                     for word in words)),
                         f"{middle.median:.2f} ({middle.low:.2f}–{middle.high:.2f})"])
    return Table([("model", "模型"), ("MQAR task", "任务"), ("steps", "步数"),
                  (f"seeds with accuracy ≥ {solved:g}", f"准确率 ≥ {solved:g} 的种子"),
                  ("median accuracy (range)", "准确率中位数（范围）")], rows)

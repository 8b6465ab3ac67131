"""The price of a fixed state: multi-query associative recall (Chapter 6, "The price of a
fixed state: multi-query associative recall"; Arora et al. 2023, Zoology).

One-layer models of one width learn to recall the values of key-value pairs. As in Zoology,
each model trains on a mixture of sequences holding different numbers of pairs
(:func:`longdep.tasks.mqar_mixture_batch`), and its held-out accuracy is then measured for each
number of pairs apart, from the per-head capacity d_k of linear attention's state up to four
times it. All seeds of a model train at once with :func:`longdep.train.train_seeds` (vmap). A
claim about capacity must survive more training (the book's page "How this book measures"), so
every model is measured at the book's budget of steps and again at four times it, in one run:
the weights after the first budget are kept on the way. The same training serves "How a state
is written" (:mod:`longdep.experiments.state_writes`): a setting's ``task`` is "reassigned" for
sequences in which every key is written twice (:func:`longdep.tasks.mqar_reassigned_batch`).
"""

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from longdep.book import Bilingual
from longdep.experiments.registry import KIND, ModelShape
from longdep.experiments.workers import over_cores
from longdep.models import _checks as check
from longdep.models.heads import PairRecallClassifier
from longdep.seeds import manual_seed, seeded_generator
from longdep.stats import Count, count
from longdep.tasks import IGNORED, mqar_batch, mqar_mixture_batch, mqar_reassigned_batch
from longdep.train import HELD_OUT, train_seeds

MQAR_MODELS = ("Transformer (softmax attention)", "linear attention", "selective SSM")
"""The models of the summary table that Chapter 6 compares on MQAR: softmax attention and the
two with a fixed state."""

MQAR_TASKS = {"distinct": mqar_batch, "reassigned": mqar_reassigned_batch}
"""Multi-query associative recall with distinct keys, and with every key reassigned (the later
value asked for): :mod:`longdep.tasks`."""


@dataclass(frozen=True)
class MQARSetting:
    """The one small setting of Chapter 6's multi-query associative recall: one-layer models of
    ``width`` features with ``num_heads`` heads, so that linear attention's state is num_heads
    matrices of d_k x d_k numbers (d_k = width / num_heads), and a selective SSM of
    ``state_size`` states per channel (width x state_size numbers, the same size by default);
    ``num_keys`` keys and ``num_values`` values. Each trains on batches of ``batch_size``
    sequences, equally many for each count of ``pair_counts``, with Adam at ``lr``, gradients
    clipped to ``clip_norm``, for ``steps`` steps (the book's budget) and on to ``longer``
    times as many; one run per seed of ``seeds``, all at once. Accuracy is measured on
    ``eval_size`` held-out sequences per count. ``task`` is a key of :data:`MQAR_TASKS`; with
    "reassigned" a setting trains one count of pairs (``pair_counts`` holds one)."""

    width: int = 16
    num_heads: int = 4
    state_size: int = 4
    num_keys: int = 16
    num_values: int = 16
    pair_counts: tuple[int, ...] = (2, 4, 8, 16)
    batch_size: int = 16
    steps: int = 100
    longer: int = 4
    lr: float = 2e-2
    clip_norm: float = 1.0
    eval_size: int = 128
    seeds: tuple[int, ...] = tuple(range(10))
    task: str = "distinct"

    def __post_init__(self):
        check.positive(width=self.width, num_heads=self.num_heads, state_size=self.state_size,
                       num_keys=self.num_keys, batch_size=self.batch_size, steps=self.steps,
                       longer=self.longer, eval_size=self.eval_size)
        check.int_range(2, None, num_values=self.num_values)
        counts = check.ints("pair_counts", self.pair_counts)
        if counts != sorted(set(counts)) or counts[-1] > self.num_keys:
            raise ValueError(f"pair_counts must increase, up to num_keys = {self.num_keys}, got "
                             f"{self.pair_counts!r}")
        if self.width % self.num_heads or self.batch_size % len(counts):
            raise ValueError(f"num_heads must divide width and len(pair_counts) batch_size, got "
                             f"width {self.width}, num_heads {self.num_heads}, batch_size "
                             f"{self.batch_size}, {len(counts)} pair counts")
        check.ints("seeds", self.seeds, least=0)
        check.choice(task=(self.task, MQAR_TASKS))
        if self.task == "reassigned" and len(counts) != 1:
            raise ValueError(f"pair_counts must hold one count for the reassigned task, got "
                             f"{self.pair_counts!r}")

    @property
    def head_width(self) -> int:
        """d_k, the width of one head: linear attention's state holds d_k keys per head
        without cross-talk."""
        return self.width // self.num_heads

    @property
    def budgets(self) -> tuple[int, ...]:
        """The numbers of training steps at which the models are measured: ``steps`` and
        ``longer`` times it, or ``steps`` alone when ``longer`` is 1."""
        return (self.steps,) if self.longer == 1 else (self.steps, self.longer * self.steps)

    @property
    def steps_per_pair(self) -> int:
        """Steps per pair of a sequence: a pair and its query, and twice that when every key is
        written twice ("reassigned")."""
        return 4 if self.task == "reassigned" else 2

    def shape(self) -> ModelShape:
        """The one-layer models' sizes: feed-forward width 2 x width, positions enough for the
        longest sequence (2 steps per pair, 4 when every key is written twice)."""
        return ModelShape(input_size=self.width, width=self.width, num_heads=self.num_heads,
                          d_ff=2 * self.width, state_size=self.state_size,
                          max_len=self.steps_per_pair * max(self.pair_counts))

    def batch(self, batch_size: int, pairs: Sequence[int], generator: torch.Generator
              ) -> tuple[torch.Tensor, torch.Tensor]:
        """A batch of the setting's task with ``batch_size`` sequences, equally many for each
        count of ``pairs``: tokens (batch, time, 2) and targets (batch * time,), as the
        classifier's logits (:data:`longdep.tasks.IGNORED` off the queries)."""
        if self.task == "reassigned":
            tokens, targets = mqar_reassigned_batch(batch_size, pairs[0], self.num_keys,
                                                    self.num_values, generator)
        else:
            tokens, targets = mqar_mixture_batch(batch_size, pairs, self.num_keys,
                                                 self.num_values, generator)
        return tokens, targets.flatten()

    def parts(self) -> tuple[tuple[int, int], ...]:
        """How :func:`mqar_training` runs a training batch of :meth:`batch`: ((rows, steps),
        ...) in the batch's order. The rows of the most pairs run at their full length; the
        rows of fewer pairs, which :func:`longdep.tasks.mqar_mixture_batch` pads to that
        length, run at the length of the next count down (one part of each length would cost
        more calls than it saves for these tiny models: measured)."""
        rows, steps = self.batch_size // len(self.pair_counts), self.steps_per_pair
        if len(self.pair_counts) == 1:
            return ((self.batch_size, steps * self.pair_counts[0]),)
        return (((len(self.pair_counts) - 1) * rows, steps * self.pair_counts[-2]),
                (rows, steps * self.pair_counts[-1]))

    def state_numbers(self, mixer: str) -> int:
        """Numbers in the fixed state of one layer of ``mixer`` ("linear" or "ssm"; linear
        attention's normaliser z left out)."""
        if mixer == "linear":
            return self.width * self.head_width
        if mixer == "ssm":
            return self.width * self.state_size
        raise ValueError(f"mixer must be 'linear' or 'ssm' (a fixed state), got {mixer!r}")


@dataclass(frozen=True)
class MQARRun:
    """What :func:`mqar_training` measures of one model: ``accuracies`` (budgets, seeds,
    counts), the held-out accuracy on the query steps after each budget of
    :attr:`MQARSetting.budgets` for each seed and each count of pairs, and ``losses`` (seeds,
    steps), the training loss of every step."""

    accuracies: torch.Tensor
    losses: torch.Tensor


def kept_at(step: int, seeds: int):
    """An ``observe`` hook for :func:`longdep.train.train_seeds` that keeps a copy of each
    seed's parameters before step ``step`` (after ``step`` steps) and nothing otherwise: the
    hook is called once per seed before every step, seeds in order."""
    check.int_range(0, None, step=step)
    check.positive(seeds=seeds)
    calls = itertools.count()

    def observe(parameters: dict[str, torch.Tensor]) -> dict[str, torch.Tensor] | None:
        if next(calls) // seeds != step:
            return None
        return {name: tensor.clone() for name, tensor in parameters.items()}

    return observe


def held_out_accuracies(model: PairRecallClassifier, parameters: list[dict], setting: MQARSetting
                        ) -> torch.Tensor:
    """Accuracy on the query steps of ``setting.eval_size`` held-out sequences per count of
    pairs, for each seed's ``parameters`` (one dict per seed of ``setting.seeds``, for the
    architecture of ``model``): a (seeds, counts) tensor. All seeds run at once under vmap."""
    check.instance(model, "model", PairRecallClassifier)
    check.instance(setting, "setting", MQARSetting)
    if not isinstance(parameters, list) or len(parameters) != len(setting.seeds) or not all(
            isinstance(p, dict) for p in parameters):
        raise ValueError(f"parameters must hold one dict of parameters per seed "
                         f"({len(setting.seeds)}), got {check.describe(parameters)}")
    stacked = {name: torch.stack([p[name] for p in parameters]) for name in parameters[0]}
    _, buffers = stack_module_state([model] * len(parameters))

    def predictions(p, b, tokens):
        return functional_call(model, (p, b), (tokens,)).argmax(-1)

    generators = [seeded_generator(seed + HELD_OUT) for seed in setting.seeds]
    columns = []
    with torch.no_grad():
        for pairs in setting.pair_counts:
            batches = [setting.batch(setting.eval_size, (pairs,), generator)
                       for generator in generators]
            tokens = torch.stack([tokens for tokens, _ in batches])  # (seeds, batch, time, 2)
            targets = torch.stack([targets for _, targets in batches])  # (seeds, batch * time)
            hits = vmap(predictions)(stacked, buffers, tokens) == targets
            scored = targets != IGNORED
            columns.append((hits & scored).sum(1) / scored.sum(1))
    return torch.stack(columns, dim=1).double()


def _check_mixer(name: str) -> None:
    if name not in KIND or KIND[name].mixer is None:
        raise ValueError(f"name must be a mixer model of the registry, such as one of "
                         f"{list(MQAR_MODELS)}, got {name!r}")


class _ByLength(nn.Module):
    """A classifier of :func:`mqar_training` as it trains on its setting's batches: the rows of
    :meth:`MQARSetting.parts` run at their own lengths instead of all at the longest, and the
    padding steps after them get zero logits. The models are causal and the padding comes last
    in each row, so every real step's logits, and with them the loss (which reads the query
    steps only) and its gradient, are those of the padded batch up to round-off; on the
    mixture of 2, 4, 8 and 16 pairs the padded batch's attention is more than twice as large."""

    def __init__(self, model: PairRecallClassifier, parts: tuple[tuple[int, int], ...]):
        super().__init__()
        self.model, self.parts = model, parts

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (batch, time, 2) of the setting's batch -> logits (batch * time, values)."""
        if len(self.parts) == 1:  # one length: nothing is padded
            return self.model(tokens)
        logits, start = [], 0
        for rows, length in self.parts:
            part = self.model(tokens[start:start + rows, :length]).unflatten(0, (rows, length))
            logits.append(nn.functional.pad(part, (0, 0, 0, tokens.size(1) - length)))
            start += rows
        return torch.cat(logits).flatten(0, 1)


def mqar_training(name: str, setting: MQARSetting = MQARSetting()) -> MQARRun:
    """Train one-layer model ``name`` (a mixer model of the registry, such as those of
    :data:`MQAR_MODELS`) on the setting's task, the mixture of its pair counts, for
    ``setting.longer * setting.steps`` steps, one run per seed, all at once
    (:func:`longdep.train.train_seeds`), and measure its held-out accuracy per count after
    ``setting.steps`` steps and at the end (Chapter 6, "The price of a fixed state" and "How a
    state is written")."""
    _check_mixer(name)
    check.instance(setting, "setting", MQARSetting)
    s, seeds = setting, list(setting.seeds)
    models = []
    for seed in seeds:
        manual_seed(seed)
        models.append(PairRecallClassifier(KIND[name].build(s.shape()), s.width, s.num_keys,
                                           s.num_values))

    def make_batch(generator: torch.Generator):
        return s.batch(s.batch_size, s.pair_counts, generator)

    first, last = s.budgets[0], s.budgets[-1]
    trained = [_ByLength(model, s.parts()) for model in models]
    results = train_seeds(trained, make_batch, last, seeds, lr=s.lr, clip_norm=s.clip_norm,
                          eval_batches=0, observe=kept_at(first, len(seeds)))
    after = [[{name.removeprefix("model."): tensor  # the trained view's names, as the model's
               for name, tensor in result.observed[first].items()}
              for result in results]] if s.longer > 1 else []
    after.append([dict(model.named_parameters()) for model in models])
    return MQARRun(torch.stack([held_out_accuracies(models[0], p, s) for p in after]),
                   torch.tensor([result.losses for result in results], dtype=torch.float64))


def mqar_runs(points: Sequence[tuple[str, MQARSetting]]) -> dict[tuple[str, MQARSetting], MQARRun]:
    """:func:`mqar_training` of every (model, setting) of ``points``, side by side on the cores
    (:func:`longdep.experiments.workers.over_cores`), the costliest first: {point: run}."""
    points = [tuple(point) for point in points]
    for name, setting in points:
        _check_mixer(name)
        check.instance(setting, "setting", MQARSetting)
    return over_cores(mqar_training, points, cost=_training_cost)


def _training_cost(point: tuple[str, MQARSetting]) -> float:
    """Roughly the time :func:`mqar_training` takes at ``point`` (model, setting), in
    sequences trained, to start the longest runs first: the selective SSM's scan costs about a
    third more per sequence than the other one-layer models (measured)."""
    name, setting = point
    sequences = setting.longer * setting.steps * setting.batch_size
    return {"selective SSM": 1.3}.get(name, 1.0) * sequences


RECALLED = 0.9
"""Held-out accuracy on the queries from which a seed counts as recalling a number of pairs."""


def recall_counts(accuracies: torch.Tensor) -> list[Count]:
    """The seeds that recall each number of pairs (accuracy at least :data:`RECALLED`), one
    :class:`longdep.stats.Count` per column of ``accuracies`` (seeds, counts)."""
    if not isinstance(accuracies, torch.Tensor) or accuracies.dim() != 2 or not accuracies.numel():
        raise ValueError(f"accuracies must be a non-empty (seeds, counts) tensor, got "
                         f"{check.describe(accuracies)}")
    return [count(column >= RECALLED) for column in accuracies.T]


def pairs_recalled(pair_counts: Sequence[int], accuracies: torch.Tensor) -> Bilingual:
    """The most pairs that most seeds recall: the largest count of ``pair_counts`` whose
    :func:`recall_counts` earns "mostly" or "almost always" by the book's rule (its Wilson
    interval's low end at least 0.5), in both languages: "16 (the most tried)" (16（所试的最大值）),
    "4", or "fewer than 2" (不到 2) (Chapter 6, "The price of a fixed state")."""
    counts = check.ints("pair_counts", pair_counts)
    if counts != sorted(set(counts)):
        raise ValueError(f"pair_counts must be increasing, got {pair_counts!r}")
    recalled = recall_counts(accuracies)
    if len(recalled) != len(counts):
        raise ValueError(f"accuracies must have one column per count ({len(counts)}), got "
                         f"{len(recalled)}")
    most = [p for p, c in zip(counts, recalled) if c.interval[0] >= 0.5]
    if not most:
        return Bilingual(f"fewer than {counts[0]}", f"不到 {counts[0]}")
    if most[-1] == counts[-1]:
        return Bilingual(f"{most[-1]} (the most tried)", f"{most[-1]}（所试的最大值）")
    return Bilingual(str(most[-1]), str(most[-1]))

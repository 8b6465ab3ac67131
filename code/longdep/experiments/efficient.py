"""Chapter 6's experiments: what attention costs, Performer's error, sparse path lengths, and the
book's summary table.

Six sequence models, all mapping embeddings (batch, time, input_size) to features
(batch, time, width): a tanh RNN, an LSTM, and four one-layer Pre-LN stacks that differ only in
their token mixer (softmax attention, sliding-window attention, linear attention, a selective
SSM). Every column of the summary table is measured here, none is typed:

- cost per layer: the exponent p of matrix-product FLOPs ~ T^p, fitted over doubling lengths
  (counted, so the same on every machine; times only illustrate counts, see
  :func:`attention_seconds`);
- sequential steps: how the longest chain of the autograd graph grows with T;
- path length: the fewest layers after which the last output depends on the first input
  (Chapter 4's measurement; a recurrence evaluated step by step counts one layer per step);
- gradient ratio |dL/dx_{T-d}| / |dL/dx_T| at distance d, at initialisation, in float64;
- key recall at distance d under the book's one training budget, reported as an outcome
  ("solved", "at chance") because single training runs are chaotic (:func:`recall_outcome`).
"""

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from longdep.book import Table, significant
from longdep.experiments.registry import (
    BOOK_MODELS,
    KEY_RECALL_MODELS,
    KIND,
    MQAR_MODELS,
    ModelKind,
    ModelShape,
    model_kind,
)
from longdep.experiments.workers import in_worker_processes
from longdep.experiments.key_recall import (
    KEY_RECALL_BUDGET,
    train_key_recall,
    train_key_recall_seeds,
)
from longdep.measure.cost import (
    attention_flops,
    crossover_length,
    fitted_exponent,
    graph_depth,
    growth_label,
    interleaved_seconds,
    matmul_flops,
    peak_allocated_bytes,
)
from longdep.measure.gradients import distance_profile, ratios_by_distance
from longdep.measure.reach import (
    first_dependent_layer,
    masked_path_length,
    sweep_outputs,
)
from longdep.models import _checks as check
from longdep.models.attention import causal_mask, scaled_dot_product_attention
from longdep.models.decode import (
    linear_attention_step,
    softmax_attention_step,
    ssm_step,
    state_bytes,
)
from longdep.models.linear import (
    linear_attention,
    performer_attention,
    random_projection,
)
from longdep.models.ssm import SelectiveSSM
from longdep.models.sparse import bigbird_mask, sliding_window_attention
from longdep.tasks import mqar_batch
from longdep.train import train_seeds

ATTENTION_KINDS = ("softmax", "fused softmax", "sliding window", "linear")


def check_int(least: int = 0, **values: int) -> None:
    """Raise a clear ``ValueError`` unless every value is an int (not a bool) of at least
    ``least``; the error names the argument."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be an int of at least {least}, got {value!r}")


def check_lengths(lengths: Sequence[int], least: int = 1, count: int = 1,
                  name: str = "lengths") -> list[int]:
    """Raise a clear ``ValueError`` unless ``lengths`` holds at least ``count`` ints, each at
    least ``least``; return them as a list."""
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Sequence):
        raise TypeError(f"{name} must be a sequence of ints, got {type(lengths).__name__}")
    values = list(lengths)
    if len(values) < count or any(isinstance(n, bool) or not isinstance(n, int) or n < least
                                  for n in values):
        raise ValueError(f"{name} must hold at least {count} ints of at least {least}, "
                         f"got {lengths!r}")
    return values



def attention_call(kind: str, length: int, features: int = 32, window: int = 64,
                   seed: int = 0) -> Callable[[], torch.Tensor]:
    """A call of causal attention ``kind`` on random float32 q, k, v of shape (1, length,
    features), made ready to be timed or measured: softmax attention with the causal mask
    (:func:`longdep.models.attention.scaled_dot_product_attention`), banded sliding-window attention
    of ``window`` keys, or chunked linear attention (Chapter 6, "The quadratic cost, measured").
    "fused softmax" is the same causal softmax attention computed by PyTorch's fused kernel
    (``torch.nn.functional.scaled_dot_product_attention`` with ``is_causal=True``), which never
    forms the T x T matrix (Chapter 6, "What is quadratic and what need not be")."""
    if kind not in ATTENTION_KINDS:
        raise ValueError(f"kind must be one of {ATTENTION_KINDS}, got {kind!r}")
    check_int(least=1, length=length, features=features, window=window)
    check_int(seed=seed)
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, length, features, generator=generator) for _ in range(3))
    if kind == "softmax":
        return lambda: scaled_dot_product_attention(q, k, v, causal_mask(length))[0]
    if kind == "fused softmax":  # one head: (batch, heads, time, features)
        return lambda: nn.functional.scaled_dot_product_attention(
            q[:, None], k[:, None], v[:, None], is_causal=True)[:, 0]
    if kind == "sliding window":
        return lambda: sliding_window_attention(q, k, v, min(window, length))
    return lambda: linear_attention(q, k, v)


@dataclass(frozen=True)
class AttentionCosts:
    """What each of :data:`ATTENTION_KINDS` costs at ``lengths``, counted (the same on every
    machine): matrix-product FLOPs (:func:`longdep.measure.cost.attention_flops`, which also
    counts the fused kernel) and the peak bytes a call holds allocated, work buffers inside a
    fused kernel included (:func:`longdep.measure.cost.peak_allocated_bytes`)."""

    lengths: list[int]
    flops: dict[str, list[int]]
    peak_bytes: dict[str, list[int]]

    def mebibytes(self) -> dict[str, list[float]]:
        """``peak_bytes`` in MiB (2^20 bytes)."""
        return {kind: [b / 2**20 for b in row] for kind, row in self.peak_bytes.items()}

    def exponents(self, measure: str, last: int = 3) -> dict[str, float]:
        """The exponent p of cost ~ T^p of every kind, fitted over the ``last`` longest lengths
        (where the leading term dominates); ``measure`` is "flops" or "memory"."""
        if measure not in ("flops", "memory"):
            raise ValueError(f"measure must be 'flops' or 'memory', got {measure!r}")
        check_int(least=2, last=last)
        rows = self.flops if measure == "flops" else self.peak_bytes
        return {kind: fitted_exponent(self.lengths[-last:], row[-last:])
                for kind, row in rows.items()}

    def flop_crossings(self, kinds: Sequence[str] = ("sliding window", "linear")
                       ) -> dict[str, float]:
        """The length beyond which softmax attention does more FLOPs than each of ``kinds``
        (:func:`longdep.measure.cost.crossover_length`; nan if none in range)."""
        return {kind: crossover_length(self.lengths, self.flops["softmax"], self.flops[kind])
                for kind in kinds}


def fused_scratch_mib(lengths: Sequence[int], features: int = 32) -> list[float]:
    """The memory that the fused kernel ("fused softmax" of :func:`attention_call`) holds
    beyond its own (T, features) float32 output, in MiB, at every length: its work buffer and
    row statistics (Chapter 6, "What is quadratic and what need not be"). Counted by
    :func:`longdep.measure.cost.peak_allocated_bytes`, the same on every run."""
    check_lengths(lengths)
    check_int(least=1, features=features)
    return [(peak_allocated_bytes(attention_call("fused softmax", n, features))
             - 4 * n * features) / 2**20 for n in lengths]


def attention_costs(lengths: Sequence[int], features: int = 32, window: int = 64
                    ) -> AttentionCosts:
    """Count the cost of one call of each kind of :func:`attention_call` at every length
    (Chapter 6, "The quadratic cost, counted and timed")."""
    check_lengths(lengths)
    calls = {kind: [attention_call(kind, n, features, window) for n in lengths]
             for kind in ATTENTION_KINDS}
    return AttentionCosts(
        list(lengths),
        {kind: [attention_flops(call) for call in row] for kind, row in calls.items()},
        {kind: [peak_allocated_bytes(call) for call in row] for kind, row in calls.items()})


def attention_seconds(lengths: Sequence[int], features: int = 32, window: int = 64,
                      repeats: int = 5) -> dict[str, list[float]]:
    """Seconds per call of each kind of :func:`attention_call` at every length, on one thread:
    the median of ``repeats`` rounds in which every (kind, length) runs once
    (:func:`longdep.measure.cost.interleaved_seconds`). Volatile: it illustrates the counts of
    :func:`attention_costs` and never decides anything."""
    check_lengths(lengths)
    check_int(least=1, repeats=repeats)
    calls = {(kind, n): attention_call(kind, n, features, window)
             for kind in ATTENTION_KINDS for n in lengths}
    seconds = interleaved_seconds(calls, repeats)
    return {kind: [seconds[kind, n] for n in lengths] for kind in ATTENTION_KINDS}


def crossover_phrase(lengths: Sequence[int], first: Sequence[float], second: Sequence[float],
                     measured: str = "timed") -> str:
    """Where ``first`` overtakes ``second`` for good (:func:`longdep.measure.cost.crossover_length`),
    in words for the prose: "at about T = 310" (two significant digits), or, when there is no
    crossing in the ``measured`` range, "beyond the timed range (T > 2048)" or "below the timed
    range (T < 32)". A page can glue it whatever the measurement gave."""
    check_lengths(lengths, count=2)
    if len(first) != len(lengths) or len(second) != len(lengths):
        raise ValueError(f"first and second must hold one value per length ({len(lengths)}), "
                         f"got {len(first)} and {len(second)}")
    length = crossover_length(lengths, first, second)
    if math.isfinite(length):
        return f"at about T = {significant(length, 2):.0f}"
    if first[-1] <= second[-1]:
        return f"beyond the {measured} range (T > {lengths[-1]})"
    return f"below the {measured} range (T < {lengths[0]})"


def performer_errors(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, feature_counts: list[int],
                     draws: int, orthogonal: bool = True, seed: int = 0) -> torch.Tensor:
    """Relative error |Performer - softmax| / |softmax| of the outputs, non-causal.

    For every m in ``feature_counts`` and each of ``draws`` random projections; returns a
    (len(feature_counts), draws) tensor. q, k, v as in :func:`linear_attention`.
    """
    check_int(least=1, draws=draws)
    check_lengths(feature_counts, name="feature_counts")
    exact, _ = scaled_dot_product_attention(q, k, v)
    generator = torch.Generator().manual_seed(seed)
    errors = torch.empty(len(feature_counts), draws, dtype=torch.float64)
    for row, count in enumerate(feature_counts):
        for draw in range(draws):
            projection = random_projection(count, q.size(-1), orthogonal, generator, q.dtype)
            approximate = performer_attention(q, k, v, projection)
            errors[row, draw] = (approximate - exact).norm() / exact.norm()
    return errors


def random_mask_path_lengths(length: int, window: int, global_positions: list[int],
                             num_random: int, draws: int,
                             generator: torch.Generator | None = None) -> list[int]:
    """:func:`masked_path_length` of ``draws`` independent causal :func:`bigbird_mask` s
    (Chapter 6, "Sparse attention").

    With random links the path length is itself random (one lucky link from the last query to
    the first key makes it 1), so the chapter reports a summary over several masks, each drawn
    from ``generator`` in turn.
    """
    check_int(least=1, draws=draws)
    return [masked_path_length(bigbird_mask(length, window, global_positions, num_random,
                                            generator))
            for _ in range(draws)]


def check_model(name: str) -> ModelKind:
    """The kind of model ``name``; a clear ``ValueError`` unless it is one of
    :data:`longdep.experiments.registry.BOOK_MODELS`."""
    return model_kind(name, BOOK_MODELS)


def summary_model(name: str, shape: ModelShape = ModelShape(), input_size: int | None = None
                  ) -> nn.Module:
    """A fresh model ``name`` of :data:`longdep.experiments.registry.BOOK_MODELS`, built by its
    kind (:meth:`longdep.experiments.registry.ModelKind.build`)."""
    return check_model(name).build(shape, input_size)


def layer_cost_exponent(name: str, lengths: Sequence[int], shape: ModelShape = ModelShape()
                        ) -> float:
    """Fitted exponent p of the model's matrix-product FLOPs ~ T^p over ``lengths`` (batch 1)."""
    check_model(name)
    check_lengths(lengths, count=2)
    torch.manual_seed(0)
    model = summary_model(name, shape)
    flops = [matmul_flops(lambda n=n: model(torch.zeros(1, n, shape.input_size)))
             for n in lengths]
    return fitted_exponent(lengths, flops)


def sequential_depths(name: str, lengths: Sequence[int], shape: ModelShape = ModelShape()
                      ) -> list[int]:
    """:func:`longdep.measure.cost.graph_depth` of the model's output at each length."""
    check_model(name)
    check_lengths(lengths)
    torch.manual_seed(0)
    model = summary_model(name, shape)
    return [graph_depth(check.first_output(model(torch.zeros(1, n, shape.input_size,
                                                       requires_grad=True))))
            for n in lengths]


def path_length(name: str, steps: int, shape: ModelShape = ModelShape(), seed: int = 0) -> int:
    """The fewest layers (sweeps, for the RNN and the LSTM) after which output ``steps - 1`` of
    model ``name`` depends on input 0, found through the derivative as in Chapter 4
    (:func:`longdep.measure.reach.first_dependent_layer`)."""
    kind = check_model(name)
    if steps < 2:
        raise ValueError(f"steps must be at least 2, got {steps}")

    def outputs(x: torch.Tensor) -> Iterator[torch.Tensor]:
        if kind.recurrent:
            return sweep_outputs(kind.build(shape, shape.width).double(), x, steps)
        stack = kind.stack(shape, steps).double()
        return stack.layer_outputs(stack.positional_encoding(x))

    layers = first_dependent_layer(outputs, steps, shape.width, seed)
    if layers is None:
        raise AssertionError(f"{steps} layers of {name} never reach the first input")
    return layers


def gradient_ratios(name: str, steps: int, shape: ModelShape = ModelShape(), batch: int = 4,
                    seed: int = 0) -> torch.Tensor:
    """|dL/dx_{T-d}| / |dL/dx_T| for d = 0 .. steps - 1 at initialisation, in float64.

    Measured with :func:`longdep.measure.gradients.distance_profile` (which uses
    :func:`longdep.measure.gradients.input_gradient_norms`) on a model initialised from ``seed`` that reads
    ``width`` features, as that probe needs inputs and outputs of one width.
    """
    check_model(name)
    check_int(least=2, steps=steps)
    check_int(least=1, batch=batch)
    torch.manual_seed(seed)
    model = summary_model(name, shape, shape.width).double()
    return ratios_by_distance(distance_profile(model, steps, shape.width, batch, seed))


def training_core(name: str, shape: ModelShape = ModelShape()) -> nn.Module:
    """The core that :func:`key_recall_accuracy` trains
    (:meth:`longdep.experiments.registry.ModelKind.training_core`): the model itself, except
    that the tanh RNN and the LSTM are their PyTorch twins (``torch.nn.RNN``,
    ``LSTM.to_torch()``), as in Chapter 3: the same models (equal given the same weights, as
    the tests check), several times faster to train (Chapter 6, "Key recall under the common
    budget"). ``name`` is one of :data:`longdep.experiments.registry.KEY_RECALL_MODELS`, which
    adds the bag of tokens, which sees which tokens came, not in what order (trained, as in
    Chapters 3 and 5, computing only the last step that the classifier reads)."""
    return model_kind(name, KEY_RECALL_MODELS).training_core(shape)


def key_recall_accuracy(name: str, distance: int, shape: ModelShape = ModelShape(),
                        seed: int = 0) -> float:
    """Held-out key-recall accuracy at ``distance`` after training under the book's budget;
    ``name`` is one of :data:`KEY_RECALL_MODELS`."""
    if name not in KEY_RECALL_MODELS:
        raise ValueError(f"name must be one of {KEY_RECALL_MODELS}, got {name!r}")
    check_int(least=1, distance=distance)
    torch.manual_seed(seed)
    return train_key_recall(training_core(name, shape), shape.width, distance, seed).accuracy


def key_recall_seed_accuracies(name: str, distance: int, shape: ModelShape = ModelShape(),
                               seeds: Sequence[int] = KEY_RECALL_BUDGET.seeds) -> torch.Tensor:
    """Held-out key-recall accuracies (len(seeds),) of model ``name`` of
    :data:`KEY_RECALL_MODELS` at ``distance``, one run per seed, all trained at once
    (:func:`longdep.experiments.key_recall.train_key_recall_seeds`; the recurrent cores and
    the bag of tokens run their forward pass once per seed, the stacks under vmap). For a model
    whose single run is chaotic at ``distance``, where one bit flips its outcome (Chapter 6,
    "Key recall under the common budget")."""
    if name not in KEY_RECALL_MODELS:
        raise ValueError(f"name must be one of {KEY_RECALL_MODELS}, got {name!r}")
    check_int(least=1, distance=distance)
    seeds = check_lengths(seeds, least=0, name="seeds")
    vectorized = KIND[name].mixer is not None  # torch's recurrent twins have no vmap rule
    results = train_key_recall_seeds(lambda: training_core(name, shape), shape.width, distance,
                                     seeds, vectorized=vectorized)
    return torch.tensor([result.accuracy for result in results], dtype=torch.float64)


def key_recall_runs(single: Sequence[str], seeded: Sequence[str], distance: int,
                    shape: ModelShape = ModelShape()
                    ) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    """Chapter 6's key recall at ``distance``: :func:`key_recall_accuracy` (one run) of every
    model of ``single`` and :func:`key_recall_seed_accuracies` (the budget's seeds) of every
    model of ``seeded``, all of :data:`longdep.experiments.registry.KEY_RECALL_MODELS`, the
    trainings spread over the cores (:func:`in_worker_processes`; each result is what it is
    alone). Returns (accuracy by model, seed accuracies by model)."""
    calls = {(name, False): (key_recall_accuracy, (name, distance, shape)) for name in single}
    calls |= {(name, True): (key_recall_seed_accuracies, (name, distance, shape))
              for name in seeded}
    results = in_worker_processes(calls)
    return ({name: results[name, False] for name in single},
            {name: results[name, True] for name in seeded})


SOLVED = 0.9
"""Held-out accuracy from which key recall counts as solved (:func:`recall_outcome`)."""

AT_CHANCE = 2.0
"""Accuracy up to this multiple of chance counts as at chance (:func:`recall_outcome`)."""


def recall_outcome(accuracy: float, chance: float) -> str:
    """"solved" (accuracy >= :data:`SOLVED`), "at chance" (<= :data:`AT_CHANCE` x chance) or
    "partly (0.6)".

    One training run is chaotic: one bit of round-off can change its accuracy in the second
    digit, so a page prints the outcome, which is the same on every machine as long as the
    accuracy is far from both thresholds; a chapter asserts that it is.
    """
    if not 0 <= accuracy <= 1:
        raise ValueError(f"accuracy must be between 0 and 1, got {accuracy!r}")
    if not 0 < chance < 1:
        raise ValueError(f"chance must be between 0 and 1 (excluded), got {chance!r}")
    if accuracy >= SOLVED:
        return "solved"
    if accuracy <= AT_CHANCE * chance:
        return "at chance"
    return f"partly ({accuracy:.1f})"


def key_out_of_reach(name: str, distance: int, shape: ModelShape = ModelShape()) -> bool:
    """True if a stack ``name`` of ``shape.num_layers`` layers cannot see the key at all: the
    last output of a ``distance + 1``-step sequence does not depend on its first input, found
    through the derivative (:func:`longdep.measure.reach.first_dependent_layer`). Its accuracy
    is then chance whatever the training, so Chapter 6 does not train it. A recurrence reaches
    every step, so this is False for the tanh RNN and the LSTM."""
    kind = check_model(name)
    check_int(least=1, distance=distance)
    if kind.recurrent:
        return False
    stack = kind.stack(shape, shape.num_layers).double()
    layers = first_dependent_layer(lambda x: stack.layer_outputs(stack.positional_encoding(x)),
                                   distance + 1, shape.width)
    return layers is None


def big_o(label: str) -> str:
    """"T^2" -> "O(T²)", "log T" -> "O(log T)", "1" -> "O(1)"."""
    if not isinstance(label, str):
        raise TypeError(f"label must be a str such as 'T^2', got {type(label).__name__}")
    return f"O({label.replace('^2', '²').replace('^3', '³')})"


def state_transition_factors(name: str, steps: int, shape: ModelShape = ModelShape(),
                             seed: int = 0) -> int:
    """How many step-to-step factors other than the identity the gradient from output
    ``steps - 1`` back to input 0 multiplies inside one layer of model ``name`` (Chapter 6,
    "The book's summary table"). The tanh RNN and the LSTM cross T - 1 Jacobians
    dh_j/dh_{j-1}, never the identity; the selective SSM crosses the factors Abar_j of
    :eq:`eq-ch6-ssm-gradient`, counted here where one differs from 1 on random inputs (all
    T - 1 of them); linear attention's state S_j = S_{j-1} + phi(k_j) v_j^T has the identity
    as its Jacobian, and softmax and window attention carry no state from step to step: 0."""
    kind = check_model(name)
    check_int(least=2, steps=steps)
    if kind.recurrent:
        return steps - 1
    if kind.mixer != "ssm":
        return 0
    torch.manual_seed(seed)
    layer = SelectiveSSM(shape.width, shape.state_size).double()
    x = torch.randn(1, steps, shape.width, dtype=torch.float64)
    decay, _, _ = layer.discretize(x)  # (batch, time, channels, states)
    return int((decay[0, 1:] != 1).flatten(1).any(dim=1).sum())


def gradient_path_factors(name: str, steps: int, shape: ModelShape = ModelShape()) -> int:
    """The multiplicative factors on the gradient path from input 0 to output ``steps - 1``:
    one per layer crossed (:func:`path_length`, a recurrence counting as one layer) plus the
    step-to-step factors inside a layer (:func:`state_transition_factors`). It puts the
    recurrences, whose path length counts steps, and the SSM, whose path length counts layers,
    on one scale (Chapter 6, "The book's summary table")."""
    layers = 1 if check_model(name).recurrent else path_length(name, steps, shape)
    return layers + state_transition_factors(name, steps, shape)


@dataclass
class ModelMeasures:
    """Everything the summary table says about one model, measured.

    cost_exponent: fitted p of FLOPs ~ T^p; depths: graph depths at the table's doubling
    lengths; path_lengths: :func:`path_length` at the table's doubling lengths;
    gradient_factors: :func:`gradient_path_factors` at the longest of them; gradient_ratio and
    gradient_ratio_from_one: |dL/dx_{T-d}| relative to d = 0 and to d = 1 at the table's
    distance; key_recall: the outcome there, as :func:`recall_outcome` words it;
    pairs_recalled: :func:`pairs_recalled` in words, or "not measured".
    """

    cost_exponent: float
    depths: list[int]
    path_lengths: list[int]
    gradient_factors: int
    gradient_ratio: float
    gradient_ratio_from_one: float
    key_recall: str
    pairs_recalled: str = "not measured"


def counted_measures(name: str, lengths: Sequence[int], flop_lengths: Sequence[int],
                     shape: ModelShape = ModelShape()) -> dict[str, object]:
    """The columns of the summary table that model ``name`` is counted for, not trained:
    ``cost_exponent`` (:func:`layer_cost_exponent` over ``flop_lengths``), ``depths``
    (:func:`sequential_depths`) and ``path_lengths`` (:func:`path_length`) at ``lengths``, and
    ``gradient_factors`` (:func:`gradient_path_factors`) at the longest of them: keyword
    arguments of :class:`ModelMeasures`."""
    check_lengths(lengths, least=2, count=2)
    return dict(cost_exponent=layer_cost_exponent(name, flop_lengths, shape),
                depths=sequential_depths(name, lengths, shape),
                path_lengths=[path_length(name, n, shape) for n in lengths],
                gradient_factors=gradient_path_factors(name, lengths[-1], shape))


def counted_measures_of(names: Sequence[str], lengths: Sequence[int],
                        flop_lengths: Sequence[int], shape: ModelShape = ModelShape()
                        ) -> dict[str, dict[str, object]]:
    """:func:`counted_measures` of every model of ``names``, spread over the cores
    (:func:`in_worker_processes`; counts, the same wherever they are made)."""
    return in_worker_processes({name: (counted_measures,
                                       (name, list(lengths), list(flop_lengths), shape))
                                for name in names})


def summary_table(measures: dict[str, ModelMeasures], lengths: Sequence[int], distance: int,
                  mqar_width: int | None = None) -> Table:
    """The book's summary table: one row per model, every cell from ``measures``. ``lengths``
    are the doubling lengths at which depths and path lengths were measured; ``mqar_width`` the
    width at which pairs were recalled (the column is left out without it)."""
    if not isinstance(measures, dict) or not measures or not all(
            isinstance(m, ModelMeasures) for m in measures.values()):
        raise TypeError(f"measures must be a non-empty dict of ModelMeasures, got {measures!r}")
    check_lengths(lengths, count=2)
    check_int(least=1, distance=distance)
    header = ["model", "cost per layer (fitted exponent)", "sequential steps",
              f"path length at T = {lengths[-1]}",
              f"factors on the gradient path at T = {lengths[-1]}",
              f"gradient ratio at d = {distance} (to d = 0)", "(to d = 1)",
              f"key recall at d = {distance}"]
    if mqar_width is not None:
        header.append(f"pairs recalled at width {mqar_width}")
    rows = []
    for name, m in measures.items():
        power = round(m.cost_exponent)
        ratios = ["0 (exactly)" if r == 0 else f"{r:.1e}"
                  for r in (m.gradient_ratio, m.gradient_ratio_from_one)]
        rows.append([
            name,
            f"{big_o('T' if power == 1 else f'T^{power}')} ({m.cost_exponent:.2f})",
            big_o(growth_label(lengths, m.depths)),
            f"{m.path_lengths[-1]}, {big_o(growth_label(lengths, m.path_lengths))}",
            str(m.gradient_factors),
            *ratios,
            m.key_recall,
        ] + ([m.pairs_recalled] if mqar_width is not None else []))
    return Table(header, rows)


DECODING_KINDS = ("softmax attention (KV cache)", "linear attention", "selective SSM")


@dataclass(frozen=True)
class DecodingCosts:
    """What generating token T costs one layer, counted at each of ``lengths``: matrix-product
    FLOPs of the step (:func:`longdep.measure.cost.matmul_flops`) and the bytes of the state it
    reads (:func:`longdep.models.decode.state_bytes`), per kind of :data:`DECODING_KINDS`."""

    lengths: list[int]
    flops: dict[str, list[int]]
    state_bytes: dict[str, list[int]]


def decoding_costs(lengths: Sequence[int], features: int = 32, state_size: int = 8
                   ) -> DecodingCosts:
    """Count one decoding step of each kind after T - 1 earlier tokens, for every T in
    ``lengths``, float32, batch 1 (Chapter 6, "Decoding: the cost of one more token"). The
    state a step reads is made directly at its size (random keys and values for the cache;
    (S, z) and h of their fixed shapes), since its values do not change what the step costs."""
    check_lengths(lengths, least=2)
    check_int(least=1, features=features, state_size=state_size)
    generator = torch.Generator().manual_seed(0)
    layer = SelectiveSSM(features, state_size)
    x_t = torch.randn(1, 1, features, generator=generator)
    flops = {kind: [] for kind in DECODING_KINDS}
    sizes = {kind: [] for kind in DECODING_KINDS}
    for n in lengths:
        cache = tuple(torch.randn(1, n - 1, features, generator=generator) for _ in range(2))
        linear_state = (torch.rand(1, features, features, generator=generator),
                        torch.rand(1, features, generator=generator) + 1)
        h = torch.randn(1, features, state_size, generator=generator)
        steps = {DECODING_KINDS[0]: (lambda: softmax_attention_step(x_t, x_t, x_t, cache), cache),
                 DECODING_KINDS[1]: (lambda: linear_attention_step(x_t, x_t, x_t, linear_state),
                                     linear_state),
                 DECODING_KINDS[2]: (lambda: ssm_step(layer, x_t, h), h)}
        for kind, (step, state) in steps.items():
            flops[kind].append(matmul_flops(step))
            sizes[kind].append(state_bytes(state))
    return DecodingCosts(list(lengths), flops, sizes)


class PairRecallClassifier(nn.Module):
    """The model that multi-query associative recall trains around a causal ``core`` (Chapter 6,
    "The price of a fixed state: multi-query associative recall").

    A step of :func:`longdep.tasks.mqar_batch` carries (key, value); it enters the core as the
    sum of a key embedding and a value embedding (the value "asked for" has its own), and every
    query step, the second half of the sequence, is classified into a value:
    tokens (batch, time, 2) -> logits (batch * time / 2, num_values), queries in order.
    """

    def __init__(self, core: nn.Module, width: int, num_keys: int, num_values: int):
        super().__init__()
        if not isinstance(core, nn.Module):
            raise TypeError(f"core must be a torch.nn.Module, got {type(core).__name__}")
        check_int(least=1, width=width, num_keys=num_keys, num_values=num_values)
        self.key_embedding = nn.Embedding(num_keys, width)
        self.value_embedding = nn.Embedding(num_values + 1, width)  # + "value asked for"
        self.core = core
        self.head = nn.Linear(width, num_values)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.key_embedding(tokens[..., 0]) + self.value_embedding(tokens[..., 1])
        outputs = check.first_output(self.core(x))  # (batch, time, width)
        queries = outputs[:, tokens.shape[1] // 2:]  # (batch, time / 2, width)
        return self.head(queries).flatten(0, 1)  # (batch * time / 2, num_values)


@dataclass(frozen=True)
class MQARSetting:
    """The one small setting of Chapter 6's multi-query associative recall: models of ``width``
    features with ``num_heads`` heads (so linear attention's state is num_heads matrices of
    (width / num_heads)^2 numbers) and a selective SSM of ``state_size`` states per channel
    (width x state_size numbers, the same size by default), trained ``steps`` Adam steps on
    batches of ``batch_size`` sequences, one per seed of ``seeds``, all seeds at once."""

    width: int = 16
    num_heads: int = 2
    state_size: int = 8
    num_keys: int = 16
    num_values: int = 16
    steps: int = 60
    batch_size: int = 32
    lr: float = 2e-2
    clip_norm: float = 1.0
    seeds: tuple[int, ...] = (0, 1, 2)

    def shape(self, max_len: int) -> ModelShape:
        """The one-layer models' sizes: feed-forward width 2 x width, ``max_len`` positions."""
        return ModelShape(input_size=self.width, width=self.width, num_heads=self.num_heads,
                          d_ff=2 * self.width, state_size=self.state_size, max_len=max_len)

    def state_numbers(self, mixer: str) -> int:
        """Numbers in the fixed state of one layer of ``mixer`` ("linear" or "ssm"; linear
        attention's normaliser z left out)."""
        if mixer == "linear":
            return self.width**2 // self.num_heads
        if mixer == "ssm":
            return self.width * self.state_size
        raise ValueError(f"mixer must be 'linear' or 'ssm' (a fixed state), got {mixer!r}")


def mqar_accuracies(name: str, pair_counts: Sequence[int],
                    setting: MQARSetting = MQARSetting()) -> torch.Tensor:
    """Held-out MQAR accuracy of one-layer model ``name`` of :data:`MQAR_MODELS` at every number
    of pairs, one column per count and one row per seed: a (len(setting.seeds),
    len(pair_counts)) tensor (Chapter 6, "The price of a fixed state"). Every count trains fresh
    models, all seeds at once with :func:`longdep.train.train_seeds` (vmap)."""
    if name not in MQAR_MODELS:
        raise ValueError(f"name must be one of {MQAR_MODELS}, got {name!r}")
    if not isinstance(setting, MQARSetting):
        raise TypeError(f"setting must be an MQARSetting, got {type(setting).__name__}")
    counts = list(pair_counts)
    if not counts or any(isinstance(p, bool) or not isinstance(p, int)
                         or not 1 <= p <= setting.num_keys for p in counts):
        raise ValueError(f"pair_counts must be ints from 1 to num_keys = {setting.num_keys}, "
                         f"at least one, got {pair_counts!r}")
    s = setting
    accuracies = torch.empty(len(s.seeds), len(counts), dtype=torch.float64)
    for column, pairs in enumerate(counts):
        def make_batch(generator: torch.Generator, pairs: int = pairs):
            tokens, targets = mqar_batch(s.batch_size, pairs, s.num_keys, s.num_values,
                                         generator)
            return tokens, targets.flatten()  # (batch * pairs,), as the logits

        models = []
        for seed in s.seeds:
            torch.manual_seed(seed)
            core = KIND[name].build(s.shape(2 * pairs))
            models.append(PairRecallClassifier(core, s.width, s.num_keys, s.num_values))
        results = train_seeds(models, make_batch, s.steps, s.seeds, lr=s.lr,
                              clip_norm=s.clip_norm)
        accuracies[:, column] = torch.tensor([result.accuracy for result in results])
    return accuracies


def mqar_grids(names: Sequence[str], pair_counts: Sequence[int],
               setting: MQARSetting = MQARSetting()) -> dict[str, torch.Tensor]:
    """:func:`mqar_accuracies` of every model of ``names``, the trainings of every (model,
    number of pairs) spread over the cores (:func:`in_worker_processes`): each count trains
    its own models, so its column is the same computed alone (Chapter 6, "The price of a fixed
    state")."""
    counts = list(pair_counts)
    calls = {(name, pairs): (mqar_accuracies, (name, [pairs], setting))
             for pairs in sorted(counts, reverse=True) for name in names}  # longest first
    columns = in_worker_processes(calls)
    return {name: torch.cat([columns[name, pairs] for pairs in counts], dim=1)
            for name in names}


RECALLED = 0.7
"""Mean held-out MQAR accuracy from which a number of pairs counts as recalled."""


def pairs_recalled(pair_counts: Sequence[int], accuracies: torch.Tensor) -> str:
    """The largest number of pairs at which the mean accuracy over seeds (rows of
    ``accuracies``, one column per count of ``pair_counts``, as :func:`mqar_accuracies`
    returns) reaches :data:`RECALLED`, in words for the summary table: "4", "16 (the most
    tried)", or "fewer than 4" (Chapter 6, "The price of a fixed state")."""
    counts = list(pair_counts)
    if not isinstance(accuracies, torch.Tensor) or accuracies.dim() != 2 \
            or accuracies.shape[1] != len(counts) or accuracies.shape[0] < 1:
        raise ValueError(f"accuracies must be a (seeds, {len(counts)}) tensor, got "
                         f"{getattr(accuracies, 'shape', type(accuracies).__name__)}")
    if counts != sorted(set(counts)):
        raise ValueError(f"pair_counts must be increasing, got {pair_counts!r}")
    recalled = [p for p, mean in zip(counts, accuracies.mean(dim=0).tolist())
                if mean >= RECALLED]
    if not recalled:
        return f"fewer than {counts[0]}"
    return f"{recalled[-1]} (the most tried)" if recalled[-1] == counts[-1] else str(recalled[-1])

"""The book's summary table, every cell measured (Chapter 6, "The book's summary table").

Six sequence models, all mapping embeddings (batch, time, input_size) to features
(batch, time, width): a tanh RNN, an LSTM, and four one-layer Pre-LN stacks that differ only in
their token mixer (softmax attention, sliding-window attention, linear attention, a selective
SSM). Every column is measured here, none is typed:

- cost per layer: the exponent p of matrix-product FLOPs ~ T^p, fitted over doubling lengths
  (counted, so the same on every machine);
- sequential steps: how the longest chain of the autograd graph grows with T;
- path length: the fewest layers after which the last output depends on the first input
  (Chapter 4's measurement; a recurrence evaluated step by step counts one layer per step);
- gradient ratio |dL/dx_{T-d}| / |dL/dx_T| at distance d, at initialisation, in float64;
- key recall at distance d under the book's one training budget.
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from longdep.book import Table
from longdep.experiments.key_recall import (
    KEY_RECALL_BUDGET,
    train_key_recall,
    train_key_recall_seeds,
)
from longdep.experiments.registry import KIND, ORDER_BLIND, ModelShape, model_kind
from longdep.experiments.workers import over_cores
from longdep.measure.cost import (
    fitted_exponent,
    graph_depth,
    growth_label,
    matmul_flops,
)
from longdep.measure.gradients import distance_profile, ratios_by_distance
from longdep.measure.reach import first_dependent_layer, sweep_outputs
from longdep.models import _checks as check
from longdep.models.ssm import SelectiveSSM
from longdep.seeds import manual_seed

SUMMARY_MODELS = ("tanh RNN", "LSTM", "Transformer (softmax attention)",
                  "sliding-window attention", "linear attention", "selective SSM")
"""The six models of the summary table, in its order."""

KEY_RECALL_MODELS = (*SUMMARY_MODELS, ORDER_BLIND)
"""The summary's models and the order-blind control, as Chapter 6's key recall compares them."""


def kind_of(name: str):
    """The registry's kind of summary model ``name``; a clear ``ValueError`` for another."""
    return model_kind(name, SUMMARY_MODELS)


def layer_cost_exponent(name: str, lengths: Sequence[int], shape: ModelShape = ModelShape()
                        ) -> float:
    """Fitted exponent p of the model's matrix-product FLOPs ~ T^p over ``lengths`` (batch 1)."""
    kind_of(name)
    check.ints("lengths", lengths, count=2)
    manual_seed(0)
    model = kind_of(name).build(shape)
    flops = [matmul_flops(lambda n=n: model(torch.zeros(1, n, shape.input_size)))
             for n in lengths]
    return fitted_exponent(lengths, flops)


def sequential_depths(name: str, lengths: Sequence[int], shape: ModelShape = ModelShape()
                      ) -> list[int]:
    """:func:`longdep.measure.cost.graph_depth` of the model's output at each length."""
    kind_of(name)
    check.ints("lengths", lengths)
    manual_seed(0)
    model = kind_of(name).build(shape)
    return [graph_depth(check.first_output(model(torch.zeros(1, n, shape.input_size,
                                                       requires_grad=True))))
            for n in lengths]


def path_length(name: str, steps: int, shape: ModelShape = ModelShape(), seed: int = 0) -> int:
    """The fewest layers (sweeps, for the RNN and the LSTM) after which output ``steps - 1`` of
    model ``name`` depends on input 0, found through the derivative as in Chapter 4
    (:func:`longdep.measure.reach.first_dependent_layer`)."""
    kind = kind_of(name)
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
    :func:`longdep.measure.gradients.input_gradient_norms`) on a model initialised from ``seed``
    that reads ``width`` features, as that probe needs inputs and outputs of one width.
    """
    kind_of(name)
    check.int_range(2, None, steps=steps)
    check.positive(batch=batch)
    manual_seed(seed)
    model = kind_of(name).build(shape, shape.width).double()
    return ratios_by_distance(distance_profile(model, steps, shape.width, batch, seed))


def key_recall_accuracy(name: str, distance: int, shape: ModelShape = ModelShape(),
                        seed: int = 0) -> float:
    """Held-out key-recall accuracy at ``distance`` after training under the book's budget;
    ``name`` is one of :data:`KEY_RECALL_MODELS`."""
    if name not in KEY_RECALL_MODELS:
        raise ValueError(f"name must be one of {KEY_RECALL_MODELS}, got {name!r}")
    check.positive(distance=distance)
    manual_seed(seed)
    return train_key_recall(KIND[name].training_core(shape), shape.width, distance, seed).accuracy


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
    check.positive(distance=distance)
    seeds = check.ints("seeds", seeds, least=0)
    vectorized = KIND[name].mixer is not None  # torch's recurrent twins have no vmap rule
    results = train_key_recall_seeds(lambda: KIND[name].training_core(shape), shape.width, distance,
                                     seeds, vectorized=vectorized)
    return torch.tensor([result.accuracy for result in results], dtype=torch.float64)


def key_recall_runs(single: Sequence[str], seeded: Sequence[str], distance: int,
                    shape: ModelShape = ModelShape()
                    ) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    """Chapter 6's key recall at ``distance``: :func:`key_recall_accuracy` (one run) of every
    model of ``single`` and :func:`key_recall_seed_accuracies` (the budget's seeds) of every
    model of ``seeded``, side by side on the cores (:func:`over_cores`). Returns (accuracy by
    model, seed accuracies by model)."""
    runs = over_cores(key_recall_result, [(name, distance, shape, name in seeded)
                                          for name in (*seeded, *single)])
    return ({name: runs[name, distance, shape, False] for name in single},
            {name: runs[name, distance, shape, True] for name in seeded})


def key_recall_result(name: str, distance: int, shape: ModelShape, seeded: bool):
    """:func:`key_recall_seed_accuracies` if ``seeded``, else :func:`key_recall_accuracy`."""
    return (key_recall_seed_accuracies if seeded else key_recall_accuracy)(name, distance, shape)


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
    kind = kind_of(name)
    check.positive(distance=distance)
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
    kind = kind_of(name)
    check.int_range(2, None, steps=steps)
    if kind.recurrent:
        return steps - 1
    if kind.mixer != "ssm":
        return 0
    manual_seed(seed)
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
    layers = 1 if kind_of(name).recurrent else path_length(name, steps, shape)
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
    check.ints("lengths", lengths, least=2, count=2)
    return dict(cost_exponent=layer_cost_exponent(name, flop_lengths, shape),
                depths=sequential_depths(name, lengths, shape),
                path_lengths=[path_length(name, n, shape) for n in lengths],
                gradient_factors=gradient_path_factors(name, lengths[-1], shape))


def counted_measures_of(names: Sequence[str], lengths: Sequence[int],
                        flop_lengths: Sequence[int], shape: ModelShape = ModelShape()
                        ) -> dict[str, dict[str, object]]:
    """:func:`counted_measures` of every model of ``names``, side by side on the cores."""
    point = (tuple(lengths), tuple(flop_lengths), shape)
    runs = over_cores(counted_measures, [(name, *point) for name in names])
    return {name: runs[(name, *point)] for name in names}


def _counted_cells(counted: dict[str, object], lengths: Sequence[int]) -> list[str]:
    """One model's counted columns from :func:`counted_measures` at ``lengths``: cost per layer
    "O(T²) (1.72)", sequential steps "O(T)", path length at the longest length "64, O(T)"."""
    exponent, power = counted["cost_exponent"], round(counted["cost_exponent"])
    return [f"{big_o('T' if power == 1 else f'T^{power}')} ({exponent:.2f})",
            big_o(growth_label(lengths, counted["depths"])),
            f"{counted['path_lengths'][-1]}, "
            f"{big_o(growth_label(lengths, counted['path_lengths']))}"]


def joined_summary_table(counted: dict[str, dict[str, object]], lengths: Sequence[int],
                         header: tuple[str, str], column: dict[str, object],
                         labels: dict[str, object] | None = None) -> Table:
    """Chapter 7's join of the summary: :func:`_counted_cells` of every model of ``counted``
    beside ``column[name]``, under ``header`` (English, Chinese); a model named by
    ``labels[name]`` (a string or a :class:`longdep.book.Bilingual`), else by its name."""
    check.ints("lengths", lengths, count=3)
    if not isinstance(counted, dict) or not counted or set(column) != set(counted):
        raise ValueError(f"counted and column must be dicts of the same models, got "
                         f"{counted!r} and {column!r}")
    return Table([("model", "模型"), ("cost per layer (fitted exponent)", "每层计算量（拟合指数）"),
                  ("sequential steps", "顺序步数"),
                  (f"path length at T = {lengths[-1]}", f"T = {lengths[-1]} 时的路径长度"),
                  header],
                 [[(labels or {}).get(name, name), *_counted_cells(measures, lengths),
                   column[name]] for name, measures in counted.items()])


def summary_table(measures: dict[str, ModelMeasures], lengths: Sequence[int], distance: int,
                  mqar_width: int | None = None) -> Table:
    """The book's summary table: one row per model, every cell from ``measures``. ``lengths``
    are the doubling lengths at which depths and path lengths were measured; ``mqar_width`` the
    width at which pairs were recalled (the column is left out without it)."""
    if not isinstance(measures, dict) or not measures or not all(
            isinstance(m, ModelMeasures) for m in measures.values()):
        raise TypeError(f"measures must be a non-empty dict of ModelMeasures, got {measures!r}")
    check.ints("lengths", lengths, count=2)
    check.positive(distance=distance)
    header = ["model", "cost per layer (fitted exponent)", "sequential steps",
              f"path length at T = {lengths[-1]}",
              f"factors on the gradient path at T = {lengths[-1]}",
              f"gradient ratio at d = {distance} (to d = 0)", "(to d = 1)",
              f"key recall at d = {distance}"]
    if mqar_width is not None:
        header.append(f"pairs recalled at width {mqar_width}")
    rows = []
    for name, m in measures.items():
        ratios = ["0 (exactly)" if r == 0 else f"{r:.1e}"
                  for r in (m.gradient_ratio, m.gradient_ratio_from_one)]
        rows.append([
            name,
            *_counted_cells(vars(m), lengths),
            str(m.gradient_factors),
            *ratios,
            m.key_recall,
        ] + ([m.pairs_recalled] if mqar_width is not None else []))
    return Table(header, rows)

"""The book's summary tables, every cell measured (Chapter 6, "The book's summary tables").

Six sequence models, all mapping embeddings (batch, time, input_size) to features
(batch, time, width): a tanh RNN, an LSTM, and four one-layer Pre-LN stacks that differ only in
their token mixer (softmax attention, sliding-window attention, linear attention, a selective
SSM). Every column is measured here, none is typed:

- cost per layer: the exponent p of matrix-product FLOPs ~ T^p, fitted over doubling lengths
  (counted, so the same on every machine);
- sequential steps: how the rounds on the longest chain of the autograd graph grow with T (a
  cumulative sum counted as the log2 T rounds of a parallel prefix sum);
- path length: the fewest layers after which the last output depends on the first input
  (Chapter 4's measurement; a recurrence evaluated step by step counts one layer per step);
- gradient ratio |dL/dx_{T-d}| / |dL/dx_T| at distance d, at initialisation, in float64, its
  median and range over draws of the weights and inputs;
- key recall at distance d under the book's one training budget: the seeds, of ten, that solve
  it, with the interval and the word of the book's rule (:mod:`longdep.stats`).
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from longdep.book import Bilingual, Table
from longdep.experiments.key_recall import KEY_RECALL_BUDGET
from longdep.experiments.registry import ORDER_BLIND, ModelShape, model_kind
from longdep.experiments.workers import over_cores
from longdep.measure.cost import graph_depth, matmul_flops
from longdep.measure.fit import fitted_exponent, growth_label
from longdep.measure.gradients import distance_profile, ratios_by_distance
from longdep.measure.reach import first_dependent_layer, sweep_outputs
from longdep.models import _checks as check
from longdep.models.ssm import SelectiveSSM
from longdep.seeds import manual_seed
from longdep.stats import Spread

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


def gradient_ratio_draws(name: str, steps: int, shape: ModelShape = ModelShape(),
                         draws: int = 10) -> torch.Tensor:
    """:func:`gradient_ratios` of ``draws`` models, each with its own weights and inputs (seeds
    0 .. draws - 1): a (draws, steps) tensor, whose median and range over the draws a page
    reads (Chapter 6, "Gradient versus distance, for every model of the book")."""
    check.positive(draws=draws)
    return torch.stack([gradient_ratios(name, steps, shape, seed=seed) for seed in range(draws)])


def big_o(label: str) -> str:
    """"T^2" -> "O(T²)", "log T" -> "O(log T)", "1" -> "O(1)"."""
    if not isinstance(label, str):
        raise TypeError(f"label must be a str such as 'T^2', got {type(label).__name__}")
    return f"O({label.replace('^2', '²').replace('^3', '³')})"


def state_transition_factors(name: str, steps: int, shape: ModelShape = ModelShape(),
                             seed: int = 0) -> int:
    """How many step-to-step factors other than the identity the gradient from output
    ``steps - 1`` back to input 0 multiplies inside one layer of model ``name`` (Chapter 6,
    "The book's summary tables"). The tanh RNN and the LSTM cross T - 1 Jacobians
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
    on one scale (Chapter 6, "The book's summary tables")."""
    layers = 1 if kind_of(name).recurrent else path_length(name, steps, shape)
    return layers + state_transition_factors(name, steps, shape)


MODEL_NAMES = {"tanh RNN": "tanh RNN", "LSTM": "LSTM",
               "Transformer (softmax attention)": "Transformer（softmax 注意力）",
               "sliding-window attention": "滑动窗口注意力", "linear attention": "线性注意力",
               "selective SSM": "选择性 SSM", ORDER_BLIND: "词元袋（不看顺序的对照）"}
"""Each model of :data:`KEY_RECALL_MODELS` by its name in Chinese."""


def model_name(name: str) -> Bilingual:
    """The name of model ``name`` of :data:`KEY_RECALL_MODELS` in both languages, as Chapter
    6's tables and figures show it."""
    check.choice(name=(name, MODEL_NAMES))
    return Bilingual(name, MODEL_NAMES[name])


COUNTED = ("cost_exponent", "depths", "path_lengths", "gradient_factors")
"""What :func:`counted_measures` counts of one model: the fitted p of FLOPs ~ T^p, the graph
depths (parallel rounds) at the doubling lengths of the depths, :func:`path_length` at the
table's doubling lengths, and :func:`gradient_path_factors` at the longest of them."""


def counted_measures(name: str, lengths: Sequence[int], flop_lengths: Sequence[int],
                     shape: ModelShape = ModelShape(),
                     depth_lengths: Sequence[int] | None = None) -> dict[str, object]:
    """The columns of the summary that model ``name`` is counted for, not trained, as a dict
    with the keys of :data:`COUNTED`: ``cost_exponent`` (:func:`layer_cost_exponent` over
    ``flop_lengths``), ``depths`` (:func:`sequential_depths` at ``depth_lengths``, by default
    ``lengths``), ``path_lengths`` (:func:`path_length` at ``lengths``) and
    ``gradient_factors`` (:func:`gradient_path_factors` at the longest of ``lengths``)."""
    check.ints("lengths", lengths, least=2, count=2)
    return dict(cost_exponent=layer_cost_exponent(name, flop_lengths, shape),
                depths=sequential_depths(name, lengths if depth_lengths is None
                                         else depth_lengths, shape),
                path_lengths=[path_length(name, n, shape) for n in lengths],
                gradient_factors=gradient_path_factors(name, lengths[-1], shape))


def counted_measures_of(names: Sequence[str], lengths: Sequence[int],
                        flop_lengths: Sequence[int], shape: ModelShape = ModelShape(),
                        depth_lengths: Sequence[int] | None = None
                        ) -> dict[str, dict[str, object]]:
    """:func:`counted_measures` of every model of ``names``, side by side on the cores."""
    point = (tuple(lengths), tuple(flop_lengths), shape,
             None if depth_lengths is None else tuple(depth_lengths))
    runs = over_cores(counted_measures, [(name, *point) for name in names])
    return {name: runs[(name, *point)] for name in names}


def _counted_cells(counted: dict[str, object], lengths: Sequence[int],
                   depth_lengths: Sequence[int] | None = None) -> list[str]:
    """One model's counted columns from :func:`counted_measures`: cost per layer
    "O(T²) (1.72)", sequential rounds "O(T)" (at ``depth_lengths``, by default ``lengths``),
    path length at the longest of ``lengths`` "64, O(T)"."""
    exponent, power = counted["cost_exponent"], round(counted["cost_exponent"])
    return [f"{big_o('T' if power == 1 else f'T^{power}')} ({exponent:.2f})",
            big_o(growth_label(lengths if depth_lengths is None else depth_lengths,
                               counted["depths"])),
            f"{counted['path_lengths'][-1]}, "
            f"{big_o(growth_label(lengths, counted['path_lengths']))}"]


def _check_counted(counted) -> None:
    if not isinstance(counted, dict) or not counted or not all(
            isinstance(m, dict) and set(m) == set(COUNTED) for m in counted.values()):
        raise TypeError(f"measures must be a non-empty dict of counted_measures, got "
                        f"{check.describe(counted)}")


def joined_summary_table(counted: dict[str, dict[str, object]], lengths: Sequence[int],
                         header: tuple[str, str], column: dict[str, object],
                         labels: dict[str, object] | None = None,
                         depth_lengths: Sequence[int] | None = None) -> Table:
    """Chapter 7's join of the summary: :func:`_counted_cells` of every model of ``counted``
    (its sequential rounds at ``depth_lengths``, by default ``lengths``, as Chapter 6's
    :func:`cost_table` counts them) beside ``column[name]``, under ``header`` (English,
    Chinese); a model named by ``labels[name]`` (a string or a :class:`longdep.book.Bilingual`),
    else by its name."""
    check.ints("lengths", lengths, count=3)
    if not isinstance(counted, dict) or not counted or set(column) != set(counted):
        raise ValueError(f"counted and column must be dicts of the same models, got "
                         f"{counted!r} and {column!r}")
    return Table([("model", "模型"), ("cost per layer (fitted exponent)", "每层代价（拟合指数）"),
                  ("sequential rounds", "串行轮数"),
                  (f"path length at T = {lengths[-1]}", f"T = {lengths[-1]} 时的路径长度"),
                  header],
                 [[(labels or {}).get(name, name),
                   *_counted_cells(measures, lengths, depth_lengths), column[name]]
                  for name, measures in counted.items()])


def cost_table(measures: dict[str, dict[str, object]], lengths: Sequence[int],
               depth_lengths: Sequence[int]) -> Table:
    """The book's summary of what each model costs (Chapter 6, "The book's summary tables"), in
    both languages: one row per model of ``measures`` (each as :func:`counted_measures` returns
    it), every cell counted. ``lengths`` are the doubling lengths of the path lengths,
    ``depth_lengths`` those of the depths."""
    _check_counted(measures)
    check.ints("lengths", lengths, count=2)
    check.ints("depth_lengths", depth_lengths, count=2)
    n = lengths[-1]
    header = [("model", "模型"), ("cost per layer (fitted exponent)", "每层代价（拟合指数）"),
              ("sequential rounds", "串行轮数"),
              (f"path length at T = {n}", f"T = {n} 时的路径长度"),
              (f"factors on the gradient path at T = {n}", f"T = {n} 时梯度路径上的因子数")]
    return Table(header, [[model_name(name), *_counted_cells(m, lengths, depth_lengths),
                           str(m["gradient_factors"])] for name, m in measures.items()])


def spread_text(values: Spread) -> Bilingual:
    """A median and range over draws as a table prints it: "3.6e-01 (2.9e-01–4.4e-01)", or "0
    (exactly)" (0（恰好为零）) when every draw is exactly 0."""
    check.instance(values, "values", Spread)
    if values.low == values.high == 0:
        return Bilingual("0 (exactly)", "0（恰好为零）")
    text = f"{values.median:.1e} ({values.low:.1e}–{values.high:.1e})"
    return Bilingual(text, text)


@dataclass(frozen=True)
class LearningMeasures:
    """What the learning table says about one model: the gradient ratio at the table's distance
    relative to d = 0 and to d = 1, each as its median and range over draws; the key-recall
    result there (a count of seeds in words, or why the model was not trained); and the pairs
    of multi-query associative recall it recalls at each budget, or None if not measured."""

    gradient_ratio: Spread
    gradient_ratio_from_one: Spread
    key_recall: Bilingual
    pairs_recalled: tuple[Bilingual, ...] | None = None


def learning_table(measures: dict[str, LearningMeasures], distance: int,
                   budgets: Sequence[int], labels: dict[str, Bilingual] | None = None) -> Table:
    """The book's summary of what each model learns and passes back (Chapter 6, "The book's
    summary tables"), in both languages: one row per model of ``measures``, named by
    ``labels[name]`` if given, else by :func:`model_name`; ``distance`` is the distance of the
    gradient ratio and of key recall, ``budgets`` the training steps at which the pairs were
    recalled."""
    if not isinstance(measures, dict) or not measures or not all(
            isinstance(m, LearningMeasures) for m in measures.values()):
        raise TypeError(f"measures must be a non-empty dict of LearningMeasures, got "
                        f"{measures!r}")
    check.positive(distance=distance)
    steps = " / ".join(str(b) for b in check.ints("budgets", budgets))
    header = [("model", "模型"),
              (f"gradient ratio at d = {distance}, to d = 0",
               f"d = {distance} 处的梯度比（相对 d = 0）"),
              ("to d = 1", "相对 d = 1"),
              (f"seeds of {len(KEY_RECALL_BUDGET.seeds)} solving key recall at d = {distance}",
               f"d = {distance} 处解决键回忆的种子数（共 {len(KEY_RECALL_BUDGET.seeds)} 个）"),
              (f"pairs recalled after {steps} steps", f"{steps} 步后回忆出的键值对数")]
    rows = []
    for name, m in measures.items():
        pairs = (Bilingual(" / ".join(p.en for p in m.pairs_recalled),
                           " / ".join(p.zh for p in m.pairs_recalled))
                 if m.pairs_recalled else Bilingual("not measured", "未测量"))
        label = (labels or {}).get(name) or model_name(name)
        rows.append([label, spread_text(m.gradient_ratio),
                     spread_text(m.gradient_ratio_from_one), m.key_recall, pairs])
    return Table(header, rows)

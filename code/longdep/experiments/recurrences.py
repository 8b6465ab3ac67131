"""One recurrence for every model (Chapter 6, "One recurrence for every model").

Linear attention, the SSMs, minGRU and the delta rule all carry a state S_t (d_k x d_v, or a
vector) through

    S_t = A_t S_{t-1} + B_t,

and differ in the transition A_t and the write B_t (:data:`RECURRENCES`). Each is computed in a
parallel form as well as step by step; :func:`form_differences` measures how far the two are
apart. Since S enters linearly, dS_T/dS_k = A_T ... A_{k+1}: the long-range gradient is the
product of the transitions, a forget gate (:func:`gradient_ratio_draws`; for minGRU,
:func:`keep_product_ratios` computes the product of its keep gates 1 - z directly). How the
delta rule writes its state is :mod:`longdep.experiments.state_writes`.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from longdep.book import Table
from longdep.experiments.registry import KIND, ModelShape
from longdep.experiments.vanishing import fitted_rates
from longdep.measure.gradients import distance_profile, ratios_by_distance
from longdep.models import _checks as check
from longdep.models.delta import DeltaNet
from longdep.models.gla import gla_attention, gla_recurrent
from longdep.models.linear import linear_attention, linear_attention_recurrent
from longdep.models.mingru import MinGRU
from longdep.models.ssd import ScalarSSM
from longdep.models.ssm import SelectiveSSM
from longdep.seeds import manual_seed, seeded_generator

F64 = torch.float64


@dataclass(frozen=True)
class Recurrence:
    """One row of the one-recurrence table: ``name`` (English, Chinese), the transition A_t
    and the write B_t as plain formulas, the parallel form (English, Chinese), and ``built``,
    whether the book implements both forms (then :data:`FORM_CHECKS` has it). The papers are
    cited in Chapter 6's prose, beside each row's model."""

    name: tuple[str, str]
    transition: str
    write: str
    parallel: tuple[str, str]
    built: bool


RECURRENCES = (
    Recurrence(("linear attention", "线性注意力"), "I", "φ(k_t) v_tᵀ",
               ("causal kernel attention", "因果核注意力"), True),
    Recurrence(("GLA", "GLA"), "diag(α_t)", "k_t v_tᵀ",
               ("attention masked by per-channel decays", "按通道衰减掩码的注意力"), True),
    Recurrence(("mLSTM (xLSTM)", "mLSTM（xLSTM）"), "f_t I", "i_t k_t v_tᵀ",
               ("attention masked by gate products", "以门的乘积为掩码的注意力"), False),
    Recurrence(("selective SSM", "选择性 SSM"), "diag(exp(Δ_t A))", "B̄_t x_t",
               ("parallel scan", "并行扫描"), True),
    Recurrence(("scalar SSM (Mamba-2)", "标量 SSM（Mamba-2）"), "a_t I", "B_t x_tᵀ",
               ("attention masked by L_ij = a_{j+1} ⋯ a_i",
                "以 L_ij = a_{j+1} ⋯ a_i 为掩码的注意力"), True),
    Recurrence(("minGRU", "minGRU"), "diag(1 − z_t)", "z_t ⊙ h̃_t",
               ("parallel scan", "并行扫描"), True),
    Recurrence(("DeltaNet", "DeltaNet"), "I − β_t k_t k_tᵀ", "β_t k_t v_tᵀ",
               ("chunks, WY form", "分块，WY 形式"), True),
    Recurrence(("Gated DeltaNet", "门控 DeltaNet"), "α_t (I − β_t k_t k_tᵀ)", "β_t k_t v_tᵀ",
               ("chunks, WY form", "分块，WY 形式"), True),
)
"""The table's rows, in its order (Chapter 6, "One recurrence for every model")."""


def _switched(module: nn.Module, attribute: str, forms: tuple[str, str]
             ) -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """x -> (outputs in the first form, outputs in the second), ``attribute`` of ``module``
    set to each of ``forms`` in turn."""
    def both(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        outputs = []
        for form in forms:
            setattr(module, attribute, form)
            outputs.append(check.first_output(module(x)))
        return outputs[0], outputs[1]
    return both


def _linear_attention_forms(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x (batch, time, features) -> linear attention's parallel and recurrent outputs, with q,
    k, v three slices of x (the feature map elu + 1 of :mod:`longdep.models.linear`)."""
    q, k, v = x.unflatten(-1, (3, -1)).unbind(-2)
    return linear_attention(q, k, v), linear_attention_recurrent(q, k, v)


def _gla_forms(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x (batch, time, features) -> gated linear attention's attention-form and recurrent
    outputs, with q, k, v and the gates' logits four slices of x, log alpha = log sigmoid(1 +
    logit) (:mod:`longdep.models.gla`)."""
    q, k, v, logits = x.unflatten(-1, (4, -1)).unbind(-2)
    log_alpha = nn.functional.logsigmoid(1 + logits)
    return gla_attention(q, k, v, log_alpha)[0], gla_recurrent(q, k, v, log_alpha)[0]


FORM_CHECKS = {
    "linear attention": lambda d: _linear_attention_forms,
    "GLA": lambda d: _gla_forms,
    "selective SSM": lambda d: _switched(SelectiveSSM(d, 4).double(), "scan",
                                                ("parallel", "sequential")),
    "scalar SSM (Mamba-2)": lambda d: _switched(ScalarSSM(d, 2, 4).double(), "form",
                                               ("attention", "recurrent")),
    "minGRU": lambda d: _switched(MinGRU(d, d, forget_bias=1.0).double(), "scan",
                                 ("parallel", "sequential")),
    "DeltaNet": lambda d: _switched(DeltaNet(d, 2).double(), "form", ("chunked", "recurrent")),
    "Gated DeltaNet": lambda d: _switched(DeltaNet(d, 2, gated=True).double(), "form",
                                         ("chunked", "recurrent")),
}
"""Each built row's English name -> (features -> (x -> (parallel outputs, recurrent outputs)))
for a float64 model of that many features."""


def form_differences(steps: int = 64, features: int = 12, batch: int = 2, seed: int = 0
                     ) -> dict[str, float]:
    """For every model of :data:`FORM_CHECKS`, max |parallel - recurrent| over the outputs of
    one float64 model drawn from ``seed`` on x (batch, steps, features) ~ N(0, 1) (Chapter 6,
    "One recurrence for every model"). ``features`` must be a multiple of 12 (three slices for
    linear attention, four for GLA, two heads)."""
    check.positive(steps=steps, features=features, batch=batch)
    check.multiple(features=features, twelve=12)
    x = torch.randn(batch, steps, features, dtype=F64, generator=seeded_generator(seed))
    differences = {}
    for name, make in FORM_CHECKS.items():
        manual_seed(seed)
        with torch.no_grad():
            parallel, recurrent = make(features)(x)
        differences[name] = (parallel - recurrent).abs().max().item()
    return differences


ROUND_OFF = 1e-12
"""What the book calls equal to round-off in float64: every difference between two forms of one
model is asserted below it (Chapter 6 prints the threshold, never the digits)."""


def recurrence_table(differences: dict[str, float] | None = None) -> Table:
    """The one-recurrence table in both languages: model, A_t, B_t, the parallel form and,
    with ``differences`` (:func:`form_differences`), whether the book's two forms
    agree below :data:`ROUND_OFF` (the difference itself where they do not; "not built here"
    for a row the book does not implement)."""
    if differences is not None:
        if not isinstance(differences, dict):
            raise TypeError(f"differences must be a dict from form_differences, got "
                            f"{check.describe(differences)}")
        missing = [name for name in FORM_CHECKS if name not in differences]
        if missing:
            raise ValueError(f"differences lacks the rows {missing}")
    header = [("model", "模型"), "A_t", "B_t", ("parallel form", "并行形式")]
    if differences is not None:
        header.append(("|parallel − recurrent|", "|并行 − 循环|"))
    rows = []
    for row in RECURRENCES:
        cells = [row.name, row.transition, row.write, row.parallel]
        if differences is not None and not row.built:
            cells.append(("not built here", "本书未实现"))
        elif differences is not None:
            difference = differences[row.name[0]]
            cells.append(f"< {ROUND_OFF:.0e}" if difference < ROUND_OFF else f"{difference:.1e}")
        rows.append(cells)
    return Table(header, rows)


GRADIENT_MODELS = ("minGRU", "minGRU, keep bias", "scalar SSM (Mamba-2)", "Gated DeltaNet")
"""The registry's models whose gradient over distance Chapter 6 adds to its figure."""

GRADIENT_NAMES = {"minGRU": ("minGRU", "minGRU"),
                  "minGRU, keep bias": ("minGRU with keep bias", "带保留偏置的 minGRU"),
                  "scalar SSM (Mamba-2)": ("scalar SSM (Mamba-2)", "标量 SSM（Mamba-2）"),
                  "Gated DeltaNet": ("Gated DeltaNet", "门控 DeltaNet")}
"""The names of :data:`GRADIENT_MODELS` in both languages, as tables and figures show them."""


def gradient_ratio_draws(names: Sequence[str] = GRADIENT_MODELS, steps: int = 201,
                         draws: int = 10, shape: ModelShape = ModelShape(), batch: int = 4
                         ) -> dict[str, torch.Tensor]:
    """|dL/dx_{T-d}| / |dL/dx_T| for d = 0 .. steps - 1 at initialisation, in float64, for
    every model of ``names`` (registry kinds) and every draw: {name: (draws, steps)} (Chapter
    6, "One recurrence for every model"). Draw i initialises the model from seed i and probes
    it as Chapter 6's summary does (:func:`longdep.measure.gradients.distance_profile` with
    seed i, a model reading ``shape.width`` features); a page reads the median and range."""
    names = list(names)
    for name in names:
        if name not in KIND:
            raise ValueError(f"names must be models of the registry, got {name!r}")
    check.int_range(2, None, steps=steps)
    check.positive(draws=draws, batch=batch)
    check.instance(shape, "shape", ModelShape)
    ratios = {}
    for name in names:
        rows = []
        for draw in range(draws):
            manual_seed(draw)
            model = KIND[name].build(shape, shape.width).double()
            rows.append(ratios_by_distance(distance_profile(model, steps, shape.width, batch,
                                                            draw)))
        ratios[name] = torch.stack(rows)
    return ratios


def keep_product_ratios(name: str = "minGRU", steps: int = 201, draws: int = 10,
                        shape: ModelShape = ModelShape(), batch: int = 4) -> torch.Tensor:
    """The product of minGRU's keep gates over the distance, as the gradient would carry it:
    entry (i, d) is |u * prod_{r=T-d+1..T} (1 - z_r)| / |u|, the norm over batch and features
    of dL/dh_{T-d} for L = u . h_T, with the model, the input and u of draw i of
    :func:`gradient_ratio_draws` (Chapter 6, "One recurrence for every model"). Computed from
    the gates alone, no autograd. Returns a (draws, steps) float64 tensor."""
    if name not in ("minGRU", "minGRU, keep bias"):
        raise ValueError(f"name must be 'minGRU' or 'minGRU, keep bias', got {name!r}")
    check.int_range(2, None, steps=steps)
    check.positive(draws=draws, batch=batch)
    check.instance(shape, "shape", ModelShape)
    rows = []
    for draw in range(draws):
        manual_seed(draw)
        model = KIND[name].build(shape, shape.width).double()
        generator = seeded_generator(draw)  # as distance_profile draws u, then x
        u = torch.randn(shape.width, dtype=F64, generator=generator)
        x = torch.randn(steps, batch, shape.width, dtype=F64, generator=generator)
        with torch.no_grad():
            keep, _ = model.keep_and_write(x.flip(0).transpose(0, 1))  # (batch, time, hidden)
        later = keep[:, 1:].flip(1).cumprod(1).flip(1)  # entry k: prod of keep_r for r > k
        products = torch.cat([later, torch.ones_like(keep[:, :1])], dim=1)
        norms = (u * products).norm(dim=(0, 2))  # (time,)
        rows.append(norms.flip(0) / norms[-1])
    return torch.stack(rows)


def per_step_factors(ratios: torch.Tensor, fit: tuple[int, int] = (20, 200)) -> torch.Tensor:
    """The factor by which each row of ``ratios`` (draws, steps), a gradient ratio against the
    distance d (entry d), shrinks per step, fitted over d in [fit[0], fit[1]] (Chapter 6,
    "minGRU removed the nonlinearity, not the vanishing"): Chapter 2's
    :func:`~longdep.experiments.vanishing.fitted_rates`. Returns (draws,)."""
    return fitted_rates(ratios, fit)

"""Chapter 3's experiments on the LSTM: the gradient along the cell with the gates' paths cut,
measured over many weight draws at once ("Measuring the gradient over distance"), the one-step
factors against the two-step Jacobian ("The product of forget gates"), and the cost of a
sequential forward pass ("Where it stops: one step after another").
"""

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from longdep.experiments.registry import KIND, ModelShape
from longdep.measure.cost import seconds_per_call
from longdep.measure.gradients import (
    cell_state_jacobian,
    cell_state_path,
    forget_product_norms,
    input_gradient_norms,
)
from longdep.models import _checks as check
from longdep.models.lstm import LSTM
from longdep.seeds import manual_seed, seeded_generator


def with_forget_bias(lstm: LSTM, forget_bias: float) -> LSTM:
    """A copy of ``lstm`` with the forget gate's bias set to ``forget_bias`` (in ``bias_ih``;
    ``bias_hh``'s forget slice 0) and every other weight the same: one weight draw, several
    biases (Chapter 3, "Measuring the gradient over distance")."""
    check.instance(lstm, "lstm", LSTM)
    if isinstance(forget_bias, bool) or not isinstance(forget_bias, (int, float)):
        raise TypeError(f"forget_bias must be a number, got {type(forget_bias).__name__}")
    model, n = copy.deepcopy(lstm), lstm.hidden_size
    with torch.no_grad():
        model.bias_ih[n : 2 * n] = forget_bias
        model.bias_hh[n : 2 * n] = 0.0
    model.forget_bias = float(forget_bias)
    return model


class CellPathOnly(nn.Module):
    """The LSTM's forward pass with h_{t-1} detached where it enters the gates, the truncation
    of the 1997 LSTM (Chapter 3, "Measuring the gradient over distance"). The values are the
    LSTM's; the gradient reaches x_k only through the gates of step k, then along the cell,
    dC_t/dC_{t-1} = diag(f_t), then out through h_T. Maps x (batch, time, input) to
    h (batch, time, hidden)."""

    def __init__(self, lstm: LSTM):
        super().__init__()
        check.instance(lstm, "lstm", LSTM)
        self.lstm = lstm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lstm = self.lstm
        check.sequence(x, lstm.input_size, like=lstm.weight_ih)
        h = c = x.new_zeros(x.size(0), lstm.hidden_size)
        outputs = []
        for input_part in lstm.input_parts(x).unbind(1):  # (batch, 4 hidden)
            i, f, g, o = lstm.gates(input_part, h.detach())
            c = f * c + i * g
            outputs.append(h := o * torch.tanh(c))
        return torch.stack(outputs, dim=1)


def cell_path_only(lstm: LSTM) -> CellPathOnly:
    """:class:`CellPathOnly` of ``lstm``."""
    return CellPathOnly(lstm)


class Applied(nn.Module):
    """``function(model, x)`` as a module's forward, so that it can run with other weights."""

    def __init__(self, model: nn.Module, function: Callable):
        super().__init__()
        self.model, self.function = model, function

    def forward(self, x: torch.Tensor):
        return self.function(self.model, x)


def over_draws(function: Callable, models: Sequence[nn.Module]) -> Callable:
    """``function(model, x)`` for every model of ``models`` (weight draws of one architecture)
    in one computation, under vmap over their stacked weights (Chapter 3). The result maps
    x (draws * batch, time, features), draw i's sequences the i-th block of the batch, to
    ``function``'s outputs with draws and batch merged again: what one call per draw would
    give, at the per-operation cost of one draw."""
    if not isinstance(models, (list, tuple)) or not models:
        raise TypeError(f"models must be a non-empty list of modules, got {check.describe(models)}")
    params, buffers = stack_module_state(list(models))
    applied = Applied(copy.deepcopy(models[0]).to("meta"), function)
    weights = ({f"model.{k}": v for k, v in params.items()},
               {f"model.{k}": v for k, v in buffers.items()})

    def one(p, b, x):
        return functional_call(applied, (p, b), (x,))

    def merged(out):  # a tensor, or a (named) tuple of them, nested as a model returns them
        if isinstance(out, torch.Tensor):
            return out.flatten(0, 1)
        parts = [merged(part) for part in out]
        return type(out)(*parts) if hasattr(out, "_fields") else type(out)(parts)

    return lambda x: merged(vmap(one)(*weights, x.unflatten(0, (len(models), -1))))


@dataclass
class ReachDraws:
    """What :func:`reach_over_draws` measures, every curve a (draws, window + 1) tensor indexed
    by the distance d from the last step: ``measured`` ||dL/dx_{T-d}|| per model, and for each
    LSTM ``cell_path`` (:class:`CellPathOnly`) and ``forget_products`` (the norm of prod f_t);
    ``scaled`` the bias-1 LSTM with W_hh times s; ``step_norms`` the spectral norms of the
    one-step factors D_t + R_t after the burn-in, (draws, sequences * steps), and
    ``mean_forget`` the mean forget gate there, (draws,), keyed by (forget bias, s)."""

    measured: dict[str, torch.Tensor]
    cell_path: dict[str, torch.Tensor]
    forget_products: dict[str, torch.Tensor]
    scaled: dict[str, torch.Tensor]
    step_norms: dict[tuple[float, int], torch.Tensor]
    mean_forget: dict[tuple[float, int], torch.Tensor]


def scaled_lstm(lstm: LSTM, forget_bias: float, scale: float) -> LSTM:
    """:func:`with_forget_bias` of ``lstm`` with W_hh (all four blocks) times ``scale``."""
    model = with_forget_bias(lstm, forget_bias)
    with torch.no_grad():
        model.weight_hh.mul_(scale)
    return model


def forget_gates(lstm: LSTM, x: torch.Tensor) -> torch.Tensor:
    """The forget gates f_t (batch, time, hidden) of ``lstm`` over x (batch, time, input), from
    zero state."""
    h = c = x.new_zeros(x.size(0), lstm.hidden_size)
    gates = []
    for input_part in lstm.input_parts(x).unbind(1):  # (batch, 4 hidden)
        gates.append(lstm.gates(input_part, h)[1])
        h, c = lstm.update(input_part, (h, c))
    return torch.stack(gates, dim=1)


def by_draw(function: Callable, models: Sequence[nn.Module], x: torch.Tensor,
            window: int | None = None) -> torch.Tensor:
    """The gradient norms by distance of every model, each on its own block of x (the blocks
    stacked along the batch, one per model, in the models' order): (models, window + 1), entry d
    at distance d from the last step. ``function(model, x)`` is the forward pass measured."""
    norms = input_gradient_norms(over_draws(function, models), x, groups=len(models))
    return norms.flip(1)[:, : None if window is None else window + 1]


def reach_over_draws(draws: int = 10, biases: Sequence[float] = (0.0, 1.0, 3.0),
                     scales: Sequence[int] = (3, 10), window: int = 300, burn_in: int = 100,
                     batch: int = 4, step_batch: int = 2, step_window: int = 100,
                     step_scales: Sequence[tuple[float, int]] = (), seed: int = 0
                     ) -> ReachDraws:
    """The gradient over distance of a tanh RNN, an LSTM of each forget bias in ``biases`` (one
    weight draw, only the bias differs) and a GRU at initialisation, for ``draws`` weight draws
    at once (:func:`over_draws`), in float64 (Chapter 3, "Measuring the gradient over
    distance"). Draw i is seeded with ``seed + i`` and gets ``batch`` Gaussian sequences of
    ``burn_in + window + 1`` steps (the first ``burn_in`` let the states settle); L is the sum
    of the last output. ``scales`` multiply W_hh of the bias-1 LSTM; the one-step factors are
    measured over ``step_window`` steps after the burn-in of the first ``step_batch`` sequences,
    for every bias at s = 1 and for every (bias, s) of ``step_scales`` and (1, s) of ``scales``.
    """
    check.positive(draws=draws, window=window, batch=batch, step_batch=step_batch,
                   step_window=step_window)
    check.int_range(0, None, burn_in=burn_in)
    if step_batch > batch or step_window > window:
        raise ValueError(f"step_batch and step_window must be at most batch and window, got "
                         f"{step_batch} > {batch} or {step_window} > {window}")
    shape = replace(ModelShape(), forget_bias=0.0)
    models = {name: [] for name in ("tanh RNN", "LSTM", "GRU")}
    inputs = []
    for i in range(draws):
        manual_seed(seed + i)
        for name, draw_models in models.items():
            draw_models.append(KIND[name].build(shape).double())
        inputs.append(torch.randn(batch, burn_in + window + 1, shape.input_size,
                                  dtype=torch.float64, generator=seeded_generator(seed + i)))
    x = torch.cat(inputs)  # (draws * batch, time, features), draw by draw
    call = nn.Module.__call__
    settings = [*((b, 1) for b in biases), *((1.0, s) for s in scales)]
    lstms = [scaled_lstm(m, b, s) for b, s in settings for m in models["LSTM"]]
    curves = by_draw(call, lstms, x.repeat(len(settings), 1, 1), window).split(draws)
    names = [f"LSTM, forget bias {b:.0f}" for b in biases]
    measured = {"tanh RNN": by_draw(call, models["tanh RNN"], x, window),
                **dict(zip(names, curves)), "GRU": by_draw(call, models["GRU"], x, window)}
    scaled = {f"s = {s}": curve for s, curve in zip(scales, curves[len(biases):])}
    biased = lstms[: len(biases) * draws]
    repeated = x.repeat(len(biases), 1, 1)
    cell_path = dict(zip(names, by_draw(call, [CellPathOnly(m) for m in biased], repeated,
                                        window).split(draws)))
    gates = over_draws(forget_gates, biased)(repeated).unflatten(0, (len(biased), -1))
    products = torch.stack([forget_product_norms(g).flip(0)[: window + 1] for g in gates])
    forget_products = dict(zip(names, products.split(draws)))
    step_settings = list(dict.fromkeys([*settings, *step_scales]))
    steps_x = x.unflatten(0, (draws, -1))[:, :step_batch, : burn_in + step_window].flatten(0, 1)
    path = over_draws(cell_state_path, [scaled_lstm(m, b, s) for b, s in step_settings
                                        for m in models["LSTM"]])(
        steps_x.repeat(len(step_settings), 1, 1))
    norms = path.step_norms[:, burn_in:].unflatten(0, (len(step_settings), draws, -1))
    means = path.forget_gates[:, burn_in:].unflatten(0, (len(step_settings), draws, -1))
    return ReachDraws(measured, cell_path, forget_products, scaled,
                      dict(zip(step_settings, norms.flatten(2))),
                      dict(zip(step_settings, means.flatten(2).mean(2))))


def two_step_cell_jacobians(lstm: LSTM, x: torch.Tensor, c: torch.Tensor, o: torch.Tensor
                            ) -> tuple[torch.Tensor, torch.Tensor]:
    """dC_{t+1}/dC_{t-1} two ways, for the LSTM state h_{t-1} = o * tanh(c), C_{t-1} = c
    (each (batch, hidden)) and inputs x (batch, 2, input) (Chapter 3, "The product of forget
    gates"): the product of the one-step factors (D + R) of
    :func:`longdep.measure.gradients.cell_state_jacobian`, each taken with the previous output
    gate held fixed, and autograd's exact Jacobian, in which C_{t-1} also reaches o_t through
    h_{t-1}. Returns (product, exact), each (batch, hidden, hidden)."""
    check.instance(lstm, "lstm", LSTM)
    check.sequence(x, lstm.input_size, like=lstm.weight_ih)
    if x.size(1) != 2:
        raise ValueError(f"x must hold exactly 2 steps, got {x.size(1)}")
    for name, value in (("c", c), ("o", o)):
        if not isinstance(value, torch.Tensor) or value.shape != (x.size(0), lstm.hidden_size):
            raise ValueError(f"{name} must be a tensor of shape {(x.size(0), lstm.hidden_size)}, "
                             f"got {tuple(getattr(value, 'shape', ()))}")
    first, second = x.unbind(1)
    h = o * torch.tanh(c)
    o_next = lstm.gates(lstm.input_parts(first), h)[3]
    h_next, c_next = lstm.step(first, (h, c))
    factors = [sum(cell_state_jacobian(lstm, first, c, o)),
               sum(cell_state_jacobian(lstm, second, c_next, o_next))]

    def two_steps(c0: torch.Tensor) -> torch.Tensor:
        state = lstm.step(first, (o * torch.tanh(c0), c0))
        return lstm.step(second, state)[1]

    blocks = torch.autograd.functional.jacobian(two_steps, c)  # (batch, n, batch, n)
    exact = blocks.diagonal(dim1=0, dim2=2).permute(2, 0, 1)
    return factors[1] @ factors[0], exact


@torch.no_grad()
def sequential_cost(
    lstm: LSTM, lengths: Sequence[int], positions: int = 4096, repeats: int = 3
) -> dict[str, list[float]]:
    """Forward time in seconds of the same work, ``positions`` input vectors, cut into sequences
    of length T (x of shape (positions // T, T, input)) for each T in ``lengths`` (Chapter 3,
    "Where it stops: one step after another"). Three ways to do it:

    - ``"our LSTM (Python loop)"``: ``lstm(x)``, T steps that each wait for the previous one;
    - ``"torch.nn.LSTM (compiled loop)"``: the same through PyTorch's C++ loop;
    - ``"all positions as one batch"``: :meth:`LSTM.update` applied once to all positions, the same
      matrix products and gate functions with nothing to wait for. (Its result is not the LSTM's:
      every position starts from h = c = 0; it shows what parallelism over time would buy.)
    """
    check.instance(lstm, "lstm", LSTM)
    if isinstance(positions, bool) or not isinstance(positions, int) or positions < 1:
        raise ValueError(f"positions must be an int of at least 1, got {positions!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int of at least 1, got {repeats!r}")
    if not len(lengths) or any(not isinstance(steps, int) for steps in lengths):
        raise TypeError(f"lengths must be a non-empty sequence of ints, got {lengths!r}")
    if any(steps < 1 or positions % steps for steps in lengths):
        raise ValueError(f"every length must be a positive divisor of positions={positions}")
    compiled = lstm.to_torch()
    rows = torch.zeros(positions, lstm.hidden_size, dtype=lstm.weight_ih.dtype)
    times: dict[str, list[float]] = {
        "our LSTM (Python loop)": [],
        "torch.nn.LSTM (compiled loop)": [],
        "all positions as one batch": [],
    }
    for steps in lengths:
        x = torch.randn(positions // steps, steps, lstm.input_size, dtype=lstm.weight_ih.dtype)
        runs = (  # each binds this length's x
            lambda x=x: lstm(x),
            lambda x=x: compiled(x),
            lambda x=x: lstm.update(lstm.input_parts(x.flatten(0, 1)), (rows, rows)),
        )
        for name, run in zip(times, runs):
            times[name].append(seconds_per_call(run, repeats))
    return times

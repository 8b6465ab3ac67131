"""Gradient measurements: how much of a loss at the end of a sequence reaches each earlier step.

Measure in float64: over a few hundred steps the ratios fall below float32's smallest normal
number (about 1e-38). A norm that overflowed is reported as ``inf``, never as NaN.

Also here: the ingredients of Chapter 2's bound (gamma, norms of matrix powers), the LSTM's
cell-state Jacobian (Chapter 3), the softmax Jacobian (Chapter 4) and the SSM's decay products
(Chapter 6). Gradients through stacks of Transformer layers are in :mod:`longdep.measure.layers`.

Arguments are checked with the models' own checks (:mod:`longdep.models._checks`): a wrong type
raises ``TypeError``, a wrong value or shape ``ValueError`` naming the argument; empty inputs
(batch or time of size 0) are refused. NaN and inf in the inputs are not checked: a norm that
comes out non-finite is reported as ``inf`` where the docstring says so.
"""

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import nn

from longdep.measure.bptt import activation_derivative
from longdep.models import _checks as check
from longdep.models.lstm import LSTM
from longdep.models.rnn import ElmanRNN
from longdep.models.ssm import SelectiveSSM
from longdep.seeds import seeded_generator


def finite_or_inf(norms: torch.Tensor) -> torch.Tensor:
    """Replace every non-finite norm by +inf: an overflowed gradient is infinitely large, not
    NaN."""
    check.tensor(norms, "norms", "(...)", 0)
    return torch.where(torch.isfinite(norms), norms, torch.full_like(norms, float("inf")))


def norm_without_overflow(tensor: torch.Tensor) -> torch.Tensor:
    """The 2-norm of all entries, computed as m * ||tensor / m|| with m = max |entry|.

    The plain formula squares the entries and overflows once they pass about 1e154 in float64;
    this overflows only when the norm itself is too large to represent (then it is ``inf``).
    """
    check.tensor(tensor, "tensor", "(...)", 0)
    largest = tensor.abs().max()
    if largest == 0 or not torch.isfinite(largest):
        return tensor.norm()
    return largest * (tensor / largest).norm()


def last_output_sum(outputs: torch.Tensor) -> torch.Tensor:
    """The default probe loss: the sum of the last step's outputs, L = sum_i y_{T,i}."""
    check.tensor(outputs, "outputs", "(batch, time, features)", 2)
    return outputs[:, -1].sum()


def input_gradient_norms(
    forward: Callable[[torch.Tensor], torch.Tensor | tuple],
    x: torch.Tensor,
    loss_fn: Callable[[torch.Tensor], torch.Tensor] = last_output_sum,
    groups: int | None = None,
) -> torch.Tensor:
    """Norm of dL/dx_k for every step k, from one backward pass.

    forward maps x (batch, time, features) to outputs (batch, time, features') or to a tuple whose
    first element is that; L = loss_fn(outputs). Returns a (time,) tensor; entry k is the norm over
    batch and features of dL/dx_k, so the distance from the last step is time - 1 - k. With
    ``groups``, the batch is that many equal groups of sequences (one per weight draw of a
    forward that runs several draws at once, Chapter 3) and the norms are taken per group:
    a (groups, time) tensor.
    """
    check.callables(forward=forward, loss_fn=loss_fn)
    check.tensor(x, "x", "(batch, time, features)", 3)
    if x.dim() != 3:
        raise ValueError(f"x must have shape (batch, time, features), got {tuple(x.shape)}")
    if groups is not None:
        check.positive(groups=groups)
        if x.size(0) % groups:
            raise ValueError(f"groups must divide the batch of x ({x.size(0)}), got {groups}")
    x = x.detach().requires_grad_()
    outputs = check.first_output(forward(x))
    (grad,) = torch.autograd.grad(loss_fn(outputs), x)
    if groups is None:
        return finite_or_inf(grad.norm(dim=(0, 2)))
    return finite_or_inf(grad.unflatten(0, (groups, -1)).norm(dim=(1, 3)))


def state_gradient_norms(
    model: torch.nn.Module,
    x: torch.Tensor,
    loss_fn: Callable[[torch.Tensor], torch.Tensor] = last_output_sum,
    h0: torch.Tensor | None = None,
) -> torch.Tensor:
    """Norm of dL/dh_k for every step k, from one backward pass (Chapter 2, "Measuring it right").

    The model is unrolled with its ``step(x_t, h)`` method (as :class:`longdep.models.rnn.ElmanRNN`
    has), keeping each state h_k as its own tensor, so that one call of ``torch.autograd.grad``
    returns dL/dh_k for all of them. x is (batch, time, features), h0 is (batch, hidden) or None
    for zeros; L = loss_fn(states) with states (batch, time, hidden). Returns a (time,) tensor:
    entry k is the norm over batch and features of dL/dh_k (distance time - 1 - k from the last
    step), ``inf`` where the backward pass overflowed.
    """
    check.instance(model, "model", "step", "input_size", "hidden_size")
    check.callables(loss_fn=loss_fn)
    check.sequence(x, model.input_size, like=next(model.parameters(), None)
                   if isinstance(model, nn.Module) else None)
    h0 = check.state_or_zeros(h0, x, model.hidden_size)
    # Every state depends on h0, so the graph exists even for a model without parameters.
    h, states = h0.detach().requires_grad_(), []
    with torch.enable_grad():
        for t in range(x.size(1)):
            h = model.step(x[:, t], h)
            states.append(h)
        # A state the loss does not depend on gets a zero gradient instead of an error.
        grads = torch.autograd.grad(loss_fn(torch.stack(states, dim=1)), states,
                                    allow_unused=True, materialize_grads=True)
    return finite_or_inf(torch.stack([norm_without_overflow(grad) for grad in grads]))


def ratios_by_distance(norms: torch.Tensor) -> torch.Tensor:
    """Turn per-step norms (time,) into ratios by distance: entry d is norms[-1 - d] / norms[-1].

    With the loss on the last step only, entry d is ||dL/dh_{T-d}|| / ||dL/dh_T||, the quantity
    that the bound (gamma sigma_max)^d of Chapter 2 caps.
    """
    check.tensor(norms, "norms", "(time,)", floating=False)
    if norms.dim() != 1 or norms.numel() == 0:
        raise ValueError(
            f"norms must be a non-empty (time,) tensor, got shape {tuple(norms.shape)}"
        )
    if not (torch.isfinite(norms[-1]) and norms[-1] > 0):
        raise ValueError(
            f"the last step's norm must be finite and positive, got {norms[-1].item()}"
        )
    return norms.flip(0) / norms[-1]


@torch.no_grad()
def step_jacobian_norms(rnn: ElmanRNN, x: torch.Tensor) -> torch.Tensor:
    """Spectral norm of each factor dh_t/dh_(t-1) = diag(phi'(a_t)) W_hh (Chapter 2, "Saturation").

    x (batch, time, input) -> (batch, time). The bound of Chapter 2 replaces each factor's norm by
    gamma * sigma_max(W_hh); where units saturate (phi'(a_t) near 0) the true factors are smaller.
    """
    derivative = activation_derivatives(rnn, x)  # checks rnn and x
    return torch.linalg.matrix_norm(derivative[..., None] * rnn.weight_hh, ord=2)


@torch.no_grad()
def activation_derivatives(rnn: ElmanRNN, x: torch.Tensor) -> torch.Tensor:
    """phi'(a_t) of every unit at every step, (batch, time, hidden), for x (batch, time, input):
    the diagonal factors of the Jacobian product. Values near 0 are saturated units (Chapter 2,
    "Saturation")."""
    check.instance(rnn, "rnn", ElmanRNN)
    pre, states = rnn.pre_activations(x)
    return activation_derivative(rnn, pre, states)


def readout_loss(direction: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """The probe loss L = sum over the batch of direction . y_last (Chapter 4, "Gradient versus
    distance").

    A fixed random direction instead of :func:`last_output_sum`: the sum of a
    LayerNorm's output over its features is a constant (the sum of its bias), so its gradient
    through a Post-LN layer is exactly zero.
    """
    check.tensor(direction, "direction", "(features,)", 1)
    if direction.dim() != 1:
        raise ValueError(f"direction must have shape (features,), got {tuple(direction.shape)}")
    return lambda outputs: (outputs[:, -1] @ direction).sum()


def distance_profile(model: nn.Module, steps: int, features: int, batch: int = 2,
                     seed: int = 0) -> torch.Tensor:
    """Norm of dL/dx_k for every position k of a random float64 input (Chapter 4, "Gradient
    versus distance").

    ``model`` maps (batch, time, features) to outputs of the same shape (or a tuple starting with
    them, as the recurrent layers return); L = u . y_last summed over the batch for a random unit
    direction u (:func:`readout_loss`). Input and direction come from a generator seeded with
    ``seed``: models compared at one length see the same input, and inputs of different lengths
    share their last positions, so the last query is the same. Returns a (steps,) tensor;
    entry k is at distance steps - 1 - k from the last position.
    """
    check.callables(model=model)
    check.positive(steps=steps, features=features, batch=batch)
    generator = seeded_generator(seed)
    direction = torch.randn(features, dtype=torch.float64, generator=generator)
    # Drawn from the last position backwards: sequences of any length end with the same inputs.
    x = torch.randn(steps, batch, features, dtype=torch.float64, generator=generator)
    x = x.flip(0).transpose(0, 1)
    return input_gradient_norms(model, x, readout_loss(direction / direction.norm()))


def activation_gamma(
    activation: Callable[[torch.Tensor], torch.Tensor],
    half_width: float = 10.0,
    spacing: float = 1e-4,
) -> tuple[float, float]:
    """gamma = max_a phi'(a), found numerically (Chapter 2, "The bound").

    phi' is evaluated by autograd in float64 on the grid of multiples of ``spacing`` in
    [-half_width, half_width] (0 is on the grid exactly); returns (gamma, the a of the maximum).
    """
    check.callables(activation=activation)
    check.finite(half_width=half_width, spacing=spacing)
    if not 0 < spacing <= half_width:
        raise ValueError(f"need 0 < spacing <= half_width, got {spacing}, {half_width}")
    count = round(half_width / spacing)
    a = (torch.arange(-count, count + 1, dtype=torch.float64) * spacing).requires_grad_()
    (derivative,) = torch.autograd.grad(activation(a).sum(), a)
    best = derivative.argmax()
    return derivative[best].item(), a[best].item()


def matrix_power_norms(matrix: torch.Tensor, max_power: int) -> torch.Tensor:
    """Spectral norms ||W^k||_2 for k = 0 .. max_power, a (max_power + 1,) tensor (Chapter 2,
    "Eigenvalues versus singular values"). For a linear RNN, W^k is the Jacobian dh_t/dh_(t-k)."""
    check.tensor(matrix, "matrix", "(n, n)", 2)
    if matrix.dim() != 2 or matrix.size(0) != matrix.size(1):
        raise ValueError(f"matrix must be square, got shape {tuple(matrix.shape)}")
    check.int_range(0, None, max_power=max_power)
    power, norms = torch.eye(matrix.size(0), dtype=matrix.dtype), []
    for _ in range(max_power + 1):
        norms.append(torch.linalg.matrix_norm(power, ord=2))
        power = matrix @ power
    return torch.stack(norms)


def cell_state_jacobian(
    lstm: LSTM, x_t: torch.Tensor, c_prev: torch.Tensor, o_prev: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """dC_t/dC_{t-1} by the formula of Chapter 3 ("The gradient through the cell state"), split
    into its two paths.

    x_t (batch, input); c_prev = C_{t-1} and o_prev = o_{t-1}, each (batch, hidden), so that
    h_{t-1} = o_{t-1} * tanh(C_{t-1}). With W_hi, W_hf, W_hg the gates' blocks of ``weight_hh``,

        dC_t/dC_{t-1} = diag(f_t)
            + [diag(C_{t-1} f_t (1 - f_t)) W_hf + diag(g_t i_t (1 - i_t)) W_hi
               + diag(i_t (1 - g_t^2)) W_hg] diag(o_{t-1} (1 - tanh^2 C_{t-1})).

    Returns the direct path diag(f_t) and the path through h_{t-1}, each (batch, hidden, hidden).
    """
    check.instance(lstm, "lstm", LSTM)
    check.step(x_t, c_prev, lstm.input_size, lstm.hidden_size, lstm.weight_ih, "c_prev")
    check.state(o_prev, "o_prev", tuple(c_prev.shape), x_t)
    h_prev = o_prev * torch.tanh(c_prev)
    i, f, g, _ = lstm.gates(lstm.input_parts(x_t), h_prev)
    w_i, w_f, w_g, _ = lstm.weight_hh.chunk(4, dim=0)
    to_gates = (
        (c_prev * f * (1 - f))[:, :, None] * w_f
        + (g * i * (1 - i))[:, :, None] * w_i
        + (i * (1 - g**2))[:, :, None] * w_g
    )
    through_h = to_gates * (o_prev * (1 - torch.tanh(c_prev) ** 2))[:, None, :]
    return torch.diag_embed(f), through_h


class CellStatePath(NamedTuple):
    """What :func:`cell_state_path` returns: the forget gates f_t (batch, time, hidden) and the
    spectral norm of the full dC_t/dC_{t-1} at every step (batch, time)."""

    forget_gates: torch.Tensor
    step_norms: torch.Tensor


@torch.no_grad()
def cell_state_path(lstm: LSTM, x: torch.Tensor) -> CellStatePath:
    """Run ``lstm`` over x (batch, time, input) from zero state, recording along the way the
    forget gates and the size of each step's cell-state Jacobian (Chapter 3, "Measuring the
    gradient over distance")."""
    check.instance(lstm, "lstm", LSTM)
    check.sequence(x, lstm.input_size, like=lstm.weight_ih)
    h = c = o = x.new_zeros(x.size(0), lstm.hidden_size)
    forget_gates, step_norms = [], []
    for x_t in x.unbind(1):
        direct, through_h = cell_state_jacobian(lstm, x_t, c, o)
        step_norms.append(torch.linalg.matrix_norm(direct + through_h, ord=2))
        _, f, _, o = lstm.gates(lstm.input_parts(x_t), h)  # o becomes o_{t-1} of the next step
        h, c = lstm.step(x_t, (h, c))
        forget_gates.append(f)
    return CellStatePath(torch.stack(forget_gates, dim=1), torch.stack(step_norms, dim=1))


def forget_product_norms(forget_gates: torch.Tensor) -> torch.Tensor:
    """Norm over batch and units of prod_{t=k+1}^{T} f_t for every step k; a (time,) tensor.

    forget_gates (batch, time, hidden). This is the direct path diag(f) alone would leave of
    dC_T/dC_k (entry T is the empty product, 1 per unit).
    """
    check.tensor(forget_gates, "forget_gates", "(batch, time, hidden)", 3)
    if forget_gates.dim() != 3:
        raise ValueError(f"forget_gates must have shape (batch, time, hidden), got "
                         f"{tuple(forget_gates.shape)}")
    logs = forget_gates[:, 1:].log()
    suffix_sums = torch.cat([logs.flip(1).cumsum(1).flip(1), torch.zeros_like(logs[:, :1])], 1)
    return suffix_sums.exp().norm(dim=(0, 2))


def softmax_jacobian_norm(weights: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of the softmax Jacobian diag(w) - w w^T, for weights (..., keys)."""
    check.tensor(weights, "weights", "(..., keys)", 1)
    jacobian = torch.diag_embed(weights) - weights[..., :, None] * weights[..., None, :]
    return torch.linalg.matrix_norm(jacobian)


@torch.no_grad()
def ssm_decay_products(ssm: SelectiveSSM, x: torch.Tensor) -> torch.Tensor:
    """dh_T/dh_k = prod_{r=k+1..T} Abar_r of a selective SSM for every k (Chapter 6, "State-space
    models"): its largest entry over batch, channels and states, a (time,) tensor.

    x (batch, time, d_model). At most 1 (no explosion), and it decays unless Delta -> 0.
    """
    check.instance(ssm, "ssm", SelectiveSSM)
    decay, _, _ = ssm.discretize(x)  # checks x
    later = torch.cat([decay[:, 1:], torch.ones_like(decay[:, :1])], dim=1)
    products = later.flip(1).cumprod(1).flip(1)
    return products.amax(dim=(0, 2, 3))

"""Gradient measurements: how much of a loss at the end of a sequence reaches each earlier step.

Measure in float64: over a few hundred steps the ratios fall below float32's smallest normal
number (about 1e-38). A norm that overflowed is reported as ``inf``, never as NaN.
"""

from collections.abc import Callable

import torch

from longdep.rnn import ElmanRNN, activation_derivative, check_sequence


def finite_or_inf(norms: torch.Tensor) -> torch.Tensor:
    """Replace every non-finite norm by +inf: an overflowed gradient is infinitely large, not NaN."""
    return torch.where(torch.isfinite(norms), norms, torch.full_like(norms, float("inf")))


def norm_without_overflow(tensor: torch.Tensor) -> torch.Tensor:
    """The 2-norm of all entries, computed as m * ||tensor / m|| with m = max |entry|.

    The plain formula squares the entries and overflows once they pass about 1e154 in float64;
    this overflows only when the norm itself is too large to represent (then it is ``inf``).
    """
    largest = tensor.abs().max()
    if largest == 0 or not torch.isfinite(largest):
        return tensor.norm()
    return largest * (tensor / largest).norm()


def last_output_sum(outputs: torch.Tensor) -> torch.Tensor:
    """The default probe loss: the sum of the last step's outputs, L = sum_i y_{T,i}."""
    return outputs[:, -1].sum()


def input_gradient_norms(
    forward: Callable[[torch.Tensor], torch.Tensor | tuple],
    x: torch.Tensor,
    loss_fn: Callable[[torch.Tensor], torch.Tensor] = last_output_sum,
) -> torch.Tensor:
    """Norm of dL/dx_k for every step k, from one backward pass.

    forward maps x (batch, time, features) to outputs (batch, time, features') or to a tuple whose
    first element is that; L = loss_fn(outputs). Returns a (time,) tensor; entry k is the norm over
    batch and features of dL/dx_k, so the distance from the last step is time - 1 - k.
    """
    if x.dim() != 3:
        raise ValueError(f"x must have shape (batch, time, features), got {tuple(x.shape)}")
    x = x.detach().requires_grad_()
    outputs = forward(x)
    if isinstance(outputs, tuple):
        outputs = outputs[0]
    (grad,) = torch.autograd.grad(loss_fn(outputs), x)
    return finite_or_inf(grad.norm(dim=(0, 2)))


def state_gradient_norms(
    model: torch.nn.Module,
    x: torch.Tensor,
    loss_fn: Callable[[torch.Tensor], torch.Tensor] = last_output_sum,
    h0: torch.Tensor | None = None,
) -> torch.Tensor:
    """Norm of dL/dh_k for every step k, from one backward pass (Chapter 2, "Measuring it right").

    The model is unrolled with its ``step(x_t, h)`` method (as :class:`longdep.rnn.ElmanRNN`
    has), keeping each state h_k as its own tensor, so that one call of ``torch.autograd.grad``
    returns dL/dh_k for all of them. x is (batch, time, features), h0 is (batch, hidden) or None
    for zeros; L = loss_fn(states) with states (batch, time, hidden). Returns a (time,) tensor:
    entry k is the norm over batch and features of dL/dh_k (distance time - 1 - k from the last
    step), ``inf`` where the backward pass overflowed.
    """
    check_sequence(x, model.input_size)
    if h0 is None:
        h0 = x.new_zeros(x.size(0), model.hidden_size)
    elif h0.shape != (x.size(0), model.hidden_size):
        raise ValueError(
            f"h0 must have shape (batch, hidden) = {(x.size(0), model.hidden_size)}, "
            f"got {tuple(h0.shape)}"
        )
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
    derivative = activation_derivatives(rnn, x)
    return torch.linalg.matrix_norm(derivative[..., None] * rnn.weight_hh, ord=2)


@torch.no_grad()
def activation_derivatives(rnn: ElmanRNN, x: torch.Tensor) -> torch.Tensor:
    """phi'(a_t) of every unit at every step, (batch, time, hidden), for x (batch, time, input):
    the diagonal factors of the Jacobian product. Values near 0 are saturated units (Chapter 2,
    "Saturation")."""
    pre, states = rnn.pre_activations(x)
    return activation_derivative(rnn, pre, states)

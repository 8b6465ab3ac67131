"""Gradient measurements: how much of a loss at the end of a sequence reaches each earlier step.

Measure in float64: over a few hundred steps the ratios fall below float32's smallest normal
number (about 1e-38). A norm that overflowed is reported as ``inf``, never as NaN.
"""

from collections.abc import Callable

import torch


def finite_or_inf(norms: torch.Tensor) -> torch.Tensor:
    """Replace every non-finite norm by +inf: an overflowed gradient is infinitely large, not NaN."""
    return torch.where(torch.isfinite(norms), norms, torch.full_like(norms, float("inf")))


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

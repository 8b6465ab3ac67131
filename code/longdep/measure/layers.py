"""Gradients through a stack of Transformer layers (Chapter 4, "Residual connections and layer
normalisation"; Chapter 5): the norm of dL/dh_l at every layer's input, for one stack or for many
draws of the weights at once, the stack's Jacobian, and the skip path alone.

Arguments are checked as in :mod:`longdep.measure.gradients`, whose readout loss this module
uses.
"""

import copy
from collections.abc import Sequence
from contextlib import contextmanager, nullcontext

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from longdep.measure.gradients import readout_loss
from longdep.models import _checks as check


@contextmanager
def skip_path_only(layers: Sequence[nn.Module]):
    """Within the block, the residual branches of these encoder layers pass no gradient.

    Forward hooks detach the outputs of each layer's ``self_attn`` and ``linear2`` (the last
    operation of its feed-forward branch), so the values are unchanged and a backward pass
    follows only the skip connections, with the LayerNorms on them (Chapter 4, "Residual
    connections and layer normalisation"). The hooks are removed on exit.
    """
    for layer in layers:
        check.instance(layer, "every layer", "self_attn", "linear2")
    handles = []
    for layer in layers:
        handles.append(layer.self_attn.register_forward_hook(
            lambda module, inputs, output: (output[0].detach(), *output[1:])))
        handles.append(layer.linear2.register_forward_hook(
            lambda module, inputs, output: output.detach()))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def layer_input_gradients(layers: Sequence[nn.Module], x: torch.Tensor,
                          direction: torch.Tensor) -> torch.Tensor:
    """Norm of dL/dh_l for the input h_l of every layer and for the output, one backward pass.

    ``layers`` map (batch, time, d_model) to the same shape (e.g.
    :class:`longdep.models.transformer.EncoderLayer`), h_0 = x and h_{l+1} = layers[l](h_l); the
    loss is L = direction . (last position of h_L). Returns a (len(layers) + 1,) tensor; entry l
    is the norm over batch, time and features, and the gradient reaching h_l has crossed
    len(layers) - l layers.
    """
    readout = readout_loss(direction)  # checks direction
    check_layers(layers)
    check.sequence(x, direction.numel())
    states = [x.detach().requires_grad_()]
    for layer in layers:
        states.append(layer(states[-1]))
    grads = torch.autograd.grad(readout(states[-1]), states)
    return torch.stack([grad.norm() for grad in grads])


def check_layers(layers) -> None:
    """Raise unless ``layers`` is a list, tuple or ModuleList of callables (the layers)."""
    if not isinstance(layers, (list, tuple, nn.ModuleList)):
        raise TypeError(f"layers must be a list of layers, got {check.describe(layers)}")
    check.callables(**{f"layers[{i}]": layer for i, layer in enumerate(layers)})


def layer_input_gradients_per_seed(stacks: Sequence[Sequence[nn.Module]], x: torch.Tensor,
                                   direction: torch.Tensor, skip_only: bool = False
                                   ) -> torch.Tensor:
    """:func:`layer_input_gradients` of several stacks of one architecture (one per draw of the
    weights) on the same x and direction, all at once: a (stacks, len(stack) + 1) tensor, row s
    equal to ``layer_input_gradients(stacks[s], x, direction)`` to round-off (Chapter 4,
    "Residual connections and layer normalisation").

    Layer l of every stack is run once, under ``torch.func.vmap`` over the stacks' parameters
    (stacked along a leading dimension), so the per-operation cost of these tiny layers is paid
    once for all draws; one backward pass then gives every draw its own gradients, since draw
    s's loss depends on draw s's parameters only. With ``skip_only`` the branches pass no
    gradient (:func:`skip_path_only`).
    """
    readout = readout_loss(direction)  # checks direction
    check.sequence(x, direction.numel())
    if not stacks or any(len(stack) != len(stacks[0]) or not len(stack) for stack in stacks):
        raise ValueError("stacks must be a non-empty list of stacks with the same number of "
                         "layers (at least one)")
    bases = [copy.deepcopy(layer).to("meta") for layer in stacks[0]]  # the architecture
    states = [x.detach().expand(len(stacks), *x.shape).clone().requires_grad_()]
    with skip_path_only(bases) if skip_only else nullcontext():
        for index, base in enumerate(bases):
            params, buffers = stack_module_state([stack[index] for stack in stacks])

            def layer(p, b, h, base=base):
                return functional_call(base, (p, b), (h,))

            states.append(vmap(layer)(params, buffers, states[-1]))
    loss = sum(readout(state) for state in states[-1])  # one term per draw
    grads = torch.autograd.grad(loss, states)
    return torch.stack([grad.flatten(1).norm(dim=1) for grad in grads], dim=1)


def stack_jacobian(layers: Sequence[nn.Module], x: torch.Tensor) -> torch.Tensor:
    """The Jacobian d(output)/dx of the stack of ``layers`` at x (1, time, d_model), flattened to
    a (time d_model, time d_model) matrix (Chapter 4, "Residual connections and layer
    normalisation")."""
    check.tensor(x, "x", "(1, time, d_model)", 3)
    if x.dim() != 3 or x.size(0) != 1:
        raise ValueError(f"x must have shape (1, time, d_model), got {tuple(x.shape)}")
    check_layers(layers)

    def stack(h: torch.Tensor) -> torch.Tensor:
        for layer in layers:
            h = layer(h)
        return h.flatten()

    return torch.autograd.functional.jacobian(stack, x).reshape(x.numel(), x.numel())

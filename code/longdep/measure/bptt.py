"""Backpropagation through time written by hand, with no autograd (Chapter 1, "BPTT by hand").

For the Elman network of :mod:`longdep.models.rnn`, :func:`bptt` computes the gradients of a
loss L = sum_t L_t from the chapter's equations, so that the tests can check the derivation
against autograd's.

Arguments are checked as in :mod:`longdep.models._checks` (``TypeError`` for a wrong type,
``ValueError`` naming the argument for a wrong value or shape, empty inputs refused); NaN and inf
propagate, unchecked.
"""

from typing import NamedTuple

import torch
from torch import nn

from longdep.models import _checks as check
from longdep.models.rnn import ElmanRNN


class BPTTGradients(NamedTuple):
    """What :func:`bptt` returns. Shapes: parameters as in :class:`ElmanRNN`; ``state_grads``
    (batch, time, hidden) is the total dL/dh_t; ``weight_hh_terms`` (time, hidden, hidden) holds the
    immediate term of each step, whose sum over time is ``weight_hh``."""

    weight_ih: torch.Tensor
    weight_hh: torch.Tensor
    bias_ih: torch.Tensor
    bias_hh: torch.Tensor
    state_grads: torch.Tensor
    weight_hh_terms: torch.Tensor


def activation_derivative(rnn: ElmanRNN, pre: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
    """phi'(a_t): 1 - h_t^2 for tanh, 1 for the identity, the indicator a_t > 0 for relu;
    pre and states (batch, time, hidden) as :meth:`ElmanRNN.pre_activations` returns them."""
    check.instance(rnn, "rnn", ElmanRNN)
    for name, tensor in (("pre", pre), ("states", states)):
        check.sequence(tensor, rnn.hidden_size, name, like=rnn.weight_ih)
    if rnn.nonlinearity == "tanh":
        return 1 - states**2
    if rnn.nonlinearity == "identity":
        return torch.ones_like(pre)
    return (pre > 0).to(pre.dtype)


@torch.no_grad()
def bptt(
    rnn: ElmanRNN,
    x: torch.Tensor,
    output_grads: torch.Tensor,
    h0: torch.Tensor | None = None,
) -> BPTTGradients:
    """Backpropagation through time by hand, no autograd (Chapter 1, "BPTT by hand").

    ``output_grads`` (batch, time, hidden) is dL_t/dh_t through step t's own output only. Walking
    back in time, the total gradient of the state is that plus what flows back from step t+1:

        dL/dh_t = dL_t/dh_t + W_hh^T diag(phi'(a_{t+1})) dL/dh_{t+1},

    and each step adds its immediate term diag(phi'(a_t)) dL/dh_t h_{t-1}^T to dL/dW_hh.
    """
    check.instance(rnn, "rnn", ElmanRNN)
    pre, states = rnn.pre_activations(x, h0)  # checks x and h0
    check.sequence(output_grads, rnn.hidden_size, "output_grads", like=states)
    if output_grads.shape != states.shape:
        raise ValueError(
            f"output_grads must have the states' shape {tuple(states.shape)}, "
            f"got {tuple(output_grads.shape)}"
        )
    batch, steps, hidden = states.shape
    previous = torch.cat([states.new_zeros(batch, 1, hidden) if h0 is None else h0[:, None],
                          states[:, :-1]], dim=1)
    derivative = activation_derivative(rnn, pre, states)
    state_grads = torch.empty_like(states)
    pre_grads = torch.empty_like(states)
    from_future = states.new_zeros(batch, hidden)
    for t in reversed(range(steps)):
        state_grads[:, t] = output_grads[:, t] + from_future
        pre_grads[:, t] = derivative[:, t] * state_grads[:, t]
        from_future = pre_grads[:, t] @ rnn.weight_hh
    weight_hh_terms = torch.einsum("bti,btj->tij", pre_grads, previous)
    return BPTTGradients(
        weight_ih=torch.einsum("bti,btj->ij", pre_grads, x),
        weight_hh=weight_hh_terms.sum(0),
        bias_ih=pre_grads.sum((0, 1)),
        bias_hh=pre_grads.sum((0, 1)),
        state_grads=state_grads,
        weight_hh_terms=weight_hh_terms,
    )


def readout_gradients(
    states: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients of L = sum over batch and time of cross_entropy(W_hy h_t + b_y, y_t), by hand.

    states (batch, time, hidden), weight (classes, hidden), bias (classes,), targets (batch, time).
    With p_t = softmax(W_hy h_t + b_y), dL_t/dz_t = p_t - onehot(y_t); returns dL_t/dh_t
    (batch, time, hidden), dL/dW_hy and dL/db_y.
    """
    check.tensor(states, "states", "(batch, time, hidden)", 3)
    check.tensor(weight, "weight", "(classes, hidden)", 2)
    check.tensor(bias, "bias", "(classes,)", 1)
    check.tensor(targets, "targets", "(batch, time)", 2, floating=False)
    if states.dim() != 3 or weight.shape != (bias.numel(), states.size(-1)) or bias.dim() != 1:
        raise ValueError(f"states (batch, time, hidden), weight (classes, hidden) and bias "
                         f"(classes,) do not fit: got {tuple(states.shape)}, "
                         f"{tuple(weight.shape)}, {tuple(bias.shape)}")
    if targets.shape != states.shape[:2]:
        raise ValueError(
            f"targets must have shape (batch, time) = {tuple(states.shape[:2])}, "
            f"got {tuple(targets.shape)}"
        )
    if targets.dtype != torch.int64 or targets.min() < 0 or targets.max() >= weight.size(0):
        raise ValueError(f"targets must be int64 classes in [0, {weight.size(0)}), got "
                         f"{targets.dtype} from {targets.min().item()} to {targets.max().item()}")
    probabilities = torch.softmax(states @ weight.T + bias, dim=-1)
    logit_grads = probabilities - nn.functional.one_hot(targets, weight.size(0)).to(states.dtype)
    return (
        logit_grads @ weight,
        torch.einsum("btc,bth->ch", logit_grads, states),
        logit_grads.sum((0, 1)),
    )


def loss_to_step_gradients(rnn: ElmanRNN, x: torch.Tensor, output_grads: torch.Tensor
                           ) -> torch.Tensor:
    """Norm of dL_t/dh_k for every loss step t and state step k <= t; a (time, time) matrix.

    Row t backpropagates L_t alone, so it shows how far back one loss term reaches.
    """
    check.instance(rnn, "rnn", ElmanRNN)
    check.sequence(x, rnn.input_size, like=rnn.weight_ih)
    check.sequence(output_grads, rnn.hidden_size, "output_grads", like=x)
    steps = x.size(1)
    norms = torch.zeros(steps, steps, dtype=x.dtype)
    for t in range(steps):
        only_t = torch.zeros_like(output_grads)
        only_t[:, t] = output_grads[:, t]
        state_grads = bptt(rnn, x, only_t).state_grads
        norms[t, : t + 1] = state_grads[:, : t + 1].norm(dim=(0, 2))
    return norms

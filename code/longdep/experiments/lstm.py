"""Chapter 3's experiments on the LSTM: the gradient along the cell with the gates' paths cut
("Measuring the gradient over distance"), the one-step factors against the two-step Jacobian
("The product of forget gates"), and the cost of a sequential forward pass ("Where it stops:
one step after another").
"""

import copy
from collections.abc import Sequence

import torch

from longdep.measure.cost import seconds_per_call
from longdep.measure.gradients import cell_state_jacobian
from longdep.models import _checks as check
from longdep.models.lstm import LSTM


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


def cell_path_only(lstm: LSTM):
    """The LSTM's forward pass with h_{t-1} detached where it enters the gates, the truncation
    of the 1997 LSTM (Chapter 3, "Measuring the gradient over distance"). The values are the
    LSTM's; the gradient reaches x_k only through the gates of step k, then along the cell,
    dC_t/dC_{t-1} = diag(f_t), then out through h_T. Returns a function of x (batch, time,
    input) -> h (batch, time, hidden)."""
    check.instance(lstm, "lstm", LSTM)

    def forward(x: torch.Tensor) -> torch.Tensor:
        check.sequence(x, lstm.input_size, like=lstm.weight_ih)
        h = c = x.new_zeros(x.size(0), lstm.hidden_size)
        outputs = []
        for input_part in lstm.input_parts(x).unbind(1):  # (batch, 4 hidden)
            i, f, g, o = lstm.gates(input_part, h.detach())
            c = f * c + i * g
            outputs.append(h := o * torch.tanh(c))
        return torch.stack(outputs, dim=1)

    return forward


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
        runs = (
            lambda x=x: lstm(x),
            lambda x=x: compiled(x),
            lambda x=x: lstm.update(lstm.input_parts(x.flatten(0, 1)), (rows, rows)),
        )
        for name, run in zip(times, runs):
            times[name].append(seconds_per_call(run, repeats))
    return times

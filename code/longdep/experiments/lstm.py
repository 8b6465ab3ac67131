"""Chapter 3's cost experiment: an LSTM's forward pass is sequential in time ("Where it stops:
one step after another").
"""

from collections.abc import Sequence

import torch

from longdep.measure.cost import seconds_per_call
from longdep.models.lstm import LSTM


@torch.no_grad()
def sequential_cost(
    lstm: LSTM, lengths: Sequence[int], positions: int = 4096, repeats: int = 3
) -> dict[str, list[float]]:
    """Forward time in seconds of the same work, ``positions`` input vectors, cut into sequences
    of length T (x of shape (positions // T, T, input)) for each T in ``lengths`` (Chapter 3,
    "Where it stops: one step after another"). Three ways to do it:

    - ``"our LSTM (Python loop)"``: ``lstm(x)``, T steps that each wait for the previous one;
    - ``"torch.nn.LSTM (compiled loop)"``: the same through PyTorch's C++ loop;
    - ``"all positions as one batch"``: :meth:`LSTM.cell` applied once to all positions, the same
      matrix products and gate functions with nothing to wait for. (Its result is not the LSTM's:
      every position starts from h = c = 0; it shows what parallelism over time would buy.)
    """
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
            lambda: lstm(x),
            lambda: compiled(x),
            lambda: lstm.cell(lstm.input_parts(x.flatten(0, 1)), (rows, rows)),
        )
        for name, run in zip(times, runs):
            times[name].append(seconds_per_call(run, repeats))
    return times

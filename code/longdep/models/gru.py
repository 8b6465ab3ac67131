"""The gated recurrent unit written from scratch (Chapter 3, "Gates and the cell state";
Cho et al. 2014).

One step of the GRU is, with sigma the logistic sigmoid and * the elementwise product,

    r_t = sigma(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)          (reset gate)
    z_t = sigma(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)          (update gate)
    n_t = tanh(W_in x_t + b_in + r_t * (W_hn h_{t-1} + b_hn))   (candidate)
    h_t = (1 - z_t) * n_t + z_t * h_{t-1},

the equations, gate order (reset, update, new) and parameter names of :class:`torch.nn.GRUCell`,
so that :meth:`GRU.from_torch` and :meth:`GRU.to_torch` only copy tensors. Along the direct path
dh_t/dh_{t-1} = diag(z_t) + (terms through the gates and n_t): z_t plays the forget gate's part,
and 1 - z_t the input gate's.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError).
NaN and inf are not checked, as in PyTorch: one in x_t or h_{t-1} propagates to every later step.
"""

import torch
from torch import Tensor, nn

try:  # inside the longdep package
    from . import _checks as check
    from . import _twins as twins
except ImportError:  # copied into a folder of its own, beside _checks.py and _twins.py
    import _checks as check
    import _twins as twins


NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


class GRU(nn.Module):
    """A one-layer GRU, batch first (Chapter 3). Parameters as in :class:`torch.nn.GRUCell`,
    gates stacked r, z, n: ``weight_ih`` (3 hidden, input), ``weight_hh`` (3 hidden, hidden),
    ``bias_ih``, ``bias_hh`` (3 hidden,), all from U(-1/sqrt(hidden), 1/sqrt(hidden))."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        check.positive(input_size=input_size, hidden_size=hidden_size)
        self.input_size, self.hidden_size = input_size, hidden_size
        self.weight_ih = nn.Parameter(torch.empty(3 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(3 * hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(3 * hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(3 * hidden_size))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -self.hidden_size**-0.5, self.hidden_size**-0.5)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}"

    def input_parts(self, x: Tensor) -> Tensor:
        """W_ih x + b_ih for x (..., input): the gates' share that needs no earlier state."""
        return x @ self.weight_ih.T + self.bias_ih  # (..., 3 hidden)

    def update(self, input_part: Tensor, h: Tensor) -> Tensor:
        """One step from the input's share (batch, 3 hidden) and h_{t-1} (batch, hidden)."""
        x_r, x_z, x_n = input_part.chunk(3, dim=-1)  # each (batch, hidden)
        h_r, h_z, h_n = torch.addmm(self.bias_hh, h, self.weight_hh.T).chunk(3, dim=-1)
        r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
        n = torch.tanh(x_n + r * h_n)  # the reset gate scales only h's share of n
        return n + z * (h - n)  # (1 - z) n + z h

    def step(self, x_t: Tensor, h: Tensor) -> Tensor:
        """One step: x_t (batch, input), h_{t-1} (batch, hidden) -> h_t (batch, hidden)."""
        check.step(x_t, h, self.input_size, self.hidden_size, self.weight_ih)
        return self.update(self.input_parts(x_t), h)

    def forward(self, x: Tensor, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """x (batch, time, input), h0 (batch, hidden) or None -> h (batch, time, hidden), h_T."""
        check.sequence(x, self.input_size, like=self.weight_ih)
        h, outputs = check.state_or_zeros(h0, x, self.hidden_size), []
        for input_part in self.input_parts(x).unbind(1):  # (batch, 3 hidden)
            outputs.append(h := self.update(input_part, h))
        return torch.stack(outputs, dim=1), h

    @classmethod
    def from_torch(cls, gru: nn.GRU) -> "GRU":
        """A copy of a one-layer, unidirectional :class:`torch.nn.GRU`, batch_first=True."""
        twins.torch_module(gru, nn.GRU, num_layers=1, bias=True, bidirectional=False,
                     batch_first=True)
        model = cls(gru.input_size, gru.hidden_size)
        return twins.copy_parameters(model, {name: getattr(gru, name + "_l0") for name in NAMES})

    def to_torch(self) -> nn.GRU:
        """The same function as a :class:`torch.nn.GRU` (batch_first=True): faster to train."""
        gru = nn.GRU(self.input_size, self.hidden_size, batch_first=True)
        return twins.copy_parameters(gru, {name + "_l0": getattr(self, name) for name in NAMES})

"""The long short-term memory network written from scratch (Chapter 3, "Gates and the cell state").

One step of the LSTM is, with sigma the logistic sigmoid and * the elementwise product,

    [i_t, f_t, g_t, o_t] = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh      (4 blocks of `hidden`)
    i_t, f_t, o_t = sigma(.),  g_t = tanh(.)
    c_t = f_t * c_{t-1} + i_t * g_t,        h_t = o_t * tanh(c_t),

the equations, gate order (input, forget, cell candidate, output) and parameter names of
:class:`torch.nn.LSTMCell`, so that :meth:`LSTM.from_torch` and :meth:`LSTM.to_torch` only copy
tensors.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError).
NaN and inf are not checked, as in PyTorch: one in x_t, h_{t-1} or c_{t-1} propagates to
(h_t, c_t) and, through the state, to every later step.
"""

import torch
from torch import Tensor, nn

try:  # inside the longdep package
    from . import _checks as check
    from . import _twins as twins
except ImportError:  # copied into a folder of its own, beside _checks.py and _twins.py
    import _checks as check
    import _twins as twins


State = tuple[Tensor, Tensor]
NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


class LSTM(nn.Module):
    """A one-layer LSTM, batch first (Chapter 3, "Gates and the cell state"). Parameters as in
    :class:`torch.nn.LSTMCell`, gates stacked i, f, g, o: ``weight_ih`` (4 hidden, input),
    ``weight_hh`` (4 hidden, hidden), ``bias_ih``, ``bias_hh`` (4 hidden,), from U(-1/sqrt(hidden),
    1/sqrt(hidden)) but for the forget gate's rows, ``forget_bias`` in ``bias_ih`` and 0 in
    ``bias_hh``: f = sigma(forget_bias) at zero input and state (1: Jozefowicz et al. 2015)."""

    def __init__(self, input_size: int, hidden_size: int, forget_bias: float = 0.0):
        super().__init__()
        check.positive(input_size=input_size, hidden_size=hidden_size)
        check.finite(forget_bias=forget_bias)
        self.input_size, self.hidden_size = input_size, hidden_size
        self.forget_bias = float(forget_bias)
        self.weight_ih = nn.Parameter(torch.empty(4 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(4 * hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(4 * hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(4 * hidden_size))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -self.hidden_size**-0.5, self.hidden_size**-0.5)
        with torch.no_grad():
            self.bias_ih[self.hidden_size : 2 * self.hidden_size] = self.forget_bias
            self.bias_hh[self.hidden_size : 2 * self.hidden_size] = 0.0

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, forget_bias={self.forget_bias}"

    def initial_state(self, x: Tensor, state: State | None) -> State:
        """(h0, c0), each (batch, hidden): zeros for ``state=None``, else the checked pair."""
        return check.state_or_zeros(state, x, self.hidden_size, ("h0", "c0"))

    def input_parts(self, x: Tensor) -> Tensor:
        """W_ih x + b_ih + b_hh for x (..., input): the gates' share that needs no earlier state."""
        return x @ self.weight_ih.T + (self.bias_ih + self.bias_hh)  # (..., 4 hidden)

    def gates(self, input_part: Tensor, h: Tensor) -> tuple[Tensor, ...]:
        """The gates i, f, g, o, each (batch, hidden), from the input's share and h_{t-1}."""
        pre = torch.addmm(input_part, h, self.weight_hh.T)  # (batch, 4 hidden)
        i, f, _, o = torch.sigmoid(pre).chunk(4, dim=-1)
        return i, f, torch.tanh(pre[:, 2 * self.hidden_size : 3 * self.hidden_size]), o

    def update(self, input_part: Tensor, state: State) -> State:
        """(h_t, c_t) from the input's share of the gates (batch, 4 hidden) and (h, c)_{t-1}."""
        i, f, g, o = self.gates(input_part, state[0])
        c = torch.addcmul(f * state[1], i, g)  # f c + i g: the cell state's additive path
        return o * torch.tanh(c), c

    def step(self, x_t: Tensor, state: State) -> State:
        """One step: x_t (batch, input), (h_{t-1}, c_{t-1}) each (batch, hidden) -> (h_t, c_t)."""
        check.step(x_t, state, self.input_size, self.hidden_size, self.weight_ih, ("h", "c"))
        return self.update(self.input_parts(x_t), state)

    def forward(self, x: Tensor, state: State | None = None) -> tuple[Tensor, State]:
        """x (batch, time, input), state (h0, c0) or None -> h (batch, time, hidden), (h_T, c_T)."""
        check.sequence(x, self.input_size, like=self.weight_ih)
        state, outputs = self.initial_state(x, state), []
        # The input's share of every step in one product: only h_{t-1}'s share waits.
        for input_part in self.input_parts(x).unbind(1):  # (batch, 4 hidden)
            outputs.append((state := self.update(input_part, state))[0])
        return torch.stack(outputs, dim=1), state

    @classmethod
    def from_torch(cls, lstm: nn.LSTM) -> "LSTM":
        """A copy of a one-layer, unidirectional :class:`torch.nn.LSTM`, batch_first=True."""
        twins.torch_module(lstm, nn.LSTM, num_layers=1, bias=True, bidirectional=False,
                     batch_first=True, proj_size=0)
        model = cls(lstm.input_size, lstm.hidden_size)
        return twins.copy_parameters(model, {name: getattr(lstm, name + "_l0") for name in NAMES})

    def to_torch(self) -> nn.LSTM:
        """The same function as a :class:`torch.nn.LSTM` (batch_first=True): faster to train."""
        lstm = nn.LSTM(self.input_size, self.hidden_size, batch_first=True)
        return twins.copy_parameters(lstm, {name + "_l0": getattr(self, name) for name in NAMES})

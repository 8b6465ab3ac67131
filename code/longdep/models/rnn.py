"""The Elman recurrent network (Chapter 1, "The Elman network"; Chapter 2 uses its linear form).

One step of the network is

    a_t = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh,        h_t = phi(a_t),

with phi = tanh, relu or the identity (a linear RNN, Chapter 2): the equations and parameter
names of :class:`torch.nn.RNNCell`, so :meth:`ElmanRNN.from_torch` only copies tensors.
Backpropagation through time by hand is in :mod:`longdep.measure.bptt`.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError).
NaN and inf are not checked, as in PyTorch: one in x_t or h_{t-1} propagates to h_t and, through
the state, to every later step. A relu or linear network whose states grow past the float range
gives inf, and then NaN (inf - inf in W_hh h), as torch.nn.RNN does: that is the explosion of
Chapter 2, returned as computed.
"""

import torch
from torch import Tensor, nn

try:  # inside the longdep package
    from . import _checks as check
    from . import _twins as twins
except ImportError:  # copied into a folder of its own, beside _checks.py and _twins.py
    import _checks as check
    import _twins as twins


ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu, "identity": torch.clone}
NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


class ElmanRNN(nn.Module):
    """A one-layer Elman RNN, batch first (Chapter 1, "The Elman network"). Parameters as in
    :class:`torch.nn.RNNCell`, from U(-1/sqrt(hidden), 1/sqrt(hidden)): ``weight_ih`` (hidden,
    input), ``weight_hh`` (hidden, hidden), ``bias_ih`` and ``bias_hh`` (hidden,)."""

    def __init__(self, input_size: int, hidden_size: int, nonlinearity: str = "tanh"):
        super().__init__()
        check.positive(input_size=input_size, hidden_size=hidden_size)
        check.choice(nonlinearity=(nonlinearity, ACTIVATIONS))
        self.input_size, self.hidden_size, self.nonlinearity = input_size, hidden_size, nonlinearity
        self.weight_ih = nn.Parameter(torch.empty(hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(hidden_size))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -self.hidden_size**-0.5, self.hidden_size**-0.5)

    def input_part(self, x: Tensor) -> Tensor:
        """W_ih x + b_ih + b_hh, (..., hidden), for one step x_t (batch, input) or for every step
        at once, x (batch, time, input): the share of a_t that does not wait for h_{t-1}."""
        return x @ self.weight_ih.T + (self.bias_ih + self.bias_hh)

    def step(self, x_t: Tensor, h: Tensor) -> Tensor:
        """h_t = phi(a_t), (batch, hidden), for x_t (batch, input) and h_{t-1} (batch, hidden)."""
        check.step(x_t, h, self.input_size, self.hidden_size, self.weight_ih)
        return ACTIVATIONS[self.nonlinearity](torch.addmm(self.input_part(x_t), h,
                                                          self.weight_hh.T))

    def pre_activations(self, x: Tensor, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """a_t and h_t of every step, each (batch, time, hidden), for x (batch, time, input)."""
        check.sequence(x, self.input_size, like=self.weight_ih)
        h = check.state_or_zeros(h0, x, self.hidden_size)  # (batch, hidden)
        pre, states = [], []
        for input_t in self.input_part(x).unbind(1):  # every step's input share at once
            pre.append(torch.addmm(input_t, h, self.weight_hh.T))  # a_t, (batch, hidden)
            states.append(h := ACTIVATIONS[self.nonlinearity](pre[-1]))
        return torch.stack(pre, dim=1), torch.stack(states, dim=1)

    def forward(self, x: Tensor, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """x (batch, time, input), h0 (batch, hidden) or None -> h (batch, time, hidden), h_T."""
        _, states = self.pre_activations(x, h0)
        return states, states[:, -1]

    @classmethod
    def from_torch(cls, rnn: nn.RNN) -> "ElmanRNN":
        """A copy of a one-layer, unidirectional :class:`torch.nn.RNN`, batch_first=True."""
        twins.torch_module(rnn, nn.RNN, num_layers=1, bias=True, bidirectional=False,
                           batch_first=True)
        model = cls(rnn.input_size, rnn.hidden_size, rnn.nonlinearity)
        return twins.copy_parameters(model, {name: getattr(rnn, name + "_l0") for name in NAMES})

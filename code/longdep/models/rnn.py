"""The Elman recurrent network and backpropagation through time written by hand (Chapter 1).

The network is

    a_t = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh,        h_t = phi(a_t),

with phi = tanh, relu or the identity (a linear RNN, Chapter 2), the same equations and parameter
names as :class:`torch.nn.RNNCell`.

Backpropagation through time by hand is in :mod:`longdep.measure.bptt`.
"""

import torch
from torch import nn

try:  # inside the longdep package
    from ._checks import check_sequence
except ImportError:  # copied into a folder of its own, beside _checks.py
    from _checks import check_sequence


_ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu, "identity": torch.clone}


class ElmanRNN(nn.Module):
    """A one-layer Elman RNN over a whole sequence (Chapter 1, "The Elman network").

    Parameters have the names and shapes of :class:`torch.nn.RNNCell`: ``weight_ih`` (hidden,
    input), ``weight_hh`` (hidden, hidden), ``bias_ih`` and ``bias_hh`` (hidden,), initialised
    from U(-1/sqrt(hidden), 1/sqrt(hidden)) as PyTorch does.
    """

    def __init__(self, input_size: int, hidden_size: int, nonlinearity: str = "tanh"):
        super().__init__()
        if nonlinearity not in _ACTIVATIONS:
            raise ValueError(
                f"nonlinearity must be 'tanh', 'relu' or 'identity', got {nonlinearity!r}"
            )
        if input_size < 1 or hidden_size < 1:
            raise ValueError(
                f"input_size and hidden_size must be positive, got {input_size}, {hidden_size}"
            )
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.nonlinearity = nonlinearity
        self.weight_ih = nn.Parameter(torch.empty(hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(hidden_size))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = self.hidden_size**-0.5
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -bound, bound)

    @classmethod
    def from_torch(cls, rnn: nn.RNN) -> "ElmanRNN":
        """Copy the weights of a one-layer, unidirectional :class:`torch.nn.RNN`."""
        if rnn.num_layers != 1 or rnn.bidirectional or not rnn.bias:
            raise ValueError("from_torch needs a one-layer, unidirectional nn.RNN with biases")
        model = cls(rnn.input_size, rnn.hidden_size, rnn.nonlinearity)
        model = model.to(dtype=rnn.weight_ih_l0.dtype)
        with torch.no_grad():
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(model, name).copy_(getattr(rnn, name + "_l0"))
        return model

    def pre_activations(
        self, x: torch.Tensor, h0: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Run the recurrence; return the pre-activations a and the states h, (batch, time, hidden)."""
        check_sequence(x, self.input_size)
        batch, steps, _ = x.shape
        if h0 is None:
            h0 = x.new_zeros(batch, self.hidden_size)
        elif h0.shape != (batch, self.hidden_size):
            raise ValueError(
                f"h0 must have shape (batch, hidden) = {(batch, self.hidden_size)}, "
                f"got {tuple(h0.shape)}"
            )
        phi = _ACTIVATIONS[self.nonlinearity]
        h = h0
        pre, states = [], []
        for t in range(steps):
            a = self.pre_activation(x[:, t], h)
            h = phi(a)
            pre.append(a)
            states.append(h)
        return torch.stack(pre, dim=1), torch.stack(states, dim=1)

    def pre_activation(self, x_t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """a_t = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh for one step; x_t (batch, input)."""
        return x_t @ self.weight_ih.T + self.bias_ih + h @ self.weight_hh.T + self.bias_hh

    def step(self, x_t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """One step of the recurrence, h_t = phi(a_t); x_t (batch, input), h (batch, hidden)."""
        return _ACTIVATIONS[self.nonlinearity](self.pre_activation(x_t, h))

    def forward(
        self, x: torch.Tensor, h0: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x: (batch, time, input); h0: (batch, hidden) or None for zeros.

        Returns the states at every step, (batch, time, hidden), and the last state (batch, hidden).
        """
        _, states = self.pre_activations(x, h0)
        return states, states[:, -1]

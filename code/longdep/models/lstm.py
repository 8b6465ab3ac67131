"""The long short-term memory network written from scratch (Chapter 3).

One step of the LSTM is, with sigma the logistic sigmoid and * the elementwise product,

    [i_t, f_t, g_t, o_t] = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh      (4 blocks of `hidden`)
    i_t, f_t, o_t = sigma(.),  g_t = tanh(.)
    c_t = f_t * c_{t-1} + i_t * g_t,        h_t = o_t * tanh(c_t),

the equations, gate order (input, forget, cell candidate, output) and parameter names of
:class:`torch.nn.LSTMCell`, so that :meth:`LSTM.from_torch` only copies tensors.
"""

import torch
from torch import nn

try:  # inside the longdep package
    from ._checks import check_sequence
except ImportError:  # copied into a folder of its own, beside _checks.py
    from _checks import check_sequence


State = tuple[torch.Tensor, torch.Tensor]


class LSTM(nn.Module):
    """A one-layer LSTM over a whole sequence (Chapter 3, "Gates and the cell state").

    Parameters have the names and shapes of :class:`torch.nn.LSTMCell`: ``weight_ih``
    (4 hidden, input), ``weight_hh`` (4 hidden, hidden), ``bias_ih`` and ``bias_hh`` (4 hidden,),
    stacked in the gate order i, f, g, o. They are initialised from U(-1/sqrt(hidden),
    1/sqrt(hidden)) as PyTorch does, except the forget gate's bias: its slice of ``bias_ih``
    (rows hidden .. 2 hidden - 1) is set to ``forget_bias`` and its slice of ``bias_hh`` to 0, so
    the forget gate's total bias is exactly ``forget_bias`` and, with zero input and state,
    f = sigma(forget_bias). ``forget_bias=1`` is the remedy of Jozefowicz et al. (2015).
    """

    def __init__(self, input_size: int, hidden_size: int, forget_bias: float = 0.0):
        super().__init__()
        if input_size < 1 or hidden_size < 1:
            raise ValueError(
                f"input_size and hidden_size must be positive, got {input_size}, {hidden_size}"
            )
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.forget_bias = float(forget_bias)
        self.weight_ih = nn.Parameter(torch.empty(4 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(4 * hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(4 * hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(4 * hidden_size))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = self.hidden_size**-0.5
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -bound, bound)
        forget = slice(self.hidden_size, 2 * self.hidden_size)
        with torch.no_grad():
            self.bias_ih[forget] = self.forget_bias
            self.bias_hh[forget] = 0.0

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, forget_bias={self.forget_bias}"

    @classmethod
    def from_torch(cls, lstm: nn.LSTM) -> "LSTM":
        """Copy the weights of a one-layer, unidirectional :class:`torch.nn.LSTM` with biases."""
        if lstm.num_layers != 1 or lstm.bidirectional or not lstm.bias or lstm.proj_size:
            raise ValueError(
                "from_torch needs a one-layer, unidirectional nn.LSTM with biases and no projection"
            )
        model = cls(lstm.input_size, lstm.hidden_size).to(dtype=lstm.weight_ih_l0.dtype)
        with torch.no_grad():
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(model, name).copy_(getattr(lstm, name + "_l0"))
        return model

    def to_torch(self) -> nn.LSTM:
        """A :class:`torch.nn.LSTM` (batch_first=True) holding copies of these weights.

        It computes the same function (the tests check it) with PyTorch's compiled loop, several
        times faster to train than this Python loop; Chapter 3 trains with it.
        """
        lstm = nn.LSTM(self.input_size, self.hidden_size, batch_first=True)
        lstm = lstm.to(dtype=self.weight_ih.dtype)
        with torch.no_grad():
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(lstm, name + "_l0").copy_(getattr(self, name))
        return lstm

    def initial_state(self, x: torch.Tensor, state: State | None) -> State:
        """Zeros for ``state=None``; otherwise check that h0 and c0 are (batch, hidden)."""
        batch = x.size(0)
        if state is None:
            zeros = x.new_zeros(batch, self.hidden_size)
            return zeros, zeros
        if not isinstance(state, (tuple, list)) or len(state) != 2:
            raise ValueError("state must be a pair (h0, c0)")
        for name, tensor in zip(("h0", "c0"), state):
            if tensor.shape != (batch, self.hidden_size):
                raise ValueError(
                    f"{name} must have shape (batch, hidden) = {(batch, self.hidden_size)}, "
                    f"got {tuple(tensor.shape)}"
                )
        return state[0], state[1]

    def gates(self, input_part: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The gates i, f, g, o, each (batch, hidden), from the input's share and h_{t-1}."""
        pre = torch.addmm(input_part, h, self.weight_hh.T)
        i, f, _, o = torch.sigmoid(pre).chunk(4, dim=-1)
        g = torch.tanh(pre[:, 2 * self.hidden_size : 3 * self.hidden_size])
        return i, f, g, o

    def cell(self, input_part: torch.Tensor, state: State) -> State:
        """One step given the input's share of the gates, W_ih x_t + b_ih + b_hh (batch, 4 n).

        Splitting it off lets :meth:`forward` compute the input's share for every step in one
        matrix product; only what depends on h_{t-1} has to wait for the previous step.
        """
        h, c = state
        i, f, g, o = self.gates(input_part, h)
        c = torch.addcmul(f * c, i, g)
        return o * torch.tanh(c), c

    def input_parts(self, x: torch.Tensor) -> torch.Tensor:
        """W_ih x + b_ih + b_hh for x (..., input): the gates' share that needs no earlier state."""
        return x @ self.weight_ih.T + (self.bias_ih + self.bias_hh)

    def step(self, x_t: torch.Tensor, state: State) -> State:
        """One step: x_t (batch, input), (h_{t-1}, c_{t-1}) each (batch, hidden) -> (h_t, c_t)."""
        if x_t.dim() != 2 or x_t.size(-1) != self.input_size:
            raise ValueError(
                f"x_t must have shape (batch, {self.input_size}), got {tuple(x_t.shape)}"
            )
        return self.cell(self.input_parts(x_t), state)

    def forward(self, x: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State]:
        """x: (batch, time, input); state: (h0, c0), each (batch, hidden), or None for zeros.

        Returns the hidden states at every step, (batch, time, hidden), and the last (h, c).
        """
        check_sequence(x, self.input_size)
        state = self.initial_state(x, state)
        input_parts = self.input_parts(x)
        outputs = []
        for t in range(x.size(1)):
            state = self.cell(input_parts[:, t], state)
            outputs.append(state[0])
        return torch.stack(outputs, dim=1), state

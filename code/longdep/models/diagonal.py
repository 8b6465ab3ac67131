"""A diagonal linear RNN whose transitions may be negative (Chapter 2, "What the eigenvalues
allow"; Grazzi, Siems, Zela, Franke, Hutter & Pontil 2025, "Unlocking state-tracking in linear
RNNs through negative eigenvalues").

One step is, per channel,

    h_t = a(x_t) * h_{t-1} + b(x_t),      h_{-1} = h0 (a learned vector, ones at initialisation),

with the transition's range chosen at construction:

    "positive":  a(x) = sigma(W_a x + c_a)        in (0, 1),
    "signed":    a(x) = 2 sigma(W_a x + c_a) - 1  in (-1, 1)   (= tanh((W_a x + c_a) / 2)),

and b(x) = W_b x + c_b if ``drive`` (else b = 0, and h_t = h0 prod_{r<=t} a(x_r), a cumulative
product). The eigenvalues of the transition are the a's themselves. With positive ones, sign(h_t)
never changes, so a readout of h_t cannot count anything modulo 2: with finite precision, such a
linear RNN cannot solve parity at every length. With a = -1 for a one and +1 for a zero, sign(h_T)
is the parity of the sequence, at any length. The sign of the per-step factor, not only its size
(Chapter 2's |lambda| against 1), decides what the recurrence can compute.

The state Jacobian is dh_T/dh_k = diag(prod_{r=k+1..T} a(x_r)), exactly. The parallel form is
the scan of :mod:`.ssm` (log2(time) rounds of products, no quotients), ``scan="parallel"``; its
loop is ``scan="sequential"``.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError).
NaN and inf are not checked, as in PyTorch: one in x_t reaches h_t and every later step, never an
earlier one.
"""

import torch
from torch import Tensor, nn

try:  # inside the longdep package
    from . import _checks as check
    from .ssm import SCANS
except ImportError:  # copied into a folder of its own, beside _checks.py and ssm.py
    import _checks as check
    from ssm import SCANS


TRANSITIONS = {"positive": torch.sigmoid, "signed": lambda u: torch.tanh(u / 2)}


class DiagonalLinearRNN(nn.Module):
    """h_t = a(x_t) * h_{t-1} (+ b(x_t)), batch first (Chapter 2). Parameters: ``linear_a``
    (input -> hidden), ``linear_b`` (input -> hidden, only with ``drive``), ``h0`` (hidden,),
    ones. ``transitions`` is "positive", a in (0, 1), or "signed", a in (-1, 1)."""

    def __init__(self, input_size: int, hidden_size: int, transitions: str = "signed",
                 drive: bool = False, scan: str = "parallel"):
        super().__init__()
        check.positive(input_size=input_size, hidden_size=hidden_size)
        check.choice(transitions=(transitions, TRANSITIONS), scan=(scan, SCANS))
        if not isinstance(drive, bool):
            raise TypeError(f"drive must be a bool, got {type(drive).__name__}")
        self.input_size, self.hidden_size = input_size, hidden_size
        self.transitions, self.scan = transitions, scan
        self.linear_a = nn.Linear(input_size, hidden_size)
        self.linear_b = nn.Linear(input_size, hidden_size) if drive else None
        self.h0 = nn.Parameter(torch.ones(hidden_size))

    def extra_repr(self) -> str:
        return (f"{self.input_size}, {self.hidden_size}, transitions={self.transitions!r}, "
                f"drive={self.linear_b is not None}")

    def transition_and_drive(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """a(x) and b(x) (zeros without ``drive``), each (..., hidden), for x (..., input)."""
        a = TRANSITIONS[self.transitions](self.linear_a(x))
        return a, torch.zeros_like(a) if self.linear_b is None else self.linear_b(x)

    def initial_state(self, x: Tensor, h0: Tensor | None, name: str = "h0") -> Tensor:
        """The learned ``h0`` for every sequence of x (batch, ...) if h0 is None, else the
        checked h0 (batch, hidden), called ``name`` in messages."""
        return self.h0.expand(x.size(0), -1) if h0 is None else check.state_or_zeros(
            h0, x, self.hidden_size, name)

    def forward(self, x: Tensor, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """x (batch, time, input), h0 (batch, hidden) or None for the learned ``h0`` ->
        h (batch, time, hidden), h_T."""
        check.sequence(x, self.input_size, like=self.linear_a.weight)
        h0 = self.initial_state(x, h0)  # (batch, hidden)
        a, b = self.transition_and_drive(x)  # (batch, time, hidden) each
        first = b[:, :1] + a[:, :1] * h0[:, None]  # h_0 = a_0 h0 + b_0
        states = SCANS[self.scan](a, torch.cat([first, b[:, 1:]], dim=1))
        return states, states[:, -1]

    def step(self, x_t: Tensor, h: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """One decoding step: x_t (batch, input), h_{t-1} (batch, hidden) or None for the learned
        ``h0`` -> (h_t, h_t); the output is the state."""
        check.step_input(x_t, self.input_size, self.linear_a.weight)
        h = self.initial_state(x_t, h, "h")
        a, b = self.transition_and_drive(x_t)
        h = a * h + b
        return h, h

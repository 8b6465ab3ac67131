"""minGRU: a GRU whose gate and candidate do not read the state, so that a parallel scan trains
it (Chapter 6, "One recurrence for every model"; Feng, Tung, Ahmed, Bengio & Hajimirsadeghi
2024, "Were RNNs all we needed?").

One step is, with sigma the logistic sigmoid and * the elementwise product,

    z_t = sigma(W_z x_t + b_z),        h~_t = W_h x_t + b_h,
    h_t = (1 - z_t) * h_{t-1} + z_t * h~_t.

Neither z_t nor h~_t depends on h_{t-1}, so each step is the affine map h -> a_t h + b_t with
a_t = 1 - z_t and b_t = z_t h~_t, and the whole sequence is the scan of :mod:`.ssm`
(``scan="parallel"``, log2(time) rounds) or its loop (``scan="sequential"``), the same numbers
to round-off. The paper's log-space scan needs h~ > 0 (its g(.) activation); the scan of
:mod:`.ssm` takes any sign and forms only products of the a_t, never quotients.

The state Jacobian is exact and diagonal: dh_T/dh_k = diag(prod_{r=k+1..T} (1 - z_r)). minGRU
removed the GRU's nonlinear Jacobian (Chapter 3), not the vanishing: at initialisation z_t is
about 1/2, so the gradient halves with every step, unless z is biased toward keeping.
``forget_bias`` sets b_z = -forget_bias, so that the keep gate 1 - z_t = sigma(forget_bias) at
zero input, as the LSTM's forget-gate bias (Chapter 3, Jozefowicz et al. 2015).

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError).
NaN and inf are not checked, as in PyTorch: one in x_t reaches h_t and every later step, never an
earlier one (both scans only combine step t with the steps before it).
"""

import torch
from torch import Tensor, nn

try:  # inside the longdep package
    from . import _checks as check
    from .ssm import SCANS
except ImportError:  # copied into a folder of its own, beside _checks.py and ssm.py
    import _checks as check
    from ssm import SCANS


class MinGRU(nn.Module):
    """A one-layer minGRU, batch first (Chapter 6): ``linear_z`` and ``linear_h`` (input ->
    hidden), as in the paper's code, torch's default initialisation but for b_z = -forget_bias.
    ``scan`` is "parallel" or "sequential"."""

    def __init__(self, input_size: int, hidden_size: int, forget_bias: float = 0.0,
                 scan: str = "parallel"):
        super().__init__()
        check.positive(input_size=input_size, hidden_size=hidden_size)
        check.finite(forget_bias=forget_bias)
        check.choice(scan=(scan, SCANS))
        self.input_size, self.hidden_size, self.scan = input_size, hidden_size, scan
        self.forget_bias = float(forget_bias)
        self.linear_z = nn.Linear(input_size, hidden_size)
        self.linear_h = nn.Linear(input_size, hidden_size)
        with torch.no_grad():
            self.linear_z.bias.fill_(-self.forget_bias)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, forget_bias={self.forget_bias}"

    def keep_and_write(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """a = 1 - z and b = z * h~, each (..., hidden), for x (..., input)."""
        z = torch.sigmoid(self.linear_z(x))
        return 1 - z, z * self.linear_h(x)

    def forward(self, x: Tensor, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """x (batch, time, input), h0 (batch, hidden) or None -> h (batch, time, hidden), h_T."""
        check.sequence(x, self.input_size, like=self.linear_z.weight)
        h0 = check.state_or_zeros(h0, x, self.hidden_size)  # (batch, hidden)
        keep, write = self.keep_and_write(x)  # (batch, time, hidden) each
        # h0 enters as part of the first step's offset: h_0 = a_0 h0 + b_0.
        first = write[:, :1] + keep[:, :1] * h0[:, None]
        states = SCANS[self.scan](keep, torch.cat([first, write[:, 1:]], dim=1))
        return states, states[:, -1]

    def step(self, x_t: Tensor, h: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """One decoding step: x_t (batch, input), h_{t-1} (batch, hidden) or None for zeros ->
        (h_t, h_t); the output of minGRU is its state."""
        check.step_input(x_t, self.input_size, self.linear_z.weight)
        h = check.state_or_zeros(h, x_t, self.hidden_size, "h")
        keep, write = self.keep_and_write(x_t)
        h = keep * h + write
        return h, h

"""The linear recurrent unit, LRU (Chapter 2, "What the eigenvalues allow"; Orvieto, Smith, Gu,
Fernando, Gulcehre, Pascanu & De 2023, "Resurrecting recurrent neural networks for long
sequences").

A diagonal complex linear recurrence with a real input and a real output:

    h_t = lambda * h_{t-1} + gamma * (B x_t),       h_t (N,) complex,
    y_t = Re(C h_t) + D * x_t,                      y_t (d_model,) real,

with lambda = exp(-exp(nu) + i exp(theta)), so |lambda| = exp(-exp(nu)) < 1 for every nu (stable
by construction) and the phase is exp(theta). At initialisation |lambda| lies on the ring
[r_min, r_max], uniformly in area (|lambda|^2 uniform), the phase uniform in [0, max_phase], and
gamma = sqrt(1 - |lambda|^2) (trained as ``gamma_log``): a state fed white noise then keeps the
input's scale, instead of growing as 1 / sqrt(1 - |lambda|^2) when |lambda| nears 1.

The state Jacobian is dh_T/dh_k = lambda^(T-k) per channel, of modulus exactly |lambda|^(T-k):
the linear RNN of Chapter 2, which lies on its bound, with eigenvalues placed near 1 by
construction rather than by luck. The transition does not depend on time, so the parallel form
is h_t = sum_{j<=t} lambda^(t-j) b_j, evaluated by doubling (:func:`power_scan`); the scan of
:mod:`.ssm` takes real tensors only.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError);
a NaN that finite inputs give :class:`LRU` by float32 overflow raises a ValueError naming x;
the state is complex, complex64 for float32 parameters and complex128 for float64. NaN and inf are
not checked, as in PyTorch: one in x_t reaches y_t and every later step, never an earlier one.
"""

import math

import torch
from torch import Tensor, nn

try:  # inside the longdep package
    from . import _checks as check
except ImportError:  # copied into a folder of its own, beside _checks.py
    import _checks as check


def power_scan(log_lambda: Tensor, b: Tensor) -> Tensor:
    """h_t = lambda h_{t-1} + b_t from h_{-1} = 0, for a transition constant in time.

    log_lambda (N,) complex, b (batch, time, N) complex -> h (batch, time, N). In round r every
    position adds lambda^(2^r) times the partial sum 2^r steps before it (zero before step 0),
    so after ceil(log2(time)) rounds position t holds the sum of lambda^(t-j) b_j over j <= t.
    The powers are exp(2^r log lambda), not repeated squarings, whose round-off would double in
    every round."""
    check.tensor(log_lambda, "log_lambda", "(N,) complex", floating=False)
    check.tensor(b, "b", "(batch, time, N) complex", 3, floating=False)
    if not (log_lambda.is_complex() and b.is_complex()):
        raise TypeError(f"log_lambda and b must be complex, got {check.describe(log_lambda)} and "
                        f"{check.describe(b)}")
    if log_lambda.dim() != 1 or b.dim() != 3 or b.size(-1) != log_lambda.size(0):
        raise ValueError(f"log_lambda (N,) and b (batch, time, N) must share N, got "
                         f"{check.describe(log_lambda)} and {check.describe(b)}")
    steps, shift = b.size(1), 1
    while shift < steps:
        earlier = torch.cat([torch.zeros_like(b[:, :shift]), b[:, :-shift]], dim=1)
        b = b + torch.exp(shift * log_lambda) * earlier
        shift *= 2
    return b


def check_complex_state(h, shape: tuple[int, int], like: Tensor) -> None:
    """Raise unless the state h is a complex (batch, N) tensor of ``shape``, of the complex dtype
    of the real tensor ``like`` and on its device."""
    check.tensor(h, "h", f"(batch, N) = {shape}", floating=False)
    if not h.is_complex() or h.dtype != like.dtype.to_complex() or h.device != like.device:
        raise TypeError(f"h must be a {str(like.dtype.to_complex()).removeprefix('torch.')} "
                        f"tensor on {like.device}, got {check.describe(h)} on {h.device}")
    if h.shape != shape:
        raise ValueError(f"h must have shape (batch, N) = {shape}, got {check.describe(h)}")


SCANS = ("parallel", "sequential")


class LRU(nn.Module):
    """An LRU layer, (batch, time, d_model) -> (batch, time, d_model), with ``state_size``
    complex channels (Chapter 2). Parameters as in the paper's code: ``nu_log``, ``theta_log``,
    ``gamma_log`` (N,); ``B_re``, ``B_im`` (N, d_model) from N(0, 1 / (2 d_model)); ``C_re``,
    ``C_im`` (d_model, N) from N(0, 1 / N); ``D`` (d_model,) from N(0, 1). ``scan`` is
    "parallel" (:func:`power_scan`) or "sequential"."""

    def __init__(self, d_model: int, state_size: int, r_min: float = 0.0, r_max: float = 1.0,
                 max_phase: float = 2 * math.pi, scan: str = "parallel"):
        super().__init__()
        check.positive(d_model=d_model, state_size=state_size)
        check.finite(r_min=r_min, r_max=r_max, max_phase=max_phase)
        if not 0 <= r_min < r_max <= 1 or max_phase <= 0:
            raise ValueError(f"need 0 <= r_min < r_max <= 1 and max_phase > 0, got r_min={r_min}, "
                             f"r_max={r_max}, max_phase={max_phase}")
        check.choice(scan=(scan, SCANS))
        self.d_model, self.state_size, self.scan = d_model, state_size, scan
        # |lambda|^2 uniform on [r_min^2, r_max^2]; kept off 0, where nu_log would be infinite.
        squared = torch.rand(state_size, dtype=torch.float64).clamp_min(1e-12)
        modulus_squared = squared * (r_max**2 - r_min**2) + r_min**2
        nu_log = torch.log(-0.5 * torch.log(modulus_squared))
        theta_log = torch.log(max_phase * torch.rand(state_size, dtype=torch.float64))
        self.nu_log, self.theta_log = nn.Parameter(nu_log.float()), nn.Parameter(theta_log.float())
        self.gamma_log = nn.Parameter(0.5 * torch.log1p(-modulus_squared).float())
        self.B_re, self.B_im = (nn.Parameter(torch.randn(state_size, d_model) / math.sqrt(
            2 * d_model)) for _ in range(2))
        self.C_re, self.C_im = (nn.Parameter(torch.randn(d_model, state_size) / math.sqrt(
            state_size)) for _ in range(2))
        self.D = nn.Parameter(torch.randn(d_model))

    def extra_repr(self) -> str:
        return f"{self.d_model}, {self.state_size}, scan={self.scan!r}"

    def log_eigenvalues(self) -> Tensor:
        """log lambda = -exp(nu_log) + i exp(theta_log), (N,) complex."""
        return torch.complex(-self.nu_log.exp(), self.theta_log.exp())

    def drive(self, x: Tensor) -> Tensor:
        """gamma * (B x): (..., d_model) real -> (..., N) complex."""
        return torch.complex(x @ self.B_re.T, x @ self.B_im.T) * self.gamma_log.exp()

    def readout(self, h: Tensor, x: Tensor) -> Tensor:
        """Re(C h) + D * x: h (..., N) complex, x (..., d_model) -> (..., d_model) real."""
        return h.real @ self.C_re.T - h.imag @ self.C_im.T + self.D * x

    @check.overflow_checked
    def forward(self, x: Tensor, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """x (batch, time, d_model), h0 (batch, N) complex or None for zeros -> y (batch, time,
        d_model) real and the last state h_T (batch, N) complex."""
        check.sequence(x, self.d_model, like=self.D)
        if h0 is not None:
            check_complex_state(h0, (x.size(0), self.state_size), self.D)
        log_lambda, b = self.log_eigenvalues(), self.drive(x)  # (N,), (batch, time, N)
        if h0 is not None:  # h0 enters as part of the first step's drive: h_0 = lambda h0 + b_0
            b = torch.cat([b[:, :1] + log_lambda.exp() * h0[:, None], b[:, 1:]], dim=1)
        if self.scan == "parallel":
            states = power_scan(log_lambda, b)
        else:
            h, steps = torch.zeros_like(b[:, 0]), []
            for b_t in b.unbind(1):  # (batch, N)
                steps.append(h := log_lambda.exp() * h + b_t)
            states = torch.stack(steps, dim=1)
        return self.readout(states, x), states[:, -1]

    def step(self, x_t: Tensor, h: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """One decoding step: x_t (batch, d_model), h_{t-1} (batch, N) complex or None for zeros
        -> y_t (batch, d_model) and h_t (batch, N)."""
        check.step_input(x_t, self.d_model, self.D)
        y, h = self(x_t[:, None], h)
        return y[:, 0], h

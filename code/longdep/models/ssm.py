"""A diagonal selective state-space layer, Mamba-style and simplified (Chapter 6, "State-space
models").

Per channel c and state index n, with A_{c,n} < 0 and an input-dependent step Delta_t > 0,

    h_t = Abar_t * h_{t-1} + Bbar_t x_t,     Abar_t = exp(Delta_t A),
    Bbar_t = (1 - Abar_t) / (-A) * B_t        (zero-order hold, exact for diagonal A),
    y_t = sum_n C_{t,n} h_{t,n} + D x_t,

where Delta_t = softplus(W_Delta x_t + b_Delta), B_t = W_B x_t and C_t = W_C x_t depend on the
input: that is what "selective" means (Gu & Dao 2023). The recurrence h_t = a_t h_{t-1} + b_t is
linear in h, so it can be evaluated by a parallel scan in log2(time) rounds instead of time steps.
Since 0 < Abar_t < 1, dh_T/dh_k = prod_{r=k+1..T} Abar_r can never explode, but it is a product
of gates below one: with N = 1, A = -1, B = 1 it is exactly 1 - sigmoid, a forget gate (Gu & Dao,
Theorem 1).

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError).
NaN and inf are not checked, as in PyTorch: one in x_t reaches y_t and, through the state, every
later step, never an earlier one (both scans only combine step t with steps before it). The drive
is a product of three terms in x (B_t x_t times x_t, read by C_t), so finite float32 inputs past
about 1e13 overflow; a NaN that results raises a ValueError naming x.
"""

import math

import torch
from torch import nn

try:  # inside the longdep package
    from . import _checks as check
except ImportError:  # copied into a folder of its own, beside _checks.py
    import _checks as check


def check_scan(a: torch.Tensor, b: torch.Tensor) -> None:
    """Raise a clear error unless a and b are floating tensors of one shape (batch, time, ...)."""
    check.tensor(a, "a", "(batch, time, ...)", 2)
    check.tensor(b, "b", "(batch, time, ...)", 2)
    check.device_dtype(b, a, "b", "a is")
    if a.shape != b.shape:
        raise ValueError(
            f"a and b must have the same shape (batch, time, ...), got {tuple(a.shape)} and "
            f"{tuple(b.shape)}"
        )


def sequential_scan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """h_t = a_t * h_{t-1} + b_t with h_{-1} = 0, one step at a time.

    a, b and the returned h have shape (batch, time, ...)."""
    check_scan(a, b)
    h = torch.zeros_like(b[:, 0])
    states = []
    for t in range(a.size(1)):
        h = a[:, t] * h + b[:, t]
        states.append(h)
    return torch.stack(states, dim=1)


def parallel_scan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The same h as :func:`sequential_scan`, in ceil(log2(time)) rounds (Hillis and Steele).

    Step t is the affine map h -> a_t h + b_t; composing the map of an earlier block (a', b') with a
    later one (a, b) gives (a a', a b' + b), an associative operation. In round r every position
    composes its map with the one 2^r steps before it (the identity map (1, 0) before step 0),
    so after the last round position t holds the composition of steps 0 .. t, whose offset is
    h_t. Only products of the a's are formed, never divisions by them, so it is as stable as the
    sequential loop.
    """
    check_scan(a, b)
    steps, shift = a.size(1), 1
    while shift < steps:  # steps before ``shift`` compose with the identity: they stay as they are
        rest = steps - shift
        # split, not slicing: its backward joins the parts' gradients instead of writing each
        # into a zero tensor of the full size
        (b_head, b_tail), (a_head, a_tail) = b.split([shift, rest], 1), a.split([shift, rest], 1)
        b = torch.cat([b_head, b_tail + a_tail * b.split([rest, shift], 1)[0]], dim=1)
        if 2 * shift < steps:  # the last round needs no a
            a = torch.cat([a_head, a_tail * a.split([rest, shift], 1)[0]], dim=1)
        shift *= 2
    return b


SCANS = {"parallel": parallel_scan, "sequential": sequential_scan}


class SelectiveSSM(nn.Module):
    """A diagonal selective SSM layer, (batch, time, d_model) -> (batch, time, d_model).

    Parameters: ``A_log`` (d_model, state_size) with A = -exp(A_log) < 0, initialised to
    A_{c,n} = -(n + 1) (S4D-real); ``D`` (d_model,); ``delta_proj`` (d_model -> d_model) whose
    bias makes the initial step Delta log-uniform in [dt_min, dt_max] (as in Mamba); ``B_proj``
    and ``C_proj`` (d_model -> state_size, no bias). ``scan`` is "parallel" or "sequential".
    """

    def __init__(self, d_model: int, state_size: int = 8, scan: str = "parallel",
                 dt_min: float = 1e-3, dt_max: float = 1e-1):
        super().__init__()
        check.positive(d_model=d_model, state_size=state_size)
        check.choice(scan=(scan, SCANS))
        check.dt_range(dt_min, dt_max)
        self.d_model, self.state_size, self.scan = d_model, state_size, scan
        self.A_log = nn.Parameter(torch.log(torch.arange(1.0, state_size + 1)).repeat(d_model, 1))
        self.D = nn.Parameter(torch.ones(d_model))
        self.delta_proj = nn.Linear(d_model, d_model)
        self.B_proj = nn.Linear(d_model, state_size, bias=False)
        self.C_proj = nn.Linear(d_model, state_size, bias=False)
        with torch.no_grad():
            uniform = torch.rand(d_model) * (math.log(dt_max) - math.log(dt_min))
            dt = torch.exp(uniform + math.log(dt_min))
            self.delta_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus^-1(dt)

    def discretize(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Abar and Bbar x, each (batch, time, d_model, state_size), and C (batch, time, state)."""
        check.sequence(x, self.d_model, like=self.D)
        delta = nn.functional.softplus(self.delta_proj(x))  # (batch, time, d_model)
        A = -torch.exp(self.A_log)
        decay = torch.exp(delta[..., None] * A)  # (batch, time, d_model, state_size)
        drive = (1 - decay) / -A * self.B_proj(x)[:, :, None, :] * x[..., None]  # the same
        return decay, drive, self.C_proj(x)

    @check.overflow_checked
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (batch, time, d_model) -> y (batch, time, d_model)."""
        decay, drive, C = self.discretize(x)
        states = SCANS[self.scan](decay, drive)  # (batch, time, d_model, state_size)
        return torch.einsum("btcn,btn->btc", states, C) + self.D * x

    @check.overflow_checked
    def last_output(self, x: torch.Tensor) -> torch.Tensor:
        """The last output alone, x (batch, time, d_model) -> y_T (batch, 1, d_model), equal to
        ``forward(x)[:, -1:]`` to round-off, without a scan: h_T = sum_t (prod_{s>t} Abar_s)
        Bbar_t x_t, each product formed as exp(A sum_{s>t} Delta_s) from a suffix sum of the
        steps (what a classifier of the last step needs, Chapter 6's key recall)."""
        _, drive, C = self.discretize(x)
        delta = nn.functional.softplus(self.delta_proj(x))  # (batch, time, d_model)
        suffix = delta.flip(1).cumsum(1).flip(1)  # sum over s >= t
        later = torch.cat([suffix[:, 1:], torch.zeros_like(suffix[:, :1])], dim=1)  # s > t
        weights = torch.exp(later[..., None] * -torch.exp(self.A_log))  # (b, t, d_model, n)
        state = (weights * drive).sum(dim=1)  # h_T, (batch, d_model, state_size)
        return (torch.einsum("bcn,bn->bc", state, C[:, -1]) + self.D * x[:, -1])[:, None]


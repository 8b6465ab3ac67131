"""Mamba-2's scalar state-space model, as a recurrence and as a masked attention (Chapter 6, "One
recurrence for every model"; Dao & Gu 2024, "Transformers are SSMs", structured state-space
duality).

Per head, with a scalar decay a_t in (0, 1], a state S_t of N x P numbers, an input x_t (P,) and
input-dependent vectors B_t, C_t (N,):

    S_t = a_t S_{t-1} + B_t x_t^T,        (N, P)
    y_t = S_t^T C_t.                      (P,)

The transition is A_t = a_t I, a scalar times the identity: Mamba-2's restriction of Mamba's
diagonal one (:mod:`.ssm`). Unrolled from S_{-1} = 0,

    y_i = sum_{j <= i} L_ij (C_i . B_j) x_j,    L_ij = prod_{k=j+1..i} a_k  (i >= j),  0 (i < j),

so the recurrence is causal attention without softmax, with scores C B^T masked by the
1-semiseparable matrix L: y = (L o (C B^T)) x. That is the duality: O(time) steps with a state of
N P numbers per head, or O(time^2) work in matrix products. L is formed in log space by
:func:`segsum`, each entry the sum of its own log a_k and -inf above the diagonal, so no product
is divided by another (an underflowed prefix product would give 0 / 0) and exp never sees a
positive argument. Chunk by chunk (:func:`ssd_chunked`) the attention form runs within a chunk
and the state carries the earlier chunks: O(time x chunk) work.

:class:`ScalarSSM` is the layer: heads of width P = d_model / heads read x directly, as
:class:`.ssm.SelectiveSSM` does, with a_t = exp(-dt_t exp(A_log)), dt_t = softplus(W_dt x_t +
b_dt) > 0 (one per head, initialised log-uniform in [dt_min, dt_max] as in Mamba), B_t = W_B x_t,
C_t = W_C x_t, the input scaled by dt_t as in Mamba-2's code, and a skip D x_t. Its long-range
gradient dS_T/dS_k = (prod_{r=k+1..T} a_r) I is a product of gates below one: a forget gate.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError);
a NaN that finite inputs give :class:`ScalarSSM` by float32 overflow raises a ValueError naming x.
NaN and inf are not checked, as in PyTorch: in the recurrent form one at step t reaches step t
and every later one, never an earlier one; in the chunked form one in x_j also reaches the
earlier outputs of its chunk, through a zero weight (0 * inf = NaN, as in softmax attention),
never an earlier chunk (the attention form is one chunk).
"""

import math

import torch
from torch import nn

try:  # inside the longdep package
    from . import _checks as check
except ImportError:  # copied into a folder of its own, beside _checks.py
    import _checks as check


def check_ssd(x, log_a, B, C, state) -> None:
    """Raise unless x (batch, time, heads, P), log_a (batch, time, heads), B and C (batch, time,
    heads, N) are floating tensors of one dtype and device, and state is None or (batch, heads,
    N, P)."""
    check.tensor(x, "x", "(batch, time, heads, P)", 4)
    for name, tensor in (("log_a", log_a), ("B", B), ("C", C)):
        check.tensor(tensor, name, "(batch, time, heads, ...)", 3)
        check.device_dtype(tensor, x, name, "x is")
    if (x.dim() != 4 or log_a.shape != x.shape[:3] or B.dim() != 4 or B.shape != C.shape
            or B.shape[:3] != x.shape[:3]):
        raise ValueError(f"x, log_a, B, C must have shapes (batch, time, heads, P), (batch, time, "
                         f"heads), (batch, time, heads, N) twice, got {tuple(x.shape)}, "
                         f"{tuple(log_a.shape)}, {tuple(B.shape)}, {tuple(C.shape)}")
    if state is not None:
        shape = (x.size(0), x.size(2), B.size(3), x.size(3))
        check.state(state, "state", shape, x, "(batch, heads, N, P)")


def segsum(log_a: torch.Tensor) -> torch.Tensor:
    """(..., time) -> (..., time, time): entry (i, j) is sum_{k=j+1..i} log a_k for i >= j (0 on
    the diagonal) and -inf for i < j, so that exp of it is the 1-semiseparable mask L.

    Each entry is a cumulative sum of its own terms only (the column j holds log a_i for i > j,
    summed down the column), never a difference of two long prefix sums, whose round-off grows
    with their size, not with the entry's."""
    check.tensor(log_a, "log_a", "(..., time)")
    steps = log_a.size(-1)
    causal = torch.ones(steps, steps, dtype=torch.bool, device=log_a.device).tril()
    terms = torch.where(causal.tril(-1), log_a[..., :, None], 0.0)  # (..., i, j): log a_i, i > j
    return terms.cumsum(-2).masked_fill(~causal, -math.inf)  # sum of log a_k, j < k <= i


def ssd_recurrent(x: torch.Tensor, log_a: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                  state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The recurrent form: S_t = a_t S_{t-1} + B_t x_t^T, y_t = S_t^T C_t, one step at a time.

    x (batch, time, heads, P), log_a = log a (batch, time, heads), B and C (batch, time, heads,
    N), state S_{-1} (batch, heads, N, P) or None for zeros. Returns y (batch, time, heads, P)
    and the last state (batch, heads, N, P)."""
    check_ssd(x, log_a, B, C, state)
    if state is None:
        state = x.new_zeros(x.size(0), x.size(2), B.size(3), x.size(3))
    outputs = []
    for t in range(x.size(1)):
        write = B[:, t, :, :, None] * x[:, t, :, None, :]  # (batch, heads, N, P)
        state = log_a[:, t, :, None, None].exp() * state + write
        outputs.append(torch.einsum("bhnp,bhn->bhp", state, C[:, t]))
    return torch.stack(outputs, dim=1), state


def ssd_chunked(x: torch.Tensor, log_a: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                state: torch.Tensor | None = None, chunk_size: int = 16
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention form within chunks of ``chunk_size`` steps, the state between them: the
    same arguments and results as :func:`ssd_recurrent`.

    Within chunk c, y = (L o (C B^T)) x, and the chunk's own writes leave the state
    sum_j L_{last, j} B_j x_j^T; all chunks at once, in matrix products. Only the state is
    carried from chunk to chunk, S_c = (prod of the chunk's a) S_{c-1} + that write, and output
    i of chunk c also gets (prod_{k<=i in the chunk} a_k) S_{c-1}^T C_i."""
    check_ssd(x, log_a, B, C, state)
    check.positive(chunk_size=chunk_size)
    steps, pad = x.size(1), -x.size(1) % chunk_size  # padded steps: a = 1, nothing written

    def chunks(t: torch.Tensor) -> torch.Tensor:  # (batch, time, heads, ...) -> (b, h, n, C, ...)
        t = nn.functional.pad(t, (0, 0) * (t.dim() - 2) + (0, pad))
        return t.unflatten(1, (-1, chunk_size)).movedim(3, 1).contiguous()  # for fast matmuls

    x, log_a, B, C = chunks(x), chunks(log_a), chunks(B), chunks(C)
    mask = segsum(log_a).exp()  # (batch, heads, n, C, C): L within each chunk
    y = ((C @ B.transpose(-1, -2)) * mask) @ x  # (batch, heads, n, C, P)
    writes = (B * mask[..., -1, :, None]).transpose(-1, -2) @ x  # (batch, heads, n, N, P)
    decay_in = log_a.cumsum(-1).exp()  # (batch, heads, n, C): prod of a up to i in the chunk
    if state is None:
        state = x.new_zeros(*x.shape[:2], B.size(-1), x.size(-1))
    earlier = []  # the state before each chunk, (batch, heads, N, P)
    for decay, write in zip(decay_in[..., -1].unbind(2), writes.unbind(2)):  # chunk by chunk
        earlier.append(state)
        state = decay[..., None, None] * state + write
    y = y + decay_in[..., None] * (C @ torch.stack(earlier, dim=2))
    return y.movedim(1, 3).flatten(1, 2)[:, :steps], state


def ssd_attention(x: torch.Tensor, log_a: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                  state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention form over the whole sequence, y = (L o (C B^T)) x (plus the decayed earlier
    state): :func:`ssd_chunked` with one chunk. Same arguments and results as
    :func:`ssd_recurrent`."""
    check.tensor(x, "x", "(batch, time, heads, P)", 2)
    return ssd_chunked(x, log_a, B, C, state, chunk_size=x.size(1))


def decay_parameters(d_model: int, num_heads: int, dt_min: float = 1e-3, dt_max: float = 1e-1
                     ) -> tuple[nn.Parameter, nn.Linear]:
    """Mamba-2's decay a_t = exp(-softplus(W_dt x_t + b_dt) exp(A_log)), one per head: A_log
    (heads,) with exp(A_log) from U[1, 16], and W_dt (d_model -> heads) whose bias is
    softplus^-1 of a dt drawn log-uniformly in [dt_min, dt_max], so that a_t starts near 1."""
    check.positive(d_model=d_model, num_heads=num_heads)
    check.dt_range(dt_min, dt_max)
    A_log = nn.Parameter(torch.empty(num_heads).uniform_(1, 16).log())
    dt_proj = nn.Linear(d_model, num_heads)
    with torch.no_grad():
        dt = torch.empty(num_heads).uniform_(math.log(dt_min), math.log(dt_max)).exp()
        dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus(bias) = dt
    return A_log, dt_proj


FORMS = {"recurrent": ssd_recurrent, "attention": ssd_attention, "chunked": ssd_chunked}


class ScalarSSM(nn.Module):
    """Mamba-2's SSM layer, (batch, time, d_model) -> (batch, time, d_model), ``num_heads`` heads
    of width P = d_model / num_heads, each with a state of ``state_size`` x P numbers.

    Parameters: ``A_log`` (heads,), A = exp(A_log) from U[1, 16] as in Mamba-2; ``dt_proj``
    (d_model -> heads) whose bias makes the initial dt log-uniform in [dt_min, dt_max];
    ``B_proj`` and ``C_proj`` (d_model -> heads x state_size, no bias); ``D`` (heads,). ``form``
    is "attention", "chunked" or "recurrent" (the same outputs to round-off); chunks of 16 steps
    were the fastest on one CPU thread at time 128 and 256 (a chunk costs chunk^2 per step in
    its masks, the carried state one step of the loop)."""

    def __init__(self, d_model: int, num_heads: int = 1, state_size: int = 16,
                 form: str = "chunked", chunk_size: int = 16, dt_min: float = 1e-3,
                 dt_max: float = 1e-1):
        super().__init__()
        check.positive(d_model=d_model, num_heads=num_heads, state_size=state_size,
                       chunk_size=chunk_size)
        check.multiple(d_model=d_model, num_heads=num_heads)
        check.choice(form=(form, FORMS))
        self.d_model, self.num_heads, self.state_size = d_model, num_heads, state_size
        self.form, self.chunk_size = form, chunk_size
        self.A_log, self.dt_proj = decay_parameters(d_model, num_heads, dt_min, dt_max)
        self.B_proj = nn.Linear(d_model, num_heads * state_size, bias=False)
        self.C_proj = nn.Linear(d_model, num_heads * state_size, bias=False)
        self.D = nn.Parameter(torch.ones(num_heads))

    def extra_repr(self) -> str:
        return f"{self.d_model}, num_heads={self.num_heads}, state_size={self.state_size}"

    def ssm_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """dt x (batch, time, heads, P), log a (batch, time, heads), B and C (batch, time, heads,
        N) for x (batch, time, d_model)."""
        dt = nn.functional.softplus(self.dt_proj(x))  # (batch, time, heads)
        heads = x.unflatten(-1, (self.num_heads, -1))  # (batch, time, heads, P)
        B, C = (p(x).unflatten(-1, (self.num_heads, -1)) for p in (self.B_proj, self.C_proj))
        return dt[..., None] * heads, -dt * self.A_log.exp(), B, C

    @check.overflow_checked
    def forward(self, x: torch.Tensor, state: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """x (batch, time, d_model), state (batch, heads, N, P) or None -> y (batch, time,
        d_model) and the last state (batch, heads, N, P)."""
        check.sequence(x, self.d_model, like=self.D)
        options = {"chunk_size": self.chunk_size} if self.form == "chunked" else {}
        y, state = FORMS[self.form](*self.ssm_inputs(x), state, **options)
        skip = self.D[:, None] * x.unflatten(-1, (self.num_heads, -1))  # (batch, time, heads, P)
        return (y + skip).flatten(-2), state

    def step(self, x_t: torch.Tensor, state: torch.Tensor | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """One decoding step: x_t (batch, d_model), state (batch, heads, N, P) or None -> y_t
        (batch, d_model) and the new state (the forward pass of one step)."""
        check.step_input(x_t, self.d_model, self.D)
        y, state = self(x_t[:, None], state)
        return y[:, 0], state

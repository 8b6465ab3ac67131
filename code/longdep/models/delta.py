"""DeltaNet and Gated DeltaNet: a matrix state written by the delta rule (Chapter 6, "How a state
is written"; Schlag, Irie & Schmidhuber 2021; Yang, Wang, Zhang, Shen & Kim 2024, "Parallelizing
linear transformers with the delta rule"; Yang, Kautz & Hatamizadeh 2025, "Gated Delta Networks").

Per head, with a state S_t of d_k x d_v numbers, a key k_t (unit length), a value v_t, a write
strength beta_t in (0, 1) and a decay alpha_t in (0, 1]:

    S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,       y_t = S_t^T q_t.

With S = S_{t-1} the write is S + beta k (v - S^T k)^T: the value stored under k moves a fraction
beta toward v (beta = 1 replaces it: the last write wins). DeltaNet is alpha = 1; Gated DeltaNet
also forgets, alpha_t = exp(-dt_t exp(A_log)) as in Mamba-2 (:mod:`.ssd`). The transition is
A_t = alpha_t (I - beta_t k_t k_t^T): for a unit key its eigenvalues are alpha_t (1 - beta_t)
along k_t and alpha_t across it, so dS_T/dS_k = prod A_t keeps every direction no key wrote to
(times the decays). ``write="additive"`` drops the delta term, S_t = alpha_t S_{t-1} +
beta_t k_t v_t^T: with alpha = 1 that is linear attention with the identity feature map and no
normaliser (:mod:`.linear` divides by q . sum k), the write that cannot overwrite.

The parallel form (:func:`delta_rule_chunked`) is exact. Within a chunk starting from state S_0,
with g_t = prod_{s<=t} alpha_s, the written values u_t = beta_t (v_t - alpha_t S_{t-1}^T k_t)
solve a unit lower-triangular system (the WY/UT transform of Yang et al. 2024):

    (I + M) U = diag(beta) V - diag(beta g) K S_0,    M_tj = beta_t (g_t / g_j) (k_t . k_j), j < t,

so U = U_0 - W S_0 with U_0 and W from one triangular solve for all chunks at once. Then

    Y = diag(g) Q S_0 + (Q K^T o G) U,    S_C = g_C S_0 + K^T diag(g_C / g) U,

with G_tj = g_t / g_j below the diagonal (from :func:`.ssd.segsum`, in log space), and only the
state is carried from chunk to chunk. :class:`DeltaNet` is the layer: projections as in
:class:`.attention.MultiHeadAttention`, q and k L2-normalised per head, beta = sigmoid(W_beta x),
and with ``gated`` the decay alpha.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError);
a NaN that finite inputs give :class:`DeltaNet` by float32 overflow raises a ValueError naming x.
NaN and inf are not checked, as in PyTorch: in the recurrent form one at step t reaches step t
and every later one; in the chunked form it also reaches the earlier steps of its chunk (through
a triangular solve or a zero weight, 0 * inf = NaN), never an earlier chunk.
"""

import torch
from torch import nn

try:  # inside the longdep package
    from . import _checks as check
    from .ssd import decay_parameters, segsum
except ImportError:  # copied into a folder of its own, beside _checks.py and ssd.py
    import _checks as check
    from ssd import decay_parameters, segsum

WRITES = ("delta", "additive")


def check_delta(q, k, v, beta, log_alpha, state, write) -> None:
    """Raise unless q, k (..., time, d_k), v (..., time, d_v), beta and log_alpha (..., time) are
    floating tensors of one dtype, device and leading shape; state None or (..., d_k, d_v)."""
    check.choice(write=(write, WRITES))
    given = {"q": q, "k": k, "v": v, "beta": beta, "log_alpha": log_alpha}
    for name, x in given.items():
        if x is not None or name != "log_alpha":
            check.tensor(x, name, "(..., time)" if name in ("beta", "log_alpha") else
                         "(..., time, features)")
            check.device_dtype(x, q, name, "q is")
    if q.shape != k.shape or v.shape[:-1] != q.shape[:-1] or beta.shape != q.shape[:-1] or (
            log_alpha is not None and log_alpha.shape != beta.shape):
        shapes = ", ".join(check.describe(x) for x in given.values())
        raise ValueError(f"q, k (..., time, d_k), v (..., time, d_v), beta and log_alpha "
                         f"(..., time) must share (..., time), got {shapes}")
    if state is not None:
        shape = (*q.shape[:-2], q.size(-1), v.size(-1))
        check.state(state, "state", shape, q, "(..., d_k, d_v)")


def delta_rule_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
                         log_alpha: torch.Tensor | None = None, state: torch.Tensor | None = None,
                         write: str = "delta") -> tuple[torch.Tensor, torch.Tensor]:
    """The recurrent form, one step at a time (Chapter 6, "How a state is written").

    q, k (..., time, d_k); v (..., time, d_v); beta (..., time); log_alpha = log alpha (...,
    time) or None for alpha = 1 (DeltaNet); state S_{-1} (..., d_k, d_v) or None for zeros.
    Returns y (..., time, d_v) and the last state (..., d_k, d_v)."""
    check_delta(q, k, v, beta, log_alpha, state, write)
    if state is None:
        state = q.new_zeros(*q.shape[:-2], q.size(-1), v.size(-1))
    outputs = []
    for t in range(q.size(-2)):
        k_t, v_t, beta_t = k[..., t, :], v[..., t, :], beta[..., t, None]  # (..., d), (..., 1)
        if log_alpha is not None:
            state = log_alpha[..., t, None, None].exp() * state
        if write == "delta":  # what S already stores under k_t is replaced, by a fraction beta_t
            v_t = v_t - (k_t[..., None] * state).sum(-2)
        state = state + k_t[..., :, None] * (beta_t * v_t)[..., None, :]  # (..., d_k, d_v)
        outputs.append((q[..., t, :, None] * state).sum(-2))  # S_t^T q_t, (..., d_v)
    return torch.stack(outputs, dim=-2), state


def chunks_of(x: torch.Tensor, chunk_size: int, time_dim: int) -> torch.Tensor:
    """Pad the time axis with zeros to a multiple of chunk_size and split it: (..., time, ...) ->
    (..., chunks, chunk_size, ...). A padded step has k = v = beta = log alpha = 0: it leaves
    the state as it is, and its output is dropped."""
    check.tensor(x, "x", "(..., time, ...)")
    check.positive(chunk_size=chunk_size)
    check.int_range(-x.dim(), x.dim() - 1, time_dim=time_dim)
    time_dim %= x.dim()
    pad = (0, 0) * (x.dim() - 1 - time_dim) + (0, -x.size(time_dim) % chunk_size)
    padded = nn.functional.pad(x, pad)
    return padded.unflatten(time_dim, (-1, chunk_size))


def delta_rule_chunked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
                       log_alpha: torch.Tensor | None = None, state: torch.Tensor | None = None,
                       write: str = "delta", chunk_size: int = 16
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """The exact parallel form, chunk by chunk (the module docstring derives it): the same
    arguments and results as :func:`delta_rule_recurrent`, in one triangular solve and
    time / chunk_size steps of matrix products."""
    check_delta(q, k, v, beta, log_alpha, state, write)
    check.positive(chunk_size=chunk_size)
    steps = q.size(-2)
    if log_alpha is None:
        log_alpha = torch.zeros_like(beta)
    q, k, v = (chunks_of(x, chunk_size, -2) for x in (q, k, v))  # (..., n, C, d)
    beta, log_alpha = (chunks_of(x, chunk_size, -1) for x in (beta, log_alpha))  # (..., n, C)
    decay = segsum(log_alpha).exp()  # (..., n, C, C): g_t / g_j for t >= j, 0 above
    g = log_alpha.cumsum(-1).exp()  # (..., n, C): prod of alpha_s up to t within the chunk
    U0, W = beta[..., None] * v, (beta * g)[..., None] * k  # right-hand sides, (..., n, C, d)
    if write == "delta":
        M = (beta[..., None] * decay * (k @ k.transpose(-1, -2))).tril(-1)
        UW = torch.linalg.solve_triangular(M, torch.cat([U0, W], -1), upper=False,
                                           unitriangular=True)  # (I + M)^-1: diagonal taken as 1
        U0, W = UW.split([v.size(-1), k.size(-1)], dim=-1)
    else:  # additive: u_t = beta_t v_t, nothing is read back from the state
        W = torch.zeros_like(W)
    if state is None:
        state = q.new_zeros(*q.shape[:-3], q.size(-1), v.size(-1))
    scores = (q @ k.transpose(-1, -2)) * decay  # (..., n, C, C), causal within the chunk
    outputs = []
    for q_c, k_c, U0_c, W_c, g_c, decay_c, scores_c in zip(
            *(t.unbind(-3) for t in (q, k, U0, W, g[..., None], decay, scores))):  # each chunk
        U = U0_c - W_c @ state  # (..., C, d_v)
        outputs.append(g_c * (q_c @ state) + scores_c @ U)
        last = decay_c[..., -1, :, None] * U  # (g_C / g_j) u_j, (..., C, d_v)
        state = g_c[..., -1:, :] * state + k_c.transpose(-1, -2) @ last
    return torch.cat(outputs, dim=-2)[..., :steps, :], state


FORMS = {"recurrent": delta_rule_recurrent, "chunked": delta_rule_chunked}


class DeltaNet(nn.Module):
    """A DeltaNet layer, (batch, time, d_model) -> (batch, time, d_model), ``num_heads`` heads
    of width d_k = d_v = d_model / heads (Chapter 6). Parameters: ``q_proj``, ``k_proj``,
    ``v_proj``, ``out_proj`` (d_model -> d_model), ``beta_proj`` (d_model -> heads); with
    ``gated`` (Gated DeltaNet) also ``dt_proj`` (d_model -> heads) and ``A_log`` (heads,), the
    decay of Mamba-2 (:func:`.ssd.decay_parameters`), alpha = exp(-softplus(dt_proj(x))
    exp(A_log)). ``write`` is "delta"
    or "additive", ``form`` "chunked" or "recurrent" (the same outputs to round-off; chunks of 16
    steps were the fastest on one CPU thread at time 128 and 256)."""

    def __init__(self, d_model: int, num_heads: int = 1, gated: bool = False,
                 write: str = "delta", form: str = "chunked", chunk_size: int = 16):
        super().__init__()
        check.positive(d_model=d_model, num_heads=num_heads, chunk_size=chunk_size)
        check.multiple(d_model=d_model, num_heads=num_heads)
        check.choice(write=(write, WRITES), form=(form, FORMS))
        if not isinstance(gated, bool):
            raise TypeError(f"gated must be a bool, got {type(gated).__name__}")
        self.d_model, self.num_heads, self.gated = d_model, num_heads, gated
        self.write, self.form, self.chunk_size = write, form, chunk_size
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
            nn.Linear(d_model, d_model) for _ in range(4))
        self.beta_proj = nn.Linear(d_model, num_heads)
        if gated:
            self.A_log, self.dt_proj = decay_parameters(d_model, num_heads)

    def extra_repr(self) -> str:
        return (f"{self.d_model}, num_heads={self.num_heads}, gated={self.gated}, "
                f"write={self.write!r}")

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, time, heads x d) -> (batch, heads, time, d)."""
        return x.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)

    def rule_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """q, k (unit length), v (batch, heads, time, d); beta, log alpha or None (batch, heads,
        time), for x (batch, time, d_model)."""
        q, k = (nn.functional.normalize(self.heads(p(x)), dim=-1) for p in (self.q_proj,
                                                                            self.k_proj))
        beta = torch.sigmoid(self.beta_proj(x)).transpose(1, 2)
        log_alpha = None
        if self.gated:
            log_alpha = -nn.functional.softplus(self.dt_proj(x)) * self.A_log.exp()
            log_alpha = log_alpha.transpose(1, 2)
        return q, k, self.heads(self.v_proj(x)), beta, log_alpha

    @check.overflow_checked
    def forward(self, x: torch.Tensor, state: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """x (batch, time, d_model), state (batch, heads, d_k, d_v) or None -> y (batch, time,
        d_model) and the last state (batch, heads, d_k, d_v)."""
        check.sequence(x, self.d_model, like=self.q_proj.weight)
        options = {"chunk_size": self.chunk_size} if self.form == "chunked" else {}
        y, state = FORMS[self.form](*self.rule_inputs(x), state, self.write, **options)
        return self.out_proj(y.transpose(1, 2).flatten(2)), state  # (batch, time, d_model)

    def step(self, x_t: torch.Tensor, state: torch.Tensor | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """One decoding step: x_t (batch, d_model), state (batch, heads, d_k, d_v) or None ->
        y_t (batch, d_model) and the new state."""
        check.step_input(x_t, self.d_model, self.q_proj.weight)
        y, state = self(x_t[:, None], state)
        return y[:, 0], state

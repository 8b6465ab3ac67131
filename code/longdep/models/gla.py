"""Gated linear attention: a matrix state with a forget gate per key channel (Chapter 6, "One
recurrence for every model"; Yang, Wang, Shen, Panda & Kim 2024, "Gated linear attention
transformers with hardware-efficient training").

Per head, with a state S_t of d_k x d_v numbers, a query q_t and a key k_t (d_k,), a value v_t
(d_v,) and a decay alpha_t in (0, 1]^d_k, one for each key channel:

    S_t = diag(alpha_t) S_{t-1} + k_t v_t^T,        y_t = S_t^T q_t.

The transition A_t = diag(alpha_t) is diagonal: linear attention's A = I with a forget gate per
channel, where Mamba-2 (:mod:`.ssd`) has one scalar a_t for all of them. Unrolled from S_{-1},

    y_i = sum_{j <= i} (sum_m q_im k_jm prod_{r=j+1..i} alpha_rm) v_j + (q_i o g_i)^T S_{-1},

with g_i = prod_{r<=i} alpha_r: causal attention whose score weighs every key channel m by its
own decay product. :func:`gla_attention` forms those products in log space, each from its own
terms (:func:`.ssd.segsum`, one (time, time) mask per channel), so that no product is divided by
another: (time, time, d_k) numbers, quadratic in time, like Mamba-2's attention form. The
paper's chunked, hardware-efficient form is not built here. These are the two forms of the
recurrence, not a trained layer.

Inputs are checked as :mod:`._checks` describes (an empty time axis raises ValueError). NaN and
inf are not checked, as in PyTorch: in the recurrent form one at step t reaches step t and every
later one; in the attention form it also reaches the earlier outputs, through a zero weight.
"""

import torch

try:  # inside the longdep package
    from . import _checks as check
    from .ssd import segsum
except ImportError:  # copied into a folder of its own, beside _checks.py and ssd.py
    import _checks as check
    from ssd import segsum


def check_gla(q, k, v, log_alpha, state) -> None:
    """Raise unless q, k and log_alpha (..., time, d_k) and v (..., time, d_v) are floating
    tensors of one dtype, device and leading shape, and state is None or (..., d_k, d_v)."""
    given = {"q": q, "k": k, "v": v, "log_alpha": log_alpha}
    for name, x in given.items():
        check.tensor(x, name, "(..., time, features)", 2)
        check.device_dtype(x, q, name, "q is")
    if q.shape != k.shape or log_alpha.shape != q.shape or v.shape[:-1] != q.shape[:-1]:
        shapes = ", ".join(check.describe(x) for x in given.values())
        raise ValueError(f"q, k, log_alpha (..., time, d_k) and v (..., time, d_v) must share "
                         f"(..., time), and q, k, log_alpha their d_k, got {shapes}")
    if state is not None:
        check.state(state, "state", (*q.shape[:-2], q.size(-1), v.size(-1)), q,
                    "(..., d_k, d_v)")


def gla_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_alpha: torch.Tensor,
                  state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The recurrent form, one step at a time: S_t = diag(alpha_t) S_{t-1} + k_t v_t^T,
    y_t = S_t^T q_t. q, k, log_alpha = log alpha (..., time, d_k), v (..., time, d_v), state
    S_{-1} (..., d_k, d_v) or None for zeros. Returns y (..., time, d_v) and the last state."""
    check_gla(q, k, v, log_alpha, state)
    if state is None:
        state = q.new_zeros(*q.shape[:-2], q.size(-1), v.size(-1))
    outputs = []
    for t in range(q.size(-2)):
        write = k[..., t, :, None] * v[..., t, None, :]  # (..., d_k, d_v)
        state = log_alpha[..., t, :, None].exp() * state + write
        outputs.append((q[..., t, :, None] * state).sum(-2))  # S_t^T q_t, (..., d_v)
    return torch.stack(outputs, dim=-2), state


def gla_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_alpha: torch.Tensor,
                  state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention form (the module docstring): the same arguments and results as
    :func:`gla_recurrent`, all steps at once."""
    check_gla(q, k, v, log_alpha, state)
    decay = segsum(log_alpha.transpose(-1, -2)).exp()  # (..., d_k, i, j): prod alpha_m, j < r <= i
    scores = torch.einsum("...im,...jm,...mij->...ij", q, k, decay)  # (..., time, time)
    y = scores @ v  # (..., time, d_v)
    last = decay[..., -1, :].transpose(-1, -2)  # (..., time, d_k): products from j to the end
    final = (k * last).transpose(-1, -2) @ v  # (..., d_k, d_v)
    if state is not None:
        gains = log_alpha.cumsum(-2).exp()  # (..., time, d_k): g_i
        y = y + (q * gains) @ state
        final = final + gains[..., -1, :, None] * state
    return y, final

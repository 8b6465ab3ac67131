"""A forget gate inside softmax attention, and ALiBi as its constant case (Chapters 5 and 6;
Lin, Nikishin, He & Courville 2025, "Forgetting Transformer: softmax attention with a forget
gate"; Press, Smith & Lewis 2022, "Train short, test long: attention with linear biases").

The forgetting transformer (FoX) gives every head a forget gate f_t = sigma(w_f . x_t + b_f) in
(0, 1) and adds its log products to the causal attention logits:

    O = softmax(Q K^T / sqrt(d_k) + D) V,    D_ij = sum_{k=j+1..i} log f_k  (i >= j),  -inf (i < j),

so that before normalisation the weight of key j for query i is multiplied by
prod_{k=j+1..i} f_k, the LSTM's forget gate applied across the distance i - j. D is the log of
Mamba-2's 1-semiseparable mask (:mod:`.ssd`), formed by the same :func:`.ssd.segsum`. ALiBi adds
D_ij = -m (i - j) with a fixed slope m per head, 2^(-8 h / H) for head h = 1 .. H. A constant
gate f = e^(-m) turns FoX's bias into ALiBi's: a sum of i - j terms log f = -m is -m (i - j),
exactly when m is a power of two (ALiBi's slopes for 8 heads are 1/2 .. 1/256), to round-off
otherwise.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError).
NaN and inf are not checked, as in PyTorch: a NaN in a gate reaches every bias entry whose sum
contains it (queries at and after the step, keys before it); -inf in D is the causal mask, and
every row keeps its diagonal, so no row is all -inf.
"""

import torch
from torch import nn

try:  # inside the longdep package
    from . import _checks as check
    from .attention import MultiHeadAttention
    from .ssd import segsum
except ImportError:  # copied into a folder of its own, beside _checks.py and its siblings
    import _checks as check
    from attention import MultiHeadAttention
    from ssd import segsum


def forget_gate_bias(log_f: torch.Tensor) -> torch.Tensor:
    """FoX's bias D, (..., time) log forget gates -> (..., time, time): D_ij = sum_{k=j+1..i}
    log f_k for i >= j, -inf above the diagonal (the causal mask)."""
    check.tensor(log_f, "log_f", "(..., time)")
    return segsum(log_f)


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """ALiBi's slopes m_h = 2^(-8 h / num_heads), h = 1 .. num_heads, as a float64 (heads,)
    tensor: a geometric sequence from 2^(-8 / heads) down to 1/256."""
    check.positive(num_heads=num_heads)
    return 2.0 ** (-8.0 * torch.arange(1, num_heads + 1, dtype=torch.float64) / num_heads)


def alibi_bias(steps: int, slopes: torch.Tensor) -> torch.Tensor:
    """ALiBi's causal bias, (heads, steps, steps): -m_h (i - j) for i >= j, -inf above the
    diagonal, for slopes (heads,), in the slopes' dtype and on their device."""
    check.positive(steps=steps)
    check.tensor(slopes, "slopes", "(heads,)")
    if slopes.dim() != 1:
        raise ValueError(f"slopes must have shape (heads,), got {check.describe(slopes)}")
    positions = torch.arange(steps, dtype=slopes.dtype, device=slopes.device)
    distance = positions[:, None] - positions[None, :]  # (steps, steps): i - j
    bias = -slopes[:, None, None] * distance
    return bias.masked_fill(distance < 0, -float("inf"))


def biased_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d_k) + bias) v: q (..., time_q, d_k), k (..., time_k, d_k), v (...,
    time_k, d_v), a floating bias broadcastable to the scores (..., time_q, time_k), -inf where
    attending is blocked (every row needs a finite entry). Returns the output (..., time_q, d_v)
    and the weights (..., time_q, time_k): what
    ``torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)`` returns."""
    check.qkv(q, k, v)
    check.tensor(bias, "bias", "(..., time_q, time_k)", 2)
    check.device_dtype(bias, q, "bias", "q is")
    scores_shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.size(-2), k.size(-2))
    sizes = zip(reversed(bias.shape), reversed(scores_shape))
    if bias.dim() > len(scores_shape) or any(b not in (1, s) for b, s in sizes):
        raise ValueError(f"bias must broadcast to the scores (..., time_q, time_k) = "
                         f"{scores_shape} without enlarging them, got {check.describe(bias)}")
    scores = (q * q.size(-1) ** -0.5) @ k.transpose(-2, -1) + bias  # (..., time_q, time_k)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


class ForgettingAttention(MultiHeadAttention):
    """Causal multi-head self-attention with FoX's forget gate (Chapter 6): the projections of
    :class:`.attention.MultiHeadAttention` and ``forget_proj`` (d_model -> heads), log f =
    logsigmoid(forget_proj(x)), initialised with bias ``forget_bias`` (f = sigma(forget_bias)
    at zero input)."""

    def __init__(self, d_model: int, num_heads: int, forget_bias: float = 0.0):
        super().__init__(d_model, num_heads)
        check.finite(forget_bias=forget_bias)
        self.forget_proj = nn.Linear(d_model, num_heads)
        with torch.no_grad():
            self.forget_proj.bias.fill_(forget_bias)

    @check.overflow_checked
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (batch, time, d_model) -> (batch, time, d_model) and every head's weights (batch,
        heads, time, time)."""
        check.sequence(x, self.d_model, like=self.q_proj.weight)
        q, k, v = self.project(x, x, x)  # each (batch, heads, time, d_k)
        log_f = nn.functional.logsigmoid(self.forget_proj(x)).transpose(1, 2)  # (b, heads, t)
        heads, weights = biased_attention(q, k, v, forget_gate_bias(log_f))
        return self.out_proj(heads.transpose(1, 2).flatten(2)), weights

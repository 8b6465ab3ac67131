"""Attention written from its equations (Chapter 4; reused by Chapter 5's mini Transformer).

Scaled dot-product attention of queries Q, keys K and values V is

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V,

multi-head attention runs it on ``num_heads`` learned projections of width d_k = d_model / heads
and projects the concatenated heads back,

    MultiHead(X) = Concat(head_1, ..., head_h) W^O,  head_i = Attention(X W_i^Q, X W_i^K, X W_i^V),

and the sinusoidal positional encoding adds PE(pos, 2i) = sin(pos / 10000^(2i/d)),
PE(pos, 2i+1) = cos(pos / 10000^(2i/d)) to the inputs.

Masks follow :func:`torch.nn.functional.scaled_dot_product_attention`: a boolean mask is True
where attending is **allowed**, and it must broadcast to the scores' shape without enlarging it.
:class:`torch.nn.MultiheadAttention`'s ``attn_mask`` uses the opposite convention (True =
blocked); :meth:`MultiHeadAttention.from_torch` copies weights only, so pass ``~mask`` to the
torch module to compare the two.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError).
Where finite float32 inputs overflow (past about 1e19 the scores q . k are inf and the softmax
NaN), :class:`MultiHeadAttention` raises a ValueError naming them; torch's returns the NaN.
NaN and inf are not checked, as in PyTorch. A NaN in query i reaches only output i. A NaN or inf
in a *key* at a position a query may not see does not reach it (the mask overwrites that score),
but one in a *value* does: its weight is exactly 0 and 0 * NaN = 0 * inf = NaN in the product
weights @ v, as in PyTorch's own attention (the tests check both).
"""

import math

import torch
from torch import Tensor, nn

try:  # inside the longdep package
    from . import _checks as check
    from . import _twins as twins
except ImportError:  # copied into a folder of its own, beside _checks.py and _twins.py
    import _checks as check
    import _twins as twins


def causal_mask(steps: int, device: torch.device | None = None) -> Tensor:
    """The (steps, steps) boolean mask of causal attention: query t may attend to keys 0 .. t."""
    check.positive(steps=steps)
    return torch.ones(steps, steps, dtype=torch.bool, device=device).tril()


def check_window(length: int, window: int) -> None:
    """Raise a clear error unless 1 <= window <= length."""
    check.positive(length=length, window=window)
    if window > length:
        raise ValueError(f"window {window} is larger than the sequence ({length} steps)")


def sliding_window_mask(length: int, window: int, causal: bool = True,
                        device: torch.device | None = None) -> Tensor:
    """The (length, length) mask of a sliding window: 0 <= i - j < window, or |i - j| < window.

    With ``causal`` query i sees itself and the window - 1 keys before it; without, the
    window - 1 keys on either side too. Either way one layer carries information window - 1 steps.
    """
    check_window(length, window)
    check.flags(causal=causal)
    positions = torch.arange(length, device=device)
    offset = positions[:, None] - positions[None, :]  # (length, length): i - j
    return (offset >= 0) & (offset < window) if causal else offset.abs() < window


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
                                 dropout: float = 0.0, training: bool = False
                                 ) -> tuple[Tensor, Tensor]:
    """softmax(q k^T / sqrt(d_k)) v (Chapter 4, "Scaled dot-product attention").

    q: (..., time_q, d_k); k: (..., time_k, d_k); v: (..., time_k, d_v), leading dimensions
    broadcasting as in a matrix product. mask: boolean, broadcastable to the scores' shape
    (..., time_q, time_k) without enlarging it; **True where query i may attend to key j** (the
    convention of :func:`torch.nn.functional.scaled_dot_product_attention`, the opposite of
    ``attn_mask`` in :class:`torch.nn.MultiheadAttention`). dropout: probability in [0, 1] of
    dropping an attention weight, applied only when ``training``.

    Returns the output (..., time_q, d_v) and the weights (..., time_q, time_k). Blocked scores
    are filled with the dtype's most negative finite number (-1e9 would be -inf in float16), and
    blocked weights are set to exactly zero afterwards, so a query row with no allowed key gets
    zero weights and a zero output instead of NaN.
    """
    check.qkv(q, k, v)
    check.probability(dropout=dropout)
    check.flags(training=training)
    if mask is not None:
        shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.size(-2), k.size(-2))
        check.mask(mask, shape, "(..., time_q, time_k)", q)
    # Scaling q (time_q x d_k numbers) is cheaper than scaling the scores (time_q x time_k).
    scores = (q * q.size(-1) ** -0.5) @ k.transpose(-2, -1)  # (..., time_q, time_k)
    if mask is not None:
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)  # one pass, no copy
    weights = _softmax_last(scores)
    if mask is not None:
        weights = torch.where(mask, weights, 0.0)
    if training and dropout > 0.0:
        weights = nn.functional.dropout(weights, dropout)
    return weights @ v, weights  # (..., time_q, d_v), (..., time_q, time_k)


def _softmax_last(scores: Tensor) -> Tensor:
    """``torch.softmax(scores, dim=-1)``. Speed patch. What: a row of fewer than 16 keys is
    padded with -inf to 16 before the softmax and cut back after; the padding's weights are
    exactly 0. Why: PyTorch's CPU softmax takes a slow path for rows shorter than its vector
    (measured in torch 2.13 with AVX-512: 11 keys cost 9 times as much per number as 16), and the
    book trains attention over 11 keys (Chapter 5's depth sweep); with
    ``ATEN_CPU_CAPABILITY=default`` both give the same bits. Delete when torch's softmax handles
    short rows at the speed of long ones."""
    keys, row = scores.size(-1), 16
    if keys >= row:
        return torch.softmax(scores, dim=-1)
    padded = nn.functional.pad(scores, (0, row - keys), value=-math.inf)
    return torch.softmax(padded, dim=-1)[..., :keys]


class MultiHeadAttention(nn.Module):
    """Multi-head attention, batch first (Chapter 4, "Scaled dot-product attention"): ``q_proj``,
    ``k_proj``, ``v_proj`` (d_model -> d_model) split into heads of width d_model / num_heads, then
    ``out_proj``. :meth:`from_torch` unpacks torch's ``in_proj_weight`` (3 d_model, d_model)."""

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        check.positive(d_model=d_model, num_heads=num_heads)
        check.probability(dropout=dropout)
        check.multiple(d_model=d_model, num_heads=num_heads)
        self.d_model, self.num_heads, self.dropout = d_model, num_heads, dropout
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
            nn.Linear(d_model, d_model) for _ in range(4))

    def projections(self) -> tuple[nn.Linear, nn.Linear, nn.Linear]:
        """W^Q, W^K, W^V in PyTorch's packing order."""
        return self.q_proj, self.k_proj, self.v_proj

    def split_heads(self, x: Tensor) -> Tensor:
        """(batch, time, d_model) -> (batch, heads, time, d_k)."""
        return x.unflatten(-1, (self.num_heads, self.d_model // self.num_heads)).transpose(1, 2)

    def project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Q, K, V, each (batch, heads, time, d_k); self-attention runs one packed product."""
        if query is key and key is value:
            weight = torch.cat([p.weight for p in self.projections()])  # (3 d_model, d_model)
            bias = torch.cat([p.bias for p in self.projections()])
            packed = nn.functional.linear(query, weight, bias)  # (batch, time, 3 d_model)
            return tuple(self.split_heads(x) for x in packed.chunk(3, dim=-1))
        inputs = (query, key, value)
        return tuple(self.split_heads(p(x)) for p, x in zip(self.projections(), inputs))

    @check.overflow_checked
    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
                ) -> tuple[Tensor, Tensor]:
        """query (batch, time_q, d_model), key and value (batch, time_k, d_model); mask boolean,
        True = may attend, broadcastable to (batch, time_q, time_k). Returns the output
        (batch, time_q, d_model) and every head's weights (batch, heads, time_q, time_k)."""
        check_query_key_value(query, key, value, self.d_model, self.q_proj.weight)
        if mask is not None:
            check.mask(mask, (query.size(0), query.size(1), key.size(1)),
                       "(batch, time_q, time_k)", query)
            mask = mask.unsqueeze(-3) if mask.dim() == 3 else mask  # one mask for every head
        q, k, v = self.project(query, key, value)  # each (batch, heads, time, d_k)
        heads, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout, self.training)
        return self.out_proj(heads.transpose(1, 2).flatten(2)), weights  # (batch, time_q, d_model)

    @classmethod
    def from_torch(cls, attention: nn.MultiheadAttention) -> "MultiHeadAttention":
        """A copy of a :class:`torch.nn.MultiheadAttention` (batch_first=True, bias=True)."""
        twins.torch_module(attention, nn.MultiheadAttention, batch_first=True, add_zero_attn=False)
        twins.options(attention, bias=(attention.in_proj_bias is not None, True),
                      add_bias_kv=(attention.bias_k is not None, False),
                      kdim=(attention.kdim, attention.embed_dim),
                      vdim=(attention.vdim, attention.embed_dim))
        model = cls(attention.embed_dim, attention.num_heads, attention.dropout)
        names = [f"{n}_proj.{kind}" for kind in ("weight", "bias") for n in ("q", "k", "v", "out")]
        tensors = (*attention.in_proj_weight.chunk(3), attention.out_proj.weight,
                   *attention.in_proj_bias.chunk(3), attention.out_proj.bias)
        return twins.copy_parameters(model, dict(zip(names, tensors)))


def sinusoidal_table(max_len: int, d_model: int) -> Tensor:
    """The (max_len, d_model) table PE(pos, 2i) = sin(pos w_i), PE(pos, 2i+1) = cos(pos w_i),
    with w_i = 10000^(-2i/d_model) (Chapter 4, "Sinusoidal positional encoding"); float64."""
    check.positive(max_len=max_len, d_model=d_model)
    if d_model % 2:
        raise ValueError(f"d_model must be a positive even number, got {d_model}")
    positions = torch.arange(max_len, dtype=torch.float64)[:, None]
    frequencies = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64)
                            * (-math.log(10000.0) / d_model))
    table = torch.empty(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(positions * frequencies)
    table[:, 1::2] = torch.cos(positions * frequencies)
    return table


class PositionalEncoding(nn.Module):
    """Add the sinusoidal positional encoding to (batch, time, d_model) inputs (Chapter 4,
    "Sinusoidal positional encoding").

    The table is a float64 buffer of ``max_len`` rows, never trained and not saved (it is a
    function of its shape), cast to the input's dtype and device when added; a longer sequence
    raises a ``ValueError`` instead of being silently cut, and a non-floating input (token ids,
    say) a ``TypeError``.
    """

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        """x (batch, time, d_model) -> x + PE[:time], same shape."""
        check.sequence(x, self.d_model)
        if x.size(1) > self.max_len:
            raise ValueError(f"sequence of length {x.size(1)} is longer than the positional-"
                             f"encoding table (max_len={self.max_len})")
        return x + self.table[: x.size(1)].to(x)


class CausalSelfAttention(nn.Module):
    """One causal self-attention layer, optionally restricted to a window of ``window`` >= 1 keys
    (Chapter 4, "Path length: Table 1, measured"); (batch, time, features) -> the same, one head."""

    def __init__(self, features: int, window: int | None = None):
        super().__init__()
        check.positive(features=features, **({} if window is None else {"window": window}))
        self.attention = MultiHeadAttention(features, num_heads=1)
        self.window = window

    @check.overflow_checked
    def forward(self, x: Tensor) -> Tensor:
        check.sequence(x, self.attention.d_model, like=self.attention.q_proj.weight)
        steps = x.size(1)
        mask = sliding_window_mask(steps, min(self.window or steps, steps), device=x.device)
        return self.attention(x, x, x, mask)[0]


def rotary_embedding(x: Tensor, positions: Tensor | None = None, base: float = 10000.0) -> Tensor:
    """Rotary position embedding (RoPE; Su et al. 2021, "RoFormer"; Chapter 4, "Rotary position
    embedding"): rotate each pair of features (2i, 2i+1) of a query or key at position m by the
    angle m theta_i, theta_i = base^(-2i/d_k), the pairs and frequencies of
    :func:`sinusoidal_table`:

        (x_2i, x_2i+1) -> (x_2i cos m theta_i - x_2i+1 sin m theta_i,
                           x_2i sin m theta_i + x_2i+1 cos m theta_i),

    that is x_m -> R_m x_m with R_m block-diagonal. Since R_m^T R_n = R_(n-m), the score
    (R_m q) . (R_n k) = q . (R_(n-m) k) depends on the positions through n - m only.

    x (..., time, d_k), d_k even; positions (time,), default 0 .. time-1 (any real values, as
    for a cache of past keys). Returns a tensor of x's shape and dtype; the angles are computed
    in float64 and cast to x's dtype.
    """
    check_rotary(x, positions, base)
    d_k = x.size(-1)
    if positions is None:
        positions = torch.arange(x.size(-2), device=x.device)
    frequencies = torch.exp(torch.arange(0, d_k, 2, dtype=torch.float64, device=x.device)
                            * (-math.log(base) / d_k))
    angles = positions.to(torch.float64)[:, None] * frequencies  # (time, d_k / 2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., time, d_k / 2)
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)


# The argument checks that only this file needs (the shared ones are in _checks.py).
def check_query_key_value(query, key, value, d_model: int, like: torch.Tensor) -> None:
    """Raise unless query (batch, time_q, d_model), key and value (batch, time_k, d_model) are
    floating tensors with one batch size, key and value one length, all like ``like``."""
    for name, x in (("query", query), ("key", key), ("value", value)):
        check.sequence(x, d_model, name, like)
    if key.shape != value.shape or key.size(0) != query.size(0):
        raise ValueError(
            f"query (batch, time_q, d_model), key and value (batch, time_k, d_model) need one "
            f"batch size, key and value one length; got {tuple(query.shape)}, {tuple(key.shape)}, "
            f"{tuple(value.shape)}")


def check_rotary(x, positions, base) -> None:
    """The arguments of ``rotary_embedding``: x a floating (..., time, d_k) tensor with d_k
    even, positions None or a real (time,) tensor on x's device, base a finite number > 1."""
    check.tensor(x, "x", "(..., time, d_k)", min_dim=2)
    if x.size(-1) % 2:
        raise ValueError(f"x must have an even number of features d_k, got {check.describe(x)}")
    if positions is not None:
        if not isinstance(positions, torch.Tensor) or positions.dtype == torch.bool \
                or positions.is_complex():
            raise TypeError(f"positions must be a real tensor of shape (time,), got "
                            f"{check.describe(positions)}")
        if positions.shape != x.shape[-2:-1]:
            raise ValueError(f"positions must have shape (time,) = ({x.size(-2)},), got "
                             f"{check.describe(positions)}")
        if positions.device != x.device:
            raise ValueError(f"positions are on {positions.device}, x on {x.device}")
    check.finite(base=base)
    if base <= 1:
        raise ValueError(f"base must be greater than 1, got {base}")

"""Attention written from its equations (Chapter 4; reused by Chapter 5's mini Transformer).

Scaled dot-product attention of queries Q, keys K and values V is

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V,

multi-head attention runs it on ``num_heads`` learned projections of width d_k = d_model / heads
and projects the concatenated heads back, and the sinusoidal positional encoding adds
PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)) to the inputs.

Masks follow :func:`torch.nn.functional.scaled_dot_product_attention`: a boolean mask is True
where attending is **allowed**. :class:`torch.nn.MultiheadAttention`'s ``attn_mask`` uses the
opposite convention (True = blocked); :meth:`MultiHeadAttention.from_torch` copies weights only,
so pass ``~mask`` to the torch module to compare the two.
"""

import math

import torch
from torch import nn

try:  # inside the longdep package
    from ._checks import check_sequence, check_window
except ImportError:  # copied into a folder of its own, beside _checks.py
    from _checks import check_sequence, check_window


def causal_mask(steps: int, device: torch.device | None = None) -> torch.Tensor:
    """The (steps, steps) boolean mask of causal attention: query t may attend to keys 0 .. t."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    return torch.ones(steps, steps, dtype=torch.bool, device=device).tril()


def sliding_window_mask(length: int, window: int, causal: bool = True) -> torch.Tensor:
    """The (length, length) mask of a sliding window: 0 <= i - j < window, or |i - j| < window.

    With ``causal`` query i sees itself and the window - 1 keys before it; without, the
    window - 1 keys on either side too. Either way one layer carries information window - 1 steps.
    """
    check_window(length, window)
    positions = torch.arange(length)
    offset = positions[:, None] - positions[None, :]
    if causal:
        return (offset >= 0) & (offset < window)
    return offset.abs() < window


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: float = 0.0,
    training: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d_k)) v (Chapter 4, "Scaled dot-product attention").

    q: (..., time_q, d_k); k: (..., time_k, d_k); v: (..., time_k, d_v).
    mask: boolean, broadcastable to (..., time_q, time_k); **True where query i may attend to
    key j** (the convention of :func:`torch.nn.functional.scaled_dot_product_attention`, the
    opposite of ``attn_mask`` in :class:`torch.nn.MultiheadAttention`).
    dropout: probability of dropping an attention weight, applied only when ``training``.

    Returns the output (..., time_q, d_v) and the weights (..., time_q, time_k). Blocked scores
    are filled with the dtype's most negative finite number (-1e9 would be -inf in float16), and
    blocked weights are set to exactly zero afterwards, so a query row with no allowed key gets
    zero weights and a zero output instead of NaN.
    """
    if q.size(-1) != k.size(-1):
        raise ValueError(f"q and k need the same last size d_k, got {q.size(-1)} and {k.size(-1)}")
    if k.size(-2) != v.size(-2):
        raise ValueError(f"k and v need the same time_k, got {k.size(-2)} and {v.size(-2)}")
    # Scaling q (time_q x d_k numbers) is cheaper than scaling the scores (time_q x time_k).
    scores = (q * q.size(-1) ** -0.5) @ k.transpose(-2, -1)
    if mask is not None:
        if mask.dtype != torch.bool:
            raise ValueError(f"mask must be boolean (True = may attend), got {mask.dtype}")
        try:
            torch.broadcast_shapes(mask.shape, scores.shape)
        except RuntimeError:
            raise ValueError(
                f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
                f"{tuple(scores.shape)} (..., time_q, time_k)"
            ) from None
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    if training and dropout > 0.0:
        weights = nn.functional.dropout(weights, dropout)
    return weights @ v, weights


class MultiHeadAttention(nn.Module):
    """Multi-head attention (Chapter 4, "Scaled dot-product attention"), batch first.

    Four projections of shape (d_model, d_model): ``q_proj``, ``k_proj``, ``v_proj`` split into
    ``num_heads`` heads of width d_k = d_model / num_heads, and ``out_proj`` after the heads are
    concatenated. :class:`torch.nn.MultiheadAttention` packs the first three into one
    ``in_proj_weight`` (3 d_model, d_model); :meth:`from_torch` unpacks it. For self-attention
    (query, key and value the same tensor) the three projections still run as one matrix
    product.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model < 1 or num_heads < 1 or d_model % num_heads:
            raise ValueError(
                f"d_model must be a positive multiple of num_heads, got d_model={d_model}, "
                f"num_heads={num_heads}"
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    @classmethod
    def from_torch(cls, attention: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy the weights of a :class:`torch.nn.MultiheadAttention` (batch_first=True)."""
        if not attention.batch_first or not attention._qkv_same_embed_dim:
            raise ValueError("from_torch needs nn.MultiheadAttention(batch_first=True) "
                             "with kdim = vdim = embed_dim")
        if attention.in_proj_bias is None or attention.bias_k is not None:
            raise ValueError("from_torch needs bias=True and add_bias_kv=False")
        model = cls(attention.embed_dim, attention.num_heads, attention.dropout)
        model = model.to(dtype=attention.in_proj_weight.dtype)
        weights = attention.in_proj_weight.chunk(3)
        biases = attention.in_proj_bias.chunk(3)
        with torch.no_grad():
            for projection, weight, bias in zip(model.projections(), weights, biases):
                projection.weight.copy_(weight)
                projection.bias.copy_(bias)
            model.out_proj.load_state_dict(attention.out_proj.state_dict())
        return model

    def projections(self) -> tuple[nn.Linear, nn.Linear, nn.Linear]:
        """W^Q, W^K, W^V in PyTorch's packing order."""
        return self.q_proj, self.k_proj, self.v_proj

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, time, d_model) -> (batch, heads, time, d_k)."""
        batch, steps, _ = x.shape
        return x.view(batch, steps, self.num_heads, -1).transpose(1, 2)

    def project(self, query, key, value) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Q, K, V, each (batch, heads, time, d_k), from (batch, time, d_model) inputs."""
        if query is key and key is value:
            weight = torch.cat([p.weight for p in self.projections()])
            bias = torch.cat([p.bias for p in self.projections()])
            packed = nn.functional.linear(query, weight, bias)
            return tuple(self.split_heads(x) for x in packed.chunk(3, dim=-1))
        inputs = (query, key, value)
        return tuple(self.split_heads(p(x)) for p, x in zip(self.projections(), inputs))

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """query (batch, time_q, d_model); key and value (batch, time_k, d_model).

        mask: boolean, True = may attend, of shape (time_q, time_k) or (batch, time_q, time_k).
        Returns the output (batch, time_q, d_model) and the attention weights of every head,
        (batch, heads, time_q, time_k).
        """
        for name, x in (("query", query), ("key", key), ("value", value)):
            check_sequence(x, self.d_model, name)
        if key.shape[:2] != value.shape[:2] or key.size(0) != query.size(0):
            raise ValueError(
                f"query, key and value need one batch size and key and value one length, got "
                f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}"
            )
        batch, time_q, time_k = query.size(0), query.size(1), key.size(1)
        if mask is not None:
            if mask.shape not in ((time_q, time_k), (batch, time_q, time_k)):
                raise ValueError(
                    f"mask must have shape (time_q, time_k) = {(time_q, time_k)} or "
                    f"(batch, time_q, time_k), got {tuple(mask.shape)}"
                )
            if mask.dim() == 3:
                mask = mask[:, None]  # the same mask for every head
        q, k, v = self.project(query, key, value)
        heads, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout, self.training)
        concatenated = heads.transpose(1, 2).reshape(batch, time_q, self.d_model)
        return self.out_proj(concatenated), weights


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """The (max_len, d_model) table PE(pos, 2i) = sin(pos w_i), PE(pos, 2i+1) = cos(pos w_i),
    with w_i = 10000^(-2i/d_model) (Chapter 4, "Sinusoidal positional encoding"); float64."""
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1, got {max_len}")
    if d_model < 2 or d_model % 2:
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
    function of its shape), cast to the input's dtype when added; a longer sequence raises a
    ``ValueError`` instead of being silently cut.
    """

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (batch, time, d_model) -> x + PE[:time], same shape."""
        check_sequence(x, self.d_model)
        if x.size(1) > self.max_len:
            raise ValueError(
                f"sequence of length {x.size(1)} is longer than the positional-encoding table "
                f"(max_len={self.max_len})"
            )
        return x + self.table[: x.size(1)].to(x.dtype)


class CausalSelfAttention(nn.Module):
    """One causal self-attention layer, optionally restricted to a window (Chapter 4, "Path
    length: Table 1, measured"); (batch, time, features) -> (batch, time, features), one head."""

    def __init__(self, features: int, window: int | None = None):
        super().__init__()
        self.attention = MultiHeadAttention(features, num_heads=1)
        self.window = window

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        steps = x.size(1)
        mask = sliding_window_mask(steps, min(self.window or steps, steps)).to(x.device)
        return self.attention(x, x, x, mask)[0]

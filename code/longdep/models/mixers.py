"""Efficient mixers inside the book's Transformer layer, so that models differ in one place
only (Chapter 6, "Gradient versus distance, for every model of the book").

:class:`longdep.models.transformer.EncoderLayer` calls ``self_attn(x, x, x, mask)``. The classes
here take that call and mix the sequence another way; :func:`mixer_stack` builds a Pre-LN
:class:`longdep.models.transformer.EncoderStack` whose every layer is built with one of them. All
of them are causal by construction, so they take no mask.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError);
NaN and inf propagate as in each mixer's own module.
"""

import torch
from torch import nn

try:  # inside the longdep package
    from . import _checks as check
    from .attention import MultiHeadAttention
    from .delta import DeltaNet
    from .linear import linear_attention
    from .sparse import sliding_window_attention
    from .ssd import ScalarSSM
    from .ssm import SelectiveSSM
    from .transformer import EncoderStack
except ImportError:  # copied into a folder of its own, beside _checks.py
    import _checks as check
    from attention import MultiHeadAttention
    from delta import DeltaNet
    from linear import linear_attention
    from sparse import sliding_window_attention
    from ssd import ScalarSSM
    from ssm import SelectiveSSM
    from transformer import EncoderStack


def check_self_mixing(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      mask: torch.Tensor | None, d_model: int, like: torch.Tensor) -> None:
    """Raise a clear ``ValueError`` unless this is causal self-mixing of (batch, time, d_model):
    the same tensor three times, or a query of one step, (batch, 1, d_model), that asks for the
    last position of key = value alone (:class:`EncoderLayer`'s ``last_only``)."""
    check.sequence(key, d_model, "key", like)
    check.sequence(query, d_model, "query", like)
    if value is not key or (query is not key and query.size(1) != 1):
        raise ValueError("this mixer only does self-attention: pass the same tensor three "
                         "times, or the last step of it as the query")
    if mask is not None:
        raise ValueError("this mixer is causal by construction and takes no mask")


class CausalHeadsMixer(MultiHeadAttention):
    """Multi-head self-attention whose per-head operation ``mix_heads`` replaces softmax attention.

    Same projections as :class:`longdep.models.attention.MultiHeadAttention`; forward(x, x, x) maps
    (batch, time, d_model) to ((batch, time, d_model), None): there is no weight matrix to return.
    """

    def mix_heads(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    @check.overflow_checked
    def forward(self, query, key, value, mask=None):
        check_self_mixing(query, key, value, mask, self.d_model, self.q_proj.weight)
        heads = self.mix_heads(*self.project(query, key, value))  # (batch, heads, time, d_k)
        return self.out_proj(heads.transpose(1, 2).flatten(2)), None  # (batch, time, d_model)


class WindowedSelfAttention(CausalHeadsMixer):
    """Causal sliding-window attention of ``window`` keys per query, banded (O(time * window))."""

    def __init__(self, d_model: int, num_heads: int, window: int):
        check.positive(window=window)
        super().__init__(d_model, num_heads)
        self.window = window

    def mix_heads(self, q, k, v):
        if q.size(-2) != k.size(-2):
            raise ValueError("window attention computes every position: it takes no query of "
                             "the last step alone")
        return sliding_window_attention(q, k, v, self.window)


class LinearSelfAttention(CausalHeadsMixer):
    """Causal linear attention with phi = elu + 1 (Katharopoulos et al. 2020), in chunks of
    64 steps, or one chunk of the whole sequence when it is shorter (a longer chunk would only
    pad it with steps that causality then ignores). A query of the last step alone reads every
    key, the non-causal sum."""

    def mix_heads(self, q, k, v):
        if q.size(-2) < k.size(-2):  # the last position alone: every key is at or before it
            return linear_attention(q, k, v, causal=False)
        return linear_attention(q, k, v, causal=True, chunk_size=min(64, q.size(-2)))


class SSMSelfMixer(nn.Module):
    """A :class:`longdep.models.ssm.SelectiveSSM` behind the self-attention call."""

    def __init__(self, d_model: int, state_size: int):
        super().__init__()
        self.d_model = d_model
        self.ssm = SelectiveSSM(d_model, state_size)

    @check.overflow_checked
    def forward(self, query, key, value, mask=None):
        check_self_mixing(query, key, value, mask, self.d_model, self.ssm.D)
        if query is not key:  # the last position alone
            return self.ssm.last_output(key), None
        return self.ssm(query), None


class StateSelfMixer(nn.Module):
    """A layer with a matrix state behind the self-attention call (Chapter 6, "One recurrence
    for every model"): ``layer`` maps x (batch, time, d_model) to (y, last state), as
    :class:`.ssd.ScalarSSM` and :class:`.delta.DeltaNet` do; the mixer returns (y, None)."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        check.instance(layer, "layer", nn.Module, "d_model")
        self.d_model, self.layer = layer.d_model, layer

    @check.overflow_checked
    def forward(self, query, key, value, mask=None):
        check_self_mixing(query, key, value, mask, self.d_model,
                          next(self.layer.parameters()))
        return self.layer(query)[0], None


# Each mixer's maker: (d_model, num_heads, window=..., state_size=...) -> the token mixer of one
# layer. A new mixer is one entry here.
MIXERS = {
    "softmax": lambda d_model, num_heads, **_: MultiHeadAttention(d_model, num_heads),
    "window": lambda d_model, num_heads, window, **_: WindowedSelfAttention(d_model, num_heads,
                                                                            window),
    "linear": lambda d_model, num_heads, **_: LinearSelfAttention(d_model, num_heads),
    "ssm": lambda d_model, num_heads, state_size, **_: SSMSelfMixer(d_model, state_size),
    # Chapter 6, "One recurrence for every model": Mamba-2's scalar SSM and the delta rule
    "ssd": lambda d_model, num_heads, state_size, **_: StateSelfMixer(
        ScalarSSM(d_model, num_heads, state_size)),
    "delta": lambda d_model, num_heads, **_: StateSelfMixer(DeltaNet(d_model, num_heads)),
    "gated delta": lambda d_model, num_heads, **_: StateSelfMixer(
        DeltaNet(d_model, num_heads, gated=True)),
    "additive": lambda d_model, num_heads, **_: StateSelfMixer(
        DeltaNet(d_model, num_heads, write="additive")),
}


def mixer_stack(mixer: str, d_model: int, num_heads: int, num_layers: int, d_ff: int,
                max_len: int, window: int = 8, state_size: int = 8,
                input_size: int | None = None) -> EncoderStack:
    """A causal Pre-LN :class:`EncoderStack`, (batch, time, input_size) -> (batch, time,
    d_model), whose layers mix tokens with ``mixer``, a key of :data:`MIXERS`: "softmax" (the
    Transformer, with the causal mask), "window" (``window`` keys), "linear" or "ssm" (a state
    of ``state_size`` per channel), "ssd" (Mamba-2's scalar SSM, ``state_size`` x d_model /
    num_heads per head), "delta", "gated delta" or "additive" (DeltaNet, Gated DeltaNet and
    DeltaNet's additive twin, a d_k x d_k state per head). ``input_size`` (default d_model)
    other than d_model puts a linear map to d_model features first, so that the stack can read
    embeddings of another width. Each layer is built with its own mixer: the mixer's
    parameters, then the layer's."""
    check.choice(mixer=(mixer, MIXERS))
    check.positive(window=window, state_size=state_size)
    make = MIXERS[mixer]
    return EncoderStack(d_model, num_heads, num_layers, d_ff, max_len, norm_first=True,
                        causal=mixer == "softmax", input_size=input_size,
                        mixer=lambda: make(d_model, num_heads, window=window,
                                           state_size=state_size))

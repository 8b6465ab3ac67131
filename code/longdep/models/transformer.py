"""The Transformer encoder built from :mod:`longdep.models.attention` (Chapters 4 and 5).

An encoder layer is self-attention and a position-wise feed-forward network,
FFN(x) = W_2 relu(W_1 x + b_1) + b_2, each wrapped in a residual connection and a layer
normalisation, in one of two orders:

    Post-LN (Vaswani et al. 2017):  x <- LN(x + F(x))
    Pre-LN  (Xiong et al. 2020):    x <- x + F(LN(x))

Only Pre-LN leaves an identity path from the input of the stack to its output, which is why deep
Post-LN stacks need learning-rate warm-up (Chapter 5, "Training stability done right").
:class:`TransformerEncoder` maps tokens to (batch, time, d_model); :class:`NextTokenHead` turns
that into next-token logits, and :func:`next_token_model` joins the two.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError).
A float32 LayerNorm squares its inputs: finite inputs past about 1e19 overflow, and where
torch.nn.TransformerEncoderLayer then returns NaN, :class:`EncoderLayer` and
:class:`EncoderStack` raise a ValueError naming x. NaN and inf are not checked, as in PyTorch.
A LayerNorm spreads one over all features of its position, and attention spreads it to every
query, even in a causal stack: a query's weight for a later position is exactly 0, but
0 * NaN = NaN in the product with the values (:mod:`longdep.models.attention`; the tests check
it).
"""

import math

import torch
from torch import Tensor, nn

try:  # inside the longdep package
    from . import _checks as check
    from . import _twins as twins
    from .attention import MultiHeadAttention, PositionalEncoding, causal_mask
except ImportError:  # copied into a folder of its own, beside _checks.py and _twins.py
    import _checks as check
    import _twins as twins
    from attention import MultiHeadAttention, PositionalEncoding, causal_mask


COPIED = [f"{module}.{kind}" for module in ("linear1", "linear2", "norm1", "norm2")
          for kind in ("weight", "bias")]


def torch_layer_arguments(layer) -> tuple:
    """(d_model, num_heads, d_ff, dropout, norm_first) of a
    :class:`torch.nn.TransformerEncoderLayer`, once checked that :meth:`EncoderLayer.from_torch`
    can copy it (else a ``ValueError`` names the first option it cannot)."""
    twins.torch_module(layer, nn.TransformerEncoderLayer)
    activation = {1: "relu", 2: "gelu"}.get(layer.activation_relu_or_gelu, layer.activation)
    twins.options(layer, batch_first=(layer.self_attn.batch_first, True),
                  activation=(activation, "relu"), bias=(layer.linear1.bias is not None, True),
                  layer_norm_eps=(layer.norm1.eps, 1e-5))
    return (layer.self_attn.embed_dim, layer.self_attn.num_heads, layer.linear1.out_features,
            layer.dropout.p, layer.norm_first)


def last_query(mask: Tensor | None) -> Tensor | None:
    """The mask of the last query alone: the last row of a (..., time, time) mask; a mask of
    one row, (..., 1, time) or (time,), is every query's already."""
    return mask if mask is None or mask.dim() < 2 else mask[..., -1:, :]


class EncoderLayer(nn.Module):
    """One encoder layer (Chapter 4, "Residual connections and layer normalisation"), named as
    :class:`torch.nn.TransformerEncoderLayer`'s; ``self_attn`` may be another token mixer."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0,
                 norm_first: bool = False, self_attn: nn.Module | None = None):
        super().__init__()
        check.positive(d_model=d_model, d_ff=d_ff)
        check.probability(dropout=dropout)
        check.flags(norm_first=norm_first)
        self.d_model, self.norm_first = d_model, norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout) if self_attn is None \
            else check.instance(self_attn, "self_attn", nn.Module)
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout, self.dropout1, self.dropout2 = (nn.Dropout(dropout) for _ in range(3))

    def feed_forward_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(torch.relu(self.linear1(x)))))

    @check.overflow_checked
    def forward(self, x: Tensor, mask: Tensor | None = None, last_only: bool = False) -> Tensor:
        """x (batch, time, d_model) -> the same, mask as in :meth:`MultiHeadAttention.forward`;
        with ``last_only`` only the last position asks: (batch, 1, d_model), the last row."""
        check.sequence(x, self.d_model, like=self.linear1.weight)
        keys = self.norm1(x) if self.norm_first else x
        query, mask = (keys[:, -1:], last_query(mask)) if last_only else (keys, mask)
        mixed = self.dropout1(self.self_attn(query, keys, keys, mask)[0])  # the residual branch
        y = (x[:, -1:] if last_only else x) + mixed
        if self.norm_first:  # Pre-LN: x + F(LN(x))
            return y + self.feed_forward_block(self.norm2(y))
        y = self.norm1(y)  # Post-LN: LN(x + F(x))
        return self.norm2(y + self.feed_forward_block(y))

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> "EncoderLayer":
        """A copy of a :class:`torch.nn.TransformerEncoderLayer` (batch_first=True, relu)."""
        model = cls(*torch_layer_arguments(layer), MultiHeadAttention.from_torch(layer.self_attn))
        return twins.copy_parameters(model, {name: layer.get_parameter(name) for name in COPIED})


class EncoderStack(nn.Module):
    """Positional encoding, ``num_layers`` encoder layers and, for Pre-LN, a final LayerNorm
    (Chapter 5, "The model, checked against PyTorch").

    Maps embeddings (batch, time, input_size) to (batch, time, d_model), so it can serve as the
    ``core`` of :func:`longdep.experiments.key_recall.train_key_recall`; ``input_size`` (default
    d_model) other than d_model adds a linear input projection. With ``causal=True`` position t
    sees only positions 0 .. t. Pre-LN needs the final LayerNorm: its residual stream is a sum of
    layer outputs that is never normalised otherwise. ``mixer``, a function of no arguments,
    makes each layer's token mixer in place of multi-head attention
    (:func:`longdep.models.mixers.mixer_stack`).

    With ``last_only=True`` the stack returns only the last position, (batch, 1, d_model), all
    that a classifier of the last step reads (:class:`longdep.models.heads.LastStepClassifier`):
    the last layer then computes one query instead of ``time`` (:meth:`EncoderLayer.forward`).
    """

    def __init__(self, d_model: int, num_heads: int, num_layers: int, d_ff: int, max_len: int,
                 dropout: float = 0.0, norm_first: bool = False, causal: bool = False,
                 input_size: int | None = None, last_only: bool = False, mixer=None):
        super().__init__()
        self.input_size = d_model if input_size is None else input_size
        check.positive(d_model=d_model, num_layers=num_layers, input_size=self.input_size)
        check.flags(norm_first=norm_first, causal=causal, last_only=last_only)
        check.probability(dropout=dropout)
        if mixer is not None:
            check.callables(mixer=mixer)
        self.d_model, self.causal, self.last_only = d_model, causal, last_only
        self.input_projection = (nn.Identity() if self.input_size == d_model
                                 else nn.Linear(self.input_size, d_model))
        self.positional_encoding = PositionalEncoding(d_model, max_len)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first, mixer and mixer())
            for _ in range(num_layers))
        self.final_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def attention_mask(self, x: Tensor, mask: Tensor | None) -> Tensor | None:
        """The checked mask for x (batch, time, d_model), and-ed with the causal mask if
        ``causal``."""
        if mask is not None:
            check.mask(mask, (x.size(0), x.size(1), x.size(1)), "(batch, time, time)", x)
        if not self.causal:
            return mask
        causal = causal_mask(x.size(1), x.device)  # (time, time)
        return causal if mask is None else mask & causal

    @check.overflow_checked
    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """x (batch, time, input_size) -> (batch, time, d_model), or (batch, 1, d_model) if
        ``last_only``; mask boolean, True = may attend, broadcastable to (batch, time, time),
        and-ed with the causal mask if ``causal``."""
        check.sequence(x, self.input_size, like=self.layers[0].linear1.weight)
        h = self.dropout(self.positional_encoding(self.input_projection(x)))  # (b, t, d_model)
        mask = self.attention_mask(h, mask)
        for layer in self.layers:
            h = layer(h, mask, self.last_only and layer is self.layers[-1])
        return self.final_norm(h)

    def layer_outputs(self, x: Tensor, mask: Tensor | None = None):
        """Yield the output (batch, time, d_model) of every layer in turn, for x already embedded
        and positioned; mask as in :meth:`forward` (Chapter 6 measures each layer's reach)."""
        check.sequence(x, self.d_model, like=self.layers[0].linear1.weight)
        mask = self.attention_mask(x, mask)
        for layer in self.layers:
            x = layer(x, mask)
            yield x


class TransformerEncoder(nn.Module):
    """The source article's encoder with its bugs fixed (Chapter 5, "The article's listing, bug
    by bug"): tokens (batch, time) -> embedding * sqrt(d_model) -> :class:`EncoderStack` ->
    (batch, time, d_model). A next-token head is a separate module, :class:`NextTokenHead`.

    - ``d_model`` is stored (the article reads ``self.d_model`` without setting it);
    - the embedding is initialised N(0, 1/d_model), so that after the sqrt(d_model) scale each
      coordinate has variance 1, the size of the positional encoding's entries (mean square
      1/2). The article scales PyTorch's default N(0, 1) embedding by sqrt(d_model), which makes
      the token vector about sqrt(2 d_model) times longer than the positional encoding and drowns
      the position information;
    - ``causal=True`` applies the causal mask, without which position t sees the word it is
      asked to predict;
    - masks are boolean with True = may attend, and blocked scores are filled with the dtype's
      most negative finite number, not -1e9 (which is -inf in float16);
    - Pre-LN (``norm_first=True``) ends with a LayerNorm.
    """

    def __init__(self, vocab_size: int, d_model: int, num_heads: int, num_layers: int,
                 d_ff: int, max_len: int, dropout: float = 0.1, norm_first: bool = False,
                 causal: bool = False):
        super().__init__()
        check.positive(vocab_size=vocab_size, d_model=d_model)
        self.vocab_size, self.d_model = vocab_size, d_model
        self.embedding = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embedding.weight, std=d_model**-0.5)
        self.stack = EncoderStack(d_model, num_heads, num_layers, d_ff, max_len, dropout,
                                  norm_first, causal)

    def forward(self, tokens: Tensor, mask: Tensor | None = None) -> Tensor:
        """tokens (batch, time) int64 in [0, vocab_size) -> (batch, time, d_model)."""
        check.tokens(tokens, self.vocab_size)
        x = self.embedding(tokens) * math.sqrt(self.d_model)  # (batch, time, d_model)
        return self.stack(x, mask)


class NextTokenHead(nn.Linear):
    """Next-token logits x W^T + b, (batch, time, d_model) -> (batch, time, vocab_size)
    (Chapter 5). ``weight`` (vocab_size, d_model) and ``bias`` (vocab_size,) are initialised as
    :class:`torch.nn.Linear`'s; with ``tie_to``, an ``nn.Embedding(vocab_size, d_model)``, the
    weight *is* that embedding's table (weight tying, Press and Wolf 2017): only the bias is new.
    """

    def __init__(self, d_model: int, vocab_size: int, tie_to: nn.Embedding | None = None):
        check.positive(d_model=d_model, vocab_size=vocab_size)
        super().__init__(d_model, vocab_size)
        if tie_to is not None:
            twins.torch_module(tie_to, nn.Embedding, "tie_to", num_embeddings=vocab_size,
                         embedding_dim=d_model)
            self.weight = tie_to.weight

    def forward(self, x: Tensor) -> Tensor:
        check.sequence(x, self.in_features, like=self.weight)
        return super().forward(x)  # (batch, time, vocab_size)


class NextTokenModel(nn.Module):
    """An ``encoder`` (tokens (batch, time) -> (batch, time, d_model)) followed by a ``head``
    ((batch, time, d_model) -> logits (batch, time, vocab_size)), as Chapter 5 trains it."""

    def __init__(self, encoder: nn.Module, head: nn.Module):
        super().__init__()
        check.instance(encoder, "encoder", nn.Module)
        check.instance(head, "head", nn.Module)
        width, reads = getattr(encoder, "d_model", None), getattr(head, "in_features", None)
        if width is not None and reads is not None and width != reads:
            raise ValueError(f"the encoder gives d_model={width} features, but the head reads "
                             f"in_features={reads}: the two must be equal")
        self.encoder, self.head = encoder, head

    def forward(self, tokens: Tensor, mask: Tensor | None = None) -> Tensor:
        """tokens (batch, time) int64 -> logits (batch, time, vocab_size)."""
        return self.head(self.encoder(tokens, mask))


def next_token_model(vocab_size: int, d_model: int, num_heads: int, num_layers: int, d_ff: int,
                     max_len: int, dropout: float = 0.1, norm_first: bool = False,
                     causal: bool = False, tie_weights: bool = False) -> NextTokenModel:
    """A :class:`TransformerEncoder` and a :class:`NextTokenHead` (tied to its embedding if
    ``tie_weights``), created in that order: for a given seed the same weights as before the
    head became a module of its own."""
    encoder = TransformerEncoder(vocab_size, d_model, num_heads, num_layers, d_ff, max_len,
                                 dropout, norm_first, causal)
    tie_to = encoder.embedding if tie_weights else None
    return NextTokenModel(encoder, NextTokenHead(d_model, vocab_size, tie_to))

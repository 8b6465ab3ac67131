"""The Transformer encoder built from :mod:`longdep.models.attention` (Chapters 4 and 5).

An encoder layer is self-attention and a position-wise feed-forward network, each wrapped in a
residual connection and a layer normalisation, in one of two orders:

    Post-LN (Vaswani et al. 2017):  x <- LN(x + F(x))
    Pre-LN  (Xiong et al. 2020):    x <- x + F(LN(x))

Only Pre-LN leaves an identity path from the input of the stack to its output, which is why deep
Post-LN stacks need learning-rate warm-up (Chapter 5, "Training stability done right").
"""

import math

import torch
from torch import nn

try:  # inside the longdep package
    from ._checks import check_sequence
    from .attention import MultiHeadAttention, PositionalEncoding, causal_mask
except ImportError:  # copied into a folder of its own, beside _checks.py
    from _checks import check_sequence
    from attention import MultiHeadAttention, PositionalEncoding, causal_mask


class EncoderLayer(nn.Module):
    """One encoder layer (Chapter 4, "Residual connections and layer normalisation").

    Submodules have the names of :class:`torch.nn.TransformerEncoderLayer` (``self_attn``,
    ``linear1``, ``linear2``, ``norm1``, ``norm2``, ``dropout``, ``dropout1``, ``dropout2``), with a
    ReLU feed-forward network linear2(relu(linear1(x))) of inner width ``d_ff``.
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0,
                 norm_first: bool = False):
        super().__init__()
        if d_ff < 1:
            raise ValueError(f"d_ff must be positive, got {d_ff}")
        self.d_model = d_model
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> "EncoderLayer":
        """Copy the weights of a :class:`torch.nn.TransformerEncoderLayer` built with
        ``batch_first=True`` and ``activation="relu"``."""
        if not layer.self_attn.batch_first or layer.activation_relu_or_gelu != 1:
            raise ValueError('from_torch needs nn.TransformerEncoderLayer(batch_first=True, '
                             'activation="relu")')
        if layer.norm1.eps != 1e-5 or layer.linear1.bias is None:
            raise ValueError("from_torch needs layer_norm_eps=1e-5 and bias=True")
        model = cls(layer.self_attn.embed_dim, layer.self_attn.num_heads,
                    layer.linear1.out_features, layer.dropout.p, layer.norm_first)
        model.self_attn = MultiHeadAttention.from_torch(layer.self_attn)
        model = model.to(dtype=layer.linear1.weight.dtype)
        for name in ("linear1", "linear2", "norm1", "norm2"):
            getattr(model, name).load_state_dict(getattr(layer, name).state_dict())
        return model

    def attention_block(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        return self.dropout1(self.self_attn(x, x, x, mask)[0])

    def feed_forward_block(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout2(self.linear2(self.dropout(torch.relu(self.linear1(x)))))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (batch, time, d_model) -> (batch, time, d_model).

        mask: boolean, True = may attend, (time, time) or (batch, time, time); see
        :func:`longdep.models.attention.scaled_dot_product_attention`.
        """
        if self.norm_first:
            x = x + self.attention_block(self.norm1(x), mask)
            return x + self.feed_forward_block(self.norm2(x))
        x = self.norm1(x + self.attention_block(x, mask))
        return self.norm2(x + self.feed_forward_block(x))


class EncoderStack(nn.Module):
    """Positional encoding, ``num_layers`` encoder layers and, for Pre-LN, a final LayerNorm
    (Chapter 5, "The model, checked against PyTorch").

    Maps embeddings (batch, time, input_size) to (batch, time, d_model), so it can serve as the
    ``core`` of :func:`longdep.experiments.key_recall.train_key_recall`; ``input_size`` (default d_model) other
    than d_model adds a linear input projection. With ``causal=True`` position t sees only
    positions 0 .. t. Pre-LN needs the final LayerNorm: its residual stream is a sum of layer
    outputs that is never normalised otherwise.
    """

    def __init__(self, d_model: int, num_heads: int, num_layers: int, d_ff: int, max_len: int,
                 dropout: float = 0.0, norm_first: bool = False, causal: bool = False,
                 input_size: int | None = None):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers must be at least 1, got {num_layers}")
        self.d_model = d_model
        self.causal = causal
        self.input_size = d_model if input_size is None else input_size
        self.input_projection = (nn.Identity() if self.input_size == d_model
                                 else nn.Linear(self.input_size, d_model))
        self.positional_encoding = PositionalEncoding(d_model, max_len)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first) for _ in range(num_layers)
        )
        self.final_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (batch, time, input_size) -> (batch, time, d_model); mask as in
        :class:`EncoderLayer`, combined with the causal mask when ``causal``."""
        check_sequence(x, self.input_size)
        x = self.dropout(self.positional_encoding(self.input_projection(x)))
        for x in self.layer_outputs(x, mask):
            pass
        return self.final_norm(x)

    def layer_outputs(self, x: torch.Tensor, mask: torch.Tensor | None = None):
        """Yield the output (batch, time, d_model) of every layer in turn, for x already embedded
        and positioned; mask as in :meth:`forward` (Chapter 6 measures each layer's reach)."""
        if self.causal:
            causal = causal_mask(x.size(1), x.device)
            mask = causal if mask is None else mask & causal
        for layer in self.layers:
            x = layer(x, mask)
            yield x


class TransformerEncoder(nn.Module):
    """The source article's model with its bugs fixed (Chapter 5, "The article's listing, bug
    by bug").

    tokens (batch, time) -> embedding * sqrt(d_model) -> :class:`EncoderStack` -> a linear head
    giving next-token logits (batch, time, vocab_size). The fixes:

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
        if vocab_size < 1:
            raise ValueError(f"vocab_size must be positive, got {vocab_size}")
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embedding.weight, std=d_model**-0.5)
        self.stack = EncoderStack(d_model, num_heads, num_layers, d_ff, max_len, dropout,
                                  norm_first, causal)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """tokens (batch, time) int64 -> logits (batch, time, vocab_size)."""
        if tokens.dim() != 2 or tokens.dtype != torch.int64:
            raise ValueError(f"tokens must be int64 of shape (batch, time), got {tokens.dtype} "
                             f"of shape {tuple(tokens.shape)}")
        x = self.embedding(tokens) * math.sqrt(self.d_model)
        return self.head(self.stack(x, mask))

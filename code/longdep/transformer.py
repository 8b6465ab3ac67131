"""The Transformer encoder built from :mod:`longdep.attention` (Chapters 4 and 5).

An encoder layer is self-attention and a position-wise feed-forward network, each wrapped in a
residual connection and a layer normalisation, in one of two orders:

    Post-LN (Vaswani et al. 2017):  x <- LN(x + F(x))
    Pre-LN  (Xiong et al. 2020):    x <- x + F(LN(x))

Only Pre-LN leaves an identity path from the input of the stack to its output, which is why deep
Post-LN stacks need learning-rate warm-up (Chapter 5, "Training stability done right").
"""

import math
from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import nn

from longdep.attention import (MultiHeadAttention, PositionalEncoding, causal_mask,
                               sinusoidal_table)
from longdep.rnn import check_sequence
from longdep.training import KEY_RECALL_BUDGET, KeyRecallBudget, TrainingResult, train_key_recall


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
        :func:`longdep.attention.scaled_dot_product_attention`.
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
    ``core`` of :func:`longdep.training.train_key_recall`; ``input_size`` (default d_model) other
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
        if self.causal:
            causal = causal_mask(x.size(1), x.device)
            mask = causal if mask is None else mask & causal
        for layer in self.layers:
            x = layer(x, mask)
        return self.final_norm(x)


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


def key_recall_transformer(budget: KeyRecallBudget = KEY_RECALL_BUDGET, num_layers: int = 1,
                           num_heads: int = 2, norm_first: bool = True) -> EncoderStack:
    """The small Transformer core that Chapter 5 trains on key recall under ``budget``.

    Width ``budget.model_dim`` (as the recurrent cores get), feed-forward width twice that, a
    positional table long enough for the budget's longest distance, and an input projection from
    the budget's embeddings. Not causal: the classifier reads only the last position, which a
    causal mask would not restrict.
    """
    return EncoderStack(budget.model_dim, num_heads, num_layers, 2 * budget.model_dim,
                        max_len=max(budget.distances) + 1, norm_first=norm_first,
                        input_size=budget.embedding_dim)


def token_position_norm_ratio(embedding: nn.Embedding, scale: float, max_len: int) -> float:
    """Mean norm of the scaled token vectors over mean norm of the positional encodings
    (Chapter 5, "Swamped positions"): how much louder the token is than its position.

    embedding: the table (vocab, d_model); ``scale`` multiplies it (sqrt(d_model) in the article
    and in :class:`TransformerEncoder`); the encodings are those of positions 0 .. max_len - 1.
    """
    table = sinusoidal_table(max_len, embedding.embedding_dim)
    tokens = scale * embedding.weight.detach().double()
    return (tokens.norm(dim=-1).mean() / table.norm(dim=-1).mean()).item()


def ffn_gradient_norms(model: TransformerEncoder, tokens: torch.Tensor,
                       targets: torch.Tensor) -> torch.Tensor:
    """Norm of dL/dW2 for the second feed-forward matrix (``linear2.weight``) of every layer,
    with L the mean cross-entropy of the logits against ``targets`` (Chapter 5, cf. Xiong et al.
    2020, figure 3). tokens, targets: (batch, time) int64. Returns a (num_layers,) tensor."""
    if targets.shape != tokens.shape:
        raise ValueError(f"targets must have the tokens' shape {tuple(tokens.shape)}, "
                         f"got {tuple(targets.shape)}")
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
    weights = [layer.linear2.weight for layer in model.stack.layers]
    return torch.stack([grad.norm() for grad in torch.autograd.grad(loss, weights)])


def ffn_gradient_norms_at_init(depths: Sequence[int], norm_first: bool,
                               seeds: Sequence[int] = (0, 1, 2), vocab_size: int = 100,
                               d_model: int = 64, num_heads: int = 4, d_ff: int = 256,
                               batch_size: int = 8, length: int = 32) -> dict[int, torch.Tensor]:
    """:func:`ffn_gradient_norms` of freshly initialised causal models of each depth, averaged
    over ``seeds`` (Chapter 5, "Post-LN and Pre-LN at initialisation").

    Tokens and targets are uniform random (batch_size, length) and the same for every model.
    Returns {depth: (depth,) tensor of mean gradient norms, layer 1 first}.
    """
    generator = torch.Generator().manual_seed(0)
    tokens, targets = torch.randint(0, vocab_size, (2, batch_size, length), generator=generator)
    profiles = {}
    for depth in depths:
        norms = []
        for seed in seeds:
            torch.manual_seed(seed)
            model = TransformerEncoder(vocab_size, d_model, num_heads, depth, d_ff, length,
                                       dropout=0.0, norm_first=norm_first, causal=True)
            norms.append(ffn_gradient_norms(model, tokens, targets))
        profiles[depth] = torch.stack(norms).mean(0)
    return profiles


def fit_fresh_noise(model: nn.Module, vocab_size: int, steps: int = 10, batch_size: int = 8,
                    length: int = 16, lr: float = 1e-3, seed: int = 0,
                    mask: torch.Tensor | None = None) -> TrainingResult:
    """The article's "gradient stability" demo, reconstructed (Chapter 5, "A stability demo
    that measures nothing"): each step draws random tokens (batch_size, length) and a fresh
    N(0, 1) target of the output's shape, and takes one Adam step on the mean squared error.

    The target is independent of the input, so the best the model can do is output zeros and
    the loss tends to 1 whatever the architecture: the losses and gradient norms it records say
    nothing about long-range dependency. ``mask`` is passed to ``model(tokens, mask)``.
    """
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    result = TrainingResult()
    for _ in range(steps):
        tokens = torch.randint(0, vocab_size, (batch_size, length), generator=generator)
        output = model(tokens, mask)
        target = torch.randn(output.shape, generator=generator)
        loss = nn.functional.mse_loss(output, target)
        optimizer.zero_grad()
        loss.backward()
        result.grad_norms.append(nn.utils.clip_grad_norm_(model.parameters(), float("inf")).item())
        optimizer.step()
        result.losses.append(loss.item())
    return result


def warmup_comparison(runs: Sequence[tuple[str, float]], num_layers: int, warmup_steps: int,
                      steps: int, batch_size: int, distance: int = 10, num_heads: int = 4,
                      seeds: Sequence[int] = (0,)
                      ) -> dict[tuple[str, float], list[TrainingResult]]:
    """Key recall with deep stacks, Post-LN without and with warm-up and Pre-LN without
    (Chapter 5, "Warm-up for a deep Post-LN stack").

    runs: (label, learning rate) pairs, each label one of "Post-LN", "Post-LN + warm-up" and
    "Pre-LN". Each run is :func:`longdep.training.train_key_recall` under the book's budget
    (its width and clipping) with only ``lr``, ``steps`` and ``batch_size`` changed, once for
    every seed in ``seeds``; the seed sets the initial weights and the batches, so for a given
    label and seed every learning rate starts from the same weights. Returns
    {(label, lr): [result for each seed]}.
    """
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    variants = {"Post-LN": (False, 0), "Post-LN + warm-up": (False, warmup_steps),
                "Pre-LN": (True, 0)}
    results = {}
    for label, lr in runs:
        if label not in variants:
            raise ValueError(f"label must be one of {list(variants)}, got {label!r}")
        norm_first, warmup = variants[label]
        budget = replace(KEY_RECALL_BUDGET, lr=lr, steps=steps, batch_size=batch_size)
        results[label, lr] = []
        for seed in seeds:
            torch.manual_seed(seed)
            core = key_recall_transformer(budget, num_layers, num_heads, norm_first=norm_first)
            results[label, lr].append(train_key_recall(core, budget.model_dim, distance, seed,
                                                       budget, warmup))
    return results

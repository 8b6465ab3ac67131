"""Chapter 5's experiments: the article's model and its bugs, Post-LN and Pre-LN at
initialisation, and warm-up for deep Post-LN stacks.
"""

from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import nn

from longdep.experiments.key_recall import (
    KEY_RECALL_BUDGET,
    key_recall_transformer,
    train_key_recall_seeds,
)
from longdep.models.attention import sinusoidal_table
from longdep.models.transformer import NextTokenModel, next_token_model
from longdep.train import TrainingResult


def token_position_norm_ratio(embedding: nn.Embedding, scale: float, max_len: int) -> float:
    """Mean norm of the scaled token vectors over mean norm of the positional encodings
    (Chapter 5, "Swamped positions"): how much louder the token is than its position.

    embedding: the table (vocab, d_model); ``scale`` multiplies it (sqrt(d_model) in the article
    and in :class:`TransformerEncoder`); the encodings are those of positions 0 .. max_len - 1.
    """
    table = sinusoidal_table(max_len, embedding.embedding_dim)
    tokens = scale * embedding.weight.detach().double()
    return (tokens.norm(dim=-1).mean() / table.norm(dim=-1).mean()).item()


def ffn_gradient_norms(model: NextTokenModel, tokens: torch.Tensor,
                       targets: torch.Tensor) -> torch.Tensor:
    """Norm of dL/dW2 for the second feed-forward matrix (``linear2.weight``) of every layer,
    with L the mean cross-entropy of the logits against ``targets`` (Chapter 5, cf. Xiong et al.
    2020, figure 3). tokens, targets: (batch, time) int64. Returns a (num_layers,) tensor."""
    if targets.shape != tokens.shape:
        raise ValueError(f"targets must have the tokens' shape {tuple(tokens.shape)}, "
                         f"got {tuple(targets.shape)}")
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
    weights = [layer.linear2.weight for layer in model.encoder.stack.layers]
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
            model = next_token_model(vocab_size, d_model, num_heads, depth, d_ff, length,
                                     dropout=0.0, norm_first=norm_first, causal=True)
            norms.append(ffn_gradient_norms(model, tokens, targets))
        profiles[depth] = torch.stack(norms).mean(0)
    return profiles


def article_noise_fit(model: nn.Module, vocab_size: int, steps: int = 10, batch_size: int = 8,
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
    "Pre-LN". Each run is :func:`longdep.experiments.key_recall.train_key_recall` under the
    book's budget (its width and clipping) with only ``lr``, ``steps`` and ``batch_size``
    changed, for every seed in ``seeds``, the seeds trained at once
    (:func:`longdep.experiments.key_recall.train_key_recall_seeds`); the seed sets the initial
    weights and the batches, so for a given label and seed every learning rate starts from the
    same weights. Returns {(label, lr): [result for each seed]}.
    """
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    variants = {"Post-LN": (False, 0), "Post-LN + warm-up": (False, warmup_steps),
                "Pre-LN": (True, 0)}
    for label, _ in runs:
        if label not in variants:
            raise ValueError(f"label must be one of {list(variants)}, got {label!r}")
    results = {}
    for label, lr in runs:
        norm_first, warmup = variants[label]
        budget = replace(KEY_RECALL_BUDGET, lr=lr, steps=steps, batch_size=batch_size)

        def make_core(budget=budget, norm_first=norm_first):
            return key_recall_transformer(budget, num_layers, num_heads, norm_first=norm_first)

        results[label, lr] = train_key_recall_seeds(make_core, budget.model_dim, distance,
                                                    seeds, budget, warmup)
    return results

"""Chapter 5's experiments: the article's model and its problems (swamped positions trained and
measured, the noise-fitting demo), and Post-LN and Pre-LN at initialisation. The depth sweep is
in :mod:`longdep.experiments.warmup`, induction heads in :mod:`longdep.experiments.induction`.
"""

import copy
import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from longdep.experiments.key_recall import KEY_RECALL_BUDGET, KeyRecallBudget, key_recall_batches
from longdep.experiments.workers import over_cores
from longdep.models import _checks as check
from longdep.models.attention import sinusoidal_table
from longdep.models.heads import LastStepClassifier
from longdep.models.transformer import EncoderStack, NextTokenModel, next_token_model
from longdep.seeds import manual_seed, seeded_generator
from longdep.train import TrainingResult, train, train_seeds


def token_position_norm_ratio(embedding: nn.Embedding, scale: float, max_len: int) -> float:
    """Mean norm of the scaled token vectors over mean norm of the positional encodings
    (Chapter 5, "Swamped positions"): how much louder the token is than its position.

    embedding: the table (vocab, d_model); ``scale`` multiplies it (sqrt(d_model) in the article
    and in :class:`TransformerEncoder`); the encodings are those of positions 0 .. max_len - 1.
    """
    if not isinstance(embedding, nn.Embedding):
        raise TypeError(f"embedding must be an nn.Embedding, got {type(embedding).__name__}")
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    check.positive(max_len=max_len)
    table = sinusoidal_table(max_len, embedding.embedding_dim)
    tokens = scale * embedding.weight.detach().double()
    return (tokens.norm(dim=-1).mean() / table.norm(dim=-1).mean()).item()


class ScaledInput(nn.Module):
    """``core(scale * x)``: the article's sqrt(d_model) on the embeddings, in front of a stack
    (Chapter 5, "Swamped positions")."""

    def __init__(self, core: nn.Module, scale: float):
        super().__init__()
        check.instance(core, "core", nn.Module)
        check.finite(scale=scale)
        self.core, self.scale = core, scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.core(self.scale * x)


def swamped_classifier(seed: int, article: bool, distance: int, num_heads: int = 2,
                       budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> LastStepClassifier:
    """The article's embedding in a one-layer Post-LN key-recall model (Chapter 5, "Swamped
    positions"): tokens -> embedding (d_model = ``budget.model_dim``) * sqrt(d_model) +
    sinusoidal encoding -> one encoder layer -> a classifier of the last position.

    The embedding is ``nn.Embedding``'s N(0, 1) if ``article``, else N(0, 1/d_model) as in
    :class:`~longdep.models.transformer.TransformerEncoder`; it is drawn last, after seeding
    torch with ``seed``, so both variants of a seed share every other weight.
    """
    width = budget.model_dim
    manual_seed(seed)
    stack = EncoderStack(width, num_heads, 1, 2 * width, max_len=distance + 1, last_only=True)
    model = LastStepClassifier(budget.vocab_size, width, ScaledInput(stack, math.sqrt(width)),
                               width, budget.num_keys)
    if not article:
        nn.init.normal_(model.embedding.weight, std=width**-0.5)
    return model


@torch.no_grad()
def first_attention_saturation(model: LastStepClassifier, tokens: torch.Tensor
                               ) -> tuple[float, float]:
    """The mean over sequences and heads of the largest weight and of the entropy (nats) of the
    last query's attention in the first layer of a :func:`swamped_classifier` on ``tokens``
    (batch, time): 1 and 0 for a one-hot softmax, 1/time and log(time) for a uniform one."""
    check.instance(model, "model", LastStepClassifier)
    scaled = model.core
    stack = scaled.core
    x = stack.positional_encoding(scaled.scale * model.embedding(tokens))
    layer = stack.layers[0]
    attended = layer.norm1(x) if layer.norm_first else x
    weights = layer.self_attn(attended, attended, attended)[1][:, :, -1]  # (batch, heads, time)
    entropy = -(weights * weights.clamp_min(1e-300).log()).sum(-1)
    return weights.max(-1).values.mean().item(), entropy.mean().item()


def swamped_runs(distance: int, seeds: Sequence[int], budget: KeyRecallBudget
                 ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """For the article's embedding and for the fix ("article", "fixed"), over ``seeds``: the
    :func:`first_attention_saturation` at initialisation on a held-out batch, a (seeds, 2)
    array, and the held-out accuracy after training on key recall at ``distance`` under
    ``budget``, a (seeds,) array (Chapter 5, "Swamped positions"). Both variants of every seed
    train at once, in one :func:`longdep.train.train_seeds` call."""
    seeds = check.ints("seeds", seeds, least=0)
    check.positive(distance=distance)
    variants = {"article": True, "fixed": False}
    models = [swamped_classifier(seed, article, distance, budget=budget)
              for article in variants.values() for seed in seeds]
    tokens, _ = key_recall_batches(distance, budget)(seeded_generator(len(seeds)))
    saturation = np.array([first_attention_saturation(model, tokens) for model in models])
    results = train_seeds(models, key_recall_batches(distance, budget), budget.steps,
                          seeds * len(variants), lr=budget.lr, clip_norm=budget.clip_norm,
                          eval_batches=budget.eval_batches)
    accuracies = np.array([result.accuracy for result in results])
    count = len(seeds)
    return {name: (saturation[i * count:(i + 1) * count], accuracies[i * count:(i + 1) * count])
            for i, name in enumerate(variants)}


def ffn_gradient_norms(model: NextTokenModel, tokens: torch.Tensor,
                       targets: torch.Tensor) -> torch.Tensor:
    """Norm of dL/dW2 for the second feed-forward matrix (``linear2.weight``) of every layer,
    with L the mean cross-entropy of the logits against ``targets`` (Chapter 5, cf. Xiong et al.
    2020, figure 3). tokens, targets: (batch, time) int64. Returns a (num_layers,) tensor."""
    if not isinstance(model, NextTokenModel):
        raise TypeError(f"model must be a NextTokenModel, got {type(model).__name__}")
    for name, value in (("tokens", tokens), ("targets", targets)):
        if not isinstance(value, torch.Tensor) or value.dtype != torch.int64 or value.dim() != 2:
            raise ValueError(f"{name} must be a (batch, time) int64 tensor, got "
                             f"{getattr(value, 'dtype', type(value).__name__)} of shape "
                             f"{tuple(getattr(value, 'shape', ()))}")
    if targets.shape != tokens.shape:
        raise ValueError(f"targets must have the tokens' shape {tuple(tokens.shape)}, "
                         f"got {tuple(targets.shape)}")
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
    weights = [layer.linear2.weight for layer in model.encoder.stack.layers]
    return torch.stack([grad.norm() for grad in torch.autograd.grad(loss, weights)])


class StreamReadout(nn.Module):
    """A :class:`~longdep.models.transformer.NextTokenModel` (without dropout) that also returns
    the root mean square of its residual stream after the last layer, before the final
    LayerNorm of a Pre-LN stack (Chapter 5, "Post-LN and Pre-LN at initialisation"): what that
    LayerNorm divides by. ``forward(tokens)`` returns (logits equal to ``model(tokens)``, the
    scalar RMS)."""

    def __init__(self, model: NextTokenModel):
        super().__init__()
        check.instance(model, "model", NextTokenModel)
        self.model = model

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        encoder = self.model.encoder
        stack = encoder.stack
        x = encoder.embedding(tokens) * math.sqrt(encoder.d_model)  # (batch, time, d_model)
        *_, stream = stack.layer_outputs(stack.positional_encoding(stack.input_projection(x)))
        return self.model.head(stack.final_norm(stream)), stream.square().mean().sqrt()


def init_model(depth: int, norm_first: bool, glorot: bool, seed: int, vocab_size: int,
               d_model: int, num_heads: int, d_ff: int, length: int) -> NextTokenModel:
    """A causal next-token model without dropout, initialised after seeding torch with ``seed``;
    with ``glorot``, every weight matrix of its encoder layers is then drawn again from Glorot
    (Xavier) uniform, Xiong et al.'s setting, instead of ``nn.Linear``'s smaller default."""
    manual_seed(seed)
    model = next_token_model(vocab_size, d_model, num_heads, depth, d_ff, length, dropout=0.0,
                             norm_first=norm_first, causal=True)
    if glorot:
        for parameter in model.encoder.stack.layers.parameters():
            if parameter.dim() > 1:
                nn.init.xavier_uniform_(parameter)
    return model


def ffn_gradients_at_init(depth: int, norm_first: bool, glorot: bool,
                          seeds: Sequence[int] = tuple(range(10)), vocab_size: int = 100,
                          d_model: int = 32, num_heads: int = 4, d_ff: int = 128,
                          batch_size: int = 4, length: int = 16
                          ) -> tuple[np.ndarray, np.ndarray]:
    """For each seed, :func:`ffn_gradient_norms` of a fresh :func:`init_model` of ``depth``
    layers, and the RMS of its residual stream before the final LayerNorm
    (:class:`StreamReadout`): a (seeds, depth) array (layer 1 first) and a (seeds,) array
    (Chapter 5, "Post-LN and Pre-LN at initialisation").

    The models of all seeds run at once, as one model whose parameters carry a leading seed
    dimension (``torch.func.vmap``), on the same uniform random tokens and targets
    (batch_size, length); one backward pass of the summed losses gives each seed its own
    gradients, since seed s's loss depends on seed s's parameters only.
    """
    check.positive(depth=depth, vocab_size=vocab_size, d_model=d_model, num_heads=num_heads,
                   d_ff=d_ff, batch_size=batch_size, length=length)
    seeds = check.ints("seeds", seeds, least=0)
    generator = seeded_generator(0)
    tokens, targets = torch.randint(0, vocab_size, (2, batch_size, length), generator=generator)
    readouts = [StreamReadout(init_model(depth, norm_first, glorot, seed, vocab_size, d_model,
                                         num_heads, d_ff, length)) for seed in seeds]
    params, buffers = stack_module_state(readouts)  # each (seeds, ...)
    base = copy.deepcopy(readouts[0]).to("meta")
    logits, stream = vmap(lambda p, b: functional_call(base, (p, b), (tokens,)))(params, buffers)
    losses = nn.functional.cross_entropy(logits.flatten(1, 2).transpose(1, 2),
                                         targets.flatten().expand(len(seeds), -1))
    weights = [params[f"model.encoder.stack.layers.{index}.linear2.weight"]
               for index in range(depth)]
    grads = torch.autograd.grad(losses * len(seeds), weights)  # the sum of the seeds' losses
    norms = torch.stack([grad.flatten(1).norm(dim=1) for grad in grads], dim=1)
    return norms.numpy(), stream.detach().numpy()


INITIALISATIONS = {"nn.Linear default": False, "Glorot": True}
"""The initialisations of Chapter 5's gradient profiles: name -> the ``glorot`` flag of
:func:`ffn_gradients_at_init`."""


def ffn_gradient_profiles(depths: Sequence[int], seeds: Sequence[int] = tuple(range(10)),
                          **sizes) -> dict[tuple[str, str, int], tuple[np.ndarray, np.ndarray]]:
    """:func:`ffn_gradients_at_init` (with ``sizes``) for every initialisation of
    :data:`INITIALISATIONS`, Post-LN and Pre-LN, and depth (Chapter 5, "Post-LN and Pre-LN at
    initialisation"), each computed on its own in worker processes, one per core, the deepest
    first (the same numbers, bit for bit, sooner). Returns {(initialisation, "Post-LN" or
    "Pre-LN", depth): (gradient norms (seeds, depth), stream RMS (seeds,))}."""
    depths = check.ints("depths", depths)
    seeds = tuple(check.ints("seeds", seeds, least=0))
    keys = [(name, order, depth) for depth in depths for name in INITIALISATIONS
            for order in ("Post-LN", "Pre-LN")]
    names = ("vocab_size", "d_model", "num_heads", "d_ff", "batch_size", "length")
    if any(name not in names for name in sizes):
        raise TypeError(f"sizes must be among {names}, got {sorted(sizes)}")
    sizes_in_order = {name: sizes[name] for name in names if name in sizes}
    points = {key: (key[2], key[1] == "Pre-LN", INITIALISATIONS[key[0]], seeds,
                    tuple(sizes_in_order.items())) for key in keys}
    runs = over_cores(ffn_profile, points.values(), cost=lambda point: point[0])
    return {key: runs[point] for key, point in points.items()}


def ffn_profile(depth: int, norm_first: bool, glorot: bool, seeds: tuple[int, ...],
                sizes: tuple[tuple[str, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`ffn_gradients_at_init` at one point of :func:`ffn_gradient_profiles`."""
    return ffn_gradients_at_init(depth, norm_first, glorot, seeds, **dict(sizes))


def article_noise_fit(model: nn.Module, vocab_size: int, steps: int = 10, batch_size: int = 8,
                      length: int = 16, lr: float = 1e-3, seed: int = 0,
                      mask: torch.Tensor | None = None) -> TrainingResult:
    """The article's "gradient stability" demo, reconstructed (Chapter 5, "A stability demo
    that measures nothing"): each step draws random tokens (batch_size, length) and a fresh
    N(0, 1) target of the output's shape, and takes one Adam step
    on the mean squared error, by :func:`longdep.train.train`.

    The target is independent of the input, so the best the model can do is output zeros and
    the loss tends to 1 whatever the architecture: the losses and gradient norms it records say
    nothing about long-range dependency. ``mask`` is passed to ``model(tokens, mask)``.
    """
    check.instance(model, "model", nn.Module)
    check.positive(vocab_size=vocab_size, steps=steps, batch_size=batch_size, length=length)
    check.finite(lr=lr)
    probe = WithMask(model, mask)
    training = model.training
    with torch.no_grad():  # the output's shape, from one pass in eval mode (no dropout draws)
        shape = probe.eval()(torch.zeros(batch_size, length, dtype=torch.int64)).shape
    probe.train(training)

    def make_batch(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        tokens = torch.randint(0, vocab_size, (batch_size, length), generator=generator)
        return tokens, torch.randn(shape, generator=generator)

    return train(probe, make_batch, steps, lr=lr, seed=seed, eval_batches=0,
                 loss=nn.functional.mse_loss)


class WithMask(nn.Module):
    """``model(tokens, mask)`` as a model of the tokens alone, as :func:`longdep.train.train`
    calls it."""

    def __init__(self, model: nn.Module, mask: torch.Tensor | None):
        super().__init__()
        self.model, self.mask = model, mask

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model(tokens, self.mask)


def fitted_exponent(depths: Sequence[int], values: Sequence[float]) -> float:
    """The slope p of the least-squares line log(values) = p log(depths) + c (Chapter 5,
    "Post-LN and Pre-LN at initialisation"): values ~ depth^p."""
    check.ints("depths", depths)
    if len(depths) < 2 or len(values) != len(depths):
        raise ValueError(f"need at least two depths and one value per depth, got "
                         f"{len(depths)} depths and {len(values)} values")
    y = torch.as_tensor(values, dtype=torch.float64)
    if not (torch.isfinite(y).all() and (y > 0).all()):
        raise ValueError(f"values must be positive and finite, got {y.tolist()}")
    x = torch.tensor(depths, dtype=torch.float64).log()
    x = x - x.mean()
    return ((x * (y.log() - y.log().mean())).sum() / (x * x).sum()).item()

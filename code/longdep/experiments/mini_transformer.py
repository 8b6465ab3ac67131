"""Chapter 5's experiments: the article's model and its bugs, Post-LN and Pre-LN at
initialisation, and the depth sweep of Post-LN, warm-up and Pre-LN.
"""

import math
from collections.abc import Sequence
from dataclasses import replace
from functools import partial

import numpy as np
import torch
from torch import nn

from longdep.experiments.key_recall import (
    KEY_RECALL_BUDGET,
    KeyRecallBudget,
    key_recall_transformer,
    train_key_recall_seeds,
)
from longdep.experiments.workers import over_cores
from longdep.models import _checks as check
from longdep.models.attention import sinusoidal_table
from longdep.models.transformer import NextTokenModel, next_token_model
from longdep.seeds import manual_seed, seeded_generator
from longdep.train import TrainingResult, train


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


def ffn_gradient_norms_at_init(depths: Sequence[int], norm_first: bool,
                               seeds: Sequence[int] = (0, 1, 2), vocab_size: int = 100,
                               d_model: int = 64, num_heads: int = 4, d_ff: int = 256,
                               batch_size: int = 8, length: int = 32, glorot: bool = False
                               ) -> dict[int, torch.Tensor]:
    """:func:`ffn_gradient_norms` of freshly initialised causal models of each depth, averaged
    over ``seeds`` (Chapter 5, "Post-LN and Pre-LN at initialisation").

    Tokens and targets are uniform random (batch_size, length) and the same for every model.
    With ``glorot``, every weight matrix of the encoder layers is drawn from Glorot (Xavier)
    uniform, Xiong et al.'s setting, instead of PyTorch's smaller default for ``nn.Linear``.
    Returns {depth: (depth,) tensor of mean gradient norms, layer 1 first}.
    """
    check.ints("depths", depths)
    check.positive(vocab_size=vocab_size, d_model=d_model, num_heads=num_heads, d_ff=d_ff,
                       batch_size=batch_size, length=length)
    if not seeds:
        raise ValueError("seeds must name at least one seed, got none")
    generator = seeded_generator(0)
    tokens, targets = torch.randint(0, vocab_size, (2, batch_size, length), generator=generator)
    profiles = {}
    for depth in depths:
        norms = []
        for seed in seeds:
            manual_seed(seed)
            model = next_token_model(vocab_size, d_model, num_heads, depth, d_ff, length,
                                     dropout=0.0, norm_first=norm_first, causal=True)
            if glorot:
                for parameter in model.encoder.stack.layers.parameters():
                    if parameter.dim() > 1:
                        nn.init.xavier_uniform_(parameter)
            norms.append(ffn_gradient_norms(model, tokens, targets))
        profiles[depth] = torch.stack(norms).mean(0)
    return profiles


INITIALISATIONS = {"PyTorch default": False, "Glorot": True}
"""The initialisations of Chapter 5's gradient profiles: name -> the ``glorot`` flag of
:func:`ffn_gradient_norms_at_init`."""


def ffn_gradient_profiles(depths: Sequence[int], seeds: Sequence[int] = (0, 1, 2),
                          d_model: int = 64) -> dict[str, tuple[dict, dict]]:
    """:func:`ffn_gradient_norms_at_init` for every initialisation of :data:`INITIALISATIONS`,
    Post-LN and Pre-LN (Chapter 5, "Post-LN and Pre-LN at initialisation"), each (depth,
    initialisation, order) computed on its own in worker processes, one per core, the deepest
    first (the same numbers, bit for bit, sooner). Returns {initialisation: (Post-LN profiles,
    Pre-LN profiles)}, each {depth: (depth,) numpy array, layer 1 first}."""
    check.ints("depths", depths)
    points = [(depth, norm_first, tuple(seeds), d_model, glorot) for depth in depths
              for glorot in INITIALISATIONS.values() for norm_first in (False, True)]
    runs = over_cores(ffn_profile, points, cost=lambda point: point[0])
    return {name: tuple({depth: runs[depth, norm_first, tuple(seeds), d_model, glorot]
                         for depth in depths} for norm_first in (False, True))
            for name, glorot in INITIALISATIONS.items()}


def ffn_profile(depth: int, norm_first: bool, seeds: tuple[int, ...], d_model: int,
                glorot: bool) -> np.ndarray:
    """:func:`ffn_gradient_norms_at_init` at one depth, as an array (one run of the cores)."""
    return ffn_gradient_norms_at_init((depth,), norm_first, seeds, d_model=d_model,
                                      glorot=glorot)[depth].numpy()


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


DEPTH_SWEEP_RUNS = {"Post-LN": (False, False), "Post-LN + warm-up": (False, True),
                    "Pre-LN": (True, False)}


def depth_sweep(depths: Sequence[int], lr: float, warmup_steps: int, steps: int,
                batch_size: int, distance: int = 10, num_heads: int = 4,
                seeds: Sequence[int] = (0,),
                labels: Sequence[str] = tuple(DEPTH_SWEEP_RUNS)) -> dict[str, torch.Tensor]:
    """Key recall with stacks of each depth, Post-LN without and with warm-up and Pre-LN
    (with its final LayerNorm, as in GPT-2) without (Chapter 5, "Depth, warm-up and the
    order of the normalisation").

    Each run is :func:`longdep.experiments.key_recall.train_key_recall` under the book's
    budget (its width and clipping) with only ``lr``, ``steps`` and ``batch_size`` changed;
    "+ warm-up" raises the learning rate linearly over the first ``warmup_steps`` steps. At
    each depth, the seeds of the labels that share a layer order (Post-LN with and without
    warm-up) are trained at once (:func:`depth_sweep_run`); the seed sets the initial weights
    and the batches, so both Post-LN runs of a seed and depth start from the same weights.
    Returns {label: (len(depths), len(seeds)) tensor of held-out accuracies}.
    """
    check.ints("depths", depths)
    check.positive(steps=steps, batch_size=batch_size, distance=distance,
                       num_heads=num_heads)
    check.positive(warmup_steps=warmup_steps + 1)
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    if not seeds:
        raise ValueError("seeds must name at least one seed, got none")
    check_labels(labels)
    budget = replace(KEY_RECALL_BUDGET, lr=lr, steps=steps, batch_size=batch_size)
    by_order: dict[bool, list[str]] = {}  # the labels of one layer order train at once
    for label in labels:
        by_order.setdefault(DEPTH_SWEEP_RUNS[label][0], []).append(label)
    groups = [tuple(group) for group in by_order.values()]
    # every (group, depth) trains on its own, so they run side by side, one per core, the
    # deepest first so that no core waits for one long run at the end
    point = (budget, distance, num_heads, tuple(seeds), warmup_steps)
    runs = over_cores(depth_sweep_run, [(group, depth, *point) for depth in depths
                                        for group in groups], cost=lambda point: point[1])
    grids = {label: [runs[(group, depth, *point)][label] for depth in depths]
             for group in groups for label in group}
    return {label: torch.tensor(grids[label], dtype=torch.float64) for label in labels}


def check_labels(labels: Sequence[str]) -> None:
    """Raise a ``ValueError`` unless ``labels`` names at least one run of
    :data:`DEPTH_SWEEP_RUNS`, and only such runs."""
    if not labels or any(label not in DEPTH_SWEEP_RUNS for label in labels):
        raise ValueError(f"labels must be among {list(DEPTH_SWEEP_RUNS)}, got {labels!r}")


def depth_sweep_run(labels: tuple[str, ...], depth: int, budget: KeyRecallBudget,
                    distance: int, num_heads: int, seeds: tuple[int, ...],
                    warmup_steps: int) -> dict[str, list[float]]:
    """The runs of :func:`depth_sweep` at one depth whose ``labels`` share one layer order:
    {label: the held-out accuracy of each seed}.

    They differ only in their warm-up, so they are trained at once, every seed once per label
    (with one learning-rate schedule per copy; the same seed gives the same initial weights
    and batches in every label): a vmapped model of twice the seeds costs far less than two.
    """
    check_labels(labels)
    orders = {DEPTH_SWEEP_RUNS[label][0] for label in labels}
    if len(orders) != 1:
        raise ValueError(f"labels must share one layer order, got {labels!r}")
    norm_first = orders.pop()
    make_core = partial(key_recall_transformer, budget, depth, num_heads, norm_first=norm_first)
    warmups = [warmup_steps if DEPTH_SWEEP_RUNS[label][1] else 0
               for label in labels for _ in seeds]
    results = train_key_recall_seeds(make_core, budget.model_dim, distance,
                                     seeds * len(labels), budget, warmups)
    accuracies = [result.accuracy for result in results]
    return {label: accuracies[i * len(seeds):(i + 1) * len(seeds)]
            for i, label in enumerate(labels)}


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

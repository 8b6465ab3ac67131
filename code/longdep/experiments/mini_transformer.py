"""Chapter 5's experiments on the article's model and its bugs: swamped positions, the causal
mask a language model needs, the noise-fitting demo; and how its tables print a count of seeds.
The stacks at initialisation are in :mod:`longdep.experiments.init_gradients`, the induction
heads in :mod:`longdep.experiments.induction`, the depth sweep in
:mod:`longdep.experiments.warmup`.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
from torch import nn

from longdep.book import Bilingual
from longdep.experiments.key_recall import (
    KEY_RECALL_BUDGET,
    KeyRecallBudget,
    key_recall_batches,
)
from longdep.experiments.workers import over_cores
from longdep.measure.gradients import input_gradient_norms
from longdep.models import _checks as check
from longdep.models.attention import sinusoidal_table
from longdep.models.transformer import (
    EncoderStack,
    NextTokenHead,
    NextTokenModel,
    TransformerEncoder,
)
from longdep.seeds import manual_seed, seeded_generator
from longdep.stats import Count, Spread, frequency_word
from longdep.train import HELD_OUT, TrainingResult, train_seeds


def count_text(counted: Count) -> Bilingual:
    """A count of seeds as Chapter 5's tables print it, in both languages: "k/n (low-high)" with
    its 95 % Wilson interval, followed by the word of the book's rule when the count earns one
    (:func:`longdep.stats.frequency_word`)."""
    check.instance(counted, "counted", Count)
    words = [frequency_word(counted.successes, counted.trials, language)
             for language in ("en", "zh")]
    return Bilingual(*(f"{counted} {word}" if word else str(counted) for word in words))


def count_word(counted: Count) -> Bilingual:
    """The word of the book's rule for a count (:func:`longdep.stats.frequency_word`), in both
    languages, or where the count earns none, a phrase saying so (Chapter 5's prose)."""
    check.instance(counted, "counted", Count)
    words = [frequency_word(counted.successes, counted.trials, language)
             for language in ("en", "zh")]
    if words[0] is None:
        return Bilingual("no word: its interval straddles 0.5", "不下结论：其区间跨过 0.5")
    return Bilingual(*words)


def spread_text(values: Spread) -> Bilingual:
    """A median and range over draws as Chapter 5's tables print them, two decimals:
    "median (low to high)", in both languages."""
    check.instance(values, "values", Spread)
    median, low, high = (f"{v:.2f}" for v in (values.median, values.low, values.high))
    return Bilingual(f"{median} ({low} to {high})", f"{median}（{low} 到 {high}）")


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


def swamping_ratios(seeds: Sequence[int] = tuple(range(10)), vocab_size: int = 10000,
                    d_model: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """:func:`token_position_norm_ratio` at the scale sqrt(d_model), over the positions 0 ..
    d_model - 1, of one embedding table per seed (Chapter 5, "Swamped positions"): drawn from
    PyTorch's N(0, 1) as in the article, and from N(0, 1/d_model) as in
    :class:`longdep.models.transformer.TransformerEncoder`. Returns the two (seeds,) arrays."""
    seeds = check.ints("seeds", seeds, least=0)
    check.positive(vocab_size=vocab_size, d_model=d_model)
    ratios = []
    for seed in seeds:
        manual_seed(seed)
        article, fixed = nn.Embedding(vocab_size, d_model), nn.Embedding(vocab_size, d_model)
        nn.init.normal_(fixed.weight, std=d_model**-0.5)  # as TransformerEncoder does
        ratios.append([token_position_norm_ratio(table, math.sqrt(d_model), d_model)
                       for table in (article, fixed)])
    return tuple(np.array(column) for column in zip(*ratios))


class LastPosition(nn.Module):
    """A sequence model's output at the last position: (batch, time, classes) ->
    (batch, classes), what key recall reads."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = check.instance(model, "model", nn.Module)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model(tokens)[:, -1]


def scaled_embedding_classifier(article: bool, distance: int, num_heads: int = 2,
                                budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> LastPosition:
    """The article's model for key recall (Chapter 5, "Swamped positions"): a one-layer Post-LN
    :class:`longdep.models.transformer.TransformerEncoder` of the budget's width, its embedding
    scaled by sqrt(d_model), and a linear read-out of the last position over the keys. With
    ``article``, the embedding is drawn from PyTorch's N(0, 1), as the article leaves it;
    otherwise from N(0, 1/d_model), the encoder's fix. Only the last position is computed."""
    check.flags(article=article)
    check.positive(distance=distance, num_heads=num_heads)
    encoder = TransformerEncoder(budget.vocab_size, budget.model_dim, num_heads, 1,
                                 2 * budget.model_dim, distance + 1, dropout=0.0)
    encoder.stack.last_only = True  # the read-out sees the last position alone
    if article:
        nn.init.normal_(encoder.embedding.weight)
    head = NextTokenHead(budget.model_dim, budget.num_keys)  # logits over the keys
    return LastPosition(NextTokenModel(encoder, head))


def first_softmax(model: LastPosition, tokens: torch.Tensor) -> tuple[float, float]:
    """(the mean largest weight, the mean entropy in nats) of the rows of the first attention
    layer's softmax of a :func:`scaled_embedding_classifier` on tokens (batch, time): near 1 and
    0 when the scores are so large that each query attends to one key; 1 / time and log(time)
    for uniform weights."""
    check.instance(model, "model", LastPosition)
    encoder = model.model.encoder
    check.tokens(tokens, encoder.vocab_size)
    with torch.no_grad():
        x = encoder.embedding(tokens) * math.sqrt(encoder.d_model)
        x = encoder.stack.positional_encoding(x)  # (batch, time, d_model)
        weights = encoder.stack.layers[0].self_attn(x, x, x)[1]  # (batch, heads, time, time)
    entropy = -(weights * weights.clamp_min(1e-30).log()).sum(-1)
    return weights.max(-1).values.mean().item(), entropy.mean().item()


@dataclass
class SwampedRecall:
    """:func:`swamped_recall`'s measurements, each {"article": (seeds,), "fixed": (seeds,)}: the
    held-out accuracy after training, and the first softmax at initialisation
    (:func:`first_softmax`)."""

    accuracy: dict[str, np.ndarray]
    largest_weight: dict[str, np.ndarray]
    entropy: dict[str, np.ndarray]


def swamped_recall(distance: int = 20, seeds: Sequence[int] = KEY_RECALL_BUDGET.seeds,
                   budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> SwampedRecall:
    """Key recall at ``distance`` under ``budget`` by :func:`scaled_embedding_classifier` with
    the article's embedding and with the fixed one, every seed of a variant trained at once and
    the two variants side by side on the cores (Chapter 5, "Swamped positions"), and their
    first softmax at initialisation on one batch of the task. A seed gives both variants the
    same initial weights but the embedding, and the same batches."""
    check.instance(budget, "budget", KeyRecallBudget)
    seeds = tuple(check.ints("seeds", seeds, least=0))
    check.positive(distance=distance)
    variants = {"article": True, "fixed": False}
    runs = over_cores(_swamped_variant, [(article, distance, seeds, budget)
                                        for article in variants.values()])
    measured = {name: runs[article, distance, seeds, budget]
                for name, article in variants.items()}  # {name: (accuracy, largest, entropy)}
    return SwampedRecall(*({name: values[i] for name, values in measured.items()}
                           for i in range(3)))


def _swamped_variant(article: bool, distance: int, seeds: Sequence[int], budget: KeyRecallBudget
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One variant of :func:`swamped_recall`, every seed trained at once: the held-out accuracy
    after training, and the largest weight and entropy of the first softmax at initialisation,
    each (seeds,)."""
    models = []
    for seed in seeds:
        manual_seed(seed)
        models.append(scaled_embedding_classifier(article, distance, budget=budget))
    make_batch = key_recall_batches(distance, budget)
    tokens, _ = make_batch(seeded_generator(HELD_OUT))
    softmax = np.array([first_softmax(model, tokens) for model in models])  # (seeds, 2)
    results = train_seeds(models, make_batch, budget.steps, list(seeds), lr=budget.lr,
                          clip_norm=budget.clip_norm, eval_batches=budget.eval_batches)
    return np.array([result.accuracy for result in results]), softmax[:, 0], softmax[:, 1]


def future_gradients(seeds: Sequence[int] = tuple(range(10)), position: int = 5,
                     length: int = 12, d_model: int = 16) -> dict[bool, np.ndarray]:
    """How much the output at ``position`` of a two-layer stack depends on later inputs
    (Chapter 5, "What a language model needs: a causal mask"): ||dL/dx_k|| for every input
    position k, in float64, with L a fixed random read-out of the output at ``position`` (the
    plain sum of a LayerNorm's outputs is constant), without and with the causal mask, for one
    stack and one input per seed. Returns {causal: (seeds, length)}."""
    seeds = check.ints("seeds", seeds, least=0)
    check.positive(length=length, d_model=d_model)
    check.int_range(0, length - 1, position=position)
    norms = {False: [], True: []}
    for seed in seeds:
        generator = seeded_generator(seed)
        x = torch.randn(1, length, d_model, dtype=torch.float64, generator=generator)
        readout = torch.randn(d_model, dtype=torch.float64, generator=generator)
        for causal in norms:
            manual_seed(seed)
            stack = EncoderStack(d_model, 2, 2, 2 * d_model, length, causal=causal).double()
            read = partial(_read_out, position=position, readout=readout)
            norms[causal].append(input_gradient_norms(stack, x, loss_fn=read))
    return {causal: torch.stack(rows).numpy() for causal, rows in norms.items()}


def _read_out(outputs: torch.Tensor, position: int, readout: torch.Tensor) -> torch.Tensor:
    """The loss of :func:`future_gradients`: outputs (batch, time, d_model) at ``position``,
    read out along ``readout`` (d_model,) and summed over the batch."""
    return (outputs[:, position] @ readout).sum()


def article_noise_fit(models: Sequence[nn.Module], vocab_size: int,
                      seeds: Sequence[int] = (0,), steps: int = 10, batch_size: int = 8,
                      length: int = 16, lr: float = 1e-3,
                      mask: torch.Tensor | None = None) -> list[TrainingResult]:
    """The article's "gradient stability" demo, reconstructed (Chapter 5, "A stability demo
    that measures nothing"), for each model of ``models`` with its seed of ``seeds``, all at
    once: each step draws random tokens (batch_size, length) and a fresh N(0, 1) target of the
    output's shape, and takes one Adam step on the mean squared error, by
    :func:`longdep.train.train_seeds`.

    The target is independent of the input, so the best the model can do is output zeros and
    the loss tends to 1 whatever the architecture: the losses and gradient norms it records say
    nothing about long-range dependency. ``mask`` is passed to ``model(tokens, mask)``.
    """
    if not isinstance(models, (list, tuple)) or not models:
        raise TypeError(f"models must be a non-empty list of torch.nn.Module, got "
                        f"{check.describe(models)}")
    for i, model in enumerate(models):
        check.instance(model, f"models[{i}]", nn.Module)
    check.positive(vocab_size=vocab_size, steps=steps, batch_size=batch_size, length=length)
    check.finite(lr=lr)
    probes = [_WithMask(model, mask) for model in models]
    training = models[0].training
    with torch.no_grad():  # the output's shape, from one pass in eval mode (no dropout draws)
        shape = probes[0].eval()(torch.zeros(batch_size, length, dtype=torch.int64)).shape
    probes[0].train(training)

    def make_batch(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        tokens = torch.randint(0, vocab_size, (batch_size, length), generator=generator)
        return tokens, torch.randn(shape, generator=generator)

    return train_seeds(probes, make_batch, steps, list(seeds), lr=lr, eval_batches=0,
                       loss=nn.functional.mse_loss)


class _WithMask(nn.Module):
    """``model(tokens, mask)`` as a model of the tokens alone, as :func:`longdep.train.train`
    calls it."""

    def __init__(self, model: nn.Module, mask: torch.Tensor | None):
        super().__init__()
        self.model, self.mask = model, mask

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model(tokens, self.mask)

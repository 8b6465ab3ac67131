"""What self-attention knows about the order of its inputs (Chapter 4, "Self-attention does not
know the order").

Without a positional encoding, self-attention is permutation-*equivariant* as a map of
sequences: permuting the input positions permutes the outputs the same way, f(P x) = P f(x).
Each single output is permutation-*invariant* as a function of the positions it reads: reorder
the keys and values of one query and its output does not move. The map as a whole is not
invariant (f(P x) = f(x)); only a summary that forgets the order, such as the mean over
positions, is. :func:`order_errors` measures all of this over many draws.

A causal mask breaks the symmetry, and it leaks the position itself: at initialisation the
weights are near uniform, so output i is close to the mean of the i + 1 values it reads, and
its spread over inputs falls like (i + 1)^(-1/2) (Chi et al. 2023). A causal
Transformer without any positional encoding can read where a token stands from that
(:func:`causal_output_spread`; Haviv et al. 2022).
"""

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

from longdep.models import _checks as check
from longdep.models.attention import MultiHeadAttention, PositionalEncoding, causal_mask
from longdep.seeds import manual_seed, seeded_generator

SEEDS = tuple(range(10))
"""The draws of every measurement of this module: ten, the book's least for a median."""

ORDER_VARIANTS = ("self-attention", "mean over positions", "one output, its context reordered",
                  "positional encoding first", "causal mask")
"""The maps :func:`order_errors` permutes: plain self-attention; the mean of its outputs over
positions; the output of the first position's query as a function of the keys and values it
reads (reordered, the query kept); self-attention after adding the sinusoidal encoding; causal
self-attention."""


def permutation_errors(
    f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, permutation: torch.Tensor
) -> tuple[float, float]:
    """Largest |f(P x) - P f(x)| and largest |f(P x) - f(x)| (Chapter 4, "Self-attention does
    not know the order").

    f maps (batch, time, features) to (batch, time, features'); ``permutation`` (time,) reorders
    the time axis. The first number is zero up to round-off when f is permutation-equivariant,
    the second when it is permutation-invariant.
    """
    check.callables(f=f)
    if not isinstance(x, torch.Tensor) or x.dim() != 3:
        raise ValueError(f"x must be a tensor of shape (batch, time, features), got "
                         f"{tuple(getattr(x, 'shape', ())) or type(x).__name__}")
    if not isinstance(permutation, torch.Tensor) or permutation.shape != (x.size(1),):
        raise ValueError(f"permutation must be a ({x.size(1)},) tensor, got "
                         f"{getattr(permutation, 'shape', type(permutation).__name__)}")
    if not torch.equal(permutation.sort().values, torch.arange(x.size(1))):
        raise ValueError(f"permutation must reorder 0 .. {x.size(1) - 1}, got {permutation}")
    permuted = f(x[:, permutation])
    original = f(x)
    return ((permuted - original[:, permutation]).abs().max().item(),
            (permuted - original).abs().max().item())


def _one_draw(seed: int, d_model: int, num_heads: int, steps: int) -> list[tuple[float, float]]:
    """(equivariance error, invariance error) of every map of :data:`ORDER_VARIANTS` for one
    draw: the attention's weights, a (2, steps, d_model) float64 input and a permutation, all
    drawn with ``seed``. The reordered context has no equivariance error (its output is one
    vector per sequence): nan."""
    manual_seed(seed)
    attention = MultiHeadAttention(d_model, num_heads).double()
    generator = seeded_generator(seed)
    x = torch.randn(2, steps, d_model, dtype=torch.float64, generator=generator)
    permutation = torch.randperm(steps, generator=generator)
    encoding, mask = PositionalEncoding(d_model, steps), causal_mask(steps)

    def self_attention(h, mask=None):
        return attention(h, h, h, mask)[0]

    query = x[:, :1]  # the first position's query, kept while its context is reordered
    reads = attention(query, x, x)[0]
    reordered = attention(query, x[:, permutation], x[:, permutation])[0]
    maps = {"self-attention": self_attention,
            "mean over positions": lambda h: self_attention(h).mean(1, keepdim=True).expand_as(h),
            "positional encoding first": lambda h: self_attention(encoding(h)),
            "causal mask": lambda h: self_attention(h, mask)}
    errors = {name: permutation_errors(f, x, permutation) for name, f in maps.items()}
    errors["one output, its context reordered"] = (math.nan,
                                                   (reordered - reads).abs().max().item())
    return [errors[name] for name in ORDER_VARIANTS]


@torch.no_grad()
def order_errors(seeds: Sequence[int] = SEEDS, d_model: int = 16, num_heads: int = 4,
                 steps: int = 10) -> dict[str, np.ndarray]:
    """{map of :data:`ORDER_VARIANTS`: (seeds, 2) array} of its largest |f(P x) - P f(x)|
    (equivariance; nan for the reordered context) and largest |f(P x) - f(x)| (invariance),
    one row per draw of the weights, input (2, steps, d_model) and permutation (Chapter 4,
    "Self-attention does not know the order")."""
    seeds = check.ints("seeds", seeds, least=0)
    check.positive(d_model=d_model, num_heads=num_heads)
    check.int_range(2, None, steps=steps)
    rows = np.array([_one_draw(seed, d_model, num_heads, steps) for seed in seeds])
    return {name: rows[:, i] for i, name in enumerate(ORDER_VARIANTS)}


@torch.no_grad()
def causal_output_spread(seeds: Sequence[int] = SEEDS, d_model: int = 16, num_heads: int = 4,
                         steps: int = 32, batch: int = 64) -> np.ndarray:
    """The spread of a causal self-attention layer's output at every position, with no
    positional encoding, at initialisation: a (seeds, steps) array (Chapter 4, "Self-attention
    does not know the order").

    For each seed, a float64 :class:`MultiHeadAttention` drawn with it reads ``batch`` sequences
    (batch, steps, d_model) of independent N(0, 1) entries under the causal mask; entry i is the
    standard deviation over the sequences of the output at position i, root-mean-squared over
    the features. With uniform weights it would be proportional to (i + 1)^(-1/2).
    """
    seeds = check.ints("seeds", seeds, least=0)
    check.positive(d_model=d_model, num_heads=num_heads)
    check.int_range(2, None, steps=steps, batch=batch)
    rows = []
    for seed in seeds:
        manual_seed(seed)
        attention = MultiHeadAttention(d_model, num_heads).double()
        x = torch.randn(batch, steps, d_model, dtype=torch.float64,
                        generator=seeded_generator(seed))
        outputs = attention(x, x, x, causal_mask(steps))[0]  # (batch, steps, d_model)
        rows.append(outputs.std(dim=0).square().mean(-1).sqrt().numpy())
    return np.stack(rows)

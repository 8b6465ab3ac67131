"""Chapter 4's measurements of a deep stack at initialisation, over many draws of its weights
("Residual connections and layer normalisation"; "Rank collapse").

The gradient through a stack of encoder layers is a product of one Jacobian per layer. How much
it shrinks or grows depends on the draw of the weights, so every number the chapter reads is a
median and a range over ``seeds`` draws (:func:`longdep.stats.spread`), never one draw:

- :func:`skip_path_jacobians`: the Jacobian of the skip path alone (the branches detached),
  its distance from the identity and its spectral norm;
- :func:`layer_gradient_profiles`: the gradient at the input of every layer, in full or along
  the skip path only, for stacks of one width, order and initialisation;
- :func:`token_cosines`: the mean cosine between the tokens' vectors after L layers of
  attention, with and without residual connections (Dong, Cordonnier & Loukas 2021: pure
  attention loses rank doubly exponentially with depth).
"""

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from longdep.experiments.attention import encoder_layers
from longdep.experiments.workers import over_cores
from longdep.measure.layers import (
    layer_input_gradients_per_seed,
    skip_path_only,
    stack_jacobian,
)
from longdep.models import _checks as check
from longdep.models.attention import MultiHeadAttention
from longdep.seeds import manual_seed, seeded_generator

SEEDS = tuple(range(10))
"""The draws of every measurement of this module: ten, the book's least for a median."""


def skip_path_jacobians(depth: int, d_model: int, num_heads: int, d_ff: int, norm_first: bool,
                        glorot: bool, seeds: Sequence[int] = SEEDS, length: int = 4
                        ) -> np.ndarray:
    """For each seed, (max |J - I|, ||J||_2) of the skip path of ``depth`` float64 encoder
    layers (:func:`longdep.experiments.attention.encoder_layers` with that seed), J the
    Jacobian at one random input (1, length, d_model) drawn with the seed: a (seeds, 2) array.

    Pre-LN's skip path is the identity exactly, so its rows are (0, 1); Post-LN's passes
    through two layer normalisations per layer.
    """
    check.ints("seeds", seeds, least=0)
    check.positive(length=length)
    rows = []
    for seed in seeds:
        layers = encoder_layers(depth, d_model, num_heads, d_ff, norm_first, glorot, seed)
        x = torch.randn(1, length, d_model, dtype=torch.float64,
                        generator=seeded_generator(seed))
        with skip_path_only(layers):
            jacobian = stack_jacobian(layers, x)
        rows.append(((jacobian - torch.eye(len(jacobian))).abs().max().item(),
                     torch.linalg.matrix_norm(jacobian, ord=2).item()))
    return np.array(rows)


def layer_gradient_profile(depth: int, d_model: int, norm_first: bool, glorot: bool,
                           skip_only: bool, seeds: tuple[int, ...] = SEEDS) -> np.ndarray:
    """For each seed, the norm of the gradient at the input of every layer of ``depth`` float64
    encoder layers (2 heads, d_ff = 4 d_model) and at their output: a (seeds, depth + 1) array,
    entry 0 at the input of the stack (every seed at once, by
    :func:`longdep.measure.layers.layer_input_gradients_per_seed`).

    The loss reads the last position along a random direction; the input (1, 8, d_model) and
    the direction are drawn once per width, so every seed and setting sees the same ones, and
    only the weights change with the seed. With ``skip_only`` the branches pass no gradient.
    """
    check.positive(depth=depth, d_model=d_model)
    check.ints("seeds", seeds, least=0)
    generator = seeded_generator(d_model)  # one input per width
    x = torch.randn(1, 8, d_model, dtype=torch.float64, generator=generator)
    direction = torch.randn(d_model, dtype=torch.float64, generator=generator)
    stacks = [encoder_layers(depth, d_model, 2, 4 * d_model, norm_first, glorot, seed)
              for seed in seeds]
    return layer_input_gradients_per_seed(stacks, x, direction, skip_only).numpy()


ORDERS = {"Post-LN": False, "Pre-LN": True}
INITIALISATIONS = {"default": False, "Glorot": True}


def layer_gradient_profiles(depth: int, widths: Sequence[int], seeds: Sequence[int] = SEEDS
                            ) -> dict[tuple[str, str, int, str], np.ndarray]:
    """:func:`layer_gradient_profile` of the settings Chapter 4 reads ("Residual connections and
    layer normalisation"), side by side, one per core, the widest first: at the first width
    of ``widths`` (the book's), every order of :data:`ORDERS` and initialisation of
    :data:`INITIALISATIONS` in full, and Post-LN (whose skip path is not the identity) along the
    skip path only; at the other widths, the full gradient of Post-LN, the order whose
    gradient through depth is in question.

    Returns {(order, initialisation, width, "full" or "skip"): (seeds, depth + 1) array}.
    """
    widths = check.ints("widths", widths)
    seeds = tuple(check.ints("seeds", seeds, least=0))
    book = [(order, init, widths[0], path) for order in ORDERS for init in INITIALISATIONS
            for path in (("full", "skip") if order == "Post-LN" else ("full",))]
    wider = [("Post-LN", init, width, "full") for width in widths[1:]
             for init in INITIALISATIONS]
    points = {key: (depth, key[2], ORDERS[key[0]], INITIALISATIONS[key[1]], key[3] == "skip",
                    seeds) for key in book + wider}
    runs = over_cores(layer_gradient_profile, points.values(), cost=lambda point: point[1])
    return {key: runs[point] for key, point in points.items()}


# ---- rank collapse ----------------------------------------------------------------------------

VARIANTS = ("attention only", "Post-LN", "Pre-LN", "Pre-LN, branch / sqrt(L)")
"""The stacks of :func:`token_cosines`: L layers of self-attention, x <- A(x) with no residual
connection; x <- LN(x + A(x)); x <- x + A(LN(x)); and the same with every branch's output
projection scaled by 1/sqrt(L) at initialisation, GPT-2's rule (Radford et al. 2019)."""


def attention_stack(variant: str, depth: int, d_model: int, num_heads: int) -> nn.ModuleList:
    """``depth`` (attention, norm) pairs for :func:`stack_outputs`, float64, with the global
    generator's draws; the norm is a LayerNorm, or an Identity for "attention only"."""
    check.choice(variant=(variant, VARIANTS))
    check.positive(depth=depth)
    layers = nn.ModuleList()
    for _ in range(depth):
        attention = MultiHeadAttention(d_model, num_heads)
        if variant == "Pre-LN, branch / sqrt(L)":
            with torch.no_grad():
                attention.out_proj.weight.mul_(depth**-0.5)
                attention.out_proj.bias.mul_(depth**-0.5)
        norm = nn.Identity() if variant == "attention only" else nn.LayerNorm(d_model)
        layers.append(nn.ModuleList([attention, norm]))
    return layers.double()


def stack_outputs(variant: str, layers: nn.ModuleList, x: torch.Tensor):
    """Yield the output (batch, time, d_model) of every layer of an :func:`attention_stack`
    (self-attention over every position, no mask)."""
    check.choice(variant=(variant, VARIANTS))
    if not isinstance(layers, nn.ModuleList) or not all(
            isinstance(pair, nn.ModuleList) and len(pair) == 2 for pair in layers):
        raise TypeError(f"layers must be the nn.ModuleList of (attention, norm) pairs that "
                        f"attention_stack builds, got {check.describe(layers)}")
    for attention, norm in layers:
        if variant == "attention only":
            x = attention(x, x, x)[0]
        elif variant == "Post-LN":
            x = norm(x + attention(x, x, x)[0])
        else:
            h = norm(x)
            x = x + attention(h, h, h)[0]
        yield x


def mean_token_cosine(x: torch.Tensor) -> float:
    """The mean cosine between the vectors of two different positions of x (1, time, features):
    about 0 for independent random vectors, 1 when every position holds the same direction."""
    check.tensor(x, "x", "(1, time, features)", 3)
    if x.dim() != 3 or x.size(0) != 1 or x.size(1) < 2:
        raise ValueError(f"x must have shape (1, time, features) with time >= 2, got "
                         f"{check.describe(x)}")
    unit = nn.functional.normalize(x[0], dim=-1)
    cosines = unit @ unit.T
    steps = len(cosines)
    return ((cosines.sum() - cosines.diagonal().sum()) / (steps * (steps - 1))).item()


@torch.no_grad()
def token_cosines(variant: str, depths: Sequence[int], d_model: int = 64, num_heads: int = 4,
                  length: int = 32, seeds: Sequence[int] = SEEDS) -> np.ndarray:
    """:func:`mean_token_cosine` of the output of a stack of each depth of ``depths`` at
    initialisation, for every seed: a (seeds, len(depths)) array (Chapter 4, "Rank collapse").

    The input (1, length, d_model) holds independent N(0, 1) entries drawn with the seed, and
    the layers are drawn after seeding torch with it. A stack whose initialisation does not
    depend on its depth is built once, as deep as the deepest, and read after each depth; the
    1/sqrt(L) variant is built anew for every depth L.
    """
    check.choice(variant=(variant, VARIANTS))
    depths = check.ints("depths", depths)
    check.positive(d_model=d_model, num_heads=num_heads, length=length)
    rows = []
    for seed in check.ints("seeds", seeds, least=0):
        x = torch.randn(1, length, d_model, dtype=torch.float64,
                        generator=seeded_generator(seed))
        row = []
        for depth in depths if variant == VARIANTS[-1] else [max(depths)]:
            manual_seed(seed)
            layers = attention_stack(variant, depth, d_model, num_heads)
            outputs = list(stack_outputs(variant, layers, x))
            row += ([mean_token_cosine(outputs[-1])] if variant == VARIANTS[-1]
                    else [mean_token_cosine(outputs[d - 1]) for d in depths])
        rows.append(row)
    return np.array(rows)

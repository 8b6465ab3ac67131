"""Softmax fading and scalable softmax (Chapter 4, "Gradient versus distance").

A softmax over n scores spends its unit mass on all of them, so the weight of one key that
scores Delta above n - 1 equal others is

    p_max = 1 / (1 + (n - 1) exp(-Delta)),

which falls like exp(Delta) / n once n is much larger than exp(Delta): the forward twin of the
1/T share of the gradient that each position gets at initialisation. Scalable softmax (SSMax,
Nakanishi 2025) multiplies the scores by s log n before the softmax, so the gap becomes
s Delta log n and

    p_max = 1 / (1 + (n - 1) n^(-s Delta)),

which tends to 1 as n grows whenever s Delta > 1. :func:`planted_weights` computes both with
``torch.softmax`` and :func:`predicted_weight` gives the closed form.
"""

import math
from collections.abc import Sequence

import torch

from longdep.models import _checks as check

HIGH, LOW, SCALE = 3.0, -2.0, 0.43
"""The setting of Nakanishi's (2025) figure 1: one score +3, every other -2, and s = 0.43."""


def scores(length: int, high: float = HIGH, low: float = LOW) -> torch.Tensor:
    """The (length,) float64 scores: the last is ``high``, every other ``low``."""
    check.int_range(2, None, length=length)
    check.finite(high=high, low=low)
    values = torch.full((length,), float(low), dtype=torch.float64)
    values[-1] = high
    return values


def planted_weights(lengths: Sequence[int], scale: float | None = None, high: float = HIGH,
                    low: float = LOW) -> list[float]:
    """The softmax weight of the high score among ``length`` :func:`scores`, for each length;
    with ``scale`` s, of scalable softmax, softmax(s log(length) z)."""
    lengths = check.ints("lengths", lengths, least=2)
    if scale is not None:
        check.finite(scale=scale)
    weights = []
    for length in lengths:
        z = scores(length, high, low)
        if scale is not None:
            z = scale * math.log(length) * z
        weights.append(torch.softmax(z, dim=0)[-1].item())
    return weights


def predicted_weight(length: int, scale: float | None = None, high: float = HIGH,
                     low: float = LOW) -> float:
    """The closed form of :func:`planted_weights` at one length (see the module docstring)."""
    check.int_range(2, None, length=length)
    gap = (high - low) * (1.0 if scale is None else scale * math.log(length))
    return 1.0 / (1.0 + (length - 1) * math.exp(-gap))

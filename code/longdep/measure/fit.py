"""Reading measurements against a length or a distance (Chapters 2, 4, 5, 6 and 7): the book's one
least-squares slope fit and what is read off it.

- :func:`fitted_log_slope`: the slope of log(value) against x, the one fit;
- :func:`fitted_exponent`: x = log(length), value ~ length^p (a cost's growth, a gradient's
  power law over depth);
- :func:`fitted_rate`: x = the distance, value ~ q^distance (a gradient's per-step factor);
- :func:`crossover_length`, :func:`growth_label`: where one cost overtakes another, and a cost's
  growth class in words ("log T", "T", "T^2").

Values must be finite and positive (they are read on log axes); a wrong type raises
``TypeError``, a wrong value or length ``ValueError`` naming the argument.
"""

import math
from collections.abc import Sequence

import numpy as np

from longdep.models import _checks as check


def positive_numbers(count: int | None = None, **named: Sequence[float]) -> list[np.ndarray]:
    """Each named sequence as a float array, checked: at least two finite positive numbers (for
    log-log axes), all of one length (``count`` if given)."""
    arrays = []
    for name, values in named.items():
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise TypeError(f"{name} must be a list of numbers, got {check.describe(values)}")
        try:
            array = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must hold numbers only, got {values!r}") from None
        if array.ndim != 1 or array.size < 2 or (count is not None and array.size != count):
            raise ValueError(f"{name} must hold {'two or more' if count is None else count} "
                             f"numbers, got {array.size}")
        if not (np.isfinite(array) & (array > 0)).all():
            raise ValueError(f"{name} must be finite and positive (log-log axes), got "
                             f"{array.tolist()}")
        arrays.append(array)
        count = array.size
    return arrays


def fitted_exponent(lengths: Sequence[float], values: Sequence[float]) -> float:
    """The slope p of the least-squares line log(value) = p log(length) + c: value ~ length^p."""
    lengths, values = positive_numbers(lengths=lengths, values=values)
    return fitted_log_slope(np.log(lengths), values)


def fitted_log_slope(x: Sequence[float], values: Sequence[float], name: str = "x") -> float:
    """The slope p of the least-squares line log(value) = p x + c: the book's one slope fit
    (:func:`fitted_exponent` takes x = log(length), :func:`fitted_rate` x = the distance).
    ``name`` is the name of x in an error message."""
    (values,) = positive_numbers(values=values)
    try:
        x = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must hold numbers only, got {x!r}") from None
    if x.shape != values.shape or not np.isfinite(x).all():
        raise ValueError(f"{name} must hold {values.size} finite numbers, one per value, got "
                         f"{x.tolist()}")
    return float(np.polyfit(x, np.log(values), 1)[0])


def fitted_rate(distances: Sequence[float], values: Sequence[float]) -> float:
    """The per-step factor q of the least-squares line log(value) = log(q) distance + c: value
    ~ q^distance, as a gradient that crosses one factor q per step (Chapter 2's rates; Chapter
    4, "A forget gate inside attention"). ``distances`` may start at 0."""
    return float(np.exp(fitted_log_slope(distances, values, name="distances")))


def crossover_length(lengths: Sequence[float], first: Sequence[float],
                     second: Sequence[float]) -> float:
    """The length beyond which ``first`` stays above ``second``, or nan if there is none in range.

    Found at the last measured length where first <= second, interpolated on log-log axes
    towards the next one (where first > second): exactly there if the two are equal at it.
    nan when first <= second at the longest length (no crossing yet: it lies beyond the range)
    and when first > second at every length (it lies below the range); a caller must say so.
    """
    lengths, first, second = positive_numbers(lengths=lengths, first=first, second=second)
    log_ratio, log_lengths = np.log(first) - np.log(second), np.log(lengths)
    not_above = np.flatnonzero(log_ratio <= 0)
    if log_ratio[-1] <= 0 or not_above.size == 0:
        return math.nan
    i = not_above[-1]
    fraction = -log_ratio[i] / (log_ratio[i + 1] - log_ratio[i])
    return float(np.exp(log_lengths[i] + fraction * (log_lengths[i + 1] - log_lengths[i])))


def growth_label(lengths: Sequence[int], values: Sequence[float]) -> str:
    """Name how ``values`` grow with ``lengths`` (each length twice the one before): "log T" if
    each doubling adds the same positive amount, "1" if the fitted exponent rounds to 0 (they
    stay about constant), else "T^p" with p the rounded :func:`fitted_exponent` ("T" for 1)."""
    lengths, values = positive_numbers(lengths=lengths, values=values)
    if lengths.size < 3 or not np.allclose(lengths[1:], 2 * lengths[:-1]):
        raise ValueError(f"lengths must be three or more, each twice the one before, got "
                         f"{lengths.tolist()}")
    steps = np.diff(values)
    if (steps > 0).all() and np.allclose(steps, steps[0], rtol=0.05):
        return "log T"
    power = round(fitted_exponent(lengths, values))
    return "1" if power == 0 else "T" if power == 1 else f"T^{power}"

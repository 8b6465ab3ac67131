"""How the book states a measurement: counts over seeds with their interval, and the words a
count earns (the back-matter page "How this book measures").

A training run of hundreds of steps is chaotic, so a verdict about training ("solves", "fails")
is a count over at least 10 seeds, printed with its 95 % Wilson interval (:func:`wilson`); the
word comes from the interval by one rule (:func:`frequency_word`), and where the interval
straddles two words there is no word: the prose gives the count. A measurement at
initialisation is the median and range over draws (:class:`Spread`).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from longdep.models import _checks as check

Z_95 = 1.959963984540054  # the standard normal's 97.5 % quantile

# The rule: (word, Chinese, test on the interval (low, high)), the first that holds wins.
WORDS = (
    ("almost always", "几乎总是", lambda low, high: low >= 0.7),
    ("mostly", "大多", lambda low, high: low >= 0.5),
    ("almost never", "几乎从不", lambda low, high: high <= 0.3),
    ("rarely", "很少", lambda low, high: high <= 0.5),
)


def wilson(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion: (low, high) around successes / trials
    (Wilson 1927). Unlike the normal approximation it stays inside [0, 1] and is not empty at
    0 or ``trials`` successes: 0 of 10 gives (0, 0.28), 10 of 10 gives (0.72, 1)."""
    check.int_range(0, None, successes=successes)
    check.positive(trials=trials)
    if successes > trials:
        raise ValueError(f"successes must be at most trials = {trials}, got {successes}")
    p, z2 = successes / trials, z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z / (1 + z2 / trials) * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials**2))
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact at the ends
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def frequency_word(successes: int, trials: int, language: str = "en") -> str | None:
    """The word a count earns by the book's rule (:data:`WORDS`): "almost always" when the Wilson
    interval's low end is at least 0.7, "mostly" at least 0.5, "almost never" when its high end
    is at most 0.3, "rarely" at most 0.5; None when the interval straddles 0.5, so that no word
    is warranted and the count is what a page prints. ``language`` "zh" gives the Chinese."""
    check.choice(language=(language, ("en", "zh")))
    low, high = wilson(successes, trials)
    for english, chinese, holds in WORDS:
        if holds(low, high):
            return english if language == "en" else chinese
    return None


@dataclass(frozen=True)
class Count:
    """``successes`` of ``trials`` seeds, with the Wilson interval and the rule's word."""

    successes: int
    trials: int

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.successes, self.trials)

    @property
    def word(self) -> str | None:
        return frequency_word(self.successes, self.trials)

    def __str__(self) -> str:
        low, high = self.interval
        return f"{self.successes}/{self.trials} ({low:.2f}-{high:.2f})"


def count_phrase(counted: Count, language: str = "en") -> str:
    """How a page prints a count: the count, its interval and the rule's word in ``language``
    ("en" or "zh"), "9/10 (0.60-0.98) mostly", or without a word when it earns none,
    "7/10 (0.40-0.89)"."""
    check.instance(counted, "counted", Count)
    word = frequency_word(counted.successes, counted.trials, language)
    return f"{counted} {word}" if word else str(counted)


def count(flags: Sequence[bool]) -> Count:
    """The :class:`Count` of true values among ``flags`` (one per seed)."""
    flags = [bool(flag) for flag in flags]
    check.positive(seeds=len(flags))
    return Count(sum(flags), len(flags))


@dataclass(frozen=True)
class Spread:
    """The median and the range of a measurement over draws: what a page reads off a quantity
    measured at initialisation, never one draw."""

    median: float
    low: float
    high: float


def spread(values: Sequence[float]) -> Spread:
    """:class:`Spread` of ``values`` (at least one; the median of an even count is the mean of
    the middle two)."""
    ordered = sorted(float(v) for v in values)
    check.positive(values=len(ordered))
    middle = len(ordered) // 2
    median = (ordered[middle] if len(ordered) % 2
              else (ordered[middle - 1] + ordered[middle]) / 2)
    return Spread(median, ordered[0], ordered[-1])

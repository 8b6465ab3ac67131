"""The measurement standard's statistics: Wilson intervals and the words they earn."""

import math

import pytest
from longdep.stats import Count, count, frequency_word, spread, wilson


def test_wilson_interval_at_its_textbook_values():
    z2 = 1.959963984540054**2
    assert wilson(0, 10) == (0.0, pytest.approx(z2 / (10 + z2), abs=1e-15))
    assert wilson(10, 10)[0] == pytest.approx(10 / (10 + z2), abs=1e-15)
    low, high = wilson(5, 10)
    assert (low, high) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))


@pytest.mark.parametrize("trials", [1, 10, 20, 37])
def test_wilson_is_symmetric_and_contains_the_proportion(trials):
    for k in range(trials + 1):
        low, high = wilson(k, trials)
        other = wilson(trials - k, trials)
        assert low == pytest.approx(1 - other[1], abs=1e-12)
        assert 0 <= low <= k / trials <= high <= 1


def test_the_words_of_ten_seeds_follow_the_rule():
    words = [frequency_word(k, 10) for k in range(11)]
    assert words == ["almost never", "rarely", None, None, None, None, None, None, None,
                     "mostly", "almost always"]
    assert frequency_word(19, 20) == "almost always" and frequency_word(18, 20) == "mostly"
    assert frequency_word(0, 10, "zh") == "几乎从不"
    for k in range(11):  # the rule as stated: the first test on the interval that holds
        low, high = wilson(k, 10)
        word = frequency_word(k, 10)
        assert (word == "almost always") == (low >= 0.7)
        assert word is not None or (low < 0.5 < high)


def test_count_and_spread():
    c = count([True, False, True, True])
    assert c == Count(3, 4) and str(c).startswith("3/4 (") and c.word is None
    s = spread([3.0, 1.0, 2.0, 10.0])
    assert (s.median, s.low, s.high) == (2.5, 1.0, 10.0)
    with pytest.raises(ValueError, match="successes must be at most trials"):
        wilson(3, 2)
    with pytest.raises(TypeError, match="successes must be an int"):
        wilson(1.5, 2)
    with pytest.raises(ValueError, match="language must be one of"):
        frequency_word(1, 2, "fr")
    with pytest.raises(ValueError, match="values must be at least 1"):
        spread([])
    assert math.isclose(spread([4.0]).median, 4.0)


def test_wilson_narrows_as_the_trials_grow():
    widths = [wilson(n // 2, n)[1] - wilson(n // 2, n)[0] for n in (10, 40, 160)]
    # about 1/sqrt(n): four times the trials, about half the width
    assert 1.7 < widths[0] / widths[1] < 2.1 and 1.9 < widths[1] / widths[2] < 2.1

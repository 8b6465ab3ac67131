"""chapter_glue glues every value under the chapter's prefix."""

import numpy as np
import pytest
from longdep import book


def test_values_are_glued_under_the_prefix(monkeypatch):
    calls = []
    monkeypatch.setattr(book, "glue", lambda *args, **kwargs: calls.append((args, kwargs)))
    book.chapter_glue("ch2")(gamma=1.0, steps=50)
    assert calls == [(("ch2_gamma", 1.0), {"display": False}),
                     (("ch2_steps", 50), {"display": False})]


def test_bad_prefix_raises():
    with pytest.raises(ValueError, match="prefix"):
        book.chapter_glue("ch 2")


def test_significant_rounds_to_the_given_digits():
    assert book.significant(0.00014766379420295308, 3) == 0.000148
    assert book.significant(-123456.0, 2) == -120000.0
    assert book.significant(0.0, 3) == 0.0 and book.significant(float("inf"), 2) == float("inf")
    with pytest.raises(ValueError, match="digits"):
        book.significant(1.0, 0)


def test_full_precision_floats_are_refused_rounded_ones_glued(monkeypatch):
    calls = []
    monkeypatch.setattr(book, "glue", lambda *args, **kwargs: calls.append(args))
    glue_all = book.chapter_glue("ch1")
    with pytest.raises(ValueError, match="ch1_ratio .*full float precision"):
        glue_all(ratio=0.00014766379420295308)
    with pytest.raises(ValueError, match="ch1_mean"):
        glue_all(mean=np.float64(1 / 3))
    glue_all(ratio=book.significant(0.00014766379420295308, 3), bound=1e-14, count=3, text="all")
    assert calls == [("ch1_ratio", 0.000148), ("ch1_bound", 1e-14), ("ch1_count", 3),
                     ("ch1_text", "all")]

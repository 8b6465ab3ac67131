"""chapter_glue glues every value under the chapter's prefix."""

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

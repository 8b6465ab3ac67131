"""The book's figure style: figures share parsed mathtext and stay the same, pixel for pixel."""

import functools
import io

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from longdep.plots import style
from matplotlib.mathtext import MathTextParser


def log_figure_png() -> bytes:
    """A new figure with a log axis (mathtext tick labels) and math in its labels, as PNG."""
    fig, ax = plt.subplots(layout="constrained")
    ax.plot(np.arange(1, 50), np.exp(-np.arange(1, 50) / 3.0), label=r"$e^{-d/3}$")
    ax.set_yscale("log")
    ax.set_ylabel(r"$\|\partial L/\partial h_{T-d}\|$")
    ax.legend()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def test_figures_share_parsed_mathtext_and_draw_the_same(monkeypatch):
    assert style._PARSE_UNCACHED is not None, "matplotlib 3.11's MathTextParser has the cache"
    # matplotlib's own behaviour: an lru_cache keyed on the parser, so one per figure
    monkeypatch.setattr(MathTextParser, "_parse_cached",
                        functools.lru_cache(50)(style._PARSE_UNCACHED))
    unshared = log_figure_png()
    style.share_parsed_mathtext()
    style.share_parsed_mathtext()  # idempotent
    assert MathTextParser._parse_cached is style._parse_cached
    style._parse_shared.cache_clear()
    first = log_figure_png()
    parsed = style._parse_shared.cache_info()
    second = log_figure_png()  # a new figure, a new renderer and parser
    again = style._parse_shared.cache_info()
    assert parsed.misses > 5, "the log axis and the labels are parsed once"
    assert again.misses == parsed.misses and again.hits > parsed.hits, \
        "the second figure reuses the first one's parses"
    assert first == unshared and second == unshared, "the figure is the same, pixel for pixel"

"""One plotting style for the whole book.

Figures keep an opaque white background, so they read the same on the theme's light and dark
pages; gradient norms go on log axes; every axis says what it measures.
"""

import functools

import matplotlib as mpl
import matplotlib.pyplot as plt
from matplotlib.mathtext import MathTextParser

from longdep.plots._checks import check_figure

BOOK_STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "font.size": 10,
    "axes.prop_cycle": mpl.cycler(
        color=["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
    ),
}


def use_book_style() -> None:
    """Apply the book's matplotlib style (a colour-blind-safe palette, white background), and
    let every figure reuse the mathtext labels that earlier figures parsed
    (:func:`share_parsed_mathtext`)."""
    mpl.rcParams.update(BOOK_STYLE)
    share_parsed_mathtext()


# matplotlib's own cache of parsed mathtext, ``MathTextParser._parse_cached``, is an lru_cache
# on a method, so it is keyed on the parser too; None where matplotlib has no such cache
_PARSE_UNCACHED = getattr(getattr(MathTextParser, "_parse_cached", None), "__wrapped__", None)
_PARSERS: dict[str, MathTextParser] = {}  # one parser per output type ("raster", "vector")


@functools.lru_cache(maxsize=2048)
def _parse_shared(output_type: str, *arguments):
    return _PARSE_UNCACHED(_PARSERS[output_type], *arguments)


def _parse_cached(parser: MathTextParser, *arguments):
    _PARSERS.setdefault(parser._output_type, parser)
    return _parse_shared(parser._output_type, *arguments)


def share_parsed_mathtext() -> None:
    """One cache of parsed mathtext for all figures, instead of one per figure.

    Matplotlib caches a parsed label per parser, and every figure draws with a new renderer
    and so a new parser: each figure parsed its log-axis labels ($10^{-3}$, ...) and its math
    again, 4 to 17 ms each, 13 to 20 % of the time a chapter spent drawing its figures. A parse
    depends only on the output type and the arguments (text, dpi, font, antialiasing,
    hinting), which key the shared cache, so every figure is the same, pixel for pixel
    (tested). Where matplotlib has no such method (another version), nothing changes.
    """
    if _PARSE_UNCACHED is not None:
        MathTextParser._parse_cached = _parse_cached


def closed_for_display(fig: mpl.figure.Figure) -> mpl.figure.Figure:
    """Close ``fig`` and return it, for a notebook cell to display as its value.

    A closed figure is shown exactly once, by the cell's display hook. An open one is also shown by
    the inline backend when the cell ends, and twice where the backend was activated twice (nbval
    does that), which would make the stored output differ from a fresh run.
    """
    check_figure(fig)
    plt.close(fig)
    return fig


# Chapter 2 figures
def _distance_axis(ax, title: str) -> None:
    """A log axis of gradient ratios against distance d (steps back from the last step)."""
    ax.set_yscale("log")
    ax.set_xlabel("distance d = T - k (steps)")
    ax.set_ylabel(r"$\|\partial L/\partial h_{T-d}\| \;/\; \|\partial L/\partial h_T\|$")
    ax.set_title(title)


def _plain_log_ticks(ax, values) -> None:
    """Label a log x axis at exactly ``values``, written as plain integers."""
    ax.set_xticks(values, [str(v) for v in values])
    ax.xaxis.set_minor_formatter(mpl.ticker.NullFormatter())

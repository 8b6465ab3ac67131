"""One plotting style for the whole book, and its figures in both of the book's languages.

Figures keep an opaque white background, so they read the same on the theme's light and dark
pages; gradient norms go on log axes; every axis says what it measures.

Every string a figure draws is written once with its Chinese beside it, ``words("gradient
norm", "梯度范数")``, which returns the string of the language being drawn: English unless the
figure is drawn inside :func:`in_language`. A chapter cell draws each figure in both languages
with :func:`both_languages` (both from one execution; the Chinese edition shows the Chinese
one), and a plain call draws the English figure, as before. Each figure also says in words what
it shows, its alt text, computed from the data it draws (``closed_for_display(fig, alt=...)``).
"""

import contextlib
import contextvars
import functools
import io
import re
import weakref

import matplotlib as mpl
import matplotlib.pyplot as plt
from matplotlib import font_manager
from matplotlib.mathtext import MathTextParser

from longdep.plots._checks import LANGUAGES, check_figure, check_language, check_words

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


def closed_for_display(fig: mpl.figure.Figure, alt: str | None = None) -> mpl.figure.Figure:
    """Close ``fig`` and return it, for a notebook cell to display as its value; ``alt`` is what
    the figure shows, in words (its alt text, in the language being drawn).

    A closed figure is shown exactly once, by the cell's display hook. An open one is also shown by
    the inline backend when the cell ends, and twice where the backend was activated twice (nbval
    does that), which would make the stored output differ from a fresh run.
    """
    check_figure(fig)
    plt.close(fig)
    if alt is not None:
        check_words(alt=alt)
        _ALT_TEXTS[fig] = spaced(alt) if _LANGUAGE.get() == "zh" else alt
    return fig


# ---- the figures' languages -----------------------------------------------------------------

_LANGUAGE = contextvars.ContextVar("longdep_figure_language", default="en")
_ALT_TEXTS: "weakref.WeakKeyDictionary[mpl.figure.Figure, str]" = weakref.WeakKeyDictionary()

# Chinese faces, the first one installed is used: Debian's fonts-noto-cjk, Adobe's own name for
# the same design, macOS's and Windows' system faces.
CHINESE_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei")
CHINESE_FONT_FILES = re.compile(r"NotoSansCJK|SourceHanSans|PingFang|msyh", re.IGNORECASE)
MISSING_CHINESE_FONT = (
    "No Chinese font for the figures (one of: {fonts}): install Debian's fonts-noto-cjk "
    "(apt-get install fonts-noto-cjk), then run the chapter again.")


def words(en: str, zh: str) -> str:
    """The text ``en`` or its Chinese ``zh``, whichever language the figure is drawn in (see
    the module docstring): every title, axis label, legend entry and annotation is written this
    way, once, with its Chinese beside it."""
    check_words(en=en, zh=zh)
    return zh if _LANGUAGE.get() == "zh" else en


def joined(items, clauses: bool = False) -> str:
    """Items of a list in a sentence: "a, b, c" in English, "a、b、c" in Chinese; with
    ``clauses`` (items that hold commas, such as "LSTM, forget bias 1 2.6e-28") "a; b" and
    "a；b"."""
    items = list(items) if not isinstance(items, str) and hasattr(items, "__iter__") else None
    if items is None or not all(isinstance(item, str) for item in items):
        raise TypeError("items must be an iterable of str (a list's items in a sentence)")
    return (words("; ", "；") if clauses else words(", ", "、")).join(items)


_LATIN_THEN_CHINESE = re.compile(r"([A-Za-z0-9])([\u4e00-\u9fff])")
_CHINESE_THEN_LATIN = re.compile(r"([\u4e00-\u9fff])([A-Za-z0-9])")


def spaced(text: str) -> str:
    """Chinese text with a space between a Chinese character and a Latin letter or a digit, as
    the Chinese edition writes it ("LSTM 的梯度"), where a name given in English meets the
    Chinese around it ("{name}的梯度" with name = "LSTM")."""
    check_words(text=text)
    return _CHINESE_THEN_LATIN.sub(r"\1 \2", _LATIN_THEN_CHINESE.sub(r"\1 \2", text))


def localised(label, language: str | None = None) -> str:
    """A label a caller passed in (a model's name, a title), in ``language`` (by default the
    language being drawn): a string is the same in both languages; an object with string
    attributes ``en`` and ``zh``, such as :class:`longdep.book.Bilingual`, gives its own."""
    language = _LANGUAGE.get() if language is None else language
    if isinstance(label, str):
        return label
    text = getattr(label, language, None)
    if not (isinstance(text, str) and isinstance(getattr(label, "zh", None), str)):
        raise TypeError(f"a label must be a str or have str attributes en and zh (such as "
                        f"longdep.book.Bilingual), got {type(label).__name__} {label!r}")
    return text


@contextlib.contextmanager
def in_language(language: str):
    """Draw the figures made inside this block in ``language`` ("en" or "zh"): their words, and
    for Chinese in a font with Chinese glyphs (:func:`chinese_font`), matplotlib's own DejaVu
    Sans behind it for any glyph it lacks. The Chinese font comes first because text that
    mixes words and math (a title such as "$\\partial L / \\partial W$ 的各项") is drawn by
    mathtext in the first font alone; the math itself keeps the book's math font."""
    check_language(language)
    font = chinese_font() if language == "zh" else None
    if language == "zh" and font is None:
        raise RuntimeError(MISSING_CHINESE_FONT.format(fonts=", ".join(CHINESE_FONTS)))
    token = _LANGUAGE.set(language)
    try:
        with mpl.rc_context({"font.family": [font, "DejaVu Sans"]} if font else {}):
            yield
    finally:
        _LANGUAGE.reset(token)


@functools.cache
def chinese_font() -> str | None:
    """The first of :data:`CHINESE_FONTS` that matplotlib can use, or None.

    matplotlib lists the system's fonts once, in a cache it keeps across runs; a font installed
    after that (fonts-noto-cjk installed after matplotlib's first use) is missing from the list
    until the cache is rebuilt, so the system's Chinese font files it does not know are added
    to it first (for this process only).
    """
    def first_known() -> str | None:
        names = {font.name for font in font_manager.fontManager.ttflist}
        return next((name for name in CHINESE_FONTS if name in names), None)

    if found := first_known():
        return found
    known = {font.fname for font in font_manager.fontManager.ttflist}
    for path in font_manager.findSystemFonts():  # asks fontconfig: tens of milliseconds
        if path not in known and CHINESE_FONT_FILES.search(path):
            font_manager.fontManager.addfont(path)
    return first_known()


def alt_text(fig: mpl.figure.Figure) -> str:
    """What ``fig`` shows, in words, as its plotting function wrote it (see closed_for_display)."""
    check_figure(fig)
    if fig not in _ALT_TEXTS:
        raise ValueError("the figure has no alt text: its plotting function must end with "
                         "closed_for_display(fig, alt=...)")
    return _ALT_TEXTS[fig]


def png(fig: mpl.figure.Figure) -> bytes:
    """``fig`` as PNG at its own resolution (figure.dpi), as the notebook's inline backend draws
    it. Every figure has constrained layout, which already fits it into its canvas, so no tight
    bounding box is computed (it lays the figure out once more, about a tenth of the time)."""
    check_figure(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.dpi)
    return buffer.getvalue()


def both_languages(plot, *args, **kwargs) -> dict[str, tuple[bytes, str]]:
    """Chapter cells: draw ``plot(*args, **kwargs)`` in each language, {language: (PNG, alt
    text)}, for :class:`longdep.book.BilingualFigure` to show as one output.

    Without a Chinese font the Chinese drawing is the English one, and this says (on stdout,
    where a cell's reader sees it; a warning would go to stderr) which font to install: never a
    figure of missing-glyph boxes.
    """
    if not callable(plot):
        raise TypeError(f"plot must be a plotting function, got {type(plot).__name__}")
    drawings = {}
    for language in LANGUAGES:
        if language == "zh" and chinese_font() is None:
            print(MISSING_CHINESE_FONT.format(fonts=", ".join(CHINESE_FONTS)),
                  "Until then the Chinese edition shows this figure in English.")
            drawings[language] = drawings["en"]
            continue
        with in_language(language):
            fig = plot(*args, **kwargs)
            drawings[language] = (png(fig), alt_text(fig))
    return drawings


# Chapter 2 figures
def _distance_axis(ax, title: str) -> None:
    """A log axis of gradient ratios against distance d (steps back from the last step)."""
    ax.set_yscale("log")
    ax.set_xlabel(words("distance d = T - k (steps)", "距离 d = T - k（步）"))
    ax.set_ylabel(r"$\|\partial L/\partial h_{T-d}\| \;/\; \|\partial L/\partial h_T\|$")
    ax.set_title(title)


def _plain_log_ticks(ax, values) -> None:
    """Label a log x axis at exactly ``values``, written as plain integers."""
    ax.set_xticks(values, [str(v) for v in values])
    ax.xaxis.set_minor_formatter(mpl.ticker.NullFormatter())

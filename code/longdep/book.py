"""What a chapter page needs besides its experiments: reproducibility, glued numbers, tables.

Every chapter starts with :func:`reproducible`, so that its stored outputs equal a fresh run on a
machine of the same kind (the notebooks are checked by nbval in strict mode).

Numbers reach the prose through :func:`chapter_glue` (myst-nb's ``glue`` under the chapter's
prefix), printed with the digits their measurement supports; :func:`power_of_ten_above` prints
round-off; :class:`Table` shows a small table as HTML on the page and as text under nbval.

Both editions come from one execution, so what a cell shows holds both languages: a
:class:`Bilingual` text (shown with :func:`show`), a :class:`Table` with bilingual cells, a
:class:`BilingualFigure`. Each is one output whose HTML has one ``<div class="longdep-lang"
lang="...">`` per language (each edition of the book keeps the part in its own language:
book/_ext/bilingual_outputs.py; plain Jupyter shows both) and whose text holds both texts, so
nbval compares both. A bilingual glued value becomes two keys, ``<prefix>_<name>`` and
``<prefix>_<name>_zh``, the second for the Chinese catalogs.
"""

import base64
import dataclasses
import html
import math
import random
import unicodedata
from collections.abc import Callable, Sequence

import numpy as np
import torch
from IPython.display import display
from myst_nb import glue

from longdep.models import _checks as check
from longdep.seeds import shifted

DEFAULT_SEED = 0


def _real(name: str, value, finite: bool) -> float:
    """``value`` as a float; raise unless it is a real number (a Python or NumPy number, or a
    one-element tensor or array), finite if ``finite``."""
    if isinstance(value, (torch.Tensor, np.ndarray)) and math.prod(value.shape) == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if finite and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


DEFAULT_THREADS = 1


def seed_everything(seed: int = DEFAULT_SEED) -> None:
    """Seed Python's, NumPy's and PyTorch's random number generators with ``seed`` plus the
    shift of :mod:`longdep.seeds` (0 unless ``LONGDEP_SEED_SHIFT`` is set)."""
    seed = shifted(int(seed) if isinstance(seed, np.integer) else seed)
    if seed > 2**32 - 1:
        raise ValueError(f"seed must be at most 2**32 - 1 (NumPy's range), got {seed}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def reproducible(seed: int = DEFAULT_SEED, threads: int = DEFAULT_THREADS) -> None:
    """Seed every generator and fix the thread count.

    A fixed thread count matters as much as the seed: a parallel reduction adds its partial sums
    in an order that depends on how many threads share the work, and so does its round-off. The
    default is one thread: the book's models are small, and a second thread only adds
    synchronisation.

    Deterministic algorithms are required, but without filling uninitialised memory with NaN
    (``torch.utils.deterministic.fill_uninitialized_memory``): that guards only against code
    that reads memory before writing it and changes no result, while the LSTM kernel allocates
    work space at every step.
    """
    check.positive(threads=threads)
    seed_everything(seed)
    torch.set_num_threads(threads)
    use_deterministic_algorithms(True)
    # speed-up: no NaN filling of fresh memory, which changes no result and slows the fused LSTM;
    # delete when torch stops filling it by default under deterministic algorithms.
    torch.utils.deterministic.fill_uninitialized_memory = False


# speed-up: torch.use_deterministic_algorithms imports the compiler (torch._inductor, over a
# second per process) to set its copy of the flag; the book compiles nothing. Delete when that
# function no longer imports the compiler (README.md, "Speed patches").
def use_deterministic_algorithms(mode: bool) -> None:
    """``torch.use_deterministic_algorithms(mode)`` for eager code: it sets the same flag, but
    not the compiler's copy of it."""
    if not isinstance(mode, bool):
        raise TypeError(f"mode must be a bool, got {type(mode).__name__}")
    torch._C._set_deterministic_algorithms(mode)


def power_of_ten_above(value: float) -> float:
    """The smallest power of ten >= |value| (0 for 0): how the book prints round-off differences.

    Round-off differs in its last digits between processors; its order of magnitude does not, so
    a stored output written this way equals a fresh run on any machine.
    """
    value = abs(_real("value", value, finite=True))
    if value == 0.0:
        return 0.0
    return 10.0 ** math.ceil(math.log10(value))


def significant(value: float, digits: int) -> float:
    """``value`` rounded to ``digits`` significant digits, to be printed and glued.

    A measurement is stored with the digits it supports: nbval compares the stored output with a
    fresh run, and the last digits of a float differ between processors while its leading ones
    do not. 0, inf and nan are returned as they are.
    """
    check.int_range(1, 17, digits=digits)  # float64 holds 17 significant digits
    value = _real("value", value, finite=False)
    if value == 0 or not math.isfinite(value):
        return value
    return float(f"{value:.{digits - 1}e}")


GLUE_MAX_DIGITS = 7


def _check_gluable(name: str, value) -> None:
    """Refuse a float with more than :data:`GLUE_MAX_DIGITS` significant digits, more than any
    measurement of the book supports (see :func:`significant`); ints and strings pass."""
    if isinstance(value, bool) or not isinstance(value, float | np.floating):
        return
    value = float(value)
    if not math.isfinite(value) or float(f"{value:.{GLUE_MAX_DIGITS - 1}e}") == value:
        return
    raise ValueError(
        f"{name} = {value!r} would be stored at full float precision, whose last digits differ "
        f"between processors; glue significant(value, digits) or power_of_ten_above(value)"
    )


def chapter_glue(prefix: str) -> Callable[..., None]:
    """A function that glues each keyword argument ``name=value`` as ``<prefix>_<name>``.

    Every chapter glues through it (the prose shows ``{glue:text}`<prefix>_<name>```). A float is
    accepted only when it is short (rounded with :func:`significant` or exact); a full-precision
    float raises a ``ValueError`` naming it, because its stored digits would not survive a run on
    another processor. A :class:`Bilingual` value (a word or phrase the prose pastes) is glued
    twice: its English as ``<prefix>_<name>``, its Chinese as ``<prefix>_<name>_zh``, the key
    that the Chinese catalogs paste.
    """
    if not isinstance(prefix, str) or not prefix.isidentifier():
        raise ValueError(f"prefix must be an identifier such as 'ch2', got {prefix!r}")

    def glue_all(**values) -> None:
        for name, value in values.items():
            if isinstance(value, Bilingual):
                glue(f"{prefix}_{name}", value.en, display=False)
                glue(f"{prefix}_{name}_zh", value.zh, display=False)
                continue
            _check_gluable(f"{prefix}_{name}", value)
            glue(f"{prefix}_{name}", value, display=False)

    return glue_all


# ---- what a cell shows, in both languages ---------------------------------------------------

# The book's languages: the name longdep uses (plots.style too) -> the HTML lang tag of its pages.
LANGUAGES = {"en": "en", "zh": "zh-CN"}


def _check_text(name: str, value) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__} {value!r}")


@dataclasses.dataclass(frozen=True)
class Bilingual:
    """A text in English and in Chinese (Chapter 1 onwards: what a cell prints, a table's cell,
    a glued word, a figure's label). As a cell's value it shows as one output (module docstring).
    """

    en: str
    zh: str

    def __post_init__(self):
        _check_text("en", self.en)
        _check_text("zh", self.zh)

    def _repr_html_(self) -> str:
        return _language_divs({language: f"<pre>{html.escape(text)}</pre>"
                              for language, text in self.by_language().items()})

    def __repr__(self) -> str:
        return _both_texts(self.by_language())

    def by_language(self) -> dict[str, str]:
        return {"en": self.en, "zh": self.zh}


def bilingual(value) -> Bilingual:
    """``value`` as a :class:`Bilingual`: a Bilingual or an (en, zh) pair of strings as it is; a
    string or a number, which reads the same in both languages, twice."""
    if isinstance(value, Bilingual):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        return Bilingual(*value)
    if isinstance(value, str | int | float | np.integer | np.floating) and not isinstance(
            value, bool):
        return Bilingual(str(value), str(value))
    raise TypeError(f"a bilingual text must be a str, a number, an (en, zh) pair or a "
                    f"Bilingual, got {type(value).__name__} {value!r}")


def _language_divs(parts: dict[str, str]) -> str:
    """One ``<div class="longdep-lang" lang=...>`` per language around its HTML ``parts``."""
    return "".join(f'<div class="longdep-lang" lang="{LANGUAGES[language]}">{part}</div>'
                   for language, part in parts.items())


def _both_texts(texts: dict[str, str]) -> str:
    """The plain text of a bilingual output: each language's text, a blank line between those
    of several lines."""
    separator = "\n\n" if any("\n" in text for text in texts.values()) else "\n"
    return separator.join(texts.values())


def show(*lines) -> None:
    """What a chapter cell shows instead of ``print``: the ``lines`` (each a :class:`Bilingual`,
    an (en, zh) pair, or a string or number the same in both languages) as one bilingual output.
    """
    if not lines:
        raise ValueError("show needs at least one line")
    lines = [bilingual(line) for line in lines]
    display(Bilingual("\n".join(line.en for line in lines), "\n".join(line.zh for line in lines)))


def _sequence(x, name: str = "rows") -> Sequence:
    """``x`` if it is a list or tuple, else a ``TypeError`` naming it."""
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"{name} must be a list or tuple, got {type(x).__name__}")
    return x


def _width(text: str) -> int:
    """The columns ``text`` takes in a monospaced font: a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


class Table:
    """A table that a notebook shows as HTML (rendered by the book) and as aligned text.

    A header or body cell is a string or number, the same in both languages, or a bilingual
    text (an (en, zh) pair or a :class:`Bilingual`). A table with a bilingual cell shows as one
    bilingual output, the whole table in each language; one without is shown once.
    """

    def __init__(self, header: Sequence, rows: Sequence[Sequence]):
        for name, cells in [("header", header), *((f"rows[{i}]", row)
                                                  for i, row in enumerate(_sequence(rows)))]:
            _sequence(cells, name)
        self.header = [bilingual(cell) for cell in header]
        self.rows = [[bilingual(cell) for cell in row] for row in rows]
        if not self.header:
            raise ValueError("header is empty: a table needs at least one column")
        wrong = [i for i, row in enumerate(self.rows) if len(row) != len(self.header)]
        if wrong:
            raise ValueError(f"every row needs one cell per column ({len(self.header)}): "
                             f"rows {wrong} have {[len(self.rows[i]) for i in wrong]}")

    def _languages(self) -> list[str]:
        """Both languages if any cell differs between them, else English alone."""
        cells = [*self.header, *(cell for row in self.rows for cell in row)]
        return ["en", "zh"] if any(cell.en != cell.zh for cell in cells) else ["en"]

    def _cells(self, language: str) -> tuple[list[str], list[list[str]]]:
        return ([getattr(cell, language) for cell in self.header],
                [[getattr(cell, language) for cell in row] for row in self.rows])

    def html(self, language: str = "en") -> str:
        """The table in ``language``, as an HTML table."""
        header, rows = self._cells(language)

        def cells(row: list[str], tag: str) -> str:
            return "".join(f"<{tag}>{html.escape(cell)}</{tag}>" for cell in row)

        body = "".join(f"<tr>{cells(row, 'td')}</tr>" for row in rows)
        return (f"<table><thead><tr>{cells(header, 'th')}</tr></thead>"
                f"<tbody>{body}</tbody></table>")

    def text(self, language: str = "en") -> str:
        """The table in ``language``, as aligned text."""
        header, rows = self._cells(language)
        widths = [max(_width(row[i]) for row in [header, *rows]) for i in range(len(header))]
        return "\n".join("  ".join(cell + " " * (w - _width(cell)) for cell, w in zip(row, widths))
                         .rstrip() for row in [header, *rows])

    def _repr_html_(self) -> str:
        languages = self._languages()
        if languages == ["en"]:
            return self.html("en")
        return _language_divs({language: self.html(language) for language in languages})

    def __repr__(self) -> str:
        return "\n\n".join(self.text(language) for language in self._languages())


class BilingualFigure:
    """A figure drawn in each language (longdep.plots.style.both_languages gives the drawings,
    {language: (PNG, alt text)}), shown as one bilingual output: each language's image with its
    own alt text; its plain text is both alt texts, which nbval compares (not the images)."""

    def __init__(self, drawings: dict):
        if not isinstance(drawings, dict) or set(drawings) != set(LANGUAGES):
            raise ValueError(f"drawings must map each of {list(LANGUAGES)} to (PNG, alt text), "
                             f"got {type(drawings).__name__} "
                             f"{list(drawings) if isinstance(drawings, dict) else drawings!r}")
        for language, drawing in drawings.items():
            if not (isinstance(drawing, tuple) and len(drawing) == 2
                    and isinstance(drawing[0], bytes) and isinstance(drawing[1], str)):
                raise TypeError(f"drawings[{language!r}] must be a pair (PNG bytes, alt text), "
                                f"got {type(drawing).__name__}")
        self.drawings = {language: drawings[language] for language in LANGUAGES}

    def _repr_html_(self) -> str:
        def image(png: bytes, alt: str) -> str:
            uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
            return f'<img src="{uri}" alt="{html.escape(alt)}">'

        return _language_divs({language: image(*drawing)
                              for language, drawing in self.drawings.items()})

    def __repr__(self) -> str:
        return _both_texts({language: alt for language, (_, alt) in self.drawings.items()})

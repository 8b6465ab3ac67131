"""What a chapter page needs besides its experiments: reproducibility, glued numbers, tables.

Every chapter starts with :func:`reproducible`, so that its stored outputs equal a fresh run on a
machine of the same kind (the notebooks are checked by nbval in strict mode).

Numbers reach the prose through :func:`chapter_glue` (myst-nb's ``glue`` under the chapter's
prefix), printed with the digits their measurement supports; :func:`power_of_ten_above` prints
round-off; :class:`Table` shows a small table as HTML on the page and as text under nbval.
"""

import html
import math
import random
from collections.abc import Callable, Sequence

import numpy as np
import torch
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
    another processor.
    """
    if not isinstance(prefix, str) or not prefix.isidentifier():
        raise ValueError(f"prefix must be an identifier such as 'ch2', got {prefix!r}")

    def glue_all(**values) -> None:
        for name, value in values.items():
            _check_gluable(f"{prefix}_{name}", value)
            glue(f"{prefix}_{name}", value, display=False)

    return glue_all


def _sequence(x, name: str = "rows") -> Sequence:
    """``x`` if it is a list or tuple, else a ``TypeError`` naming it."""
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"{name} must be a list or tuple, got {type(x).__name__}")
    return x


class Table:
    """A table that a notebook shows as HTML (rendered by the book) and as aligned text."""

    def __init__(self, header: Sequence[str], rows: Sequence[Sequence[str]]):
        for name, cells in [("header", header), *((f"rows[{i}]", row)
                                                  for i, row in enumerate(_sequence(rows)))]:
            _sequence(cells, name)
        self.header, self.rows = [str(cell) for cell in header], [list(map(str, row))
                                                                  for row in rows]
        if not self.header:
            raise ValueError("header is empty: a table needs at least one column")
        wrong = [i for i, row in enumerate(self.rows) if len(row) != len(self.header)]
        if wrong:
            raise ValueError(f"every row needs one cell per column ({len(self.header)}): "
                             f"rows {wrong} have {[len(self.rows[i]) for i in wrong]}")

    def _repr_html_(self) -> str:
        def cells(row: list[str], tag: str) -> str:
            return "".join(f"<{tag}>{html.escape(cell)}</{tag}>" for cell in row)

        body = "".join(f"<tr>{cells(row, 'td')}</tr>" for row in self.rows)
        return (f"<table><thead><tr>{cells(self.header, 'th')}</tr></thead>"
                f"<tbody>{body}</tbody></table>")

    def __repr__(self) -> str:
        widths = [max(len(row[i]) for row in [self.header, *self.rows])
                  for i in range(len(self.header))]
        return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                         for row in [self.header, *self.rows])

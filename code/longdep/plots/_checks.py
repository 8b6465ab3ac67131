"""Argument checks of the figure functions, one call each at entry.

The conventions are those of :mod:`longdep.models._checks` (a wrong type raises ``TypeError``, a
wrong value or shape ``ValueError``; the message names the argument, what it got and what it
expects, shapes written as in the docstrings). The plots may not import that module (they
import only plots, and never torch: pyproject.toml's contracts), so these are the checks for
what a plot takes: NumPy arrays, numbers and dictionaries of them.
"""

import math

import matplotlib as mpl
import numpy as np


def describe(x) -> str:
    """A short description of ``x`` for messages: an array's dtype and shape, else its type."""
    if isinstance(x, np.ndarray):
        dtype = str(x.dtype)
        return f"{'an' if dtype[0] in 'aeiou' else 'a'} {dtype} array of shape {x.shape}"
    return f"{type(x).__name__} {x!r}" if isinstance(x, (int, float, str)) else type(x).__name__


def check_array(x, name: str, dims: str, ndim: int | None, allow_inf: bool = False) -> None:
    """Raise unless ``x`` is a non-empty real array (a NumPy array, or a list or tuple of
    numbers) of ``ndim`` dimensions (any number for None; ``dims`` as the docstrings write
    them) without NaN, and without inf unless ``allow_inf``."""
    if not isinstance(x, (np.ndarray, list, tuple)):
        raise TypeError(f"{name} must be a NumPy array of shape {dims}, got {describe(x)}; "
                        "convert a tensor with .numpy()")
    x = np.asarray(x) if isinstance(x, np.ndarray) else np.array(x, dtype=object)
    if x.dtype == object:  # a list: numbers only, in a regular shape
        try:
            x = np.asarray(x.tolist(), dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a regular array of numbers of shape {dims}, got "
                            "a list of other things") from None
    if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)):
        raise TypeError(f"{name} must be a real array of shape {dims}, got {describe(x)}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must have shape {dims}, got {describe(x)}")
    if x.size == 0:
        raise ValueError(f"{name} is empty, {describe(x)}: {dims} needs every size >= 1")
    if np.isnan(x).any() or not (allow_inf or np.isfinite(x).all()):
        raise ValueError(f"{name} must hold {'no NaN' if allow_inf else 'finite numbers'}, "
                         f"got {np.isnan(x).sum()} NaN and {np.isinf(x).sum()} inf")


def check_length(x: np.ndarray, name: str, length: int, axis: int = 0) -> None:
    """Raise unless the array ``x`` has size ``length`` along ``axis``."""
    if np.shape(x)[axis] != length:
        raise ValueError(f"{name} must have {length} entries along axis {axis}, got "
                         f"{describe(np.asarray(x))}")


def check_number(name: str, value, positive: bool = False) -> None:
    """Raise unless ``value`` is a finite real number (greater than 0 if ``positive``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {describe(value)}")
    if not math.isfinite(value) or (positive and value <= 0):
        raise ValueError(f"{name} must be {'positive and ' if positive else ''}finite, got "
                         f"{value}")


def check_mapping(x, name: str, what: str) -> None:
    """Raise unless ``x`` is a non-empty dict; ``what`` says what it maps, for the message."""
    if not isinstance(x, dict):
        raise TypeError(f"{name} must be a dict mapping {what}, got {describe(x)}")
    if not x:
        raise ValueError(f"{name} is empty: it must map {what}, at least one entry")


def check_figure(fig) -> None:
    """Raise a ``TypeError`` unless ``fig`` is a matplotlib figure."""
    if not isinstance(fig, mpl.figure.Figure):
        raise TypeError(f"fig must be a matplotlib.figure.Figure, got {describe(fig)}")


def check_array_mapping(x, name: str, what: str, dims: str, ndim: int | None,
                        allow_inf: bool = False, most: int | None = None) -> None:
    """Raise unless ``x`` is a non-empty dict (of at most ``most`` entries) whose every value
    passes :func:`check_array`; the message names the entry as ``name[key]``."""
    check_mapping(x, name, what)
    if most is not None and len(x) > most:
        raise ValueError(f"{name} has {len(x)} entries, but the figure draws at most {most} "
                         "(one colour each)")
    for key, value in x.items():
        check_array(value, f"{name}[{key!r}]", dims, ndim, allow_inf)


def check_keys(x: dict, name: str, within: dict, within_name: str) -> None:
    """Raise a ``ValueError`` unless every key of ``x`` is a key of ``within``."""
    missing = [key for key in x if key not in within]
    if missing:
        raise ValueError(f"{name} has keys {missing} that {within_name} lacks: every entry of "
                         f"{name} needs one in {within_name}")


def check_array_pairs(x, name: str, parts: tuple[str, str], dims: str, most: int) -> None:
    """Raise unless ``x`` is a non-empty dict of at most ``most`` entries, each a pair of arrays
    named ``parts``, both of one shape ``dims`` (two dimensions), without NaN."""
    check_mapping(x, name, f"a label to ({', '.join(parts)})")
    if len(x) > most:
        raise ValueError(f"{name} has {len(x)} entries, but the figure draws at most {most} "
                         "(one colour each)")
    for label, pair in x.items():
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"{name}[{label!r}] must be a pair ({', '.join(parts)}), got "
                            f"{describe(pair)}")
        for part, values in zip(parts, pair):
            check_array(values, f"{name}[{label!r}] {part}", dims, 2, allow_inf=True)
        if np.shape(pair[0]) != np.shape(pair[1]):
            raise ValueError(f"{name}[{label!r}]: {parts[0]} {np.shape(pair[0])} and "
                             f"{parts[1]} {np.shape(pair[1])} must have one shape {dims}")


def check_curves(name: str, curves, length: int | None = None, dims: int = 1,
                 allow_empty: bool = False) -> None:
    """Raise unless ``curves`` is a dict (non-empty unless ``allow_empty``) of label -> array of
    ``dims`` dimensions, none of them empty, each of ``length`` entries along its last axis
    when given (the curves of the figures of Chapters 3, 4 and 6)."""
    if not isinstance(curves, dict):
        raise TypeError(f"{name} must be a dict of label -> array, got {describe(curves)}")
    if not curves and not allow_empty:
        raise ValueError(f"{name} must hold at least one curve, got an empty dict")
    for key, values in curves.items():
        shape = np.shape(values)
        if len(shape) != dims or (length is not None and shape[-1] != length) or 0 in shape:
            expected = f"{dims} dimension(s)" + (f", {length} along the last" if length else "")
            raise ValueError(f"{name}[{key!r}] must be a non-empty array of {expected}, "
                             f"got shape {shape}")


def check_profiles(name: str, profiles) -> None:
    """Raise unless ``profiles`` maps each depth L (an int) to L positive finite numbers (the
    gradient profiles of Chapter 5)."""
    if not isinstance(profiles, dict) or not profiles:
        raise TypeError(f"{name} must be a non-empty dict {{depth: (depth,) array}}, got "
                        f"{type(profiles).__name__}")
    for depth, values in profiles.items():
        values = np.asarray(values, dtype=float)
        if not isinstance(depth, (int, np.integer)) or values.shape != (depth,):
            raise ValueError(f"{name}[{depth!r}] must have shape ({depth},), "
                             f"got {values.shape}")
        if not (np.isfinite(values).all() and (values > 0).all()):
            raise ValueError(f"{name}[{depth!r}] must be positive and finite, "
                             f"got {values.tolist()}")


# The book's languages, English and simplified Chinese (longdep.book names them too).
LANGUAGES = ("en", "zh")


def check_language(language) -> None:
    """Raise unless ``language`` is one of the book's languages, "en" or "zh"."""
    if not isinstance(language, str):
        raise TypeError(f"language must be a str, 'en' or 'zh', got {describe(language)}")
    if language not in LANGUAGES:
        raise ValueError(f"language must be 'en' or 'zh', got {language!r}")


def check_words(**texts) -> None:
    """Raise a ``TypeError`` unless every keyword's value is a str (a figure's text)."""
    for name, text in texts.items():
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str (a figure's text), got {describe(text)}")

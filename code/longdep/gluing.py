"""Computed numbers into a chapter's prose, through myst-nb's ``glue`` (every chapter).

A chapter glues its numbers under names with the chapter's prefix (``ch2_gamma_tanh``) and
its prose shows them with ``{glue:text}`ch2_gamma_tanh:.2f```, so no number is ever typed.
"""

from collections.abc import Callable

from myst_nb import glue


def chapter_glue(prefix: str) -> Callable[..., None]:
    """A function that glues each keyword argument ``name=value`` as ``<prefix>_<name>``."""
    if not prefix.isidentifier():
        raise ValueError(f"prefix must be an identifier such as 'ch2', got {prefix!r}")

    def glue_all(**values) -> None:
        for name, value in values.items():
            glue(f"{prefix}_{name}", value, display=False)

    return glue_all

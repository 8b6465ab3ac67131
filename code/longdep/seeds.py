"""Every seed of the book passes through here, so that a whole chapter can run on other draws.

A claim the book makes about a model must not depend on which random numbers were drawn. To
check that, ``make test`` executes every chapter once more with the environment variable
``LONGDEP_SEED_SHIFT`` set (say to 1000): :func:`seeded_generator` and :func:`manual_seed` then
add it to every seed they are given, so every weight, batch and draw of the chapter changes, and
every assertion of the chapter must still hold. Unset, the shift is 0 and the stored outputs are
reproduced. Code of the book never calls ``torch.Generator().manual_seed`` or
``torch.manual_seed`` itself (tests/test_repro.py checks it).
"""

import os

import torch

SHIFT_VARIABLE = "LONGDEP_SEED_SHIFT"


def seed_shift() -> int:
    """The shift added to every seed: ``LONGDEP_SEED_SHIFT`` (an integer >= 0), else 0."""
    text = os.environ.get(SHIFT_VARIABLE, "").strip()
    if not text:
        return 0
    if not text.isdigit():
        raise ValueError(f"{SHIFT_VARIABLE} must be an integer >= 0, got {text!r}")
    return int(text)


def shifted(seed: int) -> int:
    """``seed`` plus :func:`seed_shift`; a ``TypeError`` or ``ValueError`` unless ``seed`` is
    an int >= 0 (a bool is no seed)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be at least 0, got {seed}")
    return seed + seed_shift()


def seeded_generator(seed: int) -> torch.Generator:
    """A new CPU ``torch.Generator`` seeded with :func:`shifted` ``(seed)``."""
    return torch.Generator().manual_seed(shifted(seed))


def manual_seed(seed: int) -> None:
    """Seed torch's global generator (the one ``nn.Module`` initialisations draw from) with
    :func:`shifted` ``(seed)``."""
    torch.manual_seed(shifted(seed))

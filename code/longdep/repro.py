"""Reproducibility: one call that fixes seeds, thread count and the default dtype.

Every chapter starts with :func:`reproducible`, so that its stored outputs equal a fresh run on a
machine of the same kind (the notebooks are checked by nbval in strict mode).
"""

import math
import random

import numpy as np
import torch

DEFAULT_SEED = 0
DEFAULT_THREADS = 1


def seed_everything(seed: int = DEFAULT_SEED) -> None:
    """Seed Python's, NumPy's and PyTorch's random number generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def reproducible(seed: int = DEFAULT_SEED, threads: int = DEFAULT_THREADS) -> None:
    """Seed every generator and fix the thread count.

    A fixed thread count matters as much as the seed: a parallel reduction adds its partial sums
    in an order that depends on how many threads share the work, and so does its round-off. The
    default is one thread: the book's models are small, and a second thread only adds
    synchronisation (on a loaded 2-core machine a chapter ran 5x slower with two).
    """
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    seed_everything(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)


def power_of_ten_above(value: float) -> float:
    """The smallest power of ten >= |value| (0 for 0): how the book prints round-off differences.

    Round-off differs in its last digits between processors; its order of magnitude does not, so
    a stored output written this way equals a fresh run on any machine.
    """
    value = abs(float(value))
    if value == 0.0:
        return 0.0
    return 10.0 ** math.ceil(math.log10(value))

"""longdep: the code behind "Transformer from 0 to 1 — long-range dependency".

One module per idea; each chapter of the book imports what it shows from here, and the tests
in ``tests/`` check the same code against PyTorch's own modules and against autograd.
"""

__version__ = "0.1.0"

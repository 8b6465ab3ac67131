"""longdep: the code behind "Transformer from 0 to 1 — long-range dependency".

The package is laid out by part (see the README): ``models`` (the sequence models, each equal
to its PyTorch twin), ``measure`` (gradients, reach, cost), ``tasks`` and ``train`` (synthetic
tasks and the one training loop), ``experiments`` (the chapters' experiment drivers), ``plots``
(the figures) and ``book`` (reproducibility, glue, tables). The tests in ``tests/`` check the
same code against PyTorch's own modules and against autograd.
"""

__version__ = "0.1.0"

"""Chapter 1's measurement of the Elman RNN's recurrent matrix at PyTorch's default
initialisation ("Seeing BPTT", "PyTorch's default initialisation").

``torch.nn.RNNCell``, and :class:`longdep.models.rnn.ElmanRNN` with it, draws every entry of
W_hh (n, n) from U(-1/sqrt(n), 1/sqrt(n)): independent entries of mean 0 and variance 1/(3n).
For such a matrix random-matrix theory predicts, as n grows, a spectral radius
sqrt(n * variance) = 1/sqrt(3) (circular law) and a largest singular value
2 sqrt(n * variance) = 2/sqrt(3) (the edge of the Marchenko-Pastur law): the same two numbers for
every hidden size.
"""

import math

import torch

from longdep.models import _checks as check
from longdep.models.rnn import ElmanRNN
from longdep.seeds import manual_seed

#: the large-n limits of rho(W_hh) and sigma_max(W_hh) for entries U(-1/sqrt(n), 1/sqrt(n))
DEFAULT_INIT_LIMITS = {"spectral_radius": 1 / math.sqrt(3), "sigma_max": 2 / math.sqrt(3)}


def default_recurrent_spectrum(
    seeds_per_size: dict[int, int] | None = None,
) -> dict[int, dict[str, list[float]]]:
    """rho(W_hh) and sigma_max(W_hh) of freshly initialised ``ElmanRNN(1, n)`` networks.

    ``seeds_per_size`` maps a hidden size n to a number of seeds k (default: 16 and 64 with 8
    seeds, 256 with 4, 512 with 2: the spread between seeds shrinks as n grows, the cost grows
    as n^3). The network for seed s = 0 .. k - 1 is built after ``torch.manual_seed(s)`` inside
    ``torch.random.fork_rng()``, so the caller's random stream is left untouched. Returns
    ``{n: {"spectral_radius": [one per seed], "sigma_max": [one per seed]}}``, computed in the
    weights' own float32: a chapter shows them to two or three digits (Chapter 1, "PyTorch's
    default initialisation").
    """
    if seeds_per_size is None:
        seeds_per_size = {16: 8, 64: 8, 256: 4, 512: 2}
    if not isinstance(seeds_per_size, dict) or not seeds_per_size:
        raise ValueError(f"seeds_per_size must be a non-empty dict hidden size -> seeds, got "
                         f"{check.describe(seeds_per_size)}")
    for n, seeds in seeds_per_size.items():
        check.positive(**{"hidden size": n, f"seeds_per_size[{n!r}]": seeds})
    spectra = {}
    for n, seeds in seeds_per_size.items():
        radii, norms = [], []
        for seed in range(seeds):
            with torch.random.fork_rng():
                manual_seed(seed)
                weight_hh = ElmanRNN(1, n).weight_hh.detach()  # (n, n), float32
            radii.append(torch.linalg.eigvals(weight_hh).abs().max().item())
            norms.append(torch.linalg.svdvals(weight_hh)[0].item())
        spectra[n] = {"spectral_radius": radii, "sigma_max": norms}
    return spectra

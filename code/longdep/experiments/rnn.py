"""Chapter 1's measurements of the Elman RNN at PyTorch's default initialisation ("Seeing BPTT",
"PyTorch's default initialisation", exercise "The double sum and truncation").

``torch.nn.RNNCell``, and :class:`longdep.models.rnn.ElmanRNN` with it, draws every entry of
W_hh (n, n) from U(-1/sqrt(n), 1/sqrt(n)): independent entries of mean 0 and variance 1/(3n).
For such a matrix random-matrix theory predicts, as n grows, a spectral radius
sqrt(n * variance) = 1/sqrt(3) (circular law) and a largest singular value
2 sqrt(n * variance) = 2/sqrt(3) (the edge of the Marchenko-Pastur law): the same two numbers for
every hidden size. At finite n the spectral radius sits above its limit and the largest singular
value below its own.

A figure shows one draw; what the chapter's prose reads is the median and the range over many
draws of the same set-up (:func:`bptt_at_initialisation`, :func:`default_recurrent_spectrum`).
"""

import math

import torch
from torch import nn

from longdep.measure.bptt import activation_derivative, bptt, readout_gradients
from longdep.models import _checks as check
from longdep.models.rnn import ElmanRNN
from longdep.seeds import manual_seed, seeded_generator

#: the large-n limits of rho(W_hh) and sigma_max(W_hh) for entries U(-1/sqrt(n), 1/sqrt(n))
DEFAULT_INIT_LIMITS = {"spectral_radius": 1 / math.sqrt(3), "sigma_max": 2 / math.sqrt(3)}

#: draws per hidden size of :func:`default_recurrent_spectrum`: many where a draw costs
#: microseconds and varies most, few where an eigendecomposition of (512, 512) costs 0.1 s
SPECTRUM_DRAWS = {16: 400, 32: 200, 128: 40, 512: 10}

#: Chapter 1's set-up ("BPTT by hand equals autograd"): ElmanRNN(4, 16) with a 5-class readout,
#: in float64, on 8 sequences of 40 steps of N(0, 1) inputs with uniformly drawn targets
BPTT_SETUP = {"input_size": 4, "hidden_size": 16, "classes": 5, "batch": 8, "steps": 40}


def default_recurrent_spectrum(
    seeds_per_size: dict[int, int] | None = None,
) -> dict[int, dict[str, list[float]]]:
    """rho(W_hh) and sigma_max(W_hh) of freshly initialised ``ElmanRNN(1, n)`` networks.

    ``seeds_per_size`` maps a hidden size n to a number of seeds k (default
    :data:`SPECTRUM_DRAWS`). The network for seed s = 0 .. k - 1 is built after
    :func:`longdep.seeds.manual_seed` ``(s)`` inside ``torch.random.fork_rng()``, so the caller's
    random stream is left untouched. Returns ``{n: {"spectral_radius": [one per seed],
    "sigma_max": [one per seed]}}``, computed in the weights' own float32: a chapter shows their
    medians to three digits (Chapter 1, "PyTorch's default initialisation").
    """
    if seeds_per_size is None:
        seeds_per_size = SPECTRUM_DRAWS
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


@torch.no_grad()
def loss_term_state_gradients(rnn: ElmanRNN, x: torch.Tensor,
                              output_grads: torch.Tensor) -> torch.Tensor:
    """dL_t/dh_k for every loss term L_t alone and every state h_k: (time t, batch, time k,
    hidden), zero for k > t (Chapter 1, "Seeing BPTT").

    One call of :func:`longdep.measure.bptt.bptt` on ``time`` copies of the batch, copy t keeping
    only the output gradient of step t: the norms over (batch, hidden) are
    :func:`longdep.measure.bptt.loss_to_step_gradients`, in one sweep instead of ``time``.
    x (batch, time, input), output_grads (batch, time, hidden) = dL_t/dh_t.
    """
    check.instance(rnn, "rnn", ElmanRNN)
    check.sequence(x, rnn.input_size, like=rnn.weight_ih)
    check.sequence(output_grads, rnn.hidden_size, "output_grads", like=x)
    batch, steps, hidden = output_grads.shape
    one_term = torch.eye(steps, dtype=x.dtype)[:, None, :, None] * output_grads  # (t, b, k, h)
    grads = bptt(rnn, x.repeat(steps, 1, 1), one_term.flatten(0, 1)).state_grads
    return grads.view(steps, batch, steps, hidden)


@torch.no_grad()
def double_sum_terms(rnn: ElmanRNN, x: torch.Tensor, output_grads: torch.Tensor,
                     per_term: torch.Tensor | None = None) -> torch.Tensor:
    """Term (t, k) of the double sum eq-bptt-sum, summed over the batch: (time t, time k, hidden,
    hidden), zero for k > t; their sum over t and k is dL/dW_hh (Chapter 1, exercise "The double
    sum and truncation"). Entry (i, j) of term (t, k) is (dL_t/dh_k)_i phi'(a_{k,i}) h_{k-1,j}.
    ``per_term``: :func:`loss_term_state_gradients` of the same arguments, if already computed."""
    if per_term is None:
        per_term = loss_term_state_gradients(rnn, x, output_grads)  # checks the arguments
    elif per_term.shape != (x.size(1), *output_grads.shape):
        raise ValueError(f"per_term must have shape (time, batch, time, hidden) = "
                         f"{(x.size(1), *output_grads.shape)}, got {tuple(per_term.shape)}")
    pre, states = rnn.pre_activations(x)
    slopes = activation_derivative(rnn, pre, states)  # (batch, time, hidden)
    previous = torch.cat([torch.zeros_like(states[:, :1]), states[:, :-1]], dim=1)
    return torch.einsum("tbki,bkj->tkij", slopes * per_term, previous)


def truncation_errors(terms: torch.Tensor, taus) -> dict[int, float]:
    """Relative error ||G_tau - G|| / ||G|| of the gradient G_tau that keeps only the terms with
    0 <= t - k <= tau of the double sum G = sum of ``terms`` (time, time, hidden, hidden), as
    :func:`double_sum_terms` returns them: truncated BPTT when every loss term is sent back at
    most tau steps (Chapter 1, exercise "The double sum and truncation")."""
    check.tensor(terms, "terms", "(time, time, hidden, hidden)", 4)
    if terms.dim() != 4 or terms.size(0) != terms.size(1) or terms.size(2) != terms.size(3):
        raise ValueError(f"terms must have shape (time, time, hidden, hidden), got "
                         f"{check.describe(terms)}")
    taus = check.ints("taus", taus, least=0)
    steps = terms.size(0)
    distance = torch.arange(steps)[:, None] - torch.arange(steps)[None, :]  # t - k
    full = terms.sum((0, 1))
    return {tau: ((terms[(distance >= 0) & (distance <= tau)].sum(0) - full).norm()
                  / full.norm()).item() for tau in taus}


def _draw(seed: int) -> tuple[ElmanRNN, torch.Tensor, torch.Tensor]:
    """Draw ``seed`` of :data:`BPTT_SETUP`: the network, the inputs and dL_t/dh_t."""
    setup = BPTT_SETUP
    with torch.random.fork_rng():
        manual_seed(seed)
        rnn = ElmanRNN(setup["input_size"], setup["hidden_size"]).double()
        readout = nn.Linear(setup["hidden_size"], setup["classes"]).double()
    generator = seeded_generator(seed)
    x = torch.randn(setup["batch"], setup["steps"], setup["input_size"], dtype=torch.float64,
                    generator=generator)
    targets = torch.randint(0, setup["classes"], (setup["batch"], setup["steps"]),
                            generator=generator)
    with torch.no_grad():
        states, _ = rnn(x)
    output_grads, _, _ = readout_gradients(states, readout.weight, readout.bias, targets)
    return rnn, x, output_grads


def bptt_at_initialisation(draws: int = 40, reach: int = 10,
                           taus=(0, 1, 2, 5, 10, 20)) -> dict[str, object]:
    """What Chapter 1 reads off its figure of BPTT ("Seeing BPTT"), over ``draws`` draws of
    :data:`BPTT_SETUP` (weights, inputs and targets; draw s seeded with s, the caller's random
    stream untouched).

    Returns lists with one value per draw: ``decay``, ||dL_T/dh_(T-reach)|| / ||dL_T/dh_T||
    for the last loss term; ``worst_row``, the largest ||dL_t/dh_(t-reach)|| / ||dL_t/dh_t||
    over the rows t >= reach; ``spectral_radius`` and ``sigma_max`` of W_hh; ``spread``, the
    smallest norm of a step's immediate term of dL/dW_hh after the first (which is zero, since
    h_0 = 0) over the largest; and ``truncation_error``, {tau: [one per draw]} from
    :func:`truncation_errors`.
    """
    check.positive(draws=draws, reach=reach)
    if reach >= BPTT_SETUP["steps"]:
        raise ValueError(f"reach must be below the {BPTT_SETUP['steps']} steps, got {reach}")
    taus = check.ints("taus", taus, least=0)
    keys = ("decay", "worst_row", "spectral_radius", "sigma_max", "spread")
    result = {key: [] for key in keys} | {"truncation_error": {tau: [] for tau in taus}}
    rows = torch.arange(reach, BPTT_SETUP["steps"])  # rows t with a state reach steps back
    for seed in range(draws):
        rnn, x, output_grads = _draw(seed)
        per_term = loss_term_state_gradients(rnn, x, output_grads)
        terms = double_sum_terms(rnn, x, output_grads, per_term)
        norms = per_term.norm(dim=(1, 3))  # (t, k), as loss_to_step_gradients
        ratios = norms[rows, rows - reach] / norms[rows, rows]
        step_terms = terms.sum(0).norm(dim=(1, 2))  # (k,)
        weight_hh = rnn.weight_hh.detach()
        values = (ratios[-1], ratios.max(), torch.linalg.eigvals(weight_hh).abs().max(),
                  torch.linalg.matrix_norm(weight_hh, ord=2),
                  step_terms[1:].min() / step_terms.max())
        for key, value in zip(keys, values):
            result[key].append(value.item())
        for tau, error in truncation_errors(terms, taus).items():
            result["truncation_error"][tau].append(error)
    return result

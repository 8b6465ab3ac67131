"""What the eigenvalues of a linear recurrence allow (Chapter 2, "What the eigenvalues allow").

For a diagonal linear recurrence h_t = a_t * h_(t-1) + b_t the Jacobian dh_T/dh_k is
diag(prod a), so the eigenvalues a decide both what reaches back and what can be computed:

- the sign. A channel whose transitions lie in (0, 1) never changes its sign, so it cannot count
  modulo 2; with transitions in (-1, 1) one channel computes parity at any length (Grazzi et al.
  2025). :func:`train_parity` trains :class:`~longdep.models.diagonal.DiagonalLinearRNN`
  classifiers of either range, batched over seeds, and :func:`parity_accuracies` tests them on
  strings far longer than those they trained on;
- the modulus. The LRU (Orvieto et al. 2023) places its eigenvalues on a ring near the unit
  circle and scales its input by gamma = sqrt(1 - |lambda|^2): its gradient over d steps is
  |lambda|^d exactly (:func:`lru_gradient_moduli`), and its state keeps the input's scale where,
  without gamma, it grows as 1 / sqrt(1 - |lambda|^2) (:func:`lru_state_scale`).
"""

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn

from longdep.models import _checks as check
from longdep.models.diagonal import DiagonalLinearRNN
from longdep.models.heads import LastStepClassifier
from longdep.models.lru import LRU
from longdep.optim import Adam
from longdep.seeds import manual_seed, seeded_generator
from longdep.tasks import parity_batch
from longdep.train import train_seeds


@dataclass(frozen=True)
class ParityBudget:
    """How Chapter 2 trains a parity classifier: ``steps`` Adam steps of learning rate ``lr``
    on batches of ``batch`` bit strings of ``length`` bits; a DiagonalLinearRNN of ``hidden``
    channels reading embeddings of width ``embedding_dim``, its transitions' pre-activations
    scaled by ``init_scale`` at initialisation so that most |a| start near 1."""

    steps: int = 40
    lr: float = 0.05
    batch: int = 32
    length: int = 20
    hidden: int = 16
    embedding_dim: int = 8
    init_scale: float = 3.0


PARITY_BUDGET = ParityBudget()
PARITY_TEST_SEED = 777  # the test strings' generator: no training seed of the chapter


def parity_classifier(transitions: str, seed: int = 0,
                      budget: ParityBudget = PARITY_BUDGET) -> LastStepClassifier:
    """A bit-string classifier: embeddings of the bits (batch, time) -> a DiagonalLinearRNN
    without drive, h_T = h0 * prod a(x_t), of ``transitions`` "positive" (a in (0, 1)) or
    "signed" (a in (-1, 1)) -> logits (batch, 2) = W h_T. The readout has no bias: it reads
    where h_T points, not how long it is, which shrinks as prod |a| with the length. The
    weights depend only on ``seed``; the transitions' pre-activations are scaled by
    ``budget.init_scale`` (Chapter 2, "What the eigenvalues allow")."""
    check.instance(budget, "budget", ParityBudget)
    check.int_range(0, None, seed=seed)
    manual_seed(seed)
    core = DiagonalLinearRNN(budget.embedding_dim, budget.hidden, transitions)
    model = LastStepClassifier(2, budget.embedding_dim, core, budget.hidden, 2)
    model.head = nn.Linear(budget.hidden, 2, bias=False)
    with torch.no_grad():  # |a| near the ends of its range, so the gradient reaches back
        core.linear_a.weight.mul_(budget.init_scale)
        core.linear_a.bias.mul_(budget.init_scale)
    return model


def token_transitions(model: LastStepClassifier) -> torch.Tensor:
    """The transitions a(x) of each bit, (2, hidden): row 0 for a 0, row 1 for a 1."""
    check.instance(model, "model", LastStepClassifier)
    check.instance(model.core, "model.core", DiagonalLinearRNN)
    with torch.no_grad():
        return model.core.transition_and_drive(model.embedding.weight)[0]


def train_parity(transitions: str, seeds: Sequence[int], budget: ParityBudget = PARITY_BUDGET,
                 steps: int | None = None) -> list[LastStepClassifier]:
    """One :func:`parity_classifier` per seed, trained by Adam on parity strings of
    ``budget.length`` bits for ``steps`` (default ``budget.steps``) steps, all seeds in one
    :func:`longdep.train.train_seeds` computation (Chapter 2, "What the eigenvalues allow").
    Returns the trained models."""
    check.instance(budget, "budget", ParityBudget)
    steps = budget.steps if steps is None else steps
    check.positive(steps=steps)
    models = [parity_classifier(transitions, seed, budget) for seed in seeds]
    train_seeds(models, lambda generator: parity_batch(budget.batch, budget.length, generator),
                steps, list(seeds), optimizer=Adam, lr=budget.lr, eval_batches=0)
    return models


@torch.no_grad()
def parity_logits(model: LastStepClassifier, bits: torch.Tensor) -> torch.Tensor:
    """The model's logits for bits (batch, time), (batch, 2), computed in float64 from the
    counts of zeros and ones (Chapter 2, "What the eigenvalues allow"). A transition depends on
    the current bit only, and the recurrence has no drive, so h_T = h0 * a(0)^n0 * a(1)^n1
    (elementwise, n0 and n1 the counts): the order of the bits does not matter, and a string of
    any length costs one power. This equals the model's own forward pass (tested, and asserted
    in the chapter), without its time loop."""
    a = token_transitions(model)  # (2, hidden); checks the model
    check.tokens(bits, 2, "bits")
    if a.dtype != torch.float64:
        model = copy.deepcopy(model).double()
        a = token_transitions(model)
    ones = bits.sum(dim=1, keepdim=True).double()  # (batch, 1)
    zeros = bits.size(1) - ones
    h_last = model.core.h0 * a[0] ** zeros * a[1] ** ones  # (batch, hidden)
    return h_last @ model.head.weight.T


@torch.no_grad()
def parity_accuracies(models: Sequence[LastStepClassifier], lengths: Sequence[int],
                      batch: int = 256, seed: int = PARITY_TEST_SEED) -> torch.Tensor:
    """The fraction of ``batch`` fresh random bit strings of each length whose parity each model
    gets right (the argmax of :func:`parity_logits`), (models, lengths) (Chapter 2, "What the
    eigenvalues allow"). Every model sees the same strings."""
    if not isinstance(models, (list, tuple)) or not models:
        raise TypeError(f"models must be a non-empty list of parity classifiers, got "
                        f"{check.describe(models)}")
    lengths = check.ints("lengths", lengths)
    check.positive(batch=batch)
    generator = seeded_generator(seed)
    tests = [parity_batch(batch, length, generator) for length in lengths]
    models = [copy.deepcopy(model).double() for model in models]
    return torch.tensor([[(parity_logits(model, bits).argmax(-1) == targets).double().mean()
                          for bits, targets in tests] for model in models], dtype=torch.float64)


def check_lru(model) -> None:
    """Raise unless ``model`` is a float64 :class:`~longdep.models.lru.LRU` reading one
    feature (d_model = 1)."""
    check.instance(model, "model", LRU)
    if model.d_model != 1 or model.D.dtype != torch.float64:
        raise ValueError(f"model must be a float64 LRU with d_model = 1, got d_model = "
                         f"{model.d_model}, {model.D.dtype}")


class Moduli(NamedTuple):
    """Measured and predicted values per distance or per channel of an LRU (Chapter 2)."""

    measured: torch.Tensor
    predicted: torch.Tensor


def lru_gradient_moduli(model: LRU, steps: int, seed: int = 0) -> Moduli:
    """|dL/dh_(T-d)| of every channel for L = sum Re h_T, d = 0 .. steps - 1, measured by
    autograd through ``model.step`` on a random input, and |lambda|^d, what the chapter says it
    is: both (steps, N) (Chapter 2, "What the eigenvalues allow")."""
    check_lru(model)
    check.positive(steps=steps)
    x = torch.randn(1, steps, 1, dtype=torch.float64, generator=seeded_generator(seed))
    h, states = None, []
    with torch.enable_grad():
        for x_t in x.unbind(1):
            _, h = model.step(x_t, h)
            states.append(h)
        grads = torch.autograd.grad(states[-1].real.sum(), states)
    measured = torch.stack([g[0].abs() for g in reversed(grads)])  # row d: distance d
    modulus = model.log_eigenvalues().real.exp().detach()  # |lambda|, (N,)
    distance = torch.arange(steps, dtype=torch.float64)[:, None]
    return Moduli(measured, modulus**distance)


@torch.no_grad()
def lru_state_scale(model: LRU, steps: int = 256, batch: int = 128, seed: int = 0,
                    normalised: bool = True) -> Moduli:
    """The root mean square of every channel of h_T over ``batch`` white-noise inputs x_t
    ~ N(0, 1), relative to that of its drive B x_t (|B_i|), measured by the model's own forward
    pass, and predicted, gamma sqrt((1 - |lambda|^(2T)) / (1 - |lambda|^2)) (the sum of the
    geometric series): both (N,) (Chapter 2, "What the eigenvalues allow"). ``normalised=False``
    runs a copy of the model with gamma = 1, the recurrence without the LRU's normalisation."""
    check_lru(model)
    check.positive(steps=steps, batch=batch)
    check.flags(normalised=normalised)
    if not normalised:
        model = copy.deepcopy(model)
        model.gamma_log.zero_()
    x = torch.randn(batch, steps, 1, dtype=torch.float64, generator=seeded_generator(seed))
    _, last = model(x)  # (batch, N)
    drive = torch.complex(model.B_re, model.B_im).abs()[:, 0]  # |B_i|, (N,)
    measured = last.abs().pow(2).mean(0).sqrt() / drive
    squared = model.log_eigenvalues().real.mul(2).exp()  # |lambda|^2
    predicted = model.gamma_log.exp() * ((1 - squared**steps) / (1 - squared)).sqrt()
    return Moduli(measured, predicted)

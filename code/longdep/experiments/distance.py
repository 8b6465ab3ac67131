"""Gradient against distance at initialisation, over many draws (Chapter 4, "Gradient versus
distance" and "A forget gate inside attention").

The probe is :func:`longdep.measure.gradients.distance_profile`: the norm of dL/dx_k for every
position k, with L a random projection of the last output. Every number the chapter reads is a
median and a range over ``seeds`` draws of the weights and the input (:func:`longdep.stats.spread`):

- :func:`distance_profiles`: a small causal Transformer (Post-LN, sinusoidal encoding), a tanh
  RNN and an LSTM with forget-gate bias 0 at one length, and the Transformer at several lengths
  (each position's share of the gradient falls like 1/T: dilution);
- :func:`gate_profiles`: one layer of softmax attention with the forgetting transformer's forget
  gate (Lin, Nikishin, He & Courville 2025) held constant, f = e^(-m). Its bias is then ALiBi's,
  -m (i - j) (Press, Smith & Lewis 2022; :func:`alibi_differences` checks it), and the gradient
  at distance d falls like f^d, as an LSTM cell state's with a constant forget gate f.
"""

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from longdep.experiments.workers import over_cores
from longdep.measure.gradients import distance_profile
from longdep.models import _checks as check
from longdep.models.forgetting import (
    ForgettingAttention,
    alibi_bias,
    alibi_slopes,
    forget_gate_bias,
)
from longdep.models.lstm import LSTM
from longdep.models.rnn import ElmanRNN
from longdep.models.transformer import EncoderStack
from longdep.seeds import manual_seed, seeded_generator

SEEDS = tuple(range(10))
"""The draws of every measurement of this module: ten, the book's least for a median."""

MODELS = ("causal Transformer", "tanh RNN", "LSTM, forget bias 0")
"""The models of :func:`distance_profiles`, in the order the chapter draws them."""


def chapter_model(name: str, width: int, heads: int, layers: int, max_len: int) -> nn.Module:
    """A float64 model of :data:`MODELS` reading and writing ``width`` features, drawn from
    torch's global generator: the causal Transformer has ``layers`` Post-LN layers of ``heads``
    heads, d_ff = 2 width and a sinusoidal table of ``max_len`` rows, and returns the last
    position only (``last_only``: all that the probe reads, at a fraction of the cost)."""
    check.choice(name=(name, MODELS))
    if name == "tanh RNN":
        return ElmanRNN(width, width).double()
    if name == "LSTM, forget bias 0":
        return LSTM(width, width).double()
    return EncoderStack(width, num_heads=heads, num_layers=layers, d_ff=2 * width,
                        max_len=max_len, causal=True, last_only=True).double()


def _seed_profiles(seed: int, width: int, length: int, heads: int, layers: int,
                  lengths: tuple[int, ...]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """One draw of :func:`distance_profiles`: the models built after seeding torch with
    ``seed``, the inputs drawn with it (so the models of one draw read the same input)."""
    manual_seed(seed)
    models = [chapter_model(name, width, heads, layers, max(lengths)) for name in MODELS]
    profiles = [distance_profile(model, length, width, seed=seed).numpy() for model in models]
    dilution = [distance_profile(models[0], steps, width, batch=1, seed=seed).numpy()
                for steps in lengths]
    return profiles, dilution


def distance_profiles(seeds: Sequence[int] = SEEDS, width: int = 32, length: int = 200,
                      heads: int = 4, layers: int = 2, lengths: Sequence[int] = (50, 200, 800)
                      ) -> tuple[dict[str, np.ndarray], dict[int, np.ndarray]]:
    """||dL/dx_k|| at initialisation, float64, for every seed (Chapter 4, "Gradient versus
    distance"): ({model of :data:`MODELS`: (seeds, length) array}, {T of ``lengths``: (seeds, T)
    array of the causal Transformer}); entry k of a row is at distance (row length) - 1 - k.

    The draws run side by side, one per core (:func:`longdep.experiments.workers.over_cores`).
    """
    seeds = check.ints("seeds", seeds, least=0)
    lengths = tuple(check.ints("lengths", lengths, least=2))
    check.positive(width=width, heads=heads, layers=layers)
    check.int_range(2, None, length=length)
    runs = over_cores(_seed_profiles, [(seed, width, length, heads, layers, lengths)
                                      for seed in seeds])
    rows = list(runs.values())
    profiles = {name: np.stack([row[0][i] for row in rows]) for i, name in enumerate(MODELS)}
    dilution = {steps: np.stack([row[1][i] for row in rows]) for i, steps in enumerate(lengths)}
    return profiles, dilution


# ---- a forget gate inside attention ---------------------------------------------------------

GATES = (1.0, 0.99, 0.97, 0.9)
"""The constant forget gates f of :func:`gate_profiles`; f = 1 is plain causal softmax."""


def _gates(gates) -> list[float]:
    """``gates`` as a list of floats, each a forget gate in (0, 1]; else a clear error."""
    if not isinstance(gates, (list, tuple)) or not gates:
        raise TypeError(f"gates must be a non-empty list of forget gates, got "
                        f"{check.describe(gates)}")
    check.finite(**{f"gates[{i}]": f for i, f in enumerate(gates)})
    if not all(0 < f <= 1 for f in gates):
        raise ValueError(f"gates must be forget gates in (0, 1], got {list(gates)}")
    return [float(f) for f in gates]


def constant_gate_attention(d_model: int, num_heads: int, gates: Sequence[float]
                            ) -> ForgettingAttention:
    """A float64 :class:`~longdep.models.forgetting.ForgettingAttention` whose forget gate is
    ``gates[h]`` for head h at every position, whatever the input: the gate's weights are zero
    and its bias is logit(f) (+inf for f = 1). The projections are drawn from torch's global
    generator."""
    check.positive(d_model=d_model, num_heads=num_heads)
    gates = _gates(gates)
    if len(gates) != num_heads:
        raise ValueError(f"gates must hold num_heads = {num_heads} gates in (0, 1], got {gates}")
    layer = ForgettingAttention(d_model, num_heads).double()
    with torch.no_grad():
        layer.forget_proj.weight.zero_()
        slopes = torch.tensor([-math.log(f) for f in gates], dtype=torch.float64)
        layer.forget_proj.bias.copy_(-torch.log(torch.expm1(slopes)))  # logit(e^-m)
    return layer


def alibi_attention(layer: ForgettingAttention, x: torch.Tensor, slopes: torch.Tensor
                    ) -> torch.Tensor:
    """ALiBi attention with the projections of ``layer``, computed by torch's own
    :func:`torch.nn.functional.scaled_dot_product_attention` with ALiBi's bias as its float
    ``attn_mask``: x (batch, time, d_model) -> (batch, time, d_model); slopes (heads,)."""
    check.instance(layer, "layer", ForgettingAttention)
    check.sequence(x, layer.d_model, like=layer.q_proj.weight)
    q, k, v = layer.project(x, x, x)  # each (batch, heads, time, d_k)
    bias = alibi_bias(x.size(1), slopes)  # (heads, time, time), -inf above the diagonal
    heads = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    return layer.out_proj(heads.transpose(1, 2).flatten(2))


@torch.no_grad()
def alibi_differences(seeds: Sequence[int] = SEEDS, d_model: int = 32, steps: int = 64
                      ) -> dict[str, float]:
    """How far the forgetting transformer with a constant gate f_h = e^(-m_h) is from ALiBi with
    slopes m_h (Chapter 4, "A forget gate inside attention"), the largest over ``seeds``:

    - "bias, 8 heads": max |D - ALiBi| of the biases (8, steps, steps), log f = -m given, with
      ALiBi's slopes for 8 heads, the powers of two 1/2 .. 1/256 (every sum exact: 0);
    - "bias, 6 heads": the same with 6 heads, whose slopes are not powers of two (round-off);
    - "layer, 8 heads": max |FoX - ALiBi| of the outputs (2, steps, d_model) of a
      :func:`constant_gate_attention` and of :func:`alibi_attention` with its projections, on
      N(0, 1) inputs, the gate given as the logit of e^(-m) (round-off).
    """
    seeds = check.ints("seeds", seeds, least=0)
    check.positive(d_model=d_model)
    check.int_range(2, None, steps=steps)
    worst = {"bias, 8 heads": 0.0, "bias, 6 heads": 0.0, "layer, 8 heads": 0.0}
    for heads in (8, 6):
        slopes = alibi_slopes(heads)
        log_f = (-slopes)[:, None].expand(heads, steps)
        gap = forget_gate_bias(log_f) - alibi_bias(steps, slopes)
        worst[f"bias, {heads} heads"] = gap.nan_to_num(0.0).abs().max().item()  # -inf - -inf
    slopes = alibi_slopes(8)
    for seed in seeds:
        manual_seed(seed)
        layer = constant_gate_attention(d_model, 8, torch.exp(-slopes).tolist())
        x = torch.randn(2, steps, d_model, dtype=torch.float64, generator=seeded_generator(seed))
        gap = (layer(x)[0] - alibi_attention(layer, x, slopes)).abs().max().item()
        worst["layer, 8 heads"] = max(worst["layer, 8 heads"], gap)
    return worst


def _seed_gate_profiles(seed: int, gates: tuple[float, ...], d_model: int, num_heads: int,
                       steps: int) -> list[np.ndarray]:
    """One draw of :func:`gate_profiles`: every gate's layer has the same projections and
    reads the same input."""
    profiles = []
    for gate in gates:
        manual_seed(seed)
        layer = constant_gate_attention(d_model, num_heads, [gate] * num_heads)
        profiles.append(distance_profile(lambda x, layer=layer: layer(x)[0], steps, d_model,
                                         seed=seed).numpy())
    return profiles


def gate_profiles(gates: Sequence[float] = GATES, seeds: Sequence[int] = SEEDS,
                  d_model: int = 32, num_heads: int = 4, steps: int = 200
                  ) -> dict[float, np.ndarray]:
    """{f: (seeds, steps) array} of ||dL/dx_k|| at initialisation for one causal
    :func:`constant_gate_attention` layer with the forget gate f in every head, float64
    (Chapter 4, "A forget gate inside attention"); entry k is at distance steps - 1 - k."""
    gates = tuple(_gates(gates))
    seeds = check.ints("seeds", seeds, least=0)
    check.positive(d_model=d_model, num_heads=num_heads)
    check.int_range(2, None, steps=steps)
    runs = over_cores(_seed_gate_profiles, [(seed, gates, d_model, num_heads, steps)
                                            for seed in seeds])
    rows = list(runs.values())
    return {gate: np.stack([row[i] for row in rows]) for i, gate in enumerate(gates)}

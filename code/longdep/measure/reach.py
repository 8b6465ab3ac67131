"""How far information travels through a stack of layers (Chapters 4 and 6).

The path length of a stack is the fewest layers after which the last output depends on the
first input. :func:`first_dependent_layer` finds it through the derivative: forward-mode
differentiation carries a perturbation of x_0 alone, and an output's tangent is exactly zero
until a path reaches it, so the answer is exact, not a threshold. A recurrent layer is one layer
whose state crosses the sequence one step at a time; :func:`sweep_outputs` evaluates it in
parallel sweeps over positions, one sweep per step, which is the path length Table 1 of Vaswani
et al. (2017) counts for it.

Arguments are checked as in :mod:`longdep.models._checks` (``TypeError`` for a wrong type,
``ValueError`` naming the argument for a wrong value or shape).
"""

from collections.abc import Callable, Iterator

import torch
from torch import nn
from torch.autograd import forward_ad
from torch.utils._pytree import tree_map

from longdep.models import _checks as check
from longdep.models.attention import MultiHeadAttention
from longdep.models.lstm import LSTM
from longdep.seeds import manual_seed


def first_dependent_layer(outputs: Callable[[torch.Tensor], Iterator[torch.Tensor]],
                          steps: int, features: int, seed: int = 0) -> int | None:
    """The number of the first output of ``outputs(x)`` whose last position depends on x_0.

    ``outputs`` maps an input (1, steps, features) to the outputs of a stack after 1, 2, ...
    layers. x is random (float64, seeded) and carries a forward-mode tangent along a random
    direction of x_0 alone, so an output's tangent at the last position is exactly zero until
    a path from the first input reaches it. Returns None if no output does. The global random
    state is left as it was.
    """
    check.callables(outputs=outputs)
    check.positive(steps=steps, features=features)
    check.int_range(0, None, seed=seed)
    with torch.random.fork_rng(devices=[]), forward_ad.dual_level(), torch.no_grad():
        manual_seed(seed)
        x = torch.randn(1, steps, features, dtype=torch.float64)
        direction = torch.zeros_like(x)
        direction[:, 0] = torch.randn(features, dtype=torch.float64)
        for layers, y in enumerate(outputs(forward_ad.make_dual(x, direction)), 1):
            if forward_ad.unpack_dual(y).tangent[:, -1].abs().max() > 0:
                return layers
    return None


def sweep_outputs(model: nn.Module, x: torch.Tensor, max_sweeps: int) -> Iterator[torch.Tensor]:
    """Outputs (batch, time, hidden) after 1, 2, ... parallel sweeps of a recurrent ``model``.

    Sweep l updates every position at once from the previous sweep's states,
    s^(l)_t = step(x_t, s^(l-1)_{t-1}), with s^(0) = 0 (Chapter 4's convention for a recurrent
    layer): after l sweeps the states of the first l positions are exact. ``model`` has
    ``step(x_t, state)``, like :class:`longdep.models.rnn.ElmanRNN` and
    :class:`longdep.models.lstm.LSTM`.
    """
    check.instance(model, "model", "step", "input_size", "hidden_size")
    check.sequence(x, model.input_size)
    check.positive(max_sweeps=max_sweeps)
    batch, steps, _ = x.shape
    zeros = x.new_zeros(batch, steps, model.hidden_size)
    state = (zeros, zeros) if isinstance(model, LSTM) else zeros
    for _ in range(max_sweeps):
        previous = tree_map(lambda s: nn.functional.pad(s, (0, 0, 1, 0))[:, :-1], state)
        flat = model.step(x.reshape(batch * steps, -1),
                          tree_map(lambda s: s.reshape(batch * steps, -1), previous))
        state = tree_map(lambda s: s.reshape(batch, steps, -1), flat)
        yield check.first_output(state)


def masked_path_length(mask: torch.Tensor, features: int = 4, seed: int = 0) -> int:
    """The fewest layers of self-attention restricted by ``mask`` (time, time) after which the
    last output depends on the first input (Chapter 6, "Sparse attention").

    Measured through the derivative as in Chapter 4
    (:func:`longdep.experiments.attention.fewest_layers`): forward-mode differentiation carries a
    random perturbation of x_0 through random one-head attention layers (float64) until the last
    output's derivative is not exactly zero. A blocked link has an attention weight of exactly
    zero, so the count is exact. Raises a ``ValueError`` if ``time`` layers never get there (no
    path at all).
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"mask must be a boolean (time, time) tensor, got {type(mask).__name__} "
                        f"{getattr(mask, 'dtype', '')}")
    if mask.dim() != 2 or mask.size(0) != mask.size(1) or mask.numel() == 0:
        raise ValueError(f"mask must be a boolean (time, time) matrix, got shape "
                         f"{tuple(mask.shape)}")
    check.positive(features=features)
    steps = mask.size(0)

    def attention_layers(h: torch.Tensor):
        for _ in range(steps):
            h = MultiHeadAttention(features, num_heads=1).double()(h, h, h, mask)[0]
            yield h

    layers = first_dependent_layer(attention_layers, steps, features, seed)
    if layers is not None:
        return layers
    raise ValueError("the mask has no path from the first input to the last output")

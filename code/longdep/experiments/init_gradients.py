"""Chapter 5's Post-LN and Pre-LN stacks at initialisation ("Post-LN and Pre-LN at
initialisation"; cf. Xiong et al. 2020, Theorem 1 and figure 3).

For causal next-token models of several depths, freshly initialised, :func:`gradient_draws`
measures the norm of the loss gradient with respect to each layer's second feed-forward matrix
W_2, and the root mean square of the residual stream that leaves the last layer (in Pre-LN, what
the final LayerNorm divides by), once per draw of the weights. The draws of one depth are
computed at once, as one model with a leading draw dimension (``torch.func.vmap``), which
equals computing them one after another to round-off. A page reads these numbers as medians
and ranges over the draws (:mod:`longdep.stats`), never from one draw.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from longdep.experiments.workers import over_cores
from longdep.models import _checks as check
from longdep.models.attention import causal_mask
from longdep.models.transformer import NextTokenModel, next_token_model
from longdep.seeds import manual_seed, seeded_generator


def logits_and_stream(model: NextTokenModel, tokens: Tensor) -> tuple[Tensor, Tensor]:
    """The logits (batch, time, vocab) of a causal ``model`` made by
    :func:`longdep.models.transformer.next_token_model`, and the root mean square of its
    residual stream after the last layer (a 0-d tensor): the input of the final LayerNorm in
    Pre-LN, the last layer's normalised output in Post-LN."""
    check.instance(model, "model", NextTokenModel)
    check.tokens(tokens, model.encoder.vocab_size)
    encoder, stack = model.encoder, model.encoder.stack
    h = stack.positional_encoding(encoder.embedding(tokens) * math.sqrt(encoder.d_model))
    mask = causal_mask(tokens.size(1))
    for layer in stack.layers:
        h = layer(h, mask)  # (batch, time, d_model)
    return model.head(stack.final_norm(h)), h.pow(2).mean().sqrt()


class LogitsAndStream(nn.Module):
    """:func:`logits_and_stream` as a module's forward, so that ``functional_call`` can run it
    with the parameters of another draw."""

    def __init__(self, model: NextTokenModel):
        super().__init__()
        self.model = model

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        return logits_and_stream(self.model, tokens)


@dataclass
class Draws:
    """The measurements of :func:`gradient_draws` at one depth: ``norms`` (draws, depth), the
    gradient norm of each layer's W_2, layer 1 first; ``stream`` (draws,), the root mean
    square of the residual stream after the last layer."""

    norms: np.ndarray
    stream: np.ndarray


def gradient_draws(depth: int, norm_first: bool, seeds: Sequence[int] = tuple(range(10)),
                   vocab_size: int = 100, d_model: int = 64, num_heads: int = 4,
                   d_ff: int = 256, batch_size: int = 8, length: int = 16,
                   glorot: bool = False) -> Draws:
    """||dL/dW_2|| of every layer and the stream's root mean square in causal models of
    ``depth`` layers freshly initialised with each seed of ``seeds`` (Chapter 5, "Post-LN and
    Pre-LN at initialisation"), L the mean next-token cross-entropy on uniform random tokens and
    targets (batch_size, length), the same for every draw. With ``glorot``, every weight matrix
    of the encoder layers is drawn from Glorot (Xavier) uniform, Xiong et al.'s setting,
    instead of the default of ``nn.Linear``, which is smaller. All draws are computed at once."""
    check.positive(depth=depth, vocab_size=vocab_size, d_model=d_model, num_heads=num_heads,
                   d_ff=d_ff, batch_size=batch_size, length=length)
    check.flags(norm_first=norm_first, glorot=glorot)
    seeds = check.ints("seeds", seeds, least=0)
    tokens, targets = torch.randint(0, vocab_size, (2, batch_size, length),
                                    generator=seeded_generator(0))
    models = []
    for seed in seeds:
        manual_seed(seed)
        model = next_token_model(vocab_size, d_model, num_heads, depth, d_ff, length,
                                 dropout=0.0, norm_first=norm_first, causal=True)
        if glorot:
            for parameter in model.encoder.stack.layers.parameters():
                if parameter.dim() > 1:
                    nn.init.xavier_uniform_(parameter)
        models.append(LogitsAndStream(model))
    params, buffers = stack_module_state(models)  # each (draws, ...)
    base = models[0]

    def loss_and_stream(p, b):
        logits, stream = functional_call(base, (p, b), (tokens,))
        return nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()), stream

    losses, stream = vmap(loss_and_stream)(params, buffers)  # (draws,), (draws,)
    names = [f"model.encoder.stack.layers.{i}.linear2.weight" for i in range(depth)]
    grads = torch.autograd.grad(losses.sum(), [params[name] for name in names])  # draw by draw
    norms = torch.stack([grad.flatten(1).norm(dim=1) for grad in grads], dim=1)
    return Draws(norms.detach().numpy(), stream.detach().numpy())


INITIALISATIONS = {"PyTorch default": False, "Glorot": True}
"""The initialisations of Chapter 5's gradient profiles: name -> the ``glorot`` flag of
:func:`gradient_draws`."""


def gradient_profiles(depths: Sequence[int], seeds: Sequence[int] = tuple(range(10)),
                      d_model: int = 64) -> dict[str, tuple[dict[int, Draws], dict[int, Draws]]]:
    """:func:`gradient_draws` of every depth for every initialisation of
    :data:`INITIALISATIONS`, Post-LN and Pre-LN (Chapter 5, "Post-LN and Pre-LN at
    initialisation"), feed-forward width 4 d_model, the (depth, initialisation, order) side by
    side on the cores, the deepest first (the same numbers, bit for bit, sooner). Returns
    {initialisation: (Post-LN, Pre-LN)}, each {depth: :class:`Draws`}."""
    depths = check.ints("depths", depths)
    seeds = tuple(check.ints("seeds", seeds, least=0))
    points = [(depth, norm_first, seeds, d_model, glorot) for depth in depths
              for glorot in INITIALISATIONS.values() for norm_first in (False, True)]
    runs = over_cores(profile_point, points, cost=lambda point: point[0])
    return {name: tuple({depth: runs[depth, norm_first, seeds, d_model, glorot]
                         for depth in depths} for norm_first in (False, True))
            for name, glorot in INITIALISATIONS.items()}


def profile_point(depth: int, norm_first: bool, seeds: tuple[int, ...], d_model: int,
                  glorot: bool) -> Draws:
    """:func:`gradient_draws` with these arguments and a feed-forward width of four times
    ``d_model``, as in the original Transformer (one run of :func:`gradient_profiles`)."""
    return gradient_draws(depth, norm_first, seeds, d_model=d_model, d_ff=4 * d_model,
                          glorot=glorot)

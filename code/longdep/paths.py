"""Paths from input to output: Vaswani et al. (2017), Table 1, measured (Chapter 4).

Table 1 of "Attention is all you need" compares layer types by the *maximum path length*
between an input position and an output position, and by the cost of one layer. Here both are
measured instead of quoted:

- :func:`fewest_layers` stacks layers of one kind and finds, through the derivative, the fewest
  layers after which the last output depends on the first input (dy_last/dx_0 != 0 exactly);
- :func:`layer_flops` counts the floating-point operations of one layer with
  :class:`torch.utils.flop_counter.FlopCounterMode`;
- :func:`distance_profile` measures how much gradient the last output sends to each earlier
  position;
- :func:`skip_path_only`, :func:`layer_input_gradients` and :func:`stack_jacobian` follow the
  gradient through a stack of Transformer encoder layers, to compare the residual paths of
  Post-LN and Pre-LN.

Every mixing layer is causal, so "the last output depends on the first input" is the longest
path a layer stack has to bridge. A recurrent layer is one layer, but its state crosses the
sequence one step at a time: computed in parallel over positions (all positions updated at once
from the previous sweep's states), it needs one sweep per step, which is the path length the
table counts for it.
"""

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import nn
from torch.autograd import forward_ad
from torch.utils.flop_counter import FlopCounterMode

from longdep.attention import MultiHeadAttention, causal_mask
from longdep.probes import input_gradient_norms
from longdep.rnn import ElmanRNN, check_sequence
from longdep.transformer import EncoderLayer

MIXERS = ("self-attention", "recurrent", "convolution", "dilated convolution",
          "windowed attention")

# The "maximum path length" column of Vaswani et al. (2017), Table 1: n is the sequence length,
# k the kernel size, r the size of the attention window.
TABLE_1_PATH_LENGTH = {
    "self-attention": "O(1)",
    "recurrent": "O(n)",
    "convolution": "O(n/k)",
    "dilated convolution": "O(log_k n)",
    "windowed attention": "O(n/r)",
}


def window_mask(steps: int, window: int | None = None, device=None) -> torch.Tensor:
    """Causal mask (steps, steps), True = may attend; with ``window``, query t sees only the
    ``window`` positions t - window + 1 .. t (restricted self-attention)."""
    mask = causal_mask(steps, device)
    return mask if window is None else mask.triu(-(window - 1))


class CausalSelfAttention(nn.Module):
    """One causal self-attention layer, optionally restricted to a window (Chapter 4, "Path
    length: Table 1, measured"); (batch, time, features) -> (batch, time, features), one head."""

    def __init__(self, features: int, window: int | None = None):
        super().__init__()
        self.attention = MultiHeadAttention(features, num_heads=1)
        self.window = window

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = window_mask(x.size(1), self.window, x.device)
        return self.attention(x, x, x, mask)[0]


class CausalConvolution(nn.Module):
    """One causal 1-d convolution (Chapter 4, "Path length: Table 1, measured").

    Output t sees inputs t, t - dilation, ..., t - (kernel_size - 1) dilation;
    (batch, time, features) -> same shape.
    """

    def __init__(self, features: int, kernel_size: int, dilation: int = 1):
        super().__init__()
        self.conv = nn.Conv1d(features, features, kernel_size, dilation=dilation)
        self.left_padding = (kernel_size - 1) * dilation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        padded = nn.functional.pad(x.transpose(1, 2), (self.left_padding, 0))
        return self.conv(padded).transpose(1, 2)


def check_mixer(kind: str, kernel_size: int, window: int) -> None:
    """Raise a clear ``ValueError`` for an unknown layer kind, kernel size or window."""
    if kind not in MIXERS:
        raise ValueError(f"kind must be one of {MIXERS}, got {kind!r}")
    if kernel_size < 2:
        raise ValueError(f"kernel_size must be at least 2, got {kernel_size}")
    if window < 2:
        raise ValueError(f"window must be at least 2, got {window}")


def make_layer(kind: str, features: int, index: int = 0, kernel_size: int = 3,
               window: int = 8) -> nn.Module:
    """Layer number ``index`` (from 0) of a stack of ``kind``; dilations double per layer."""
    check_mixer(kind, kernel_size, window)
    if kind == "recurrent":
        return ElmanRNN(features, features)
    if kind in ("convolution", "dilated convolution"):
        dilation = 2**index if kind == "dilated convolution" else 1
        return CausalConvolution(features, kernel_size, dilation)
    return CausalSelfAttention(features, window if kind == "windowed attention" else None)


def layer_outputs(kind: str, x: torch.Tensor, max_layers: int, kernel_size: int = 3,
                  window: int = 8) -> Iterator[torch.Tensor]:
    """Yield the outputs (batch, time, features) after 1, 2, ..., max_layers layers of ``kind``.

    For "recurrent", layer l is the l-th parallel sweep of one Elman layer,
    h^(l)_t = tanh(W_ih x_t + W_hh h^(l-1)_{t-1} + b) with h^(0) = 0, which equals the RNN's
    state h_t for every t < l: after ``time`` sweeps it is the whole RNN output.
    """
    if kind == "recurrent":
        rnn = make_layer(kind, x.size(-1)).to(x.dtype)
        h = torch.zeros_like(x)
        for _ in range(max_layers):
            h = rnn.step(x, nn.functional.pad(h, (0, 0, 1, 0))[:, :-1])  # h_{t-1}, zero at t=0
            yield h
        return
    h = x
    for index in range(max_layers):
        h = make_layer(kind, x.size(-1), index, kernel_size, window).to(x.dtype)(h)
        yield h


def fewest_layers(kind: str, steps: int, features: int = 4, kernel_size: int = 3,
                  window: int = 8, seed: int = 0) -> int:
    """The fewest layers of ``kind`` after which output ``steps - 1`` depends on input 0.

    Measured through the derivative: random layers (float64) are stacked one at a time until
    dy_last/dx_0 is not exactly zero. Forward-mode differentiation carries the derivative along
    a random direction of x_0 with every layer's output, so one pass through the stack gives it
    after each layer. A blocked attention weight, a padded convolution tap and a state not yet
    reached all contribute an exact zero, so the answer is the receptive field of the stack, not
    a threshold. The global random state is left as it was.
    """
    check_mixer(kind, kernel_size, window)
    if steps < 2 or features < 1:
        raise ValueError(f"steps must be at least 2 and features positive, got {steps}, "
                         f"{features}")
    layers = first_dependent_layer(
        lambda dual: layer_outputs(kind, dual, steps, kernel_size, window), steps, features, seed)
    if layers is None:
        raise AssertionError(f"{steps} layers of {kind} always reach the first input")
    return layers


def first_dependent_layer(outputs: Callable[[torch.Tensor], Iterator[torch.Tensor]],
                          steps: int, features: int, seed: int = 0) -> int | None:
    """The number of the first output of ``outputs(x)`` whose last position depends on x_0.

    ``outputs`` maps an input (1, steps, features) to the outputs of a stack after 1, 2, ...
    layers. x is random (float64, seeded) and carries a forward-mode tangent along a random
    direction of x_0 alone, so an output's tangent at the last position is exactly zero until
    a path from the first input reaches it. Returns None if no output does. The global random
    state is left as it was.
    """
    with torch.random.fork_rng(devices=[]), forward_ad.dual_level(), torch.no_grad():
        torch.manual_seed(seed)
        x = torch.randn(1, steps, features, dtype=torch.float64)
        direction = torch.zeros_like(x)
        direction[:, 0] = torch.randn(features, dtype=torch.float64)
        for layers, y in enumerate(outputs(forward_ad.make_dual(x, direction)), 1):
            if forward_ad.unpack_dual(y).tangent[:, -1].abs().max() > 0:
                return layers
    return None


def predicted_layers(kind: str, steps: int, kernel_size: int = 3, window: int = 8) -> int:
    """What :func:`fewest_layers` must find, from each layer's reach into the past.

    A causal convolution reaches k - 1 steps back per layer, a window of r positions r - 1
    steps, dilated convolutions with dilations 1, 2, 4, ... reach (k - 1)(2^L - 1) steps after L
    layers, and the recurrence one step per sweep (its state needs ``steps`` sweeps).
    """
    check_mixer(kind, kernel_size, window)
    span = steps - 1
    if kind == "self-attention":
        return 1
    if kind == "recurrent":
        return steps
    if kind == "convolution":
        return math.ceil(span / (kernel_size - 1))
    if kind == "windowed attention":
        return math.ceil(span / (window - 1))
    layers = 1
    while (kernel_size - 1) * (2**layers - 1) < span:
        layers += 1
    return layers


def layer_flops(kind: str, steps: int, features: int, kernel_size: int = 3,
                window: int = 8) -> int:
    """Floating-point operations of one forward pass of one layer on a (1, steps, features) input.

    Counted by :class:`torch.utils.flop_counter.FlopCounterMode` (2 per multiply-add, matrix
    products and convolutions only) on the "meta" device, so no memory is used however long the
    sequence. The attention layer includes its four projections: 8 n d^2 + 4 n^2 d. A windowed
    attention computed with a mask costs the same as full attention.
    """
    layer = make_layer(kind, features, 0, kernel_size, window).to("meta")
    x = torch.empty(1, steps, features, device="meta")
    with FlopCounterMode(display=False) as counter:
        layer(x)
    return counter.get_total_flops()


def predicted_flops(kind: str, steps: int, features: int, kernel_size: int = 3) -> int:
    """The counts :func:`layer_flops` must find: n = steps, d = features, k = kernel_size."""
    check_mixer(kind, kernel_size, window=2)
    n, d = steps, features
    if kind in ("self-attention", "windowed attention"):
        return 8 * n * d**2 + 4 * n**2 * d
    if kind == "recurrent":
        return 4 * n * d**2
    return 2 * kernel_size * n * d**2


def readout_loss(direction: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """The probe loss L = sum over the batch of direction . y_last (Chapter 4, "Gradient versus
    distance").

    A fixed random direction instead of :func:`longdep.probes.last_output_sum`: the sum of a
    LayerNorm's output over its features is a constant (the sum of its bias), so its gradient
    through a Post-LN layer is exactly zero.
    """
    return lambda outputs: (outputs[:, -1] @ direction).sum()


def encoder_layers(depth: int, d_model: int, num_heads: int, d_ff: int, norm_first: bool,
                   glorot: bool = False, seed: int = 0) -> nn.ModuleList:
    """``depth`` float64 :class:`~longdep.transformer.EncoderLayer` s without dropout, for
    :func:`layer_input_gradients` (Chapter 4, "Residual connections and layer normalisation").

    With ``glorot``, every weight matrix is drawn from Glorot (Xavier) uniform instead of
    PyTorch's default for :class:`torch.nn.Linear`, which is smaller by a factor of about sqrt(3)
    for square matrices; the residual branches then start larger. The global random state is
    left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first=norm_first)
                               for _ in range(depth))
        if glorot:
            for parameter in layers.parameters():
                if parameter.dim() > 1:
                    nn.init.xavier_uniform_(parameter)
    return layers.double()


@contextmanager
def skip_path_only(layers: Sequence[nn.Module]):
    """Within the block, the residual branches of these encoder layers pass no gradient.

    Forward hooks detach the outputs of each layer's ``self_attn`` and ``linear2`` (the last
    operation of its feed-forward branch), so the values are unchanged and a backward pass
    follows only the skip connections, with the LayerNorms on them (Chapter 4, "Residual
    connections and layer normalisation"). The hooks are removed on exit.
    """
    handles = []
    for layer in layers:
        handles.append(layer.self_attn.register_forward_hook(
            lambda module, inputs, output: (output[0].detach(), *output[1:])))
        handles.append(layer.linear2.register_forward_hook(
            lambda module, inputs, output: output.detach()))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def layer_input_gradients(layers: Sequence[nn.Module], x: torch.Tensor,
                          direction: torch.Tensor) -> torch.Tensor:
    """Norm of dL/dh_l for the input h_l of every layer and for the output, one backward pass.

    ``layers`` map (batch, time, d_model) to the same shape (e.g.
    :class:`longdep.transformer.EncoderLayer`), h_0 = x and h_{l+1} = layers[l](h_l); the loss is
    L = direction . (last position of h_L). Returns a (len(layers) + 1,) tensor; entry l is the
    norm over batch, time and features, and the gradient reaching h_l has crossed
    len(layers) - l layers.
    """
    check_sequence(x, direction.numel())
    states = [x.detach().requires_grad_()]
    for layer in layers:
        states.append(layer(states[-1]))
    grads = torch.autograd.grad(readout_loss(direction)(states[-1]), states)
    return torch.stack([grad.norm() for grad in grads])


def stack_jacobian(layers: Sequence[nn.Module], x: torch.Tensor) -> torch.Tensor:
    """The Jacobian d(output)/dx of the stack of ``layers`` at x (1, time, d_model), flattened to
    a (time d_model, time d_model) matrix (Chapter 4, "Residual connections and layer
    normalisation")."""
    if x.dim() != 3 or x.size(0) != 1:
        raise ValueError(f"x must have shape (1, time, d_model), got {tuple(x.shape)}")

    def stack(h: torch.Tensor) -> torch.Tensor:
        for layer in layers:
            h = layer(h)
        return h.flatten()

    return torch.autograd.functional.jacobian(stack, x).reshape(x.numel(), x.numel())


def distance_profile(model: nn.Module, steps: int, features: int, batch: int = 2,
                     seed: int = 0) -> torch.Tensor:
    """Norm of dL/dx_k for every position k of a random float64 input (Chapter 4, "Gradient
    versus distance").

    ``model`` maps (batch, time, features) to outputs of the same shape (or a tuple starting with
    them, as the recurrent layers return); L = u . y_last summed over the batch for a random unit
    direction u (:func:`readout_loss`). Input and direction come from a generator seeded with
    ``seed``: models compared at one length see the same input, and inputs of different lengths
    share their last positions, so the last query is the same. Returns a (steps,) tensor;
    entry k is at distance steps - 1 - k from the last position.
    """
    generator = torch.Generator().manual_seed(seed)
    direction = torch.randn(features, dtype=torch.float64, generator=generator)
    # Drawn from the last position backwards: sequences of any length end with the same inputs.
    x = torch.randn(steps, batch, features, dtype=torch.float64, generator=generator)
    x = x.flip(0).transpose(0, 1)
    return input_gradient_norms(model, x, readout_loss(direction / direction.norm()))

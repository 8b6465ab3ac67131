"""Table 1 measured: path lengths through the derivative, FLOP counts, residual paths."""

import pytest
import torch
from longdep.experiments.attention import (
    TABLE_1_LAYERS,
    check_layer_kind,
    encoder_layers,
    fewest_layers,
    layer_flops,
    layer_outputs,
    predicted_layers,
)
from longdep.measure.gradients import distance_profile, last_output_sum, readout_loss
from longdep.measure.layers import layer_input_gradients, skip_path_only, stack_jacobian
from longdep.models.conv import CausalConvolution
from longdep.models.rnn import ElmanRNN
from torch import nn

# Forward-mode differentiation loads decompositions that PyTorch 2.13 still compiles with the
# deprecated torch.jit.script; the warning is about PyTorch internals, not this code.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning")


@pytest.mark.parametrize("kind", TABLE_1_LAYERS)
@pytest.mark.parametrize("steps", [2, 7, 16, 33])
def test_fewest_layers_is_the_receptive_field(kind, steps):
    assert fewest_layers(kind, steps) == predicted_layers(kind, steps)


@pytest.mark.parametrize("kernel_size, window", [(2, 3), (4, 5)])
def test_fewest_layers_follows_kernel_and_window(kernel_size, window):
    for kind in ("convolution", "dilated convolution", "windowed attention"):
        assert fewest_layers(kind, 40, kernel_size=kernel_size, window=window) == (
            predicted_layers(kind, 40, kernel_size, window))


def test_predicted_layers_known_values():
    assert [predicted_layers(kind, 64) for kind in TABLE_1_LAYERS] == [1, 64, 32, 6, 9]


@pytest.mark.parametrize("kind", TABLE_1_LAYERS)
def test_reverse_mode_gradient_agrees(kind):
    """One layer fewer than fewest_layers gives an exactly zero dy_last/dx_0 by backpropagation,
    the count itself a nonzero one."""
    steps = 9
    layers = fewest_layers(kind, steps)
    torch.manual_seed(5)
    x = torch.randn(1, steps, 4, dtype=torch.float64, requires_grad=True)
    outputs = list(layer_outputs(kind, x, layers))
    grads = [torch.autograd.grad(y[:, -1].sum(), x, retain_graph=True)[0][:, 0] for y in outputs]
    assert grads[-1].abs().max() > 0
    if layers > 1:
        assert torch.equal(grads[-2], torch.zeros_like(grads[-2]))


def test_recurrent_sweeps_equal_the_elman_rnn():
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    torch.manual_seed(1)
    rnn = ElmanRNN(3, 3).double()
    torch.manual_seed(1)
    sweeps = list(layer_outputs("recurrent", x, 6))
    states, _ = rnn(x)
    for count, h in enumerate(sweeps, 1):  # sweep l has the RNN's states 0 .. l - 1
        torch.testing.assert_close(h[:, :count], states[:, :count], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dilation", [1, 3])
def test_causal_convolution_formula(dilation):
    layer = CausalConvolution(3, kernel_size=3, dilation=dilation).double()
    x = torch.randn(2, 10, 3, dtype=torch.float64)
    y = layer(x)
    weight, bias = layer.conv.weight, layer.conv.bias  # weight (out, in, kernel)
    for t in range(10):
        expected = bias.clone()
        for j in range(3):  # tap j reads x_{t - (2 - j) dilation}
            source = t - (2 - j) * dilation
            if source >= 0:
                expected = expected + x[:, source] @ weight[:, :, j].T
        torch.testing.assert_close(y[:, t], expected)



@pytest.mark.parametrize("kind", TABLE_1_LAYERS)
@pytest.mark.parametrize("steps, features", [(5, 8), (12, 4)])
def test_layer_flops_counted(kind, steps, features):
    assert layer_flops(kind, steps, features) == predicted_flops(kind, steps, features)


def test_fewest_layers_leaves_the_global_random_state_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    fewest_layers("convolution", 6)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("arguments, message", [
    (dict(kind="lstm", steps=4), "kind must be one of"),
    (dict(kind="convolution", steps=4, kernel_size=1), "kernel_size"),
    (dict(kind="windowed attention", steps=4, window=1), "window"),
    (dict(kind="self-attention", steps=1), "steps must be at least 2"),
    (dict(kind="self-attention", steps=4, features=0), "features must be at least 1"),
])
def test_fewest_layers_errors(arguments, message):
    with pytest.raises(ValueError, match=message):
        fewest_layers(**arguments)


def test_readout_loss_sees_through_layer_norm():
    x = torch.randn(2, 5, 6, dtype=torch.float64, requires_grad=True)
    norm = nn.LayerNorm(6).double()
    (summed,) = torch.autograd.grad(last_output_sum(norm(x)), x)
    assert summed.abs().max() < 1e-12  # the sum of a LayerNorm's output is a constant
    direction = torch.randn(6, dtype=torch.float64)
    (projected,) = torch.autograd.grad(readout_loss(direction)(norm(x)), x)
    assert projected[:, -1].abs().max() > 1e-3


def test_distance_profile_of_the_identity():
    """Only the last position reaches the loss, with the norm of a unit direction per sequence."""
    profile = distance_profile(nn.Identity(), steps=5, features=3, batch=4)
    expected = torch.tensor([0, 0, 0, 0, 2.0], dtype=torch.float64)
    torch.testing.assert_close(profile, expected)
    torch.testing.assert_close(distance_profile(nn.Identity(), 5, 3, batch=4), profile)


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_input_gradients_match_autograd(norm_first):
    layers = encoder_layers(3, 8, 2, 16, norm_first)
    x = torch.randn(2, 4, 8, dtype=torch.float64, requires_grad=True)
    direction = torch.randn(8, dtype=torch.float64)
    norms = layer_input_gradients(layers, x, direction)
    h = x
    for layer in layers:
        h = layer(h)
    (grad,) = torch.autograd.grad(readout_loss(direction)(h), x)
    assert norms.shape == (4,)
    torch.testing.assert_close(norms[0], grad.norm())
    torch.testing.assert_close(norms[-1], direction.norm() * 2**0.5)  # two sequences


def test_pre_ln_skip_path_is_the_identity():
    layers = encoder_layers(4, 8, 2, 16, norm_first=True, glorot=True)
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    with skip_path_only(layers):
        jacobian = stack_jacobian(layers, x)
    assert torch.equal(jacobian, torch.eye(24, dtype=torch.float64))
    assert not torch.allclose(stack_jacobian(layers, x), jacobian)  # the hooks are gone


def test_post_ln_skip_path_is_the_product_of_layer_norm_jacobians():
    (layer,) = encoder_layers(1, 8, 2, 16, norm_first=False)
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    with torch.no_grad():
        inner = x + layer.self_attn(x, x, x)[0]
        middle = layer.norm1(inner)
        outer = middle + layer.feed_forward_block(middle)
    first = torch.autograd.functional.jacobian(layer.norm1, inner).reshape(24, 24)
    second = torch.autograd.functional.jacobian(layer.norm2, outer).reshape(24, 24)
    with skip_path_only([layer]):
        jacobian = stack_jacobian([layer], x)
    torch.testing.assert_close(jacobian, second @ first)


def test_stack_jacobian_of_linear_layers():
    first, second = nn.Linear(3, 3, bias=False).double(), nn.Linear(3, 3, bias=False).double()
    x = torch.randn(1, 2, 3, dtype=torch.float64)
    expected = torch.block_diag(*[second.weight @ first.weight] * 2)
    torch.testing.assert_close(stack_jacobian([first, second], x), expected)
    with pytest.raises(ValueError, match="shape"):
        stack_jacobian([first], torch.randn(2, 2, 3, dtype=torch.float64))


def test_encoder_layers_glorot_and_determinism():
    default = encoder_layers(2, 16, 2, 32, norm_first=False)
    glorot = encoder_layers(2, 16, 2, 32, norm_first=False, glorot=True)
    assert default[0].linear1.weight.dtype == torch.float64
    def spread(layers):
        return layers[0].self_attn.out_proj.weight.std()

    assert spread(glorot) > 1.5 * spread(default)
    again = encoder_layers(2, 16, 2, 32, norm_first=False)
    assert torch.equal(again[1].linear2.weight, default[1].linear2.weight)


def test_flop_functions_reject_unknown_kinds():
    for function in (layer_flops, predicted_flops):
        with pytest.raises(ValueError, match="kind must be one of"):
            function("lstm", 8, 4)


def predicted_flops(kind: str, steps: int, features: int, kernel_size: int = 3) -> int:
    """The counts :func:`layer_flops` must find: n = steps, d = features, k = kernel_size."""
    check_layer_kind(kind, kernel_size, window=2)
    n, d = steps, features
    if kind in ("self-attention", "windowed attention"):
        return 8 * n * d**2 + 4 * n**2 * d
    if kind == "recurrent":
        return 4 * n * d**2
    return 2 * kernel_size * n * d**2

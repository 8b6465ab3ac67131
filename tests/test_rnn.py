"""ElmanRNN equals torch.nn.RNN; hand-written BPTT equals autograd."""

import pytest
import torch
from longdep.book import seed_everything
from longdep.measure.bptt import bptt, loss_to_step_gradients, readout_gradients
from longdep.models.rnn import ElmanRNN
from torch import nn

TOLERANCE = {torch.float32: dict(rtol=1e-5, atol=1e-6), torch.float64: dict(rtol=1e-12, atol=1e-13)}


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("with_h0", [False, True])
def test_equals_torch_rnn(nonlinearity, dtype, with_h0):
    seed_everything(1)
    reference = nn.RNN(5, 7, nonlinearity=nonlinearity, batch_first=True).to(dtype)
    model = ElmanRNN.from_torch(reference)
    x = torch.randn(3, 11, 5, dtype=dtype)
    h0 = torch.randn(3, 7, dtype=dtype) if with_h0 else None
    outputs, h_last = model(x, h0)
    expected_outputs, expected_last = reference(x, None if h0 is None else h0[None])
    assert outputs.dtype == dtype
    torch.testing.assert_close(outputs, expected_outputs, **TOLERANCE[dtype])
    torch.testing.assert_close(h_last, expected_last[0], **TOLERANCE[dtype])


def test_parameters_mirror_rnn_cell():
    model, cell = ElmanRNN(4, 6), nn.RNNCell(4, 6)
    assert {n: p.shape for n, p in model.named_parameters()} == {
        n: p.shape for n, p in cell.named_parameters()
    }


def test_from_torch_copies_instead_of_sharing():
    reference = nn.RNN(2, 3, batch_first=True)
    model = ElmanRNN.from_torch(reference)
    with torch.no_grad():
        reference.weight_hh_l0.zero_()
    assert model.weight_hh.abs().sum() > 0


def autograd_loss(model, readout, x, targets, h0=None):
    states, _ = model(x, h0)
    logits = readout(states)
    return nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu", "identity"])
@pytest.mark.parametrize("with_h0", [False, True])
def test_bptt_by_hand_equals_autograd(nonlinearity, with_h0):
    seed_everything(2)
    model = ElmanRNN(3, 8, nonlinearity).double()
    readout = nn.Linear(8, 4).double()
    x = torch.randn(2, 15, 3, dtype=torch.float64)
    targets = torch.randint(0, 4, (2, 15))
    h0 = torch.randn(2, 8, dtype=torch.float64) if with_h0 else None
    autograd_loss(model, readout, x, targets, h0).backward()

    with torch.no_grad():
        states, _ = model(x, h0)
    output_grads, grad_w_hy, grad_b_y = readout_gradients(
        states, readout.weight, readout.bias, targets
    )
    by_hand = bptt(model, x, output_grads, h0)
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        torch.testing.assert_close(getattr(by_hand, name), getattr(model, name).grad,
                                   rtol=1e-12, atol=1e-13)
    torch.testing.assert_close(grad_w_hy, readout.weight.grad, rtol=1e-12, atol=1e-13)
    torch.testing.assert_close(grad_b_y, readout.bias.grad, rtol=1e-12, atol=1e-13)
    torch.testing.assert_close(by_hand.weight_hh_terms.sum(0), by_hand.weight_hh)


def total_state_gradient_by_autograd(model, x, output_grads, k):
    """dL/dh_k with L = sum_t <g_t, h_t>: restart the network at step k from a leaf h_k."""
    states, _ = model(x)
    h_k = states[:, k].detach().requires_grad_()
    later, _ = model(x[:, k + 1 :], h_k) if k + 1 < x.size(1) else (None, None)
    loss = (h_k * output_grads[:, k]).sum()
    if later is not None:
        loss = loss + (later * output_grads[:, k + 1 :]).sum()
    return torch.autograd.grad(loss, h_k)[0]


def test_state_gradients_equal_autograd():
    seed_everything(3)
    model = ElmanRNN(2, 5).double()
    x = torch.randn(4, 9, 2, dtype=torch.float64)
    output_grads = torch.randn(4, 9, 5, dtype=torch.float64)
    by_hand = bptt(model, x, output_grads).state_grads
    for k in range(9):
        expected = total_state_gradient_by_autograd(model, x, output_grads, k)
        torch.testing.assert_close(by_hand[:, k], expected, rtol=1e-12, atol=1e-13)


def test_loss_to_step_is_lower_triangular_and_matches_autograd():
    seed_everything(4)
    model = ElmanRNN(2, 6).double()
    x = torch.randn(1, 8, 2, dtype=torch.float64)
    output_grads = torch.randn(1, 8, 6, dtype=torch.float64)
    norms = loss_to_step_gradients(model, x, output_grads)
    assert torch.all(torch.triu(norms, diagonal=1) == 0)
    t = 6
    only_t = torch.zeros_like(output_grads)
    only_t[:, t] = output_grads[:, t]
    for k in range(t + 1):
        expected = total_state_gradient_by_autograd(model, x, only_t, k).norm()
        torch.testing.assert_close(norms[t, k], expected, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize(
    "shape, message",
    [((4, 5), "x must have shape \\(batch, time, 5\\), got a float32 tensor of shape \\(4, 5\\)"),
     ((2, 4, 3), "x must have shape \\(batch, time, 5\\), got .* shape \\(2, 4, 3\\)")],
)
def test_bad_input_raises(shape, message):
    with pytest.raises(ValueError, match=message):
        ElmanRNN(5, 7)(torch.randn(*shape))


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="nonlinearity"):
        ElmanRNN(2, 3, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="h0 must have shape"):
        ElmanRNN(2, 3)(torch.randn(4, 5, 2), torch.randn(3))
    model = ElmanRNN(2, 3)
    with pytest.raises(ValueError, match="output_grads"):
        bptt(model, torch.randn(4, 5, 2), torch.randn(4, 5, 2))
    with pytest.raises(ValueError, match="targets"):
        readout_gradients(torch.randn(2, 3, 4), torch.randn(5, 4), torch.randn(5),
                          torch.zeros(3, 2, dtype=torch.long))


def test_identity_nonlinearity_is_the_linear_recurrence():
    seed_everything(5)
    model = ElmanRNN(3, 4, nonlinearity="identity").double()
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    h0 = torch.randn(2, 4, dtype=torch.float64)
    outputs, h_last = model(x, h0)
    h = h0
    for t in range(6):
        h = x[:, t] @ model.weight_ih.T + model.bias_ih + h @ model.weight_hh.T + model.bias_hh
        torch.testing.assert_close(outputs[:, t], h, rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(h_last, h, rtol=1e-14, atol=1e-14)

"""The GRU written from scratch equals torch.nn.GRU (Chapter 3)."""

import pytest
import torch
from longdep.models.gru import GRU
from torch import nn


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("with_h0", [False, True])
def test_gru_equals_torch(dtype, tolerance, with_h0):
    torch.manual_seed(0)
    theirs = nn.GRU(3, 5, batch_first=True).to(dtype)
    ours = GRU.from_torch(theirs)
    x = torch.randn(4, 7, 3, dtype=dtype)
    h0 = torch.randn(4, 5, dtype=dtype) if with_h0 else None
    out, h_last = ours(x, h0)
    expected, expected_last = theirs(x, None if h0 is None else h0[None])
    assert out.dtype == dtype
    assert (out - expected).abs().max() < tolerance
    assert (h_last - expected_last[0]).abs().max() < tolerance


def test_gru_step_equals_gru_cell():
    torch.manual_seed(1)
    cell = nn.GRUCell(3, 5).double()
    ours = GRU(3, 5).double()
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(ours, name).copy_(getattr(cell, name))
    x_t, h = torch.randn(4, 3, dtype=torch.float64), torch.randn(4, 5, dtype=torch.float64)
    assert (ours.step(x_t, h) - cell(x_t, h)).abs().max() < 1e-13


def test_gru_gradients_equal_torch():
    torch.manual_seed(2)
    theirs = nn.GRU(3, 5, batch_first=True).double()
    ours = GRU.from_torch(theirs)
    x = torch.randn(4, 9, 3, dtype=torch.float64, requires_grad=True)
    ours(x)[0].square().sum().backward()
    ours_x = x.grad.clone()
    x.grad = None
    theirs(x)[0].square().sum().backward()
    assert (ours_x - x.grad).abs().max() < 1e-12
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        difference = getattr(ours, name).grad - getattr(theirs, name + "_l0").grad
        assert difference.abs().max() < 1e-12, name


def test_gru_gradient_along_the_update_gate():
    """With the recurrent weights zero, dh_T/dh_0 is exactly diag(prod_t z_t): the GRU's
    direct path, the (1 - z) gate's complement carried back through time."""
    torch.manual_seed(3)
    gru = GRU(3, 5).double()
    with torch.no_grad():
        gru.weight_hh.zero_()
    x = torch.randn(1, 6, 3, dtype=torch.float64)
    h0 = torch.randn(1, 5, dtype=torch.float64)
    jacobian = torch.autograd.functional.jacobian(lambda h: gru(x, h)[1], h0)[0, :, 0, :]
    parts = gru.input_parts(x[0]) + gru.bias_hh
    z = torch.sigmoid(parts[:, 5:10])  # (time, hidden): independent of h when W_hh = 0
    assert (jacobian - torch.diag(z.prod(0))).abs().max() < 1e-14
    assert (torch.diag(z.prod(0)) - torch.eye(5)).abs().max() > 0.5  # z < 1: it decays


def test_to_torch_round_trip():
    gru = GRU(3, 4)
    x = torch.randn(2, 5, 3)
    assert torch.equal(gru.to_torch()(x)[0], GRU.from_torch(gru.to_torch())(x)[0])
    assert (gru(x)[0] - gru.to_torch()(x)[0]).abs().max() < 1e-6


@pytest.mark.parametrize("module, message", [
    (nn.LSTM(3, 4, batch_first=True), "needs a torch.nn.GRU, got LSTM"),
    (nn.GRU(3, 4), "batch_first=False"),
    (nn.GRU(3, 4, num_layers=2, batch_first=True), "num_layers=2"),
    (nn.GRU(3, 4, bidirectional=True, batch_first=True), "bidirectional=True"),
    (nn.GRU(3, 4, bias=False, batch_first=True), "bias=False"),
])
def test_from_torch_refuses_what_it_cannot_copy(module, message):
    with pytest.raises((TypeError, ValueError), match=message):
        GRU.from_torch(module)


def test_bad_inputs_are_refused():
    gru = GRU(3, 4)
    with pytest.raises(ValueError, match="hidden_size"):
        GRU(3, 0)
    with pytest.raises((TypeError, ValueError), match="x"):
        gru(torch.randn(2, 5, 2))
    with pytest.raises((TypeError, ValueError), match="h0"):
        gru(torch.randn(2, 5, 3), torch.randn(3, 4))
    with pytest.raises(TypeError, match="x"):
        gru(torch.randn(2, 5, 3, dtype=torch.float64))
    with pytest.raises((TypeError, ValueError), match="x_t"):
        gru.step(torch.randn(2, 2), torch.randn(2, 4))

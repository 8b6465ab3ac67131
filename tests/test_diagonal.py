"""The diagonal linear RNN (Chapter 2): its scan is the cumulative product, its transitions lie
in the range chosen, negative transitions compute parity at any length where positive ones never
change the state's sign, and the gradient over distance is the product of the transitions."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from longdep.models.diagonal import DiagonalLinearRNN

F64 = torch.float64
FAST = settings(max_examples=25, deadline=None, database=None)


def model_and_input(transitions="signed", drive=False, scan="parallel", steps=512, seed=0,
                    scale=1.0):
    torch.manual_seed(seed)
    model = DiagonalLinearRNN(3, 6, transitions, drive, scan).double()
    x = scale * torch.randn(2, steps, 3, dtype=F64, generator=torch.Generator().manual_seed(seed))
    return model, x


@pytest.mark.parametrize("transitions", ["positive", "signed"])
def test_without_drive_the_state_is_h0_times_the_cumulative_product(transitions):
    model, x = model_and_input(transitions)
    with torch.no_grad():
        a, _ = model.transition_and_drive(x)
        expected = model.h0 * torch.cumprod(a, dim=1)
        for scan in ("parallel", "sequential"):
            model.scan = scan
            torch.testing.assert_close(model(x)[0], expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("transitions, low, high", [("positive", 0, 1), ("signed", -1, 1)])
def test_the_transitions_lie_in_the_range_chosen(transitions, low, high):
    model, x = model_and_input(transitions, scale=3.0)
    a, _ = model.transition_and_drive(x)
    assert ((a > low) & (a < high)).all()
    assert (a < 0).any() == (transitions == "signed")


def parity_model(transitions):
    """Inputs one-hot bits (x = [1, 0] for a zero, [0, 1] for a one); a saturates at +1 for a
    zero and at -1 (signed) or 0 (positive) for a one."""
    model = DiagonalLinearRNN(2, 1, transitions).double()
    with torch.no_grad():
        model.linear_a.weight.copy_(torch.tensor([[100.0, -100.0]], dtype=F64))
        model.linear_a.bias.zero_()
    return model


def test_negative_transitions_compute_parity_at_a_thousand_steps():
    bits = torch.randint(0, 2, (64, 1000), generator=torch.Generator().manual_seed(0))
    x = torch.nn.functional.one_hot(bits, 2).to(F64)
    with torch.no_grad():
        h = parity_model("signed")(x)[0][..., 0]  # (batch, time)
    expected = 1 - 2 * (bits.cumsum(1) % 2)  # (-1)^(number of ones so far)
    assert torch.equal(h, expected.to(F64))  # exactly: tanh(50) is 1.0 in float64


@FAST
@given(seed=st.integers(0, 999), scale=st.sampled_from([0.1, 1.0, 10.0]),
       drive=st.booleans())
def test_positive_transitions_never_flip_the_sign_of_the_decayed_state(seed, scale, drive):
    """dh_T/dh_0 = prod a > 0: whatever the weights, the part of the state that h0 carries keeps
    its sign, so no readout of it can count ones modulo 2 (the signed transitions of the test
    above do flip it)."""
    model, x = model_and_input("positive", drive, steps=60, seed=seed, scale=scale)
    jacobian = torch.autograd.functional.jacobian(
        lambda h: model(x, h)[1].sum(0), torch.zeros(2, 6, dtype=F64))  # (hidden, batch, hidden)
    assert (torch.diagonal(jacobian.permute(1, 0, 2), dim1=1, dim2=2) >= 0).all()


@pytest.mark.parametrize("transitions", ["positive", "signed"])
@pytest.mark.parametrize("scan", ["parallel", "sequential"])
def test_the_gradient_over_distance_is_the_product_of_the_transitions(transitions, scan):
    model, x = model_and_input(transitions, drive=True, scan=scan, steps=40)
    k = 7
    with torch.no_grad():
        a, _ = model.transition_and_drive(x[:, k + 1:])
    jacobian = torch.autograd.functional.jacobian(
        lambda h: model(x[:, k + 1:], h)[1].sum(0), torch.randn(2, 6, dtype=F64))
    torch.testing.assert_close(jacobian.permute(1, 0, 2), torch.diag_embed(a.prod(1)),
                               rtol=1e-13, atol=0)


@pytest.mark.parametrize("call, error, message", [
    (lambda: DiagonalLinearRNN(3, 4, "negative"), ValueError,
     r"transitions must be one of \['positive', 'signed'\]"),
    (lambda: DiagonalLinearRNN(3, 4, drive="yes"), TypeError, r"drive must be a bool"),
    (lambda: DiagonalLinearRNN(3, 4, scan="cumprod"), ValueError, r"scan must be one of"),
    (lambda: DiagonalLinearRNN(3, 0), ValueError, r"hidden_size must be at least 1"),
    (lambda: DiagonalLinearRNN(3, 4)(torch.ones(2, 5, 3), torch.ones(2, 3)), ValueError,
     r"h0 must have shape \(batch, hidden\) = \(2, 4\)"),
    (lambda: DiagonalLinearRNN(3, 4).step(torch.ones(2, 3), torch.ones(1, 4)), ValueError,
     r"h must have shape \(batch, hidden\) = \(2, 4\)"),
])
def test_diagonal_rnn_checks_its_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()

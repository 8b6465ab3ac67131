"""The order-blind control of key recall: blind to order, not to content; bad input refused."""

import pytest
import torch
from longdep.models.bag import BagOfTokens


def test_output_at_t_ignores_the_order_of_the_inputs_before_it():
    torch.manual_seed(0)
    bag = BagOfTokens(3, 5).double()
    x = torch.randn(2, 7, 3, dtype=torch.float64)
    shuffled = x.clone()
    shuffled[:, :6] = x[:, torch.randperm(6)]
    # step 5 sees the first six inputs, in any order
    assert torch.allclose(bag(x)[:, 5], bag(shuffled)[:, 5], atol=1e-12)


def test_output_depends_on_content_and_is_causal():
    torch.manual_seed(0)
    bag = BagOfTokens(3, 5).double()
    x = torch.randn(2, 7, 3, dtype=torch.float64)
    changed = x.clone()
    changed[:, 4] += 1.0
    y, y_changed = bag(x), bag(changed)
    assert torch.equal(y[:, :4], y_changed[:, :4])  # steps before 4 never see it
    assert (y[:, 4:] - y_changed[:, 4:]).abs().amax() > 1e-3


def test_last_only_is_the_last_step_of_the_full_output_with_the_same_gradients():
    torch.manual_seed(0)
    full = BagOfTokens(3, 5).double()
    last = BagOfTokens(3, 5, last_only=True).double()
    last.load_state_dict(full.state_dict())
    x = torch.randn(2, 7, 3, dtype=torch.float64)
    x[:, 3] = x[:, 1]  # a repeated token: ties in the maximum, as repeated ids make them
    x_full, x_last = x.clone().requires_grad_(), x.clone().requires_grad_()
    y_full, y_last = full(x_full)[:, -1:], last(x_last)
    assert y_last.shape == (2, 1, 5)
    torch.testing.assert_close(y_last, y_full, rtol=0, atol=1e-12)
    y_full.sum().backward()
    y_last.sum().backward()
    # a tie splits the max's gradient differently, so compare what the tied rows get together
    for grad in (x_full.grad, x_last.grad):
        grad[:, 1] += grad[:, 3]
        grad[:, 3] = 0
    torch.testing.assert_close(x_last.grad, x_full.grad, rtol=0, atol=1e-12)
    for a, b in zip(full.parameters(), last.parameters()):
        torch.testing.assert_close(b.grad, a.grad, rtol=0, atol=1e-12)


def test_running_mean_and_max_by_hand():
    bag = BagOfTokens(1, 2)
    with torch.no_grad():  # route the pooled features straight out: y = mean + max
        bag.mlp[0].weight.copy_(torch.eye(2))
        bag.mlp[0].bias.zero_()
        bag.mlp[2].weight.copy_(torch.ones(2, 2))
        bag.mlp[2].bias.zero_()
    x = torch.tensor([[[1.0], [3.0], [2.0]]])
    assert torch.allclose(bag(x)[0, :, 0], torch.tensor([1.0 + 1, 2 + 3, 2 + 3]))


@pytest.mark.parametrize("x, error, message", [
    (torch.randn(2, 5), ValueError, "x must have shape"),
    (torch.randn(2, 5, 4), ValueError, "x must have shape"),
    (torch.randn(2, 0, 3), ValueError, "x is empty"),
    (torch.randn(2, 5, 3, dtype=torch.float64), TypeError, "float64"),
])
def test_bad_input_is_refused_by_name(x, error, message):
    with pytest.raises(error, match=message):
        BagOfTokens(3, 4)(x)

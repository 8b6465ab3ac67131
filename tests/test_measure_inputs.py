"""measure/'s boundary (issue 27): every bad argument raises a ValueError or TypeError naming
it, in the vocabulary of longdep.models._checks, where Python or NumPy used to answer."""

import math

import pytest
import torch
from longdep.measure import cost, fit, gradients, layers
from longdep.models.rnn import ElmanRNN
from torch import nn

F64 = torch.float64


@pytest.mark.parametrize("call, error, message", [
    (lambda: gradients.state_gradient_norms(ElmanRNN(4, 3).double(), torch.zeros(2, 5, 4)),
     TypeError, r"^x is float32 on cpu, but the model's parameters are float64"),
    (lambda: layers.layer_input_gradients(3, torch.zeros(2, 5, 4, dtype=F64),
                                             torch.ones(4, dtype=F64)),
     TypeError, r"layers must be a list of layers, got int 3"),
    (lambda: layers.layer_input_gradients([nn.Identity(), 3], torch.zeros(2, 5, 4, dtype=F64),
                                             torch.ones(4, dtype=F64)),
     TypeError, r"layers\[1\] must be callable"),
    (lambda: layers.stack_jacobian(3, torch.zeros(1, 5, 4)), TypeError, r"layers must be a"),
    (lambda: gradients.activation_gamma(torch.tanh, 1.0, "a"), TypeError,
     r"spacing must be a number"),
    (lambda: gradients.activation_gamma(torch.tanh, math.nan), ValueError,
     r"half_width must be finite"),
    (lambda: cost.interleaved_seconds(3), TypeError, r"calls must be a non-empty dict"),
    (lambda: cost.interleaved_seconds({"a": 3}), TypeError, r"calls\['a'\] must be callable"),
    (lambda: cost.interleaved_seconds({"a": lambda: 0}, 1, 0), ValueError,
     r"threads must be at least 1"),
    (lambda: fit.fitted_exponent([1], [1]), ValueError, r"lengths must hold two or more"),
    (lambda: fit.fitted_exponent(["a", "b"], [1, 2]), TypeError,
     r"lengths must hold numbers only"),
    (lambda: fit.fitted_exponent([1, 2], [math.nan, 2]), ValueError,
     r"values must be finite and positive"),
    (lambda: fit.fitted_exponent([1, 2], [1, 2, 3]), ValueError, r"values must hold 2 numbers"),
    (lambda: fit.fitted_rate([0, 1], [1.0, -1.0]), ValueError, r"values must be finite and "
     "positive"),
    (lambda: fit.fitted_rate([0, 1], [1, 2, 3]), ValueError,
     r"distances must hold 3 finite numbers, one per value"),
    (lambda: fit.fitted_rate(["a", "b"], [1, 2]), TypeError, r"distances must hold numbers only"),
    (lambda: fit.fitted_log_slope([0, 1, 2], [1, 2]), ValueError,
     r"x must hold 2 finite numbers, one per value"),
    (lambda: fit.fitted_log_slope([0, 1], [1, 0]), ValueError,
     r"values must be finite and positive"),
    (lambda: fit.crossover_length([1, 2], [-1, 2], [1, 2]), ValueError,
     r"first must be finite and positive"),
    (lambda: fit.crossover_length(3, [1], [1]), TypeError, r"lengths must be a list of numbers"),
    (lambda: fit.growth_label([1, 2, 4], [1, 2]), ValueError, r"values must hold 3 numbers"),
    (lambda: fit.growth_label([1, 3, 9], [1, 2, 3]), ValueError,
     r"lengths must be three or more, each twice the one before"),
])
def test_measurements_check_their_arguments_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_checked_fits_still_read_numpy_and_torch_numbers():
    values = [torch.tensor(4.0), torch.tensor(16.0), torch.tensor(64.0)]
    assert fit.fitted_exponent([2, 4, 8], values) == pytest.approx(2.0)
    # the per-step rate of Chapter 2: values 3 * 0.5^d give log-slope ln 0.5 exactly
    distances = torch.arange(5, dtype=F64)
    assert fit.fitted_log_slope(distances, 3 * 0.5**distances) == pytest.approx(math.log(0.5))
    assert fit.growth_label([2, 4, 8], torch.tensor([1.0, 2.0, 3.0])) == "log T"
    assert math.isnan(fit.crossover_length([1, 2], [1, 2], [3, 4]))  # no crossing in range

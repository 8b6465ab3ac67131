"""LSTM equals torch.nn.LSTM; the cell-state Jacobian of Chapter 3 equals autograd's."""

import pytest
import torch
from longdep.book import seed_everything
from longdep.experiments.lstm import sequential_cost
from longdep.measure.gradients import (
    cell_state_jacobian,
    cell_state_path,
    forget_product_norms,
)
from longdep.models.lstm import LSTM
from torch import nn

TOLERANCE = {torch.float32: dict(rtol=1e-5, atol=1e-6), torch.float64: dict(rtol=1e-12, atol=1e-13)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("with_state", [False, True])
def test_equals_torch_lstm(dtype, with_state):
    seed_everything(1)
    reference = nn.LSTM(5, 7, batch_first=True).to(dtype)
    model = LSTM.from_torch(reference)
    x = torch.randn(3, 11, 5, dtype=dtype)
    state = (torch.randn(3, 7, dtype=dtype), torch.randn(3, 7, dtype=dtype)) if with_state else None
    outputs, (h_last, c_last) = model(x, state)
    expected, (expected_h, expected_c) = reference(
        x, None if state is None else (state[0][None], state[1][None])
    )
    assert outputs.dtype == dtype and outputs.shape == (3, 11, 7)
    torch.testing.assert_close(outputs, expected, **TOLERANCE[dtype])
    torch.testing.assert_close(h_last, expected_h[0], **TOLERANCE[dtype])
    torch.testing.assert_close(c_last, expected_c[0], **TOLERANCE[dtype])


def test_gradients_equal_torch_lstm():
    seed_everything(2)
    reference = nn.LSTM(4, 6, batch_first=True).double()
    model = LSTM.from_torch(reference)
    x = torch.randn(2, 9, 4, dtype=torch.float64)
    model(x)[0].square().sum().backward()
    reference(x)[0].square().sum().backward()
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        torch.testing.assert_close(getattr(model, name).grad, getattr(reference, name + "_l0").grad,
                                   rtol=1e-12, atol=1e-13)


def test_step_unrolls_forward():
    seed_everything(3)
    model = LSTM(3, 4, forget_bias=1.0).double()
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    outputs, last = model(x)
    state = (torch.zeros(2, 4, dtype=torch.float64), torch.zeros(2, 4, dtype=torch.float64))
    for t in range(6):
        state = model.step(x[:, t], state)
        torch.testing.assert_close(state[0], outputs[:, t], rtol=1e-14, atol=1e-15)
    torch.testing.assert_close(state[1], last[1], rtol=1e-14, atol=1e-15)


def test_parameters_mirror_lstm_cell():
    model, cell = LSTM(4, 6), nn.LSTMCell(4, 6)
    assert {n: p.shape for n, p in model.named_parameters()} == {
        n: p.shape for n, p in cell.named_parameters()
    }


@pytest.mark.parametrize("forget_bias", [0.0, 1.0, 3.0])
def test_forget_bias_sets_the_forget_slice_only(forget_bias):
    seed_everything(4)
    model = LSTM(3, 8, forget_bias=forget_bias)
    forget = slice(8, 16)
    assert torch.all(model.bias_ih[forget] == forget_bias)
    assert torch.all(model.bias_hh[forget] == 0)
    others = torch.cat([model.bias_ih[:8], model.bias_ih[16:],
                        model.bias_hh[:8], model.bias_hh[16:]])
    assert others.abs().max() <= 8**-0.5 and others.std() > 0
    # with zero input and state the forget gate is exactly sigmoid(forget_bias)
    gates = model.input_parts(torch.zeros(1, 3))
    assert torch.allclose(torch.sigmoid(gates[0, forget]), torch.sigmoid(torch.tensor(forget_bias)))


def test_to_torch_round_trip():
    seed_everything(5)
    model = LSTM(3, 5, forget_bias=1.0).double()
    reference = model.to_torch()
    assert reference.batch_first and reference.weight_hh_l0.dtype == torch.float64
    x = torch.randn(2, 7, 3, dtype=torch.float64)
    torch.testing.assert_close(model(x)[0], reference(x)[0], rtol=1e-12, atol=1e-13)
    back = LSTM.from_torch(reference)
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        assert torch.equal(getattr(back, name), getattr(model, name))


def test_from_torch_copies_instead_of_sharing():
    reference = nn.LSTM(2, 3, batch_first=True)
    model = LSTM.from_torch(reference)
    with torch.no_grad():
        reference.weight_hh_l0.zero_()
    assert model.weight_hh.abs().sum() > 0


@pytest.mark.parametrize("kwargs", [dict(num_layers=2), dict(bidirectional=True), dict(bias=False),
                                    dict(proj_size=2)])
def test_from_torch_rejects_other_layouts(kwargs):
    option = next(iter(kwargs))
    with pytest.raises(ValueError, match=f"from_torch cannot take a torch.nn.LSTM with {option}="):
        LSTM.from_torch(nn.LSTM(2, 3, batch_first=True, **kwargs))


def test_bad_arguments_raise_clear_errors():
    model = LSTM(3, 4)
    with pytest.raises(ValueError, match="input_size must be at least 1, got 0"):
        LSTM(0, 4)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, time, 3\), got .* \(5, 3\)"):
        model(torch.randn(5, 3))
    with pytest.raises(ValueError, match=r"x must have shape \(batch, time, 3\), got .*\(2, 5, 2\)"):
        model(torch.randn(2, 5, 2))
    x = torch.randn(2, 5, 3)
    with pytest.raises(TypeError, match=r"state must be None or a pair \(h0, c0\)"):
        model(x, torch.zeros(2, 4))
    with pytest.raises(ValueError, match=r"h0 must have shape \(batch, hidden\) = \(2, 4\)"):
        model(x, (torch.zeros(3, 4), torch.zeros(2, 4)))
    with pytest.raises(ValueError, match=r"c0 must have shape"):
        model(x, (torch.zeros(2, 4), torch.zeros(2, 5)))
    with pytest.raises(ValueError, match=r"x_t must have shape \(batch, 3\)"):
        model.step(torch.randn(2, 1, 3), (torch.zeros(2, 4), torch.zeros(2, 4)))


def test_cell_state_jacobian_equals_autograd():
    seed_everything(6)
    model = LSTM(3, 5, forget_bias=1.0).double()
    x = torch.randn(2, 3, dtype=torch.float64)
    c_prev = torch.randn(2, 5, dtype=torch.float64)
    o_prev = torch.rand(2, 5, dtype=torch.float64)
    direct, through_h = cell_state_jacobian(model, x, c_prev, o_prev)
    for b in range(2):
        def next_cell(c, b=b):
            return model.step(x[b : b + 1], (o_prev[b : b + 1] * torch.tanh(c), c))[1][0]

        jacobian = torch.autograd.functional.jacobian(next_cell, c_prev[b : b + 1])[:, 0]
        torch.testing.assert_close(direct[b] + through_h[b], jacobian, rtol=1e-12, atol=1e-14)
        # the direct path alone is diag(f_t): it misses the path through h_{t-1}
        assert (direct[b] - jacobian).abs().max() > 1e-3


def test_forget_product_norms_multiply_the_later_gates():
    gates = torch.tensor([0.9, 0.5, 0.5, 0.5], dtype=torch.float64).reshape(1, 4, 1)
    expected = torch.tensor([0.125, 0.25, 0.5, 1.0], dtype=torch.float64)
    torch.testing.assert_close(forget_product_norms(gates), expected)
    # norm over batch and units: two units with equal products give sqrt(2) times one
    torch.testing.assert_close(forget_product_norms(gates.expand(1, 4, 2)), 2**0.5 * expected)


def test_cell_state_path_without_recurrent_weights_is_the_forget_gate():
    # with W_hh = 0 there is no path through h_{t-1}: dC_t/dC_{t-1} = diag(f_t), norm max_j f_tj
    seed_everything(7)
    model = LSTM(3, 4, forget_bias=1.0).double()
    with torch.no_grad():
        model.weight_hh.zero_()
    x = torch.randn(2, 5, 3, dtype=torch.float64)
    path = cell_state_path(model, x)
    forget = torch.sigmoid(model.input_parts(x)[..., 4:8])
    torch.testing.assert_close(path.forget_gates, forget)
    torch.testing.assert_close(path.step_norms, forget.amax(-1))


def test_cell_state_path_step_norms_equal_autograd():
    seed_everything(8)
    model = LSTM(3, 4, forget_bias=1.0).double()
    x = torch.randn(1, 4, 3, dtype=torch.float64)
    path = cell_state_path(model, x)
    # dC_3/dC_2 along the whole recurrence: perturb C_2 and rerun the last step
    _, (h2, c2) = model(x[:, :3])
    o2 = h2 / torch.tanh(c2)
    jacobian = torch.autograd.functional.jacobian(
        lambda c: model.step(x[:, 3], (o2 * torch.tanh(c), c))[1], c2)[0, :, 0]
    torch.testing.assert_close(path.step_norms[0, 3], torch.linalg.matrix_norm(jacobian, ord=2))


def test_sequential_cost_times_every_length_and_checks_them():
    seed_everything(9)
    times = sequential_cost(LSTM(2, 3), lengths=[1, 4], positions=8, repeats=1)
    assert list(times) == ["our LSTM (Python loop)", "torch.nn.LSTM (compiled loop)",
                           "all positions as one batch"]
    assert all(len(values) == 2 and min(values) > 0 for values in times.values())
    with pytest.raises(ValueError, match="positive divisor of positions=8"):
        sequential_cost(LSTM(2, 3), lengths=[3], positions=8)


# Chapter 3's experiment helpers (experiments/lstm.py, experiments/key_recall.py, plots/lstm.py)

from longdep.experiments import key_recall as kr  # noqa: E402
from longdep.experiments.lstm import (  # noqa: E402
    cell_path_only,
    two_step_cell_jacobians,
    with_forget_bias,
)
from longdep.measure.gradients import input_gradient_norms  # noqa: E402


def test_with_forget_bias_changes_only_the_forget_slice():
    base = LSTM(3, 4, forget_bias=1.0)
    model = with_forget_bias(base, 3.0)
    assert torch.equal(model.bias_ih[4:8], torch.full((4,), 3.0))
    assert torch.equal(model.bias_hh[4:8], torch.zeros(4))
    for name in ("weight_ih", "weight_hh"):
        assert torch.equal(getattr(model, name), getattr(base, name))
    keep = torch.ones(16, dtype=torch.bool)
    keep[4:8] = False
    assert torch.equal(model.bias_ih[keep], base.bias_ih[keep])
    assert base.bias_ih[4:8].eq(1.0).all()  # the original is untouched


def test_cell_path_only_keeps_values_and_cuts_the_gates_path():
    seed_everything(11)
    model = LSTM(3, 5, forget_bias=1.0).double()
    x = torch.randn(2, 8, 3, dtype=torch.float64)
    torch.testing.assert_close(cell_path_only(model)(x), model(x)[0], rtol=0, atol=1e-15)
    cut, full = input_gradient_norms(cell_path_only(model), x), input_gradient_norms(model, x)
    torch.testing.assert_close(cut[-1], full[-1])  # the last input enters no later gate
    assert not torch.allclose(cut[:-1], full[:-1])
    with torch.no_grad():
        model.weight_hh.zero_()  # no path through h_{t-1}: the truncation changes nothing
    torch.testing.assert_close(input_gradient_norms(cell_path_only(model), x),
                               input_gradient_norms(model, x), rtol=1e-12, atol=0)


def test_two_step_product_misses_exactly_the_output_gate_path():
    seed_everything(12)
    model = LSTM(3, 5, forget_bias=1.0).double()
    x = torch.randn(4, 2, 3, dtype=torch.float64)
    c, o = torch.randn(4, 5, dtype=torch.float64), torch.rand(4, 5, dtype=torch.float64)
    product, exact = two_step_cell_jacobians(model, x, c, o)
    assert (product - exact).norm() > 1e-4 * exact.norm()
    with torch.no_grad():
        model.weight_hh[15:] = 0  # W_ho
    product, exact = two_step_cell_jacobians(model, x, c, o)
    torch.testing.assert_close(product, exact, rtol=0, atol=1e-13)


def test_key_recall_cores_are_initialised_as_named():
    orthogonal = kr.orthogonal_tanh_rnn().weight_hh_l0.detach()
    torch.testing.assert_close(orthogonal @ orthogonal.T, torch.eye(32), rtol=0, atol=1e-5)
    irnn = kr.identity_relu_rnn()
    assert irnn.nonlinearity == "relu"
    assert torch.equal(irnn.weight_hh_l0, torch.eye(32))
    assert not irnn.bias_hh_l0.any() and not irnn.bias_ih_l0.any()
    lstm = kr.lstm_with_forget_bias(3.0)
    assert lstm.bias_ih_l0[32:64].eq(3.0).all() and not lstm.bias_hh_l0[32:64].any()
    assert isinstance(kr.gru(), nn.GRU) and kr.gru().hidden_size == 32
    x = torch.randn(2, 5, 16)
    assert kr.bag_of_tokens()(x).shape == (2, 1, 32)  # the last step, all it needs


def test_accuracy_word_relative_to_the_order_blind_bound():
    word = kr.accuracy_word
    assert word(torch.tensor([0.30, 0.38, 0.34]), bound=0.386) == "blind"
    assert word(torch.tensor([0.30, 0.38, 0.34])) == "partly"
    assert word(torch.tensor([0.5, 0.9, 0.9]), bound=0.3) == "mostly"
    assert word(torch.tensor([0.2, 0.5, 0.45]), bound=0.3) == "partly"
    assert word(torch.tensor([0.96, 1.0, 0.99]), bound=0.3) == "solved"


def test_accuracy_table_prints_the_bound_row_and_its_words():
    budget = kr.KeyRecallBudget(distances=(5, 10), seeds=(0, 1))
    grid = torch.tensor([[1.0, 0.2], [1.0, 0.3]], dtype=torch.float64)
    table = kr.format_accuracy_table({"m": grid}, budget, bound=[0.386, 0.302])
    assert table.splitlines()[1].split() == ["m", "solved", "blind"]
    assert table.splitlines()[2].split()[-2:] == ["0.39", "0.30"]
    with pytest.raises(ValueError, match="one number per distance"):
        kr.format_accuracy_table({"m": grid}, budget, bound=[0.3])


@pytest.mark.parametrize("call, error, message", [
    (lambda: kr.key_recall_accuracies(3, 32), TypeError, "make_core must be callable"),
    (lambda: kr.key_recall_accuracies(kr.gru, 0), ValueError, "core_dim must be at least 1"),
    (lambda: kr.key_recall_accuracies(kr.gru, 32, budget="b"), TypeError, "KeyRecallBudget"),
    (lambda: kr.key_recall_accuracies(kr.gru, 32, stop_below=[0.3]), ValueError,
     "stop_below must be"),
    (lambda: kr.key_recall_accuracies(kr.gru, 32, stop_below=-2.0), ValueError,
     "stop_below must be"),
    (lambda: kr.train_key_recall_seeds(kr.gru, 32, 0, (0,)), ValueError,
     "distance must be at least 1"),
    (lambda: kr.key_recall_batches(2.5), TypeError, "distance must be an int"),
    (lambda: kr.key_recall_classifier("core", 32, 0), TypeError, "core must be"),
    (lambda: kr.accuracy_word([0.5]), TypeError, "accuracies must be"),
    (lambda: kr.accuracy_word(torch.tensor([0.5]), solved=0.2), ValueError, "chance_below"),
    (lambda: kr.format_accuracy_table([]), TypeError, "accuracies must be a non-empty dict"),
    (lambda: kr.key_recall_transformer(num_layers=0), ValueError, "num_layers"),
    (lambda: kr.tanh_rnn(budget=None), TypeError, "budget must be a KeyRecallBudget"),
    (lambda: with_forget_bias(nn.LSTM(2, 3), 1.0), TypeError, "lstm must be"),
    (lambda: with_forget_bias(LSTM(2, 3), "1"), TypeError, "forget_bias must be a number"),
    (lambda: cell_path_only(LSTM(2, 3))(torch.randn(1, 4, 3)), ValueError, "x must have"),
    (lambda: cell_path_only(LSTM(2, 3))(torch.randn(1, 4, 2).double()), TypeError,
         "x is float64 on cpu, but the model.s parameters are float32"),
    (lambda: two_step_cell_jacobians(LSTM(2, 3), torch.randn(1, 3, 2), torch.zeros(1, 3),
                                     torch.zeros(1, 3)), ValueError, "exactly 2 steps"),
    (lambda: two_step_cell_jacobians(LSTM(2, 3), torch.randn(1, 2, 2), torch.zeros(2, 3),
                                     torch.zeros(1, 3)), ValueError, "c must be"),
    (lambda: sequential_cost(LSTM(2, 3), [4], positions=0), ValueError, "positions"),
    (lambda: sequential_cost(LSTM(2, 3), [], positions=8), TypeError, "lengths"),
    (lambda: sequential_cost(nn.LSTM(2, 3), [4], positions=8), TypeError, "lstm must be"),
])
def test_experiment_helpers_check_their_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_plots_check_their_arguments():
    from longdep.plots.lstm import (plot_key_recall_accuracy, plot_lstm_gradients,
                                    plot_sequential_cost)
    curve = torch.ones(3).numpy()
    with pytest.raises(ValueError, match="scaled_model must be a label"):
        plot_lstm_gradients(range(3), {"a": curve}, {}, {"s = 1": curve}, "b")
    with pytest.raises(TypeError, match="measured must be a dict"):
        plot_lstm_gradients(range(3), [curve], {}, {}, "a")
    with pytest.raises(ValueError, match="chance must lie in"):
        plot_key_recall_accuracy([5, 10], {"a": torch.ones(2, 2).numpy()}, chance=2, title="t")
    with pytest.raises(ValueError, match=r"seconds\['a'\] must be a non-empty array of 1 dim"):
        plot_sequential_cost([4], {"a": [[1.0]]}, positions=4)


def test_key_recall_rows_side_by_side_equal_one_after_another():
    """Rows and distances trained in worker processes give the accuracies of a serial run,
    bit for bit, in the budget's order of distances."""
    from longdep.experiments.key_recall import (KeyRecallBudget, bag_of_tokens,
                                                key_recall_accuracies, key_recall_rows)

    budget = KeyRecallBudget(steps=3, batch_size=4, eval_batches=1, distances=(2, 3, 5),
                             seeds=(0, 1))
    makers = {"bag": bag_of_tokens, "bag again": bag_of_tokens}
    spread = key_recall_rows(makers, budget.model_dim, budget)
    serial = key_recall_accuracies(bag_of_tokens, budget.model_dim, budget)
    assert list(spread) == list(makers)
    assert all(torch.equal(serial, grid) for grid in spread.values())
    with pytest.raises(TypeError, match="makers must be a non-empty dict"):
        key_recall_rows({}, budget.model_dim, budget)
    with pytest.raises(TypeError, match="make_core must be callable"):
        key_recall_rows({"a": 3}, budget.model_dim, budget)

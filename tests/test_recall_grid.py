"""Chapter 3's key-recall grid (experiments/recall_grid.py) and its gradients over weight draws
(experiments/lstm.py): rows trained together equal rows trained alone, a row stops where no
seed beats the order-blind bound, counts and tables follow the book's rule, and the draws run
under vmap equal one draw at a time."""

import dataclasses
import math

import pytest
import torch
from longdep.book import seed_everything
from longdep.experiments import key_recall as kr
from longdep.experiments import recall_grid as rg
from longdep.experiments.lstm import CellPathOnly, over_draws, reach_over_draws, with_forget_bias
from longdep.experiments.registry import BOOK_SIZES, KIND, ModelShape
from longdep.measure.gradients import cell_state_path, input_gradient_norms
from longdep.models.lstm import LSTM
from longdep.seeds import manual_seed, seeded_generator
from longdep.stats import Count
from torch import nn

TINY = dataclasses.replace(kr.KEY_RECALL_BUDGET, steps=3, batch_size=4, eval_batches=2,
                           distances=(2, 3), seeds=(0, 1))


def test_budget_and_shape_read_the_book_sizes():
    assert kr.KEY_RECALL_BUDGET.embedding_dim == ModelShape().input_size == BOOK_SIZES.input_size
    assert kr.KEY_RECALL_BUDGET.model_dim == ModelShape().width == BOOK_SIZES.width
    assert len(kr.KEY_RECALL_BUDGET.seeds) >= 10  # the measurement standard: ten seeds a cell
    shape = TINY.shape
    assert (shape.input_size, shape.width, shape.max_len) == (16, 32, 4)
    assert set(rg.CHAPTER_3_ROWS) == {row for group in rg.CHAPTER_3_GROUPS for row in group}
    assert all(kind in KIND for kind, _ in rg.CHAPTER_3_ROWS.values())


def test_a_group_trains_each_row_as_it_would_train_alone(one_thread):
    """The three forget biases in one train_seeds call give each bias's accuracies and losses
    of its own call, to round-off."""
    rows = ("LSTM, forget bias 0", "LSTM, forget bias 3")
    makers = [lambda row=row: rg.row_core(row, TINY) for row in rows]
    together = kr.train_key_recall_group(makers, TINY.model_dim, 3, TINY.seeds, TINY)
    for i, make in enumerate(makers):
        alone = kr.train_key_recall_seeds(make, TINY.model_dim, 3, TINY.seeds, TINY)
        for a, b in zip(together[i * 2:][:2], alone):
            torch.testing.assert_close(a.losses, b.losses, rtol=1e-5, atol=1e-6)
            assert a.accuracy == b.accuracy


def test_rows_of_another_function_refuse_to_share_a_call():
    makers = [lambda: rg.row_core("tanh RNN", TINY),
              lambda: rg.row_core("IRNN (relu, identity)", TINY)]
    with pytest.raises(ValueError, match="one function of their parameters"):
        kr.train_key_recall_group(makers, TINY.model_dim, 3, TINY.seeds, TINY)


def test_a_row_stops_after_a_distance_no_seed_beats_the_bound(one_thread, monkeypatch):
    monkeypatch.setattr(rg, "MARGIN", 1.0)  # no accuracy beats the bound by 1
    grids = rg.group_grid(("GRU",), TINY)
    assert not grids["GRU"][:, 0].isnan().any() and grids["GRU"][:, 1].isnan().all()
    assert not rg.group_grid(("bag of tokens",), TINY)["bag of tokens"].isnan().any()
    monkeypatch.setattr(rg, "MARGIN", -1.0)  # every accuracy does
    assert not rg.group_grid(("GRU",), TINY)["GRU"].isnan().any()


def test_the_grid_spread_over_cores_equals_one_group_after_another(one_thread):
    groups = (("bag of tokens",), ("tanh RNN", "tanh RNN, orthogonal"))
    run = ("GRU", 2, 1e-3)
    spread, perturbed = rg.key_recall_grid(groups, TINY, perturbed=(run,))
    assert list(spread) == ["bag of tokens", "tanh RNN", "tanh RNN, orthogonal"]
    for group in groups:
        for row, grid in rg.group_grid(group, TINY).items():
            torch.testing.assert_close(grid, spread[row], rtol=0, atol=0, equal_nan=True)
    assert list(perturbed) == [run]
    torch.testing.assert_close(perturbed[run], rg.perturbed_accuracies(*run, TINY),
                               rtol=0, atol=0)


def test_a_perturbed_core_changes_only_its_own_weights_in_their_last_bits():
    """Every weight moves by a relative scale * z (z a normal draw, so a few scales at most),
    zeros stay zero, and the global generator continues as after the unperturbed core, so the
    rest of a seed's initialisation and its batches are unchanged."""
    scale = 1e-6
    manual_seed(3)
    plain, after_plain = rg.row_core("IRNN (relu, identity)", TINY), torch.rand(4)
    manual_seed(3)
    moved, after_moved = rg.perturbed_core("IRNN (relu, identity)", scale, TINY), torch.rand(4)
    assert torch.equal(after_plain, after_moved)
    changes = 0
    for (name, p), q in zip(plain.named_parameters(), moved.parameters()):
        relative = ((q - p) / p.abs().clamp_min(1e-30)).abs()
        assert relative.max() < 6 * scale, name
        assert torch.equal(q[p == 0], p[p == 0]), f"{name}: a zero stays zero"
        changes += (q != p).sum().item()
    assert changes > 0.9 * sum(int((p != 0).sum()) for p in plain.parameters())


def test_perturbed_accuracies_train_the_row_as_the_grid_does_at_a_vanishing_scale(one_thread):
    """At a scale below float32's resolution the weights do not move, and the accuracies equal
    the grid's for that row and distance."""
    grid = rg.group_grid(("GRU",), TINY)["GRU"]
    tiny = rg.perturbed_accuracies("GRU", TINY.distances[0], 1e-12, TINY)
    torch.testing.assert_close(tiny, grid[:, 0], rtol=0, atol=0)


def test_counts_and_tables_follow_the_rule():
    budget = dataclasses.replace(TINY, distances=(5, 10, 20), seeds=tuple(range(10)))
    grid = torch.full((10, 3), math.nan, dtype=torch.float64)
    grid[:, 0] = 1.0  # every seed solves d = 5
    grid[:, 1] = torch.tensor([0.96] * 5 + [0.5] * 4 + [0.2])  # 5 solve, 9 beat 0.30 + 0.1
    solved, beats = rg.cell_counts(grid, budget)[1]
    assert (solved, beats) == (Count(5, 10), Count(9, 10))
    assert rg.cell_counts(grid, budget)[0] == (Count(10, 10), Count(10, 10))
    assert rg.cell_counts(grid, budget)[2] is None
    solved_row = rg.count_table({"GRU": grid}, "solved", budget).rows[0]
    beats_row = rg.count_table({"GRU": grid}, "beats bound", budget).rows[0]
    assert [cell.en for cell in solved_row] == ["GRU", "10/10 (0.72-1.00) almost always",
                                                "5/10 (0.24-0.76)", "-"]
    assert solved_row[1].zh == "10/10 (0.72-1.00) 几乎总是"
    assert (beats_row[2].en, beats_row[2].zh) == ("9/10 (0.60-0.98) mostly",
                                                  "9/10 (0.60-0.98) 大多")
    assert rg.row_name("bag of tokens").zh == "词元袋"
    assert set(rg.ROW_NAMES) == set(rg.CHAPTER_3_ROWS)
    with pytest.raises(ValueError, match="criterion must be one of"):
        rg.count_table({"GRU": grid}, "learned", budget)
    with pytest.raises(ValueError, match="grid must be a tensor of shape"):
        rg.cell_counts(grid[:, :2], budget)


def test_beats_bound_is_the_order_blind_bound_plus_the_margin():
    bound = kr.content_only_accuracy(10)
    accuracies = torch.tensor([bound + rg.MARGIN - 1e-9, bound + rg.MARGIN + 1e-9],
                              dtype=torch.float64)
    assert rg.beats_bound(accuracies, 10).tolist() == [False, True]


def test_initial_reach_is_the_gradient_of_the_core_the_training_starts_from():
    budget = dataclasses.replace(TINY, seeds=(3,))
    ratios = rg.initial_reach(("LSTM, forget bias 1",), (2, 4), budget, batch=3)
    assert ratios["LSTM, forget bias 1"].shape == (1, 2)
    manual_seed(3)  # as train_key_recall_group builds it
    core = rg.row_core("LSTM, forget bias 1", budget)
    embedding = kr.key_recall_classifier(core, budget.model_dim, 3, budget).embedding
    from longdep.tasks import key_recall_batch
    tokens, _ = key_recall_batch(3, 4, generator=seeded_generator(3))
    norms = input_gradient_norms(core.double(), embedding(tokens).double().detach())
    expected = torch.stack([norms[2] / norms[4], norms[0] / norms[4]])
    torch.testing.assert_close(ratios["LSTM, forget bias 1"][0], expected, rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="batch must be at least 1"):
        rg.initial_reach(batch=0)


def test_over_draws_equals_one_draw_at_a_time():
    seed_everything(0)
    models = [LSTM(3, 4, forget_bias=1.0).double() for _ in range(3)]
    x = torch.randn(6, 7, 3, dtype=torch.float64)  # 3 draws x 2 sequences
    together = input_gradient_norms(over_draws(nn.Module.__call__, models), x, groups=3)
    paths = over_draws(cell_state_path, models)(x)
    for i, model in enumerate(models):
        own = x[2 * i:2 * i + 2]
        torch.testing.assert_close(together[i], input_gradient_norms(model, own),
                                   rtol=1e-12, atol=0)
        alone = cell_state_path(model, own)
        torch.testing.assert_close(paths.step_norms[2 * i:2 * i + 2], alone.step_norms,
                                   rtol=1e-12, atol=1e-15)
        torch.testing.assert_close(paths.forget_gates[2 * i:2 * i + 2], alone.forget_gates)
    cut = input_gradient_norms(over_draws(nn.Module.__call__, [CellPathOnly(m) for m in models]),
                               x, groups=3)
    torch.testing.assert_close(cut[1], input_gradient_norms(CellPathOnly(models[1]), x[2:4]),
                               rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="groups must divide the batch"):
        input_gradient_norms(models[0], x, groups=4)
    with pytest.raises(TypeError, match="models must be a non-empty list"):
        over_draws(nn.Module.__call__, [])


def test_reach_over_draws_measures_each_draw_as_alone():
    reach = reach_over_draws(draws=2, window=6, burn_in=3, batch=2, step_batch=1,
                             step_window=2, step_scales=((3.0, 2),), seed=5)
    assert set(reach.measured) == {"tanh RNN", "LSTM, forget bias 0", "LSTM, forget bias 1",
                                   "LSTM, forget bias 3", "GRU"}
    assert reach.measured["GRU"].shape == (2, 7) and set(reach.scaled) == {"s = 3", "s = 10"}
    assert set(reach.step_norms) == {(0.0, 1), (1.0, 1), (3.0, 1), (1.0, 3), (1.0, 10),
                                     (3.0, 2)}
    assert reach.step_norms[3.0, 2].shape == (2, 2) and reach.mean_forget[0.0, 1].shape == (2,)
    manual_seed(6)  # draw 1 is seeded with seed + 1
    shape = dataclasses.replace(ModelShape(), forget_bias=0.0)
    KIND["tanh RNN"].build(shape)
    lstm = KIND["LSTM"].build(shape).double()
    x = torch.randn(2, 10, 16, dtype=torch.float64, generator=seeded_generator(6))
    alone = input_gradient_norms(with_forget_bias(lstm, 3.0), x).flip(0)[:7]
    torch.testing.assert_close(reach.measured["LSTM, forget bias 3"][1], alone,
                               rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="step_batch and step_window"):
        reach_over_draws(draws=1, window=4, batch=1, step_batch=2)


def test_the_figures_say_in_words_what_chapter_3_counts():
    from longdep.plots.lstm import plot_key_recall_accuracy, plot_lstm_gradients
    from longdep.plots.style import alt_text, both_languages

    grid = torch.tensor([[1.0, 0.2, math.nan], [0.96, 0.97, math.nan]]).numpy()
    fig = plot_key_recall_accuracy([5, 10, 20], {rg.row_name("GRU"): grid}, 0.125, "t")
    assert "GRU: 2/2 at 5, 1/2 at 10." in alt_text(fig)  # an untrained distance is not named
    curve = torch.tensor([1.0, 0.5, 1e-3]).numpy()
    drawings = both_languages(plot_lstm_gradients, range(3), {"a": curve}, {}, {
        "s = 1": curve, "s = 10": 1 / curve}, "a", chaotic=("s = 10",))
    assert "s = 10 chaotic" in drawings["en"][1] and "s = 1 1.0e-03" in drawings["en"][1]
    assert "s = 10 混沌" in drawings["zh"][1]
    with pytest.raises(ValueError, match="chaotic must name labels of scaled"):
        plot_lstm_gradients(range(3), {"a": curve}, {}, {"s = 1": curve}, "a", chaotic=("b",))

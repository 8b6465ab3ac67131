"""Issue 16 for Chapters 4 and 6: the public functions of experiments/attention.py,
plots/attention.py and plots/efficient.py check their arguments at entry and raise a clear
error naming the argument."""

import numpy as np
import pytest
import torch
from longdep.experiments import attention, summary_recall
from longdep.plots import attention as attention_plots
from longdep.plots import efficient as efficient_plots

ARRAY = np.ones(3)


@pytest.mark.parametrize("call, error, message", [
    (lambda: attention.score_variance(0, 10), ValueError, "d_k"),
    (lambda: attention.saturation(4, 0, 10, True), ValueError, "keys"),
    (lambda: attention.shift_matrix(8, 1.5), ValueError, "offset must be a non-negative int"),
    (lambda: attention.shift_matrix(0, 1), ValueError, "d_model"),
    (lambda: attention.make_layer("recurrent", 0), ValueError, "features"),
    (lambda: attention.make_layer("convolution", 4, index=-1), ValueError, "index"),
    (lambda: attention.make_layer("pooling", 4), ValueError, "kind must be one of"),
    (lambda: next(attention.layer_outputs("convolution", torch.zeros(4, 2), 2)),
     ValueError, "x must be a tensor of shape"),
    (lambda: next(attention.layer_outputs("convolution", torch.zeros(1, 4, 2), 0)),
     ValueError, "max_layers"),
    (lambda: attention.fewest_layers("self-attention", 1), ValueError, "steps"),
    (lambda: attention.predicted_layers("convolution", 1), ValueError,
     "steps must be an int of at least 2"),
    (lambda: attention.layer_flops("self-attention", 0, 4), ValueError, "steps"),
    (lambda: attention.encoder_layers(0, 8, 2, 16, True), ValueError, "depth"),
    (lambda: attention.shifted_score_error(None, 8, 1), TypeError, "score must be callable"),
])
def test_chapter_4_experiments_check_their_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_chapter_4_experiments_still_run_on_good_arguments():
    assert attention.predicted_layers("convolution", 9) == 4
    assert attention.make_layer("recurrent", 3).hidden_size == 3
    x = torch.randn(1, 5, 2)
    assert len(list(attention.layer_outputs("convolution", x, 2))) == 2


@pytest.mark.parametrize("call, error, message", [
    (lambda: attention_plots.plot_score_scaling([1, 2, 4], {"scaled": ARRAY}, {}, {}, 8),
     ValueError, "variances must map 'unscaled' and 'scaled'"),
    (lambda: attention_plots.plot_score_scaling(
        [1, 2], {"scaled": ARRAY, "unscaled": ARRAY}, {}, {}, 8),
     ValueError, r"variances\['scaled'\] must be a non-empty array"),
    (lambda: attention_plots.plot_path_lengths([2, 4, 8], {"a": ARRAY}, {"b": ARRAY}, [2, 4, 8],
                                               {"a": ARRAY}, 4),
     ValueError, "predicted must cover every kind of measured"),
    (lambda: attention_plots.plot_distance_profiles({"a": np.ones((2, 3))},
                                                    {5: np.ones((2, 3))}),
     ValueError, r"dilution\[5\] must hold 5 norms per draw"),
    (lambda: attention_plots.plot_distance_profiles({"a": ARRAY}, {3: np.ones((2, 3))}),
     ValueError, r"profiles\['a'\] must be a non-empty array of 2 dimension"),
    (lambda: attention_plots.plot_distance_profiles([ARRAY], {3: ARRAY}),
     TypeError, "profiles must be a dict"),
    (lambda: attention_plots.plot_gate_profiles({0.9: np.ones((2, 3))}, {0.5: 0.9}),
     ValueError, "rates must have the gates of profiles"),
    (lambda: efficient_plots.plot_attention_cost([1, 2], {"a": [1, 2]}, {"a": [1, 2]},
                                                 {"a": [1]}, {"a": 1.0}),
     ValueError, r"seconds\['a'\] must be a non-empty array"),
    (lambda: efficient_plots.plot_attention_cost([1, 2], {"a": [1, 2]}, {"b": [1, 2]},
                                                 {"a": [1, 2]}, {"a": 1.0}),
     ValueError, "must name the same kinds"),
    (lambda: efficient_plots.plot_sparse_masks({"a": np.ones(4)}), ValueError,
     r"masks\['a'\] must be a non-empty array of 2 dimension"),
    (lambda: efficient_plots.plot_sparse_masks({"a": np.ones((4, 4))}), ValueError,
     "at least two masks"),
    (lambda: efficient_plots.plot_performer_errors([4, 16], {"a": np.ones((3, 2))}),
     ValueError, r"errors\['a'\] must be a non-empty array"),
    (lambda: efficient_plots.plot_model_gradients({}, 3, 1), ValueError,
     "ratios must hold at least one curve"),
    (lambda: efficient_plots.plot_model_gradients({"a": np.ones((2, 5))}, -1, 1), ValueError,
     "reach must be a non-negative int"),
    (lambda: efficient_plots.plot_model_gradients({"a": np.ones((2, 5))}, 3, 5), ValueError,
     "distance must be an int from 1 to 4"),
    (lambda: efficient_plots.plot_mqar([4, 8], {"a": np.ones((2, 2, 2))}, [1, 2], 1.5, 16, 4),
     ValueError, "chance must be between 0 and 1"),
    (lambda: efficient_plots.plot_mqar([4, 8], {"a": np.ones((2, 2, 2))}, [1, 2], 0.5, 16, 4,
                                       {"a": ["2"]}),
     ValueError, "recalled must give every model of accuracies one label per budget"),
])
def test_figures_check_their_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_key_recall_seed_accuracies_checks_its_arguments():
    with pytest.raises(ValueError, match="name must be one of"):
        summary_recall.key_recall_seed_accuracies("GRU", 5)
    with pytest.raises(ValueError, match="seeds must hold at least 1 ints"):
        summary_recall.key_recall_seed_accuracies("LSTM", 5, seeds=[])

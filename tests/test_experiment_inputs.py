"""Bad input to an experiment driver, a figure or a page helper gets a clear error naming the
argument (issue 16); ordinary input still works. The models' and probes' own checks are in
tests/test_model_inputs.py."""

import math

import longdep.experiments.recall_grid as recall_grid
import longdep.experiments.summary as summary
import longdep.experiments.text as text
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from longdep import book
from longdep.experiments import (
    clipping,
    depth,
    distance,
    eigenvalues,
    induction,
    init_gradients,
    mean_field,
    mini_transformer,
    order,
    recurrences,
    rnn,
    softmax_fading,
    state_writes,
    vanishing,
    warmup,
)
from longdep.models.lru import LRU
from longdep.models.rnn import ElmanRNN
from longdep.plots import clipping as clipping_plots
from longdep.plots import eigenvalues as eigenvalue_plots
from longdep.plots import recurrences as recurrence_plots
from longdep.plots import rnn as rnn_plots
from longdep.plots import style
from longdep.plots import vanishing as plots
from longdep.tasks import key_recall_batch
from torch import nn


def make_batch(generator):
    return key_recall_batch(4, 3, generator=generator)


def small_models(count=2):
    return [clipping.classifier_with_recurrent_gain(2.0, hidden_size=4, seed=s)
            for s in range(count)]


def closed_figure():
    return plt.subplots()[0]


ARRAY = np.ones(5)
RUNS = {("DeltaNet", "reassigned"): state_writes.PairRecallRuns(torch.ones(10), torch.ones(10, 3))}
WRITE_RECALLS = {(reassigned, write): np.full((3, 2), 0.5) for reassigned in (True, False)
                 for write in ("delta", "additive")}
DRAWS = np.ones((3, 5))  # (draws, time)

# (entry point, call, exception, message pattern): one row per entry point at least
BAD_INPUTS = [
    ("default_recurrent_spectrum", lambda: rnn.default_recurrent_spectrum({16: 0}),
     ValueError, r"seeds_per_size\[16\] must be at least 1, got 0"),
    ("default_recurrent_spectrum", lambda: rnn.default_recurrent_spectrum([16]),
     ValueError, "seeds_per_size must be a non-empty dict hidden size -> seeds, got list"),
    ("loss_term_state_gradients",
     lambda: rnn.loss_term_state_gradients(nn.RNN(4, 8), torch.ones(2, 3, 4), torch.ones(2, 3, 8)),
     TypeError, "rnn must be an ElmanRNN, got RNN"),
    ("loss_term_state_gradients",
     lambda: rnn.loss_term_state_gradients(ElmanRNN(4, 8), torch.ones(2, 3, 4),
                                           torch.ones(2, 3, 7)),
     ValueError, r"output_grads must have shape \(batch, time, 8\)"),
    ("double_sum_terms",
     lambda: rnn.double_sum_terms(ElmanRNN(4, 8), torch.ones(2, 3, 4), torch.ones(2, 3, 8),
                                  per_term=torch.ones(3, 2, 3, 7)),
     ValueError, r"per_term must have shape \(time, batch, time, hidden\) = \(3, 2, 3, 8\)"),
    ("truncation_errors", lambda: rnn.truncation_errors(torch.ones(3, 3, 2), [1]),
     ValueError, r"terms must have shape \(time, time, hidden, hidden\)"),
    ("truncation_errors", lambda: rnn.truncation_errors(torch.ones(3, 3, 2, 2), [-1]),
     ValueError, r"taus\[0\] must be at least 0, got -1"),
    ("bptt_at_initialisation", lambda: rnn.bptt_at_initialisation(draws=0),
     ValueError, "draws must be at least 1, got 0"),
    ("bptt_at_initialisation", lambda: rnn.bptt_at_initialisation(reach=40),
     ValueError, "reach must be below the 40 steps, got 40"),
    ("orthogonal_matrix", lambda: vanishing.orthogonal_matrix(3, generator=0),
     TypeError, "generator must be None or a torch.Generator, got int 0"),
    ("orthogonal_matrix", lambda: vanishing.orthogonal_matrix(2.5),
     TypeError, "size must be an int, got float 2.5"),
    ("rnn_with_recurrent_matrix",
     lambda: vanishing.rnn_with_recurrent_matrix(torch.eye(3), batch=0),
     ValueError, "batch must be at least 1, got 0"),
    ("rnn_with_recurrent_matrix", lambda: vanishing.rnn_with_recurrent_matrix(np.eye(3)),
     TypeError, r"weight_hh must be a torch.Tensor of shape \(hidden, hidden\), got ndarray"),
    ("check_non_negative", lambda: vanishing.check_non_negative(s=-0.5),
     ValueError, "s must be non-negative, got -0.5"),
    ("check_square", lambda: vanishing.check_square(torch.ones(2, 3), "w"),
     ValueError, r"w must be square, of shape \(n, n\)"),
    ("check_fit", lambda: vanishing.check_fit([5, 3]),
     ValueError, r"fit\[1\] must be at least 6, got 3"),
    ("scaled_orthogonal", lambda: vanishing.scaled_orthogonal([], 3, 2),
     ValueError, "scales must be a non-empty sequence of gains s, got list"),
    ("scaled_orthogonal", lambda: vanishing.scaled_orthogonal([1.0], 3, 0),
     ValueError, "draws must be at least 1, got 0"),
    ("probe_networks", lambda: vanishing.probe_networks(torch.eye(3), torch.zeros(1, 2, 3)),
     ValueError, (r"weights must have shape \(networks, n, n\), got a float32 tensor of "
                  r"shape \(3, 3\)")),
    ("probe_networks",
     lambda: vanishing.probe_networks(torch.eye(3)[None], torch.zeros(1, 2, 3), longest=2),
     ValueError, r"longest must be in \[0, 1\], got 2"),
    ("fitted_rates", lambda: vanishing.fitted_rates(torch.ones(2, 20), fit=(10, 5)),
     ValueError, r"fit\[1\] must be at least 11, got 5"),
    ("fitted_rates", lambda: vanishing.fitted_rates(torch.ones(2, 20)),
     ValueError, r"fit\[1\] must be in \[11, 19\], got 100"),
    ("step_factor_norms",
     lambda: vanishing.step_factor_norms(torch.eye(3)[None], torch.ones(1, 4, 2)),
     ValueError, r"slopes must have shape \(networks, time, n\) = \(1, time, 3\)"),
    ("masked_product_norms",
     lambda: vanishing.masked_product_norms(torch.eye(3), torch.ones(4, 2)),
     ValueError, (r"masks must have shape \(\[draws,\] steps, 3\), got a float32 tensor of "
                  r"shape \(4, 2\)")),
    ("masked_product_norms",
     lambda: vanishing.masked_product_norms(torch.ones(2, 3), torch.ones(4, 3)),
     ValueError, r"matrix must be square, of shape \(units, units\)"),
    ("mean_field_fixed_point", lambda: mean_field.mean_field_fixed_point(1.0, math.nan),
     ValueError, "sigma_x must be finite, got nan"),
    ("mean_field_fixed_point", lambda: mean_field.mean_field_fixed_point(1.0, 1.0, "relu"),
     ValueError, r"activation must be one of \['tanh', 'identity'\], got 'relu'"),
    ("predicted_rate", lambda: mean_field.predicted_rate(-1.0, 1.0),
     ValueError, "s must be non-negative, got -1.0"),
    ("measured_rates", lambda: mean_field.measured_rates([]),
     ValueError, "scales must be a non-empty sequence of gains s, got list"),
    ("measured_rates", lambda: mean_field.measured_rates([1.0], draws=0),
     ValueError, "draws must be at least 1, got 0"),
    ("measured_rates", lambda: mean_field.measured_rates([1.0], fit=(10,)),
     TypeError, r"fit must be a pair \(first, last\) of distances, got tuple"),
    ("growth_onset", lambda: mean_field.growth_onset(1.0, low=3.0, high=2.0),
     ValueError, "need low < high and tolerance > 0, got low = 3.0, high = 2.0"),
    ("parity_classifier", lambda: eigenvalues.parity_classifier("negative"),
     ValueError, r"transitions must be one of \['positive', 'signed'\], got 'negative'"),
    ("parity_classifier", lambda: eigenvalues.parity_classifier("signed", seed=-1),
     ValueError, "seed must be at least 0, got -1"),
    ("token_transitions", lambda: eigenvalues.token_transitions(torch.nn.Linear(2, 2)),
     TypeError, "model must be a LastStepClassifier"),
    ("train_parity", lambda: eigenvalues.train_parity("signed", [0], steps=0),
     ValueError, "steps must be at least 1, got 0"),
    ("parity_logits",
     lambda: eigenvalues.parity_logits(eigenvalues.parity_classifier("signed"),
                                       torch.ones(2, 3)),
     TypeError, r"bits must be int64 token ids of shape \(batch, time\)"),
    ("parity_accuracies", lambda: eigenvalues.parity_accuracies([], [20]),
     TypeError, "models must be a non-empty list of parity classifiers, got list"),
    ("parity_accuracies",
     lambda: eigenvalues.parity_accuracies([eigenvalues.parity_classifier("signed")], 20),
     TypeError, "lengths must be a list of ints, got int 20"),
    ("check_lru", lambda: eigenvalues.check_lru(LRU(2, 3).double()),
     ValueError, "model must be a float64 LRU with d_model = 1, got d_model = 2"),
    ("lru_gradient_moduli", lambda: eigenvalues.lru_gradient_moduli(LRU(1, 3), 5),
     ValueError, "model must be a float64 LRU with d_model = 1"),
    ("lru_gradient_moduli", lambda: eigenvalues.lru_gradient_moduli(LRU(1, 3).double(), 0),
     ValueError, "steps must be at least 1, got 0"),
    ("lru_state_scale", lambda: eigenvalues.lru_state_scale(LRU(1, 3).double(), batch=0),
     ValueError, "batch must be at least 1, got 0"),
    ("cliff_final_state", lambda: clipping.cliff_final_state(torch.ones(2), torch.ones(3)),
     ValueError, (r"w and b must have one shape, got a float32 tensor of shape \(2,\) and a "
                  r"float32 tensor of shape \(3,\)")),
    ("cliff_final_state", lambda: clipping.cliff_final_state(1.0, 2.0),
     TypeError, r"w must be a torch.Tensor of shape \(...\), got float 1.0"),
    ("cliff_loss", lambda: clipping.cliff_loss(torch.ones(1), torch.ones(1), target=math.inf),
     ValueError, "target must be finite, got inf"),
    ("cliff_descent", lambda: clipping.cliff_descent((1.0,), 0.1, 5),
     TypeError, r"start must be a pair \(w, b\) of numbers, got tuple"),
    ("cliff_descent", lambda: clipping.cliff_descent((1.0, 0.0), 0.1, 5, threshold=0.0),
     ValueError, "clip_norm must be positive, got 0.0"),

    ("classifier_with_recurrent_gain",
     lambda: clipping.classifier_with_recurrent_gain(math.inf),
     ValueError, "gain must be finite, got inf"),
    ("classifier_with_recurrent_gain",
     lambda: clipping.classifier_with_recurrent_gain(3.0, hidden_size=0),
     ValueError, "hidden_size must be at least 1, got 0"),
    ("train_settings",
     lambda: clipping.train_settings({}, 3.0, 2, make_batch, 1, hidden_size=4),
     TypeError, "settings must be a non-empty dict label -> \\(lr, threshold\\), got dict"),
    ("train_settings",
     lambda: clipping.train_settings({"a": 0.1}, 3.0, 2, make_batch, 1, hidden_size=4),
     TypeError, r"settings\['a'\] must be a pair \(lr, threshold\), got float 0.1"),
    ("perturbed_core", lambda: recall_grid.perturbed_core("GRU", 2.0),
     ValueError, r"scale must lie in \(0, 1\), got 2.0"),
    ("perturbed_core", lambda: recall_grid.perturbed_core("LSTM", 1e-6),
     ValueError, "row must be one of"),
    ("perturbed_accuracies", lambda: recall_grid.perturbed_accuracies("GRU", 0, 1e-6),
     ValueError, "distance must be at least 1, got 0"),
    ("perturbed_accuracies", lambda: recall_grid.perturbed_accuracies("GRU", 5, math.nan),
     ValueError, "scale must be finite, got nan"),
    ("joined_summary_table",
     lambda: summary.joined_summary_table({"LSTM": {}}, [4, 8, 16], ("a", "甲"), {}),
     ValueError, "counted and column must be dicts of the same models"),
    ("context_use",
     lambda: text.context_use(None, beside={"LSTM": (sorted, ([1],))}),
     ValueError, "beside must not use a model's name as a key"),
    ("plot_bptt_contributions",
     lambda: rnn_plots.plot_bptt_contributions(np.ones((4, 4)), np.ones(3)),
     ValueError, (r"loss_to_step must have 3 entries along axis 0, got a float64 array of "
                  r"shape \(4, 4\)")),
    ("plot_bptt_contributions",
     lambda: rnn_plots.plot_bptt_contributions(torch.ones(3, 3), np.ones(3)),
     TypeError, (r"loss_to_step must be a NumPy array of shape \(time, time\), got a float32 "
                 r"tensor|loss_to_step must be a NumPy array of shape \(time, time\), got Tensor")),
    ("plot_matrix_powers", lambda: plots.plot_matrix_powers(np.array([1.0, np.nan]), 0.9, 2.0),
     ValueError, "norms must hold finite numbers, got 1 NaN and 0 inf"),
    ("plot_matrix_powers", lambda: plots.plot_matrix_powers(ARRAY, "0.9", 2.0),
     TypeError, "spectral_radius must be a number, got str '0.9'"),
    ("plot_regimes", lambda: plots.plot_regimes({}),
     ValueError, r"profiles is empty: it must map \(nonlinearity, s\) to ratios"),
    ("plot_regimes", lambda: plots.plot_regimes({1.0: DRAWS}),
     TypeError, r"profiles keys must be pairs \(nonlinearity, s\), got 1.0"),
    ("plot_regimes", lambda: plots.plot_regimes({("tanh", 1.0): ARRAY}),
     ValueError, r"profiles\[\('tanh', 1.0\)\] must have shape \(draws, time\)"),
    ("plot_input_scales",
     lambda: plots.plot_input_scales({1.0: DRAWS}, 2.0, {3.0: ARRAY}),
     ValueError, r"derivatives has keys \[3.0\] that profiles lacks"),
    ("plot_input_scales",
     lambda: plots.plot_input_scales({1.0: DRAWS, 3.0: DRAWS[:, :4]}, 2.0, {1.0: ARRAY}),
     ValueError, r"profiles\[3.0\] must have 5 entries along axis 1"),
    ("plot_cliff",
     lambda: clipping_plots.plot_cliff(ARRAY, ARRAY[:3], np.ones((5, 4)), {"a": np.ones((2, 2))},
                                       {"a": np.ones(2)}),
     ValueError, (r"loss must have 3 entries along axis 1, got a float64 array of shape "
                  r"\(5, 4\)")),
    ("plot_cliff",
     lambda: clipping_plots.plot_cliff(ARRAY, ARRAY, np.ones((5, 5)), {"a": np.ones((3, 2))},
                                       {"a": np.ones(2)}),
     ValueError, r"losses\['a'\] must have 3 entries along axis 0"),
    ("plot_cliff",
     lambda: clipping_plots.plot_cliff(ARRAY, ARRAY, np.ones((5, 5)),
                                       {k: np.ones((2, 2)) for k in "abc"},
                                       {k: np.ones(2) for k in "abc"}),
     ValueError, "points has 3 entries, but the figure draws at most 2"),
    ("plot_clipping_runs",
     lambda: clipping_plots.plot_clipping_runs({"a": (np.ones((2, 5)), np.ones((2, 4)))}, 1.0,
                                               0.1),
     ValueError, r"runs\['a'\]: losses \(2, 5\) and grad_norms \(2, 4\) must have one shape"),
    ("plot_clipping_runs",
     lambda: clipping_plots.plot_clipping_runs({"a": (np.ones((2, 5)), np.ones((2, 5)))}, -1.0,
                                               0.1),
     ValueError, "threshold must be positive and finite, got -1.0"),
    ("plot_clipping_runs",
     lambda: clipping_plots.plot_clipping_runs({"a": np.ones((2, 5))}, 1.0, 0.1),
     TypeError, r"runs\['a'\] must be a pair \(losses, grad_norms\), got a float64 array"),
    ("plot_mean_field",
     lambda: plots.plot_mean_field(ARRAY, ARRAY[:4], ARRAY, np.ones((5, 2)), 1.5, (0, 2)),
     ValueError, r"predicted must have 5 entries along axis 0"),
    ("plot_mean_field",
     lambda: plots.plot_mean_field(ARRAY, ARRAY, ARRAY, np.ones((5, 2)), math.nan, (0, 2)),
     ValueError, "onset must be finite, got nan"),
    ("plot_mean_field",
     lambda: plots.plot_mean_field(ARRAY, ARRAY, ARRAY, np.ones((5, 2)), 1.5, (3, 2)),
     ValueError, r"zoom must be \(low, high\) with low < high around some of the scales"),
    ("plot_parity",
     lambda: eigenvalue_plots.plot_parity([20, 100], {"a": np.ones((3, 3))}, 20),
     ValueError, r"accuracies\['a'\] must have 2 entries along axis 1"),
    ("plot_parity",
     lambda: eigenvalue_plots.plot_parity([20, 100], {"a": np.ones((3, 2))}, 0),
     ValueError, "training_length must be positive and finite, got 0"),
    ("plot_lru",
     lambda: eigenvalue_plots.plot_lru({"a": (np.ones((4, 2)), np.ones((4, 2)))},
                                       np.array([0.5, 1.0]), {"b": (np.ones(2), np.ones(2))}),
     ValueError, r"modulus must lie in \[0, 1\)"),
    ("plot_lru",
     lambda: eigenvalue_plots.plot_lru({"a": (np.ones((4, 2)), np.ones((4, 2)))},
                                       np.array([0.5, 0.9]), {"b": np.ones(2)}),
     TypeError, r"scales\['b'\] must be a pair \(measured, predicted\)"),
    # Chapter 5: the article's model, the stacks at initialisation, the depth sweep, induction
    ("count_text", lambda: mini_transformer.count_text("3/10"),
     TypeError, "counted must be a Count"),
    ("count_word", lambda: mini_transformer.count_word(3), TypeError, "counted must be a Count"),
    ("spread_text", lambda: mini_transformer.spread_text((1, 2, 3)),
     TypeError, "values must be a Spread"),
    ("token_position_norm_ratio",
     lambda: mini_transformer.token_position_norm_ratio(nn.Embedding(3, 4), 0.0, 8),
     ValueError, "scale must be a positive finite number"),
    ("swamping_ratios", lambda: mini_transformer.swamping_ratios(seeds=(-1,)),
     ValueError, r"seeds\[0\] must be at least 0"),
    ("LastPosition", lambda: mini_transformer.LastPosition("model"),
     TypeError, "model must be a torch.nn.Module"),
    ("scaled_embedding_classifier",
     lambda: mini_transformer.scaled_embedding_classifier(True, 0),
     ValueError, "distance must be at least 1"),
    ("first_softmax", lambda: mini_transformer.first_softmax(nn.Linear(2, 2), None),
     TypeError, "model must be a LastPosition"),
    ("swamped_recall", lambda: mini_transformer.swamped_recall(budget="b"),
     TypeError, "budget must be a KeyRecallBudget"),
    ("future_gradients", lambda: mini_transformer.future_gradients(position=-1),
     ValueError, "position must be at least 0"),
    ("article_noise_fit", lambda: mini_transformer.article_noise_fit([], 5),
     TypeError, "models must be a non-empty list"),
    ("logits_and_stream", lambda: init_gradients.logits_and_stream(nn.Linear(2, 2), None),
     TypeError, "model must be a NextTokenModel"),
    ("LogitsAndStream", lambda: init_gradients.LogitsAndStream(nn.Linear(2, 2))(None),
     TypeError, "model must be a NextTokenModel"),
    ("gradient_draws", lambda: init_gradients.gradient_draws(2, False, length=0),
     ValueError, "length must be at least 1"),
    ("gradient_profiles", lambda: init_gradients.gradient_profiles((4,), seeds=()),
     ValueError, "seeds must hold at least 1"),
    ("profile_point", lambda: init_gradients.profile_point(0, False, (0,), 8, False),
     ValueError, "depth must be at least 1"),
    ("mean_warmup_rate", lambda: warmup.mean_warmup_rate(0.1, 3, 0),
     ValueError, "steps must be at least 1"),
    ("depth_sweep", lambda: warmup.depth_sweep((1,), 1e-3, 0, 2, 4, seeds=()),
     ValueError, "seeds must name at least one seed"),
    ("check_labels", lambda: warmup.check_labels(("Post-LN, warm",)),
     ValueError, "labels must be among"),
    ("depth_sweep_run",
     lambda: warmup.depth_sweep_run(("Post-LN", "Pre-LN"), 1, None, 3, 2, (0,), 0),
     ValueError, "labels must share one layer order"),
    ("count_series", lambda: warmup.count_series({1: (3, 10)}),
     TypeError, r"counts\[1\] must be a Count"),
    ("induction_model", lambda: induction.induction_model(1.5),
     TypeError, "num_layers must be an int"),
    ("attention_maps", lambda: induction.attention_maps(nn.Linear(2, 2), None),
     TypeError, "model must be a NextTokenModel"),
    ("head_scores", lambda: induction.head_scores(torch.zeros(1, 1, 1, 3, 2), torch.zeros(1, 3)),
     ValueError, "maps must be square in time"),
    ("train_induction", lambda: induction.train_induction(0),
     ValueError, "num_layers must be at least 1"),
    ("held_out_measures", lambda: induction.held_out_measures(nn.Linear(2, 2), make_batch, 0, 1),
     TypeError, "model must be a NextTokenModel"),
    ("induction_runs", lambda: induction.induction_runs(()),
     ValueError, "labels must be among"),
    ("copy_loss_at", lambda: induction.copy_loss_at(None, 5), TypeError, "run must be"),
    ("plateau_and_drop", lambda: induction.plateau_and_drop(None, 2.0, 1.0),
     TypeError, "run must be"),
    ("closed_for_display", lambda: style.closed_for_display(None),
     TypeError, "fig must be a matplotlib.figure.Figure, got NoneType"),
    ("seed_everything", lambda: book.seed_everything(-1),
     ValueError, r"seed must be at least 0, got -1"),
    ("reproducible", lambda: book.reproducible(threads=1.5),
     TypeError, "threads must be an int, got float 1.5"),
    ("use_deterministic_algorithms", lambda: book.use_deterministic_algorithms(1),
     TypeError, "mode must be a bool, got int"),
    ("power_of_ten_above", lambda: book.power_of_ten_above(math.inf),
     ValueError, "value must be finite, got inf"),
    ("power_of_ten_above", lambda: book.power_of_ten_above("1e-3"),
     TypeError, "value must be a real number, got str"),
    ("significant", lambda: book.significant(1.0, 2.0),
     TypeError, "digits must be an int, got float 2.0"),
    ("significant", lambda: book.significant(None, 2),
     TypeError, "value must be a real number, got NoneType"),
    ("chapter_glue", lambda: book.chapter_glue(2),
     ValueError, "prefix must be an identifier such as 'ch2', got 2"),
    ("Table", lambda: book.Table("ab", [["1", "2"]]),
     TypeError, "header must be a list or tuple, got str"),
    ("Table", lambda: book.Table(["a", "b"], [["1", "2"], ["3"]]),
     ValueError, r"every row needs one cell per column \(2\): rows \[1\] have \[1\]"),
    ("Table", lambda: book.Table([("a", None)], [["1"]]),
     TypeError, "zh must be a str, got NoneType None"),
    # the bilingual outputs (tests/test_bilingual.py tests what they show)
    ("Bilingual", lambda: book.Bilingual("a", 1), TypeError, "zh must be a str, got int 1"),
    ("bilingual", lambda: book.bilingual(True),
     TypeError, r"a bilingual text must be a str, a number, an \(en, zh\) pair or a Bilingual"),
    ("show", lambda: book.show(), ValueError, "show needs at least one line"),
    ("BilingualFigure", lambda: book.BilingualFigure({"en": (b"", "a")}),
     ValueError, r"drawings must map each of \['en', 'zh'\] to \(PNG, alt text\)"),
    ("BilingualFigure", lambda: book.BilingualFigure({"en": (b"", "a"), "zh": ("", "b")}),
     TypeError, r"drawings\['zh'\] must be a pair \(PNG bytes, alt text\)"),
    ("words", lambda: style.words("norm", None), TypeError, "zh must be a str"),
    ("joined", lambda: style.joined([1, 2]), TypeError, "items must be an iterable of str"),
    ("spaced", lambda: style.spaced(None), TypeError, "text must be a str"),
    ("localised", lambda: style.localised(3),
     TypeError, "a label must be a str or have str attributes en and zh"),
    ("in_language", lambda: style.in_language("fr").__enter__(),
     ValueError, "language must be 'en' or 'zh', got 'fr'"),
    ("alt_text", lambda: style.alt_text(style.closed_for_display(closed_figure())),
     ValueError, "the figure has no alt text"),
    ("png", lambda: style.png("figure.png"),
     TypeError, "fig must be a matplotlib.figure.Figure, got str"),
    ("both_languages", lambda: style.both_languages("plot_bptt_contributions"),
     TypeError, "plot must be a plotting function, got str"),
    # Chapter 4: what attention knows about order, gradient against distance, deep stacks
    ("permutation_errors", lambda: order.permutation_errors(abs, torch.zeros(3, 2),
                                                            torch.arange(3)),
     ValueError, r"x must be a tensor of shape \(batch, time, features\)"),
    ("permutation_errors", lambda: order.permutation_errors(abs, torch.zeros(1, 3, 2),
                                                            torch.tensor([0, 0, 1])),
     ValueError, r"permutation must reorder 0 \.\. 2"),
    ("order_errors", lambda: order.order_errors(seeds=[-1]),
     ValueError, r"seeds\[0\] must be at least 0, got -1"),
    ("order_errors", lambda: order.order_errors(steps=1),
     ValueError, "steps must be at least 2, got 1"),
    ("causal_output_spread", lambda: order.causal_output_spread(batch=1),
     ValueError, "batch must be at least 2, got 1"),
    ("chapter_model", lambda: distance.chapter_model("GRU", 8, 2, 1, 10),
     ValueError, r"name must be one of \['causal Transformer'"),
    ("distance_profiles", lambda: distance.distance_profiles(lengths=(1,)),
     ValueError, r"lengths\[0\] must be at least 2, got 1"),
    ("constant_gate_attention", lambda: distance.constant_gate_attention(8, 2, [0.9]),
     ValueError, r"gates must hold num_heads = 2 gates in \(0, 1\], got \[0.9\]"),
    ("constant_gate_attention", lambda: distance.constant_gate_attention(8, 2, [0.0, 1.5]),
     ValueError, r"gates must be forget gates in \(0, 1\]"),
    ("alibi_attention", lambda: distance.alibi_attention(torch.nn.Linear(2, 2),
                                                         torch.zeros(1, 2, 2),
                                                         torch.ones(1)),
     TypeError, "layer must be a ForgettingAttention, got Linear"),
    ("alibi_differences", lambda: distance.alibi_differences(steps=1),
     ValueError, "steps must be at least 2, got 1"),
    ("gate_profiles", lambda: distance.gate_profiles(0.9),
     TypeError, "gates must be a non-empty list of forget gates, got float 0.9"),
    ("skip_path_jacobians", lambda: depth.skip_path_jacobians(2, 8, 2, 16, True, False,
                                                              seeds=[0], length=0),
     ValueError, "length must be at least 1, got 0"),
    ("layer_gradient_profile", lambda: depth.layer_gradient_profile(0, 8, True, False, False),
     ValueError, "depth must be at least 1, got 0"),
    ("layer_gradient_profiles", lambda: depth.layer_gradient_profiles(4, 16),
     TypeError, "widths must be a list of ints, got int 16"),
    ("attention_stack", lambda: depth.attention_stack("Mid-LN", 2, 8, 2),
     ValueError, r"variant must be one of \['attention only'"),
    ("stack_outputs", lambda: next(depth.stack_outputs("Pre-LN", [1], torch.zeros(1, 2, 8))),
     TypeError, "layers must be the nn.ModuleList of \\(attention, norm\\) pairs"),
    ("mean_token_cosine", lambda: depth.mean_token_cosine(torch.zeros(2, 3, 4)),
     ValueError, r"x must have shape \(1, time, features\) with time >= 2"),
    ("token_cosines", lambda: depth.token_cosines("Pre-LN", [0]),
     ValueError, r"depths\[0\] must be at least 1, got 0"),
    ("scores", lambda: softmax_fading.scores(1),
     ValueError, "length must be at least 2, got 1"),
    ("planted_weights", lambda: softmax_fading.planted_weights([16], scale=math.inf),
     ValueError, "scale must be finite, got inf"),
    ("predicted_weight", lambda: softmax_fading.predicted_weight(1),
     ValueError, "length must be at least 2, got 1"),
    # Chapter 6, "One recurrence for every model" and "How a state is written"
    ("form_differences", lambda: recurrences.form_differences(features=6),
     ValueError, "features must be a multiple of twelve, got features=6"),
    ("form_differences", lambda: recurrences.form_differences(steps=0),
     ValueError, "steps must be at least 1, got 0"),
    ("recurrence_table", lambda: recurrences.recurrence_table({"minGRU": 0.0}),
     ValueError, r"differences lacks the rows \['linear attention'"),
    ("recurrence_table", lambda: recurrences.recurrence_table([0.0]),
     TypeError, "differences must be a dict from form_differences, got list"),
    ("gradient_ratio_draws", lambda: recurrences.gradient_ratio_draws(["Mamba"]),
     ValueError, "names must be models of the registry, got 'Mamba'"),
    ("gradient_ratio_draws", lambda: recurrences.gradient_ratio_draws(steps=1),
     ValueError, "steps must be at least 2, got 1"),
    ("keep_product_ratios", lambda: recurrences.keep_product_ratios("GRU"),
     ValueError, "name must be 'minGRU' or 'minGRU, keep bias', got 'GRU'"),
    ("keep_product_ratios", lambda: recurrences.keep_product_ratios(draws=0),
     ValueError, "draws must be at least 1, got 0"),
    ("per_step_factors", lambda: recurrences.per_step_factors(torch.ones(2, 10), fit=(5, 3)),
     ValueError, r"fit\[1\] must be at least 6, got 3"),
    ("per_step_factors", lambda: recurrences.per_step_factors(torch.ones(10)),
     ValueError, r"ratios must have shape \(networks, time\)"),
    ("write_recall", lambda: state_writes.write_recall("hebbian", 4, True),
     ValueError, r"write must be one of \['delta', 'additive'\], got 'hebbian'"),
    ("write_recall", lambda: state_writes.write_recall("delta", 4, 1),
     TypeError, "reassigned must be True or False, got int 1"),
    ("write_recall", lambda: state_writes.write_recall("delta", 4, True, beta=math.nan),
     ValueError, "beta must be finite, got nan"),
    ("write_recall_grid", lambda: state_writes.write_recall_grid([8, 0]),
     ValueError, r"key_counts\[1\] must be at least 1, got 0"),
    ("pair_recall_runs", lambda: state_writes.pair_recall_runs("LSTM", "distinct", 2),
     ValueError, "name must be a mixer model of the registry, got 'LSTM'"),
    ("pair_recall_runs", lambda: state_writes.pair_recall_runs("DeltaNet", "shuffled", 2),
     ValueError, r"task must be one of \['distinct', 'reassigned'\], got 'shuffled'"),
    ("pair_recall_runs", lambda: state_writes.pair_recall_runs("DeltaNet", "distinct", 17),
     ValueError, r"pairs must be in \[1, 16\], got 17"),
    ("pair_recall_grid", lambda: state_writes.pair_recall_grid(["DeltaNet"], 2),
     TypeError, "runs must be a non-empty list of \\(model, task\\) pairs, got list"),
    ("pair_recall_table", lambda: state_writes.pair_recall_table({}, 0.9),
     TypeError, "runs must be a non-empty dict of PairRecallRuns, got dict"),
    ("pair_recall_table", lambda: state_writes.pair_recall_table(RUNS, 1.5),
     ValueError, r"solved must be in \[0, 1\], got 1.5"),
    ("plot_recurrence_gradients",
     lambda: recurrence_plots.plot_recurrence_gradients({"a": np.ones((2, 5))},
                                                        {"b": np.ones((2, 5))}, 2),
     ValueError, r"products has keys \['b'\] that ratios lacks"),
    ("plot_recurrence_gradients",
     lambda: recurrence_plots.plot_recurrence_gradients({"a": np.ones((2, 5))}, {}, 5),
     ValueError, r"distance must be an int in \[1, 4\], got 5"),
    ("plot_write_rules", lambda: recurrence_plots.plot_write_rules([8, 16], {}, 32),
     ValueError, r"recalls must map each of"),
    ("plot_write_rules",
     lambda: recurrence_plots.plot_write_rules([8, 16], WRITE_RECALLS, 0),
     ValueError, "key_size must be a positive int, got 0"),
]


@pytest.mark.parametrize("entry, call, error, message", BAD_INPUTS,
                         ids=[f"{row[0]}-{i}" for i, row in enumerate(BAD_INPUTS)])
def test_bad_input_gets_a_clear_error(entry, call, error, message):
    with pytest.raises(error, match=message):
        call()
    plt.close("all")


ENTRY_POINTS = {
    rnn: ["default_recurrent_spectrum", "loss_term_state_gradients", "double_sum_terms",
          "truncation_errors", "bptt_at_initialisation"],
    vanishing: ["check_non_negative", "check_square", "check_fit", "orthogonal_matrix",
                "scaled_orthogonal", "rnn_with_recurrent_matrix", "probe_networks",
                "fitted_rates", "step_factor_norms", "masked_product_norms"],
    mean_field: ["mean_field_fixed_point", "predicted_rate", "growth_onset", "measured_rates"],
    eigenvalues: ["parity_classifier", "token_transitions", "train_parity", "parity_logits",
                  "parity_accuracies", "check_lru", "lru_gradient_moduli", "lru_state_scale"],
    clipping: ["cliff_final_state", "cliff_loss", "cliff_descent",
               "classifier_with_recurrent_gain", "train_settings"],
    rnn_plots: ["plot_bptt_contributions"],
    plots: ["plot_matrix_powers", "plot_regimes", "plot_input_scales", "plot_mean_field"],
    clipping_plots: ["plot_cliff", "plot_clipping_runs"],
    eigenvalue_plots: ["plot_parity", "plot_lru"],
    recurrences: ["form_differences", "recurrence_table", "gradient_ratio_draws",
                  "keep_product_ratios", "per_step_factors"],
    state_writes: ["write_recall", "write_recall_grid", "pair_recall_runs", "pair_recall_grid",
                   "pair_recall_table"],
    recurrence_plots: ["plot_recurrence_gradients", "plot_write_rules"],
    style: ["closed_for_display", "words", "joined", "spaced", "localised", "in_language",
            "alt_text", "png", "both_languages"],
    order: ["permutation_errors", "order_errors", "causal_output_spread"],
    distance: ["chapter_model", "distance_profiles", "constant_gate_attention", "alibi_attention",
               "alibi_differences", "gate_profiles"],
    depth: ["skip_path_jacobians", "layer_gradient_profile", "layer_gradient_profiles",
            "attention_stack", "stack_outputs", "mean_token_cosine", "token_cosines"],
    softmax_fading: ["scores", "planted_weights", "predicted_weight"],
    mini_transformer: ["count_text", "count_word", "spread_text", "token_position_norm_ratio",
                       "swamping_ratios", "LastPosition", "scaled_embedding_classifier",
                       "first_softmax", "swamped_recall", "future_gradients",
                       "article_noise_fit"],
    init_gradients: ["logits_and_stream", "LogitsAndStream", "gradient_draws",
                     "gradient_profiles", "profile_point"],
    warmup: ["mean_warmup_rate", "depth_sweep", "check_labels", "depth_sweep_run",
             "count_series"],
    induction: ["induction_model", "attention_maps", "head_scores", "train_induction",
                "held_out_measures", "induction_runs", "copy_loss_at", "plateau_and_drop"],
    book: ["seed_everything", "reproducible", "use_deterministic_algorithms",
           "power_of_ten_above", "significant", "chapter_glue", "Table", "Bilingual",
           "bilingual", "show", "BilingualFigure"],
}


def test_every_entry_point_taking_arguments_has_a_bad_input_row():
    tested = {row[0] for row in BAD_INPUTS}
    for module, names in ENTRY_POINTS.items():
        assert all(hasattr(module, name) for name in names)
        public = {name for name, value in vars(module).items()
                  if callable(value) and not name.startswith("_")
                  and getattr(value, "__module__", None) == module.__name__}
        # the result types (NamedTuples, the table row Recurrence), the style set-up and the
        # Chinese font's look-up (no arguments) take no input
        public -= {"DescentPath", "SeedRuns", "Cliff", "Probe", "ParityBudget", "Moduli",
                   "use_book_style", "share_parsed_mathtext", "chinese_font", "Recurrence",
                   "PairRecallRuns", "SwampedRecall", "Draws", "InductionBudget", "InductionRun"}
        assert public == set(names), f"{module.__name__}: {public ^ set(names)}"
        assert set(names) <= tested


def test_ordinary_inputs_still_work():
    spectrum = rnn.default_recurrent_spectrum({4: 1})
    assert len(spectrum[4]["sigma_max"]) == 1
    q = vanishing.orthogonal_matrix(3, torch.Generator().manual_seed(0))
    torch.testing.assert_close(q @ q.T, torch.eye(3, dtype=torch.float64))
    model, x = vanishing.rnn_with_recurrent_matrix(2 * q, steps=3, batch=2)
    assert x.shape == (2, 3, 3) and model.hidden_size == 3
    weights = vanishing.scaled_orthogonal(np.array([0.5, 1.0]), 3, 2)
    probe = vanishing.probe_networks(weights.flatten(0, 1), x)
    assert probe.ratios.shape == (4, 3)
    assert vanishing.fitted_rates(probe.ratios, (0, 2)).shape == (4,)
    assert vanishing.step_factor_norms(weights[0], probe.slopes[:2, :, 0]).shape == (2, 3)
    assert mean_field.predicted_rate(2.0, 0.0, "identity") == 2.0
    assert 0 < mean_field.mean_field_fixed_point(2.0, 1.0) < 1
    rates = mean_field.measured_rates(np.array([0.5, 1.0]), hidden=4, draws=1, burn_in=2,
                                      fit=(1, 4))
    assert rates.shape == (2, 1)
    assert vanishing.masked_product_norms(q, torch.ones(2, 3)).shape == (3,)
    assert vanishing.masked_product_norms(q, torch.ones(4, 2, 3)).shape == (4, 3)
    tiny = eigenvalues.ParityBudget(steps=1, batch=4, length=3, hidden=2, embedding_dim=2)
    models = eigenvalues.train_parity("positive", [0], tiny)
    assert eigenvalues.parity_accuracies(models, (3, 5), batch=4).shape == (1, 2)
    lru = LRU(1, 2).double()
    assert eigenvalues.lru_gradient_moduli(lru, 3).measured.shape == (3, 2)
    assert eigenvalues.lru_state_scale(lru, steps=3, batch=2).predicted.shape == (2,)
    assert clipping.cliff_final_state(torch.tensor(1.0), torch.tensor(0.0), steps=2).dim() == 0
    path = clipping.cliff_descent([1.0, 0.0], 0.01, 2, threshold=1.0)
    assert path.points.shape == (3, 2)
    runs = clipping.train_settings({"a": (0.1, 1.0), "b": (0.1, None)}, 2.0, 2, make_batch,
                                   2, hidden_size=4)
    assert runs["a"].losses.shape == (2, 2)
    for fig in (
        rnn_plots.plot_bptt_contributions(np.tril(np.ones((3, 3))), np.ones(3)),
        plots.plot_matrix_powers(ARRAY, 0.9, 2.0),
        plots.plot_regimes({("tanh", 1.0): DRAWS,
                            ("tanh", 2.0): np.append(DRAWS[:, :4], np.full((3, 1), np.inf), 1)}),
        plots.plot_input_scales({1.0: DRAWS, 3.0: DRAWS}, 2.0, {1.0: np.full((2, 3), 0.5)}),
        clipping_plots.plot_cliff(np.arange(5.0), np.arange(4.0), np.ones((5, 4)),
                                  {"a": np.ones((2, 2))}, {"a": [1.0, 2.0]}),
        clipping_plots.plot_clipping_runs(
            {"a": (np.ones((3, 5)), np.arange(1.0, 16.0).reshape(3, 5))}, 1.0, 0.1),
        plots.plot_mean_field(np.arange(5.0), ARRAY, np.array([1, 2]), np.ones((2, 3)), 1.5,
                              (0.5, 2.5)),
        eigenvalue_plots.plot_parity([20, 100], {"a": np.full((3, 2), 0.5)}, 20),
        eigenvalue_plots.plot_lru({"a": (np.ones((4, 2)), np.ones((4, 2)))},
                                  np.array([0.5, 0.9]), {"b": (np.ones(2), np.ones(2))}),
        style.closed_for_display(closed_figure()),
        recurrence_plots.plot_recurrence_gradients({"a": np.ones((2, 5))},
                                                   {"a": np.ones((2, 5))}, 2),
        recurrence_plots.plot_write_rules([8, 16], WRITE_RECALLS, 32),
    ):
        assert isinstance(fig, matplotlib.figure.Figure)
    assert book.power_of_ten_above(np.float32(0.003)) == pytest.approx(0.01)
    assert book.power_of_ten_above(torch.tensor(20.0)) == 100.0
    assert book.significant(np.float64(math.pi), 3) == 3.14 and math.isnan(
        book.significant(math.nan, 2))
    assert "<td>1</td>" in book.Table(("a",), [(1,)])._repr_html_()
    book.reproducible(seed=np.int64(3))

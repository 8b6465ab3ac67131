"""Bad input to an experiment driver, a figure or a page helper gets a clear error naming the
argument (issue 16); ordinary input still works. The models' and probes' own checks are in
tests/test_model_inputs.py."""

import math

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from longdep import book
from longdep.experiments import (
    attention_costs,
    clipping,
    mqar,
    rnn,
    summary,
    summary_recall,
    vanishing,
)
from longdep.models.heads import PairRecallClassifier
from longdep.plots import rnn as rnn_plots
from longdep.plots import style
from longdep.plots import vanishing as plots
from longdep.tasks import key_recall_batch


def make_batch(generator):
    return key_recall_batch(4, 3, generator=generator)


def small_models(count=2):
    return [clipping.classifier_with_recurrent_gain(2.0, hidden_size=4, seed=s)
            for s in range(count)]


def closed_figure():
    return plt.subplots()[0]


ARRAY = np.ones(5)

# (entry point, call, exception, message pattern): one row per entry point at least
BAD_INPUTS = [
    ("default_recurrent_spectrum", lambda: rnn.default_recurrent_spectrum({16: 0}),
     ValueError, r"seeds_per_size\[16\] must be at least 1, got 0"),
    ("default_recurrent_spectrum", lambda: rnn.default_recurrent_spectrum([16]),
     ValueError, "seeds_per_size must be a non-empty dict hidden size -> seeds, got list"),
    ("orthogonal_matrix", lambda: vanishing.orthogonal_matrix(3, generator=0),
     TypeError, "generator must be None or a torch.Generator, got int 0"),
    ("orthogonal_matrix", lambda: vanishing.orthogonal_matrix(2.5),
     TypeError, "size must be an int, got float 2.5"),
    ("rnn_with_recurrent_matrix",
     lambda: vanishing.rnn_with_recurrent_matrix(torch.eye(3), batch=0),
     ValueError, "batch must be at least 1, got 0"),
    ("rnn_with_recurrent_matrix", lambda: vanishing.rnn_with_recurrent_matrix(np.eye(3)),
     TypeError, r"weight_hh must be a torch.Tensor of shape \(hidden, hidden\), got ndarray"),
    ("mean_field_fixed_point", lambda: vanishing.mean_field_fixed_point(1.0, math.nan),
     ValueError, "sigma_x must be finite, got nan"),
    ("mean_field_fixed_point", lambda: vanishing.mean_field_fixed_point(1.0, 1.0, "relu"),
     ValueError, r"activation must be one of \['tanh', 'identity'\], got 'relu'"),
    ("predicted_rate", lambda: vanishing.predicted_rate(-1.0, 1.0),
     ValueError, "s must be non-negative, got -1.0"),
    ("measured_rates", lambda: vanishing.measured_rates([]),
     ValueError, "scales must be a non-empty sequence of gains s, got list"),
    ("measured_rates", lambda: vanishing.measured_rates([1.0], draws=0),
     ValueError, "draws must be at least 1, got 0"),
    ("growth_onset", lambda: vanishing.growth_onset(1.0, low=3.0, high=2.0),
     ValueError, "need low < high and tolerance > 0, got low = 3.0, high = 2.0"),
    ("masked_product_norms",
     lambda: vanishing.masked_product_norms(torch.eye(3), torch.ones(4, 2)),
     ValueError, r"masks must have shape \(steps, 3\), got a float32 tensor of shape \(4, 2\)"),
    ("masked_product_norms",
     lambda: vanishing.masked_product_norms(torch.ones(2, 3), torch.ones(4, 3)),
     ValueError, r"matrix must be square, of shape \(units, units\)"),
    ("fitted_rates", lambda: vanishing.fitted_rates(torch.eye(3)),
     ValueError, (r"weights must have shape \(networks, n, n\), got a float32 tensor of "
                  r"shape \(3, 3\)")),
    ("fitted_rates", lambda: vanishing.fitted_rates(torch.eye(3)[None], fit=(10, 5)),
     ValueError, r"fit\[1\] must be at least 11, got 5"),
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
    ("plot_regimes", lambda: plots.plot_regimes({1.0: ARRAY}),
     TypeError, r"profiles keys must be pairs \(nonlinearity, s\), got 1.0"),
    ("plot_input_scales",
     lambda: plots.plot_input_scales({1.0: ARRAY}, 2.0, {3.0: ARRAY}),
     ValueError, r"derivatives has keys \[3.0\] that profiles lacks"),
    ("plot_input_scales",
     lambda: plots.plot_input_scales({1.0: ARRAY, 3.0: ARRAY[:4]}, 2.0, {1.0: ARRAY}),
     ValueError, r"profiles\[3.0\] must have 5 entries along axis 0"),
    ("plot_cliff",
     lambda: plots.plot_cliff(ARRAY, ARRAY[:3], np.ones((5, 4)), {"a": np.ones((2, 2))},
                              {"a": np.ones(2)}),
     ValueError, (r"loss must have 3 entries along axis 1, got a float64 array of shape "
                  r"\(5, 4\)")),
    ("plot_cliff",
     lambda: plots.plot_cliff(ARRAY, ARRAY, np.ones((5, 5)), {"a": np.ones((3, 2))},
                              {"a": np.ones(2)}),
     ValueError, r"losses\['a'\] must have 3 entries along axis 0"),
    ("plot_cliff",
     lambda: plots.plot_cliff(ARRAY, ARRAY, np.ones((5, 5)),
                              {k: np.ones((2, 2)) for k in "abc"},
                              {k: np.ones(2) for k in "abc"}),
     ValueError, "points has 3 entries, but the figure draws at most 2"),
    ("plot_clipping_runs",
     lambda: plots.plot_clipping_runs({"a": (np.ones((2, 5)), np.ones((2, 4)))}, 1.0),
     ValueError, r"runs\['a'\]: losses \(2, 5\) and grad_norms \(2, 4\) must have one shape"),
    ("plot_clipping_runs",
     lambda: plots.plot_clipping_runs({"a": (np.ones((2, 5)), np.ones((2, 5)))}, -1.0),
     ValueError, "threshold must be positive and finite, got -1.0"),
    ("plot_clipping_runs",
     lambda: plots.plot_clipping_runs({"a": np.ones((2, 5))}, 1.0),
     TypeError, r"runs\['a'\] must be a pair \(losses, grad_norms\), got a float64 array"),
    ("plot_mean_field",
     lambda: plots.plot_mean_field(ARRAY, ARRAY[:4], ARRAY, np.ones((5, 2)), 1.5),
     ValueError, r"predicted must have 5 entries along axis 0"),
    ("plot_mean_field",
     lambda: plots.plot_mean_field(ARRAY, ARRAY, ARRAY, np.ones((5, 2)), math.nan),
     ValueError, "onset must be finite, got nan"),
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
    # Chapter 6's drivers
    ("MQARSetting", lambda: mqar.MQARSetting(width=10, num_heads=4),
     ValueError, "num_heads must divide width"),
    ("kept_at", lambda: mqar.kept_at(-1, 2), ValueError, "step must be at least 0, got -1"),
    ("held_out_accuracies",
     lambda: mqar.held_out_accuracies(PairRecallClassifier(torch.nn.Identity(), 4, 4, 3), [],
                                      mqar.MQARSetting()),
     ValueError, r"parameters must hold one dict of parameters per seed \(10\)"),
    ("mqar_training", lambda: mqar.mqar_training("tanh RNN"),
     ValueError, "name must be one of"),
    ("mqar_runs", lambda: mqar.mqar_runs([("GRU", mqar.MQARSetting())]),
     ValueError, "name must be one of"),
    ("recall_counts", lambda: mqar.recall_counts(torch.ones(3)),
     ValueError, "accuracies must be a non-empty"),
    ("pairs_recalled", lambda: mqar.pairs_recalled([8, 4], torch.ones(2, 2)),
     ValueError, "pair_counts must be increasing"),
    ("recall_core", lambda: summary_recall.recall_core("GRU"), ValueError, "name must be one of"),
    ("key_recall_seed_accuracies", lambda: summary_recall.key_recall_seed_accuracies("LSTM", 0),
     ValueError, "distance must be at least 1, got 0"),
    ("key_recall_runs", lambda: summary_recall.key_recall_runs(["GRU"], 5),
     ValueError, "name must be one of"),
    ("key_out_of_reach", lambda: summary_recall.key_out_of_reach("LSTM", 0),
     ValueError, "distance must be at least 1"),
    ("verdict", lambda: summary_recall.verdict((3, 10)), TypeError, "counted must be a Count"),
    ("kind_name", lambda: attention_costs.kind_name("cubic"), ValueError, "kind must be one of"),
    ("attention_call", lambda: attention_costs.attention_call("softmax", 0),
     ValueError, "length must be at least 1"),
    ("fused_scratch_mib", lambda: attention_costs.fused_scratch_mib([]),
     ValueError, "lengths must hold at least 1 ints"),
    ("attention_costs", lambda: attention_costs.attention_costs("32"),
     TypeError, "lengths must be a list of ints"),
    ("attention_seconds", lambda: attention_costs.attention_seconds([8], repeats=0),
     ValueError, "repeats must be at least 1, got 0"),
    ("crossover_phrase", lambda: attention_costs.crossover_phrase([8], [1.0], [2.0]),
     ValueError, "lengths must hold at least 2 ints"),
    ("decoding_costs", lambda: attention_costs.decoding_costs([1, 4]),
     ValueError, r"lengths\[0\] must be at least 2, got 1"),
    ("kv_cache_bytes", lambda: attention_costs.kv_cache_bytes(1, 0, 8, 16),
     ValueError, "kv_heads must be at least 1, got 0"),
    ("kv_attention_flops", lambda: attention_costs.kv_attention_flops(0, 1, 8, 16),
     ValueError, "layers must be at least 1, got 0"),
    ("kind_of", lambda: summary.kind_of("GRU"), ValueError, "model must be one of"),
    ("layer_cost_exponent", lambda: summary.layer_cost_exponent("LSTM", [8]),
     ValueError, "lengths must hold at least 2 ints"),
    ("sequential_depths", lambda: summary.sequential_depths("GRU", [4]),
     ValueError, "model must be one of"),
    ("path_length", lambda: summary.path_length("LSTM", 1), ValueError, "steps must be at least 2"),
    ("gradient_ratios", lambda: summary.gradient_ratios("LSTM", 1),
     ValueError, "steps must be at least 2"),
    ("gradient_ratio_draws", lambda: summary.gradient_ratio_draws("LSTM", 4, draws=0),
     ValueError, "draws must be at least 1"),
    ("big_o", lambda: summary.big_o(2), TypeError, "label must be a str"),
    ("state_transition_factors", lambda: summary.state_transition_factors("LSTM", 1),
     ValueError, "steps must be at least 2"),
    ("gradient_path_factors", lambda: summary.gradient_path_factors("GRU", 12),
     ValueError, "model must be one of"),
    ("model_name", lambda: summary.model_name("GRU"), ValueError, "name must be one of"),
    ("counted_measures", lambda: summary.counted_measures("LSTM", [4], [8, 16], [16, 32]),
     ValueError, "lengths must hold at least 2 ints"),
    ("counted_measures_of",
     lambda: summary.counted_measures_of(["GRU"], [4, 8], [8, 16], [16, 32]),
     ValueError, "model must be one of"),
    ("cost_table", lambda: summary.cost_table({"a": "x"}, [4, 8], [4, 8]),
     TypeError, "measures must be a non-empty dict of ModelMeasures"),
    ("spread_text", lambda: summary.spread_text(0.5), TypeError, "values must be a Spread"),
    ("learning_table", lambda: summary.learning_table({"a": "x"}, 3, [1, 2]),
     TypeError, "measures must be a non-empty dict of LearningMeasures"),
]


@pytest.mark.parametrize("entry, call, error, message", BAD_INPUTS,
                         ids=[f"{row[0]}-{i}" for i, row in enumerate(BAD_INPUTS)])
def test_bad_input_gets_a_clear_error(entry, call, error, message):
    with pytest.raises(error, match=message):
        call()
    plt.close("all")


ENTRY_POINTS = {
    rnn: ["default_recurrent_spectrum"],
    vanishing: ["orthogonal_matrix", "rnn_with_recurrent_matrix", "mean_field_fixed_point",
                "predicted_rate", "measured_rates", "growth_onset", "masked_product_norms",
                "fitted_rates"],
    clipping: ["cliff_final_state", "cliff_loss", "cliff_descent",
               "classifier_with_recurrent_gain", "train_settings"],
    rnn_plots: ["plot_bptt_contributions"],
    plots: ["plot_matrix_powers", "plot_regimes", "plot_input_scales", "plot_cliff",
            "plot_clipping_runs", "plot_mean_field"],
    style: ["closed_for_display", "words", "joined", "spaced", "localised", "in_language",
            "alt_text", "png", "both_languages"],
    book: ["seed_everything", "reproducible", "use_deterministic_algorithms",
           "power_of_ten_above", "significant", "chapter_glue", "Table", "Bilingual",
           "bilingual", "show", "BilingualFigure"],
    mqar: ["MQARSetting", "kept_at", "held_out_accuracies", "mqar_training", "mqar_runs",
           "recall_counts", "pairs_recalled"],
    summary_recall: ["recall_core", "key_recall_seed_accuracies", "key_recall_runs",
                     "recall_counts", "key_out_of_reach", "verdict"],
    attention_costs: ["kind_name", "attention_call", "fused_scratch_mib", "attention_costs",
                      "attention_seconds", "crossover_phrase", "decoding_costs",
                      "kv_cache_bytes", "kv_attention_flops"],
    summary: ["kind_of", "layer_cost_exponent", "sequential_depths", "path_length",
              "gradient_ratios", "gradient_ratio_draws", "big_o", "state_transition_factors",
              "gradient_path_factors", "model_name", "counted_measures", "counted_measures_of",
              "cost_table", "spread_text", "learning_table"],
}


def test_every_entry_point_taking_arguments_has_a_bad_input_row():
    tested = {row[0] for row in BAD_INPUTS}
    for module, names in ENTRY_POINTS.items():
        assert all(hasattr(module, name) for name in names)
        public = {name for name, value in vars(module).items()
                  if callable(value) and not name.startswith("_")
                  and getattr(value, "__module__", None) == module.__name__}
        # the result types (NamedTuples), the style set-up and the Chinese font's look-up (no
        # arguments) take no input
        public -= {"DescentPath", "SeedRuns", "Cliff", "use_book_style", "share_parsed_mathtext",
                   "chinese_font", "MQARRun", "AttentionCosts", "DecodingCosts", "ModelMeasures",
                   "LearningMeasures"}
        assert public == set(names), f"{module.__name__}: {public ^ set(names)}"
        assert set(names) <= tested


def test_ordinary_inputs_still_work():
    spectrum = rnn.default_recurrent_spectrum({4: 1})
    assert len(spectrum[4]["sigma_max"]) == 1
    q = vanishing.orthogonal_matrix(3, torch.Generator().manual_seed(0))
    torch.testing.assert_close(q @ q.T, torch.eye(3, dtype=torch.float64))
    model, x = vanishing.rnn_with_recurrent_matrix(2 * q, steps=3, batch=2)
    assert x.shape == (2, 3, 4) and model.hidden_size == 3
    assert vanishing.predicted_rate(2.0, 0.0, "identity") == 2.0
    assert 0 < vanishing.mean_field_fixed_point(2.0, 1.0) < 1
    rates = vanishing.measured_rates(np.array([0.5, 1.0]), hidden=4, draws=1, burn_in=2,
                                     fit=(1, 4))
    assert rates.shape == (2, 1)
    assert vanishing.masked_product_norms(q, torch.ones(2, 3)).shape == (3,)
    assert clipping.cliff_final_state(torch.tensor(1.0), torch.tensor(0.0), steps=2).dim() == 0
    path = clipping.cliff_descent([1.0, 0.0], 0.01, 2, threshold=1.0)
    assert path.points.shape == (3, 2)
    runs = clipping.train_settings({"a": (0.1, 1.0), "b": (0.1, None)}, 2.0, 2, make_batch,
                                   2, hidden_size=4)
    assert runs["a"].losses.shape == (2, 2)
    for fig in (
        rnn_plots.plot_bptt_contributions(np.tril(np.ones((3, 3))), np.ones(3)),
        plots.plot_matrix_powers(ARRAY, 0.9, 2.0),
        plots.plot_regimes({("tanh", 1.0): ARRAY, ("tanh", 2.0): np.append(ARRAY[:4], np.inf)}),
        plots.plot_input_scales({1.0: ARRAY, 3.0: ARRAY}, 2.0, {1.0: np.full((2, 3), 0.5)}),
        plots.plot_cliff(np.arange(5.0), np.arange(4.0), np.ones((5, 4)),
                         {"a": np.ones((2, 2))}, {"a": [1.0, 2.0]}),
        plots.plot_clipping_runs({"a": (np.ones((3, 5)), np.arange(1.0, 16.0).reshape(3, 5))},
                                 1.0),
        plots.plot_mean_field(ARRAY, list(ARRAY), (1, 2), np.ones((2, 3)), 1.5),
        style.closed_for_display(closed_figure()),
    ):
        assert isinstance(fig, matplotlib.figure.Figure)
    assert book.power_of_ten_above(np.float32(0.003)) == pytest.approx(0.01)
    assert book.power_of_ten_above(torch.tensor(20.0)) == 100.0
    assert book.significant(np.float64(math.pi), 3) == 3.14 and math.isnan(
        book.significant(math.nan, 2))
    assert "<td>1</td>" in book.Table(("a",), [(1,)])._repr_html_()
    book.reproducible(seed=np.int64(3))

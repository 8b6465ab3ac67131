"""Chapter 5's figures check their arguments and draw what they are given."""

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
from longdep.experiments.warmup import count_series
from longdep.plots.style import alt_text
from longdep.plots.transformer import plot_depth_sweep, plot_ffn_gradient_profiles
from longdep.stats import Count


def profiles(scale=1.0):
    return {4: scale * np.linspace(1, 2, 4), 8: scale * np.linspace(1, 2, 8)}


def test_gradient_profiles_draw_every_initialisation_and_order():
    figure = plot_ffn_gradient_profiles({"default": (profiles(), profiles(0.5)),
                                         "Glorot": (profiles(2), profiles(0.25))})
    left, right = figure.axes[:2]
    labels = [line.get_label() for line in right.get_lines()]
    assert labels[:4] == ["Post-LN, default", "Pre-LN, default", "Post-LN, Glorot",
                          "Pre-LN, Glorot"]
    # the right panel's points are the last layers' norms
    np.testing.assert_allclose(right.get_lines()[3].get_ydata(), [0.5, 0.5])
    assert left.get_xlabel() and left.get_ylabel() and right.get_xlabel() and right.get_ylabel()


@pytest.mark.parametrize("inits, error, match", [
    ({}, TypeError, "inits"),
    ({"a": profiles()}, TypeError, "pair"),
    ({"a": (profiles(), {4: np.ones(3)})}, ValueError, "shape"),
    ({"a": (profiles(), {4: np.zeros(4), 8: np.ones(8)})}, ValueError, "positive"),
    ({"a": (profiles(), {4: np.ones(4)})}, ValueError, "same depths"),
])
def test_gradient_profiles_reject_bad_input(inits, error, match):
    with pytest.raises(error, match=match):
        plot_ffn_gradient_profiles(inits)


def series(trained=(10, 4, 0), depths=(1, 2, 6)):
    """One setting's counts of 10 seeds as longdep.experiments.warmup.count_series gives them."""
    return count_series({depth: Count(k, 10) for depth, k in zip(depths, trained)})


def test_depth_sweep_plots_the_trained_fraction_with_its_interval():
    figure = plot_depth_sweep({"Post-LN": series(), "control": series((0,), (6,))},
                              trained=0.5)
    ax = figure.axes[0]
    lines = [line for line in ax.get_lines() if len(line.get_xdata())]
    # the fractions, drawn once as the line and once as the markers (filled, then hollow)
    np.testing.assert_allclose(lines[0].get_ydata(), [1.0, 0.4, 0.0])
    hollow = [line for line in lines if line.get_fillstyle() == "none"]
    np.testing.assert_allclose(hollow[0].get_ydata(), [0.4])  # the count without a word
    assert not np.allclose(lines[0].get_xdata(), [1, 2, 6])  # shifted sideways
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert "Post-LN (10 seeds)" in labels and any("hollow" in label for label in labels)
    assert "Post-LN: 10/10 at 1, 4/10 at 2, 0/10 at 6; control: 0/10 at 6" in alt_text(figure)


@pytest.mark.parametrize("arguments, error, match", [
    (({},), TypeError, "series"),
    (({"a": {"depths": [1]}},), TypeError, "keys"),
    (({"a": {**series(), "low": [0.1]}},), ValueError, "3 entries"),
    (({"a": {**series(), "low": [0.9, 0.5, 0.0]}},), ValueError, "interval"),
    (({"a": series()}, 1.0), ValueError, "trained"),
])
def test_depth_sweep_plot_rejects_bad_input(arguments, error, match):
    with pytest.raises(error, match=match):
        plot_depth_sweep(*arguments)

"""Chapter 5's figures check their arguments and draw what they are given."""

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
from longdep.plots.transformer import plot_depth_sweep, plot_ffn_gradient_profiles


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


def test_depth_sweep_plots_the_trained_fraction():
    grid = np.array([[1.0, 1.0, 0.9, 1.0], [1.0, 0.1, 0.2, 0.9], [0.1, 0.1, 0.2, 0.1]])
    figure = plot_depth_sweep([1, 2, 6], {"Post-LN": grid}, trained=0.5)
    (line,) = figure.axes[0].get_lines()
    np.testing.assert_allclose(line.get_ydata(), [1.0, 0.5, 0.0])
    assert "4 seeds" in line.get_label()
    assert figure.axes[0].get_xlabel() and figure.axes[0].get_ylabel()


@pytest.mark.parametrize("depths, accuracies, trained, error, match", [
    ([], {"a": np.ones((0, 2))}, 0.5, ValueError, "depths"),
    ([1, 2], {}, 0.5, TypeError, "accuracies"),
    ([1, 2], {"a": np.ones((3, 2))}, 0.5, ValueError, "shape"),
    ([1, 2], {"a": np.ones((2, 2))}, 1.0, ValueError, "trained"),
])
def test_depth_sweep_plot_rejects_bad_input(depths, accuracies, trained, error, match):
    with pytest.raises(error, match=match):
        plot_depth_sweep(depths, accuracies, trained)

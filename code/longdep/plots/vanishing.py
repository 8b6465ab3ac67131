"""Chapter 2's figures: gradient ratios against distance on log axes, the cliff, clipping."""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import (
    check_array,
    check_array_mapping,
    check_array_pairs,
    check_keys,
    check_length,
    check_number,
)
from longdep.plots.style import _distance_axis, closed_for_display


def plot_matrix_powers(norms: np.ndarray, spectral_radius: float, sigma_max: float):
    """Chapter 2's non-normal matrix: ||W^k||_2 against k, beside rho^k and sigma_max^k."""
    check_array(norms, "norms", "(powers,)", 1)
    check_number("spectral_radius", spectral_radius, positive=True)
    check_number("sigma_max", sigma_max, positive=True)
    k = np.arange(len(norms))
    fig, ax = plt.subplots(layout="constrained")
    ax.plot(k, norms, marker="o", markersize=3, label=r"measured $\|W^k\|_2$")
    ax.plot(k, spectral_radius**k, "--", label=rf"$\rho^k$, $\rho$ = {spectral_radius:.2f}")
    ax.plot(k, sigma_max**k, ":",
            label=rf"$\sigma_{{\max}}^k$, $\sigma_{{\max}}$ = {sigma_max:.2f}")
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    ax.set_ylim(0.5 * min(norms.min(), spectral_radius ** k[-1]), 5 * norms.max())
    ax.set_yscale("log")
    ax.set_xlabel("power k (= steps of a linear RNN)")
    ax.set_ylabel(r"spectral norm $\|W^k\|_2$")
    ax.set_title(r"Powers of $W = [[0.9, 2], [0, 0.9]]$: growth before decay")
    ax.legend()
    return closed_for_display(fig)


def plot_regimes(profiles: dict[tuple[str, float], np.ndarray]):
    """Chapter 2, experiment (a): gradient ratio against distance for W_hh = s Q.

    profiles maps (nonlinearity, s) to the (time,) ratios ||dL/dh_(T-d)|| / ||dL/dh_T||; each
    panel draws one nonlinearity, the bound s^d dashed in the same colour as its measurement.
    """
    check_array_mapping(profiles, "profiles", "(nonlinearity, s) to ratios (time,)",
                        "(time,)", 1, allow_inf=True)
    for key in profiles:
        if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str)):
            raise TypeError(f"profiles keys must be pairs (nonlinearity, s), got {key!r}")
        check_number(f"s of profiles[{key!r}]", key[1])
    nonlinearities = list(dict.fromkeys(name for name, _ in profiles))
    fig, axes = plt.subplots(1, len(nonlinearities), figsize=(9.5, 3.8), sharey=True,
                             layout="constrained")
    axes = np.atleast_1d(axes)
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, name in zip(axes, nonlinearities):
        scales = [s for n, s in profiles if n == name]
        for colour, s in zip(colours, scales):
            ratios = profiles[name, s]
            d = np.arange(len(ratios))
            ax.plot(d, ratios, color=colour, label=f"s = {s:g}")
            ax.plot(d, float(s) ** d, "--", color=colour, linewidth=0.9, alpha=0.8)
        _distance_axis(ax, f"{name} RNN, $W_{{hh}} = sQ$")
    handles, labels = axes[0].get_legend_handles_labels()
    handles += [mpl.lines.Line2D([], [], color="0.3"),
                mpl.lines.Line2D([], [], color="0.3", linestyle="--")]
    labels += ["measured", "bound $s^d$"]
    fig.legend(handles, labels, loc="outside right center")
    return closed_for_display(fig)


def plot_input_scales(profiles: dict[float, np.ndarray], sigma_max: float,
                      derivatives: dict[float, np.ndarray]):
    """Chapter 2, experiments (b) and (c): one Gaussian W_hh, inputs of several scales.

    profiles maps an input scale to the (time,) gradient ratios by distance; derivatives maps it
    to the tanh'(a) values of every unit and step, whose histogram shows saturation.
    """
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    check_array_mapping(profiles, "profiles", "an input scale to ratios (time,)", "(time,)", 1,
                        allow_inf=True, most=len(colours))
    check_array_mapping(derivatives, "derivatives", "an input scale to tanh'(a) values",
                        "(...)", None)
    check_keys(derivatives, "derivatives", profiles, "profiles")
    check_number("sigma_max", sigma_max, positive=True)
    steps = len(next(iter(profiles.values())))
    for scale, ratios in profiles.items():
        check_length(ratios, f"profiles[{scale!r}]", steps)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.8), layout="constrained")
    measured = np.concatenate(list(profiles.values()))
    colour_of = dict(zip(profiles, colours))
    for scale, ratios in profiles.items():
        left.plot(np.arange(len(ratios)), ratios, color=colour_of[scale],
                  label=f"input scale {scale:g}")
    d = np.arange(len(measured) // len(profiles))
    left.plot(d, sigma_max**d, "k--", linewidth=0.9,
              label=rf"bound $\sigma_{{\max}}^d$ ($\sigma_{{\max}}$ = {sigma_max:.2f})")
    left.set_ylim(0.1 * measured.min(), 10 * measured.max())
    _distance_axis(left, "gradient ratio against distance")
    left.legend(fontsize=8)
    bins = np.linspace(0, 1, 41)
    for scale, values in derivatives.items():
        right.hist(values.ravel(), bins=bins, density=True, histtype="step", linewidth=1.5,
                   color=colour_of[scale], label=f"input scale {scale:g}")
    right.set_xlabel(r"$\tanh'(a)$ of a unit at a step (1 = linear, 0 = saturated)")
    right.set_ylabel("density")
    right.set_yscale("log")
    right.set_title("how saturated the units are")
    right.legend(fontsize=8)
    return closed_for_display(fig)


def plot_cliff(w: np.ndarray, b: np.ndarray, loss: np.ndarray, points: dict, losses: dict):
    """Chapter 2, the cliff: log10 of the loss over a (w, b) grid with gradient-descent paths
    (left) and the loss along each path (right).

    loss has shape (len(w), len(b)); points and losses map each path's label to its (w, b) before
    each step and after the last, (steps + 1, 2), and to the loss there, (steps + 1,).
    """
    check_array(w, "w", "(grid_w,)", 1)
    check_array(b, "b", "(grid_b,)", 1)
    check_array(loss, "loss", "(len(w), len(b))", 2, allow_inf=True)
    check_length(loss, "loss", len(w), 0)
    check_length(loss, "loss", len(b), 1)
    check_array_mapping(points, "points", "a label to (w, b) points (steps + 1, 2)",
                        "(steps + 1, 2)", 2, most=2)
    check_array_mapping(losses, "losses", "a label to losses (steps + 1,)", "(steps + 1,)", 1,
                        allow_inf=True)
    check_keys(points, "points", losses, "losses")
    for label, path_points in points.items():
        check_length(path_points, f"points[{label!r}]", 2, 1)
        check_length(losses[label], f"losses[{label!r}]", len(path_points))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), width_ratios=(1.25, 1),
                                      layout="constrained")
    image = left.pcolormesh(w, b, np.log10(loss).T, cmap="viridis", shading="auto",
                            rasterized=True)
    fig.colorbar(image, ax=left, label=r"$\log_{10}$ loss")
    colours = ["#D55E00", "black"]
    for colour, label in zip(colours, points):
        path_points = np.asarray(points[label])
        left.plot(path_points[:, 0], path_points[:, 1], ".-", color=colour, markersize=3,
                  linewidth=1, label=label)
        outside = ~((w[0] <= path_points[:, 0]) & (path_points[:, 0] <= w[-1])
                    & (b[0] <= path_points[:, 1]) & (path_points[:, 1] <= b[-1]))
        if outside.any():
            k = int(np.argmax(outside))
            w_k, b_k = path_points[k]
            text = f"step {k} jumps to\n(w, b) = ({w_k:.0f}, {b_k:.0f})"
            if outside[k:].all():
                text += "\nand never comes back"
            left.annotate(text, xy=path_points[k - 1], xytext=(0.55, 0.85),
                          textcoords="axes fraction",
                          color=colour, fontsize=8, arrowprops={"arrowstyle": "->", "color": colour},
                          bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
        right.plot(np.asarray(losses[label]), color=colour, label=label)
    left.plot(*np.asarray(next(iter(points.values())))[0], "*", color="white",
              markeredgecolor="black", markersize=12, label="start")
    left.set_xlim(w[0], w[-1])
    left.set_ylim(b[0], b[-1])
    left.set_xlabel("recurrent weight w")
    left.set_ylabel("bias b")
    left.set_title(r"loss $(x_{50} - 0.7)^2$ of $x_t = w\,\sigma(x_{t-1}) + b$")
    left.legend(loc="lower left", fontsize=8, facecolor="0.85", frameon=True)
    left.grid(False)
    right.set(yscale="log", xlabel="gradient-descent step", ylabel="loss",
              title="loss along each path")
    right.legend(fontsize=8)
    return closed_for_display(fig)


def plot_clipping_runs(runs: dict[str, tuple[np.ndarray, np.ndarray]], threshold: float):
    """Chapter 2, clipping in training: per-step loss (left) and gradient norm before clipping
    (right), one colour per setting: the median over seeds (line) and the range from the 10th to
    the 90th percentile (band). runs maps a label to (losses, grad_norms), each (seeds, steps)."""
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    check_array_pairs(runs, "runs", ("losses", "grad_norms"), "(seeds, steps)",
                      most=len(colours))
    check_number("threshold", threshold, positive=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for colour, (label, curves) in zip(colours, runs.items()):
        for ax, values in zip((left, right), curves):
            low, median, high = np.percentile(values, [10, 50, 90], axis=0)
            steps = np.arange(len(median))
            ax.fill_between(steps, low, high, color=colour, alpha=0.2, linewidth=0)
            ax.plot(steps, median, color=colour, linewidth=1.2, label=label)
    right.axhline(threshold, color="k", linestyle="--", linewidth=0.9,
                  label=f"threshold {threshold:g}")
    seeds = len(curves[0])
    left.set(yscale="log", xlabel="SGD step", ylabel="cross-entropy loss",
             title=f"training loss, {seeds} seeds per setting")
    right.set(yscale="log", xlabel="SGD step", ylabel="gradient norm before clipping",
              title="gradient norm")
    for ax in (left, right):
        ax.legend(fontsize=8)
    return closed_for_display(fig)


def plot_mean_field(s_grid: np.ndarray, predicted: np.ndarray, scales: np.ndarray,
                    measured: np.ndarray, onset: float):
    """Chapter 2, "The theory that predicts the measurement": the per-step rate of the
    gradient norm against s for W_hh = s Q. predicted is the (len(s_grid),) mean-field curve,
    measured is (len(scales), draws): one point per random Q, the mean of the draws marked."""
    check_array(s_grid, "s_grid", "(grid,)", 1)
    check_array(predicted, "predicted", "(len(s_grid),)", 1)
    check_length(predicted, "predicted", len(s_grid))
    check_array(scales, "scales", "(scales,)", 1)
    check_array(measured, "measured", "(len(scales), draws)", 2)
    check_length(measured, "measured", len(scales))
    check_number("onset", onset)
    fig, ax = plt.subplots(layout="constrained")
    ax.plot(s_grid, predicted, label=r"mean field $\sqrt{\chi}$")
    for k in range(measured.shape[1]):
        ax.plot(scales, measured[:, k], "o", color="C1", markersize=3, alpha=0.5,
                label="measured, one $Q$ each" if k == 0 else None)
    ax.plot(scales, measured.mean(axis=1), "x", color="C1", markersize=9,
            label="measured, mean")
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    ax.axvline(onset, color="C2", linestyle=":", label=f"predicted onset of growth, s = {onset:.2f}")
    ax.set_xlabel("recurrent gain s  ($W_{hh} = sQ$)")
    ax.set_ylabel("per-step rate of the gradient norm")
    ax.set_title("tanh RNN, inputs of unit scale: prediction against measurement")
    ax.legend()
    return closed_for_display(fig)

"""Chapter 4's figures: the score scale, path lengths, gradient over distance, residual paths."""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_curves
from longdep.plots.style import _plain_log_ticks, closed_for_display


def plot_score_scaling(widths, variances: dict[str, list[float]],
                       max_weights: dict[str, list[float]], jacobian_norms: dict[str, list[float]],
                       keys: int):
    """Chapter 4, "Why the 1/sqrt(d_k) scale": score variance and softmax saturation against d_k.

    variances, max_weights and jacobian_norms map "unscaled" and "scaled" to one value per width:
    the variance of the scores, the mean largest softmax weight and the mean Frobenius norm of the
    softmax Jacobian.
    """
    for name, curves in (("variances", variances), ("max_weights", max_weights),
                         ("jacobian_norms", jacobian_norms)):
        check_curves(name, curves, len(widths))
        if set(curves) != {"unscaled", "scaled"}:
            raise ValueError(f"{name} must map 'unscaled' and 'scaled', got {list(curves)}")
    if isinstance(keys, bool) or not isinstance(keys, int) or keys < 1:
        raise ValueError(f"keys must be a positive int, got {keys!r}")
    widths = np.asarray(widths)
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.4), layout="constrained")
    styles = {"unscaled": dict(marker="o", label=r"$q \cdot k$"),
              "scaled": dict(marker="s", label=r"$q \cdot k / \sqrt{d_k}$")}
    axes[0].plot(widths, widths, ":", color="0.4", label="$d_k$")
    for name, style in styles.items():
        axes[0].plot(widths, variances[name], **style)
        axes[1].plot(widths, max_weights[name], **style)
        axes[2].plot(widths, jacobian_norms[name], **style)
    axes[0].set(yscale="log", ylabel="variance of the score", title="score variance")
    axes[1].axhline(1 / keys, color="0.4", linestyle=":", label=f"uniform, 1/{keys}")
    axes[1].set(ylim=(0, 1.05), ylabel="mean largest weight", title="softmax saturation")
    axes[2].set(yscale="log", ylabel=r"mean $\|\mathrm{diag}(w) - w w^\top\|_F$",
                title="gradient through the softmax")
    for ax in axes:
        ax.set(xscale="log", xlabel="key width $d_k$")
        ax.legend()
    return closed_for_display(fig)


def plot_path_lengths(steps, measured: dict[str, list[int]], predicted: dict[str, list[int]],
                      flop_steps, flops: dict[str, list[int]], features: int):
    """Chapter 4, "Path length: Table 1, measured": fewest layers from the first input to the
    last output, and the FLOPs of one layer, against the sequence length n.

    measured and predicted map a layer kind to one layer count per length in ``steps``; flops
    maps a layer kind to one count per length in ``flop_steps`` at width ``features``.
    """
    check_curves("measured", measured, len(steps))
    check_curves("predicted", predicted, len(steps))
    check_curves("flops", flops, len(flop_steps))
    if not set(measured) <= set(predicted):
        raise ValueError(f"predicted must cover every kind of measured, got {list(predicted)} "
                         f"for {list(measured)}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    for colour, kind in zip(colours, measured):
        left.plot(steps, predicted[kind], color=colour, linewidth=1, alpha=0.7)
        left.plot(steps, measured[kind], "o", color=colour, label=kind)
    left.set(xscale="log", yscale="log", xlabel="sequence length n (positions)",
             ylabel="fewest layers", title="first input to last output")
    _plain_log_ticks(left, steps)
    left.legend(title="dots measured, lines predicted", fontsize=8, title_fontsize=8)
    for colour, (kind, counts) in zip(colours, flops.items()):
        right.plot(flop_steps, counts, marker="o", markersize=3, color=colour, label=kind)
    width = rf"$d_{{\mathrm{{model}}}}$ = {features}"
    right.axvline(features, color="0.4", linestyle=":", label=f"n = {width}")
    right.set(xscale="log", yscale="log", xlabel="sequence length n (positions)",
              ylabel="FLOPs of one layer", title=f"cost of one layer, {width}")
    _plain_log_ticks(right, flop_steps)
    right.legend(fontsize=8)
    return closed_for_display(fig)


def plot_distance_profiles(profiles: dict[str, np.ndarray], dilution: dict[int, np.ndarray]):
    """Chapter 4, "Gradient versus distance": per-position input gradients of the last output.

    profiles maps a model's name to its (time,) norms ||dL/dx_k|| on one sequence; dilution maps
    a length T to the causal Transformer's (T,) norms, drawn as T ||dL/dx_k|| against the
    relative distance (T - 1 - k) / T.
    """
    check_curves("profiles", profiles)
    check_curves("dilution", dilution)
    for steps, norms in dilution.items():
        if len(norms) != steps:
            raise ValueError(f"dilution[{steps}] must hold {steps} norms, got {len(norms)}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for name, norms in profiles.items():
        left.plot(np.arange(len(norms)), norms[::-1], label=name)
    left.set(yscale="log", xlabel="distance T - 1 - k (positions)",
             ylabel=r"$\|\partial L / \partial x_k\|$",
             title=f"one sequence, T = {len(next(iter(profiles.values())))}")
    left.legend()
    for steps, norms in dilution.items():
        distance = np.arange(steps)
        right.plot(distance / steps, steps * norms[::-1], ".", markersize=3, label=f"T = {steps}")
    right.set(yscale="log", xlabel="relative distance (T - 1 - k) / T",
              ylabel=r"$T \cdot \|\partial L / \partial x_k\|$",
              title="causal Transformer: gradient times length")
    right.legend(markerscale=3)
    return closed_for_display(fig)


def plot_residual_paths(skip: dict[str, np.ndarray], full: dict[str, np.ndarray]):
    """Chapter 4, "Residual connections and layer normalisation": the gradient at the input of
    every layer of a deep stack, through the skip connections only and in full.

    Both map a label "Post-LN, <init>" or "Pre-LN, <init>" to the (layers + 1,) norms
    ||dL/dh_l|| of :func:`longdep.measure.gradients.layer_input_gradients`, drawn against the number of
    layers the gradient has crossed: one colour per initialisation, Pre-LN dashed.
    """
    check_curves("skip", skip)
    check_curves("full", full)
    for label in [*skip, *full]:
        if not isinstance(label, str) or not label.startswith(("Post-LN, ", "Pre-LN, ")):
            raise ValueError(f"labels must read 'Post-LN, <init>' or 'Pre-LN, <init>', "
                             f"got {label!r}")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True, layout="constrained")
    titles = ("skip connections only", "full gradient")
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    inits = list(dict.fromkeys(label.split(", ")[-1] for label in skip))
    for ax, curves, title in zip(axes, (skip, full), titles):
        for label, norms in curves.items():
            colour = colours[inits.index(label.split(", ")[-1])]
            style = "--" if label.startswith("Pre-LN") else "-"
            ax.plot(np.arange(len(norms)), norms[::-1], style, color=colour, label=label)
        ax.set(yscale="log", xlabel="layers crossed by the gradient", title=title)
    axes[0].set_ylabel(r"$\|\partial L / \partial h_l\|$ at the input of layer $l$")
    axes[1].legend()
    return closed_for_display(fig)

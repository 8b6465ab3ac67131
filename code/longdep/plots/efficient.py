"""Chapter 6's figures: attention cost, sparse masks, Performer's error, gradients of every model."""

import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_curves
from longdep.plots.style import closed_for_display


# Chapter 6 figures
def plot_attention_cost(lengths: list[int], flops: dict[str, list[int]],
                        megabytes: dict[str, list[float]], seconds: dict[str, list[float]],
                        time_slopes: dict[str, float]):
    """Chapter 6's cost figure: against the sequence length, log-log, for each kind of
    attention: the counted matrix-product FLOPs, the counted peak memory, and the measured time
    of one call, whose fitted slopes (``time_slopes``) go into that panel's legend. The two
    counted panels carry grey reference lines of slope 1 and 2."""
    for name, curves in (("flops", flops), ("megabytes", megabytes), ("seconds", seconds)):
        check_curves(name, curves, len(lengths))
    if set(megabytes) != set(flops) or set(seconds) != set(flops) \
            or not set(flops) <= set(time_slopes):
        raise ValueError("flops, megabytes, seconds and time_slopes must name the same kinds, "
                         f"got {list(flops)}, {list(megabytes)}, {list(seconds)}, "
                         f"{list(time_slopes)}")
    fig, (counted, memory, timed) = plt.subplots(1, 3, figsize=(11, 3.6), layout="constrained")
    for kind, counts in flops.items():
        style = "s--" if "fused" in kind else "o-"  # dashed: it lies on softmax's FLOPs
        (line,) = counted.loglog(lengths, counts, style, label=kind)
        memory.loglog(lengths, megabytes[kind], style, color=line.get_color(), label=kind)
        timed.loglog(lengths, np.asarray(seconds[kind]) * 1e3, style, color=line.get_color(),
                     label=f"{kind} (slope {time_slopes[kind]:.1f})")
    for ax, values in ((counted, flops), (memory, megabytes)):
        _slope_references(ax, lengths, values)
    counted.set_title("FLOPs of the matrix products (counted)")
    counted.set_ylabel("FLOPs")
    memory.set_title("peak memory allocated (counted)")
    memory.set_ylabel("MiB")
    timed.set_title("time of one call (measured, this run)")
    timed.set_ylabel("milliseconds")
    for ax in (counted, memory, timed):
        ax.set_xlabel("sequence length T (tokens)")
        ax.legend(fontsize=8)
    return closed_for_display(fig)


def _slope_references(ax, lengths: list[int], values: dict[str, list[float]]) -> None:
    """Dotted lines ~ T (below every curve at the longest length) and ~ T^2 (above)."""
    t = np.asarray(lengths, dtype=float)
    last = [row[-1] for row in values.values()]
    for power, end, style in ((1, min(last) / 2, ":"), (2, max(last) * 2, "--")):
        ax.loglog(t, end * (t / t[-1]) ** power, color="grey", lw=0.9, ls=style,
                  label=f"slope {power}")


def plot_sparse_masks(masks: dict[str, np.ndarray]):
    """Chapter 6's sparse patterns: one (time, time) boolean mask per panel, key j across,
    query i down; a dark cell means query i may attend to key j."""
    check_curves("masks", masks, dims=2)
    if len(masks) < 2:
        raise ValueError(f"masks must hold at least two masks (one per panel), got {len(masks)}")
    fig, axes = plt.subplots(1, len(masks), figsize=(2.4 * len(masks), 2.9), layout="constrained")
    for ax, (name, mask) in zip(axes, masks.items()):
        ax.imshow(mask, cmap="Greys", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("key position j")
        ax.grid(False)
    axes[0].set_ylabel("query position i")
    return closed_for_display(fig)


def plot_performer_errors(feature_counts: list[int], errors: dict[str, np.ndarray]):
    """Chapter 6's Performer figure: relative error of the output against the number of random
    features m, every draw as a dot and the median as a line, with the m^(-1/2) reference.
    ``errors`` maps a name to a (len(feature_counts), draws) array."""
    check_curves("errors", {k: np.transpose(v) for k, v in errors.items()}
                 if isinstance(errors, dict) else errors, len(feature_counts), dims=2)
    fig, ax = plt.subplots(layout="constrained")
    counts = np.asarray(feature_counts, dtype=float)
    for name, grid in errors.items():
        median = np.median(grid, axis=1)
        (line,) = ax.loglog(counts, median, "o-", label=f"{name} (median)")
        ax.scatter(np.repeat(counts, grid.shape[1]), grid.ravel(), s=8, alpha=0.35,
                   color=line.get_color())
    first = np.median(next(iter(errors.values())), axis=1)[0]
    ax.loglog(counts, first * (counts / counts[0]) ** -0.5, "k--", lw=1,
              label=r"$\propto m^{-1/2}$")
    ax.set_xlabel("number of random features m")
    ax.set_ylabel("relative error of the output")
    ax.set_title("Performer (FAVOR+) against exact softmax attention")
    ax.legend()
    return closed_for_display(fig)


def plot_model_gradients(ratios: dict[str, np.ndarray], reach: int):
    """Chapter 6's gradient figure: |dL/dx_{T-d}| / |dL/dx_T| against the distance d for every
    model of the book, at initialisation; exact zeros (beyond the window's ``reach``) cannot be
    drawn on a log axis, so a curve stops where its ratios become zero. The left panel shows
    the whole range, the right one only 1e-5 to 1, where all curves but the tanh RNN's lie."""
    check_curves("ratios", ratios)
    if isinstance(reach, bool) or not isinstance(reach, (int, np.integer)) or reach < 0:
        raise ValueError(f"reach must be a non-negative int, got {reach!r}")
    fig, (whole, near) = plt.subplots(1, 2, figsize=(11, 4.0), layout="constrained")
    for ax in (whole, near):
        for name, ratio in ratios.items():
            distance = np.arange(len(ratio))
            shown = ratio > 0
            ax.semilogy(distance[1:][shown[1:]], ratio[1:][shown[1:]], label=name)
        ax.axvline(reach, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("distance d (steps back from the last position)")
    whole.annotate(f"window reach {reach}:\nexactly 0 beyond", (reach, 1e-30), xytext=(6, 0),
                   textcoords="offset points", fontsize=8, color="grey")
    near.set_ylim(1e-5, 1)
    whole.set_ylabel(r"$\|\partial L/\partial x_{T-d}\| \,/\, \|\partial L/\partial x_T\|$")
    whole.set_title("gradient reaching distance d, at initialisation (float64)")
    near.set_title("the same, from 1e-5 to 1")
    whole.legend(fontsize=8, loc="lower left")
    return closed_for_display(fig)


def plot_mqar(pair_counts: list[int], accuracies: dict[str, np.ndarray], chance: float,
              width: int):
    """Chapter 6's MQAR figure: held-out accuracy against the number of key-value pairs, one
    line per model (the mean over seeds, the band from the lowest to the highest seed), with
    chance marked. ``accuracies`` maps a model's name to a (seeds, len(pair_counts)) array."""
    check_curves("accuracies", accuracies, len(pair_counts), dims=2)
    if not 0 < chance < 1:
        raise ValueError(f"chance must be between 0 and 1, got {chance!r}")
    fig, ax = plt.subplots(figsize=(6.0, 3.8), layout="constrained")
    pairs = np.asarray(pair_counts, dtype=float)
    for name, grid in accuracies.items():
        grid = np.asarray(grid, dtype=float)
        (line,) = ax.plot(pairs, grid.mean(axis=0), "o-", label=name)
        ax.fill_between(pairs, grid.min(axis=0), grid.max(axis=0), color=line.get_color(),
                        alpha=0.2, lw=0)
    ax.axhline(chance, color="grey", lw=0.9, ls="--", label=f"chance ({chance:g})")
    ax.set_xscale("log", base=2)
    ax.set_xticks(pairs, [f"{p:g}" for p in pair_counts])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("key-value pairs to remember")
    ax.set_ylabel("held-out accuracy on the queries\n(line: mean of seeds, band: range)")
    ax.set_title(f"multi-query associative recall, one layer of width {width}")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(0.0, 0.62))
    return closed_for_display(fig)


"""Chapter 5's figures: Post-LN and Pre-LN gradient profiles, warm-up runs."""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from longdep.plots.style import _plain_log_ticks, closed_for_display


# Chapters 4 and 5 figures
def plot_ffn_gradient_profiles(post: dict[int, np.ndarray], pre: dict[int, np.ndarray]):
    """Chapter 5, "Post-LN and Pre-LN at initialisation" (cf. Xiong et al. 2020, figure 3).

    post and pre map a depth L to the (L,) gradient norms of each layer's second feed-forward
    matrix. Left: against the layer index, one colour per depth, Pre-LN dashed. Right: the last
    layer's norm against the depth, with a line proportional to 1/sqrt(L).
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    for colour, depth in zip(colours, post):
        layers = np.arange(1, depth + 1)
        left.plot(layers, post[depth], color=colour, label=f"L = {depth}")
        left.plot(layers, pre[depth], "--", color=colour)
    left.plot([], [], color="0.4", label="Post-LN (solid)")
    left.plot([], [], "--", color="0.4", label="Pre-LN (dashed)")
    left.set(yscale="log", xlabel="layer l (1 = nearest the input)",
             ylabel=r"$\|\partial L / \partial W_2^{(l)}\|_F$", title="each layer at initialisation")
    fig.legend(*left.get_legend_handles_labels(), loc="outside lower left", ncol=6, fontsize=8)
    depths = np.array(list(post))
    for style, label, profiles in (("-o", "Post-LN", post), ("--s", "Pre-LN", pre)):
        right.plot(depths, [profiles[d][-1] for d in depths], style, color="0.2" if
                   label == "Post-LN" else colours[1], label=label)
    reference = pre[depths[0]][-1] * np.sqrt(depths[0] / depths)
    right.plot(depths, reference, ":", color="0.5", label=r"$\propto 1/\sqrt{L}$")
    right.set(xscale="log", yscale="log", xlabel="depth L (layers)",
              ylabel=r"$\|\partial L / \partial W_2^{(L)}\|_F$", title="last layer against depth")
    _plain_log_ticks(right, depths)
    right.legend()
    return closed_for_display(fig)


def plot_warmup_runs(losses: dict, window: int = 10):
    """Chapter 5, "Warm-up": training loss of deep stacks, one panel per learning rate.

    losses maps (label, lr) to a (seeds, steps) array of training losses, one row per seed; each
    seed is one thin curve in its label's colour, a running mean over ``window`` steps, on a log
    axis.
    """
    lrs = list(dict.fromkeys(lr for _, lr in losses))
    labels = list(dict.fromkeys(label for label, _ in losses))
    colours = dict(zip(labels, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    fig, axes = plt.subplots(1, len(lrs), figsize=(5 * len(lrs), 3.6), sharey=True,
                             layout="constrained")
    for ax, lr in zip(np.atleast_1d(axes), lrs):
        for (label, run_lr), seed_results in losses.items():
            if run_lr != lr:
                continue
            for i, seed_losses in enumerate(np.asarray(seed_results)):
                smooth = np.convolve(seed_losses, np.ones(window) / window, mode="valid")
                ax.plot(np.arange(window, len(seed_losses) + 1), smooth,
                        "--" if "warm-up" in label else "-", color=colours[label],
                        linewidth=1, alpha=0.8,
                        label=f"{label} ({len(seed_results)} seeds)" if i == 0 else None)
        ax.set(yscale="log", xlabel="training step", title=f"learning rate {lr:g}")
        ax.legend()
    np.atleast_1d(axes)[0].set_ylabel(f"training loss (mean of {window} steps)")
    return closed_for_display(fig)

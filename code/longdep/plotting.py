"""One plotting style for the whole book, and the figures the chapters draw.

Figures keep an opaque white background, so they read the same on the theme's light and dark
pages; gradient norms go on log axes; every axis says what it measures.
"""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

BOOK_STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "font.size": 10,
    "axes.prop_cycle": mpl.cycler(
        color=["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
    ),
}


def use_book_style() -> None:
    """Apply the book's matplotlib style (a colour-blind-safe palette, white background)."""
    mpl.rcParams.update(BOOK_STYLE)


def finished(fig: mpl.figure.Figure) -> mpl.figure.Figure:
    """Close ``fig`` and return it, for a notebook cell to display as its value.

    A closed figure is shown exactly once, by the cell's display hook. An open one is also shown by
    the inline backend when the cell ends, and twice where the backend was activated twice (nbval
    does that), which would make the stored output differ from a fresh run.
    """
    plt.close(fig)
    return fig


def plot_bptt_contributions(loss_to_step: np.ndarray, step_terms: np.ndarray):
    """Chapter 1's figure: how far back each loss term sends gradient, and where dL/dW_hh comes from.

    loss_to_step: (time, time) norms of dL_t/dh_k (zero above the diagonal).
    step_terms: (time,) norms of the immediate term that step k adds to dL/dW_hh.
    """
    steps = len(step_terms)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.6), width_ratios=(1.15, 1),
                                   layout="constrained")
    masked = np.ma.masked_where(loss_to_step <= 0, loss_to_step)
    image = left.imshow(
        masked, origin="lower", cmap="viridis", norm=mpl.colors.LogNorm(), aspect="auto"
    )
    left.set_xlabel("state step k")
    left.set_ylabel("loss step t")
    left.set_title(r"$\|\partial L_t / \partial h_k\|$ (log colour scale)")
    left.grid(False)
    fig.colorbar(image, ax=left, label="gradient norm", pad=0.02)
    fig.get_layout_engine().set(w_pad=0.15)
    right.bar(np.arange(steps), step_terms, color="#0072B2")
    right.set_xlabel("step k of the unrolled sequence")
    right.set_ylabel("norm of step k's term")
    right.set_title(r"terms of $\partial L / \partial W_{hh}$")
    return finished(fig)


# Chapter 2 figures
def _distance_axis(ax, title: str) -> None:
    """A log axis of gradient ratios against distance d (steps back from the last step)."""
    ax.set_yscale("log")
    ax.set_xlabel("distance d = T - k (steps)")
    ax.set_ylabel(r"$\|\partial L/\partial h_{T-d}\| \;/\; \|\partial L/\partial h_T\|$")
    ax.set_title(title)


def plot_matrix_powers(norms: np.ndarray, spectral_radius: float, sigma_max: float):
    """Chapter 2's non-normal matrix: ||W^k||_2 against k, beside rho^k and sigma_max^k."""
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
    return finished(fig)


def plot_regimes(profiles: dict[tuple[str, float], np.ndarray]):
    """Chapter 2, experiment (a): gradient ratio against distance for W_hh = s Q.

    profiles maps (nonlinearity, s) to the (time,) ratios ||dL/dh_(T-d)|| / ||dL/dh_T||; each
    panel draws one nonlinearity, the bound s^d dashed in the same colour as its measurement.
    """
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
    return finished(fig)


def plot_input_scales(profiles: dict[float, np.ndarray], sigma_max: float,
                      derivatives: dict[float, np.ndarray]):
    """Chapter 2, experiments (b) and (c): one Gaussian W_hh, inputs of several scales.

    profiles maps an input scale to the (time,) gradient ratios by distance; derivatives maps it
    to the tanh'(a) values of every unit and step, whose histogram shows saturation.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.8), layout="constrained")
    measured = np.concatenate(list(profiles.values()))
    colour_of = dict(zip(profiles, mpl.rcParams["axes.prop_cycle"].by_key()["color"]))
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
    return finished(fig)


def plot_cliff(w: np.ndarray, b: np.ndarray, loss: np.ndarray, paths: dict):
    """Chapter 2, the cliff: log10 of the loss over a (w, b) grid with gradient-descent paths
    (left) and the loss along each path (right).

    loss has shape (len(w), len(b)); paths maps a label to a
    :class:`longdep.clipping.DescentPath` (points (steps + 1, 2), losses (steps + 1,)).
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), width_ratios=(1.25, 1),
                                      layout="constrained")
    image = left.pcolormesh(w, b, np.log10(loss).T, cmap="viridis", shading="auto",
                            rasterized=True)
    fig.colorbar(image, ax=left, label=r"$\log_{10}$ loss")
    colours = ["#D55E00", "black"]
    for colour, (label, path) in zip(colours, paths.items()):
        points = np.asarray(path.points)
        left.plot(points[:, 0], points[:, 1], ".-", color=colour, markersize=3, linewidth=1,
                  label=label)
        outside = ~((w[0] <= points[:, 0]) & (points[:, 0] <= w[-1])
                    & (b[0] <= points[:, 1]) & (points[:, 1] <= b[-1]))
        if outside.any():
            k = int(np.argmax(outside))
            text = f"step {k} jumps to\n(w, b) = ({points[k, 0]:.0f}, {points[k, 1]:.0f})"
            if outside[k:].all():
                text += "\nand never comes back"
            left.annotate(text, xy=points[k - 1], xytext=(0.55, 0.85), textcoords="axes fraction",
                          color=colour, fontsize=8, arrowprops=dict(arrowstyle="->", color=colour),
                          bbox=dict(facecolor="white", alpha=0.8, edgecolor="none"))
        right.plot(np.asarray(path.losses), color=colour, label=label)
    left.plot(*np.asarray(next(iter(paths.values())).points[0]), "*", color="white",
              markeredgecolor="black", markersize=12, label="start")
    left.set_xlim(w[0], w[-1])
    left.set_ylim(b[0], b[-1])
    left.set_xlabel("recurrent weight w")
    left.set_ylabel("bias b")
    left.set_title(r"loss $(x_{50} - 0.7)^2$ of $x_t = w\,\sigma(x_{t-1}) + b$")
    left.legend(loc="lower left", fontsize=8, facecolor="0.85", frameon=True)
    left.grid(False)
    right.set_yscale("log")
    right.set_xlabel("gradient-descent step")
    right.set_ylabel("loss")
    right.set_title("loss along each path")
    right.legend(fontsize=8)
    return finished(fig)


def plot_clipping_runs(runs: dict, threshold: float):
    """Chapter 2, clipping in training: per-step loss (left) and gradient norm before clipping
    (right) of every seed, one colour per setting. runs maps a label to a list of
    :class:`longdep.training.TrainingResult`, one per seed."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    for colour, (label, results) in zip(colours, runs.items()):
        for i, result in enumerate(results):
            left.plot(result.losses, color=colour, linewidth=0.8, alpha=0.7,
                      label=label if i == 0 else None)
            right.plot(result.grad_norms, color=colour, linewidth=0.8, alpha=0.7,
                       label=label if i == 0 else None)
    right.axhline(threshold, color="k", linestyle="--", linewidth=0.9,
                  label=f"threshold {threshold:g}")
    left.set_yscale("log")
    left.set_xlabel("SGD step")
    left.set_ylabel("cross-entropy loss")
    left.set_title(f"training loss, {len(results)} seeds per setting")
    left.legend(fontsize=8)
    right.set_yscale("log")
    right.set_xlabel("SGD step")
    right.set_ylabel("gradient norm before clipping")
    right.set_title("gradient norm")
    right.legend(fontsize=8)
    return finished(fig)


# Chapter 3 figures
def plot_lstm_gradients(distances: np.ndarray, measured: dict[str, np.ndarray],
                        forget_products: dict[str, np.ndarray],
                        scaled: dict[str, np.ndarray]):
    """Chapter 3: ||dL/dx_{T-d}|| against distance d on log axes, in two panels.

    Left: ``measured`` curves (one per model) at initialisation, and dashed in the same colour,
    for the labels also in ``forget_products``, the norm of the product of forget gates scaled to
    meet the measured curve at d = 0. Right: ``scaled`` curves (an LSTM with larger W_hh).
    All arrays are indexed by distance, like ``distances``.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), sharey=True, layout="constrained")
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for colour, (label, norms) in zip(colours, measured.items()):
        left.plot(distances, norms, color=colour, label=label)
        if label in forget_products:
            product = forget_products[label] * norms[0] / forget_products[label][0]
            left.plot(distances, product, "--", color=colour, linewidth=1)
    left.plot([], [], "--", color="0.4", linewidth=1,
              label=r"dashed: forget gates alone, $\|\prod f_t\|$ (matched at d = 0)")
    left.set_title("At initialisation")
    for colour, (label, norms) in zip(colours[len(measured):], scaled.items()):
        right.plot(distances, norms, color=colour, label=label)
    right.set_title(r"LSTM, forget bias 1, $W_{hh}$ multiplied by s")
    for ax in (left, right):
        ax.set_yscale("log")
        ax.set_xlabel("distance d between input and loss (steps)")
        ax.legend(loc="lower left")
    left.set_ylabel(r"gradient norm $\|\partial L/\partial x_{T-d}\|$")
    return finished(fig)


def plot_key_recall_accuracy(distances, accuracies: dict[str, np.ndarray], chance: float,
                             title: str):
    """Key-recall accuracy against distance (Chapter 3, reused by later chapters).

    accuracies maps a model's name to a (seeds, distances) array: the line is the mean over seeds,
    the small dots are the seeds. ``chance`` (1 / number of keys) is drawn as a dotted line.
    """
    fig, ax = plt.subplots(figsize=(7.6, 3.6), layout="constrained")
    for label, grid in accuracies.items():
        grid = np.asarray(grid)
        line, = ax.plot(distances, grid.mean(0), marker="o", label=label)
        for seed_row in grid:
            ax.plot(distances, seed_row, ".", color=line.get_color(), alpha=0.5, markersize=5)
    ax.axhline(chance, color="0.4", linestyle=":", label=f"chance ({chance:.3f})")
    ax.set_xscale("log", base=2)
    ax.set_xticks(distances, [str(d) for d in distances])
    ax.minorticks_off()
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("distance between key and query (steps)")
    ax.set_ylabel("held-out accuracy")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return finished(fig)


def plot_sequential_cost(lengths, seconds: dict[str, list[float]], positions: int):
    """Chapter 3: forward time against sequence length T for a fixed amount of work."""
    fig, ax = plt.subplots(layout="constrained")
    for label, values in seconds.items():
        ax.plot(lengths, 1e3 * np.asarray(values), marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [str(length) for length in lengths])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel(f"sequence length T ({positions} positions cut into {positions}/T sequences)")
    ax.set_ylabel("forward time (ms, best of 3)")
    ax.set_title("The same work, cut into ever longer sequences")
    ax.legend()
    return finished(fig)


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
    return finished(fig)


def plot_warmup_runs(results: dict, window: int = 10):
    """Chapter 5, "Warm-up": training loss of deep stacks, one panel per learning rate.

    results maps (label, lr) to a list of :class:`longdep.training.TrainingResult`, one per
    seed (as :func:`longdep.transformer.warmup_comparison` returns); each seed is one thin
    curve in its label's colour, a running mean over ``window`` steps, on a log axis.
    """
    lrs = list(dict.fromkeys(lr for _, lr in results))
    labels = list(dict.fromkeys(label for label, _ in results))
    colours = dict(zip(labels, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    fig, axes = plt.subplots(1, len(lrs), figsize=(5 * len(lrs), 3.6), sharey=True,
                             layout="constrained")
    for ax, lr in zip(np.atleast_1d(axes), lrs):
        for (label, run_lr), seed_results in results.items():
            if run_lr != lr:
                continue
            for i, result in enumerate(seed_results):
                smooth = np.convolve(result.losses, np.ones(window) / window, mode="valid")
                ax.plot(np.arange(window, len(result.losses) + 1), smooth,
                        "--" if "warm-up" in label else "-", color=colours[label],
                        linewidth=1, alpha=0.8,
                        label=f"{label} ({len(seed_results)} seeds)" if i == 0 else None)
        ax.set(yscale="log", xlabel="training step", title=f"learning rate {lr:g}")
        ax.legend()
    np.atleast_1d(axes)[0].set_ylabel(f"training loss (mean of {window} steps)")
    return finished(fig)


def plot_score_scaling(widths, variances: dict[str, list[float]], saturation: dict[str, list],
                       keys: int):
    """Chapter 4, "Why the 1/sqrt(d_k) scale": score variance and softmax saturation against d_k.

    variances and saturation map "unscaled" and "scaled" to one value per width: the variance of
    the scores, and a :class:`longdep.scaling.Saturation` (largest weight, Jacobian norm).
    """
    widths = np.asarray(widths)
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.4), layout="constrained")
    styles = {"unscaled": dict(marker="o", label=r"$q \cdot k$"),
              "scaled": dict(marker="s", label=r"$q \cdot k / \sqrt{d_k}$")}
    axes[0].plot(widths, widths, ":", color="0.4", label="$d_k$")
    for name, style in styles.items():
        axes[0].plot(widths, variances[name], **style)
        axes[1].plot(widths, [s.max_weight for s in saturation[name]], **style)
        axes[2].plot(widths, [s.jacobian_norm for s in saturation[name]], **style)
    axes[0].set(yscale="log", ylabel="variance of the score", title="score variance")
    axes[1].axhline(1 / keys, color="0.4", linestyle=":", label=f"uniform, 1/{keys}")
    axes[1].set(ylim=(0, 1.05), ylabel="mean largest weight", title="softmax saturation")
    axes[2].set(yscale="log", ylabel=r"mean $\|\mathrm{diag}(w) - w w^\top\|_F$",
                title="gradient through the softmax")
    for ax in axes:
        ax.set(xscale="log", xlabel="key width $d_k$")
        ax.legend()
    return finished(fig)


def _plain_log_ticks(ax, values) -> None:
    """Label a log x axis at exactly ``values``, written as plain integers."""
    ax.set_xticks(values, [str(v) for v in values])
    ax.xaxis.set_minor_formatter(mpl.ticker.NullFormatter())


def plot_path_lengths(steps, measured: dict[str, list[int]], predicted: dict[str, list[int]],
                      flop_steps, flops: dict[str, list[int]], features: int):
    """Chapter 4, "Path length: Table 1, measured": fewest layers from the first input to the
    last output, and the FLOPs of one layer, against the sequence length n.

    measured and predicted map a layer kind to one layer count per length in ``steps``; flops
    maps a layer kind to one count per length in ``flop_steps`` at width ``features``.
    """
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
    right.axvline(features, color="0.4", linestyle=":", label=f"n = d = {features}")
    right.set(xscale="log", yscale="log", xlabel="sequence length n (positions)",
              ylabel="FLOPs of one layer", title=f"cost of one layer, d = {features}")
    _plain_log_ticks(right, flop_steps)
    right.legend(fontsize=8)
    return finished(fig)


def plot_distance_profiles(profiles: dict[str, np.ndarray], dilution: dict[int, np.ndarray]):
    """Chapter 4, "Gradient versus distance": per-position input gradients of the last output.

    profiles maps a model's name to its (time,) norms ||dL/dx_k|| on one sequence; dilution maps
    a length T to the causal Transformer's (T,) norms, drawn as T ||dL/dx_k|| against the
    relative distance (T - 1 - k) / T.
    """
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
    return finished(fig)


def plot_residual_paths(skip: dict[str, np.ndarray], full: dict[str, np.ndarray]):
    """Chapter 4, "Residual connections and layer normalisation": the gradient at the input of
    every layer of a deep stack, through the skip connections only and in full.

    Both map a label "Post-LN, <init>" or "Pre-LN, <init>" to the (layers + 1,) norms
    ||dL/dh_l|| of :func:`longdep.paths.layer_input_gradients`, drawn against the number of
    layers the gradient has crossed: one colour per initialisation, Pre-LN dashed.
    """
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
    return finished(fig)


# Chapter 6 figures
def plot_attention_cost(lengths: dict[str, list[int]], seconds: dict[str, list[float]],
                        megabytes: dict[str, list[float]], slopes: dict[str, float]):
    """Chapter 6's cost figure: time and peak memory of three causal attentions against the
    sequence length, log-log; ``slopes`` (the fitted time exponents) go into the legend."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.6), layout="constrained")
    for kind, steps in lengths.items():
        label = f"{kind} (slope {slopes[kind]:.2f})"
        left.loglog(steps, np.asarray(seconds[kind]) * 1e3, "o-", label=label)
        right.loglog(steps, megabytes[kind], "o-", label=kind)
    left.set_title("time of one call (one thread)")
    left.set_ylabel("milliseconds")
    right.set_title("peak memory of the tensors it creates")
    right.set_ylabel("MiB")
    for ax in (left, right):
        ax.set_xlabel("sequence length T (tokens)")
        ax.legend()
    return finished(fig)


def plot_sparse_masks(masks: dict[str, np.ndarray]):
    """Chapter 6's sparse patterns: one (time, time) boolean mask per panel, key j across,
    query i down; a dark cell means query i may attend to key j."""
    fig, axes = plt.subplots(1, len(masks), figsize=(2.4 * len(masks), 2.9), layout="constrained")
    for ax, (name, mask) in zip(axes, masks.items()):
        ax.imshow(mask, cmap="Greys", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("key position j")
        ax.grid(False)
    axes[0].set_ylabel("query position i")
    return finished(fig)


def plot_performer_errors(feature_counts: list[int], errors: dict[str, np.ndarray]):
    """Chapter 6's Performer figure: relative error of the output against the number of random
    features m, every draw as a dot and the median as a line, with the m^(-1/2) reference."""
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
    return finished(fig)


def plot_model_gradients(ratios: dict[str, np.ndarray], reach: int):
    """Chapter 6's gradient figure: |dL/dx_{T-d}| / |dL/dx_T| against the distance d for every
    model of the book, at initialisation; exact zeros (beyond the window's ``reach``) cannot be
    drawn on a log axis, so a curve stops where its ratios become zero."""
    fig, ax = plt.subplots(figsize=(7.2, 4.0), layout="constrained")
    for name, ratio in ratios.items():
        distance = np.arange(len(ratio))
        shown = ratio > 0
        ax.semilogy(distance[1:][shown[1:]], ratio[1:][shown[1:]], label=name)
    ax.axvline(reach, color="grey", lw=0.8, ls=":")
    ax.annotate(f"window reach {reach}:\nexactly 0 beyond", (reach, 1e-30), xytext=(6, 0),
                textcoords="offset points", fontsize=8, color="grey")
    ax.set_xlabel("distance d (steps back from the last position)")
    ax.set_ylabel(r"$\|\partial L/\partial x_{T-d}\| \,/\, \|\partial L/\partial x_T\|$")
    ax.set_title("gradient reaching distance d, at initialisation (float64)")
    ax.legend(fontsize=8, loc="lower left")
    return finished(fig)

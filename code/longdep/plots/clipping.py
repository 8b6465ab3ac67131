"""Chapter 2's figures of gradient clipping: the cliff of a one-unit network, and training
with and without clipping.

Each is drawn in the language chosen at call time (longdep.plots.style.words) and says what it
shows in its alt text, with the numbers formatted as Chapter 2's prose glues them.
"""

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
from longdep.plots.style import closed_for_display, joined, localised, words


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
    fig.colorbar(image, ax=left, label=words(r"$\log_{10}$ loss", r"$\log_{10}$ 损失"))
    colours = ["#D55E00", "black"]
    for colour, label in zip(colours, points):
        path_points = np.asarray(points[label])
        left.plot(path_points[:, 0], path_points[:, 1], ".-", color=colour, markersize=3,
                  linewidth=1, label=localised(label))
        outside = ~((w[0] <= path_points[:, 0]) & (path_points[:, 0] <= w[-1])
                    & (b[0] <= path_points[:, 1]) & (path_points[:, 1] <= b[-1]))
        if outside.any():
            k = int(np.argmax(outside))
            w_k, b_k = path_points[k]
            text = words(f"step {k} jumps to\n(w, b) = ({w_k:.0f}, {b_k:.0f})",
                         f"第 {k} 步跳到\n(w, b) = ({w_k:.0f}, {b_k:.0f})")
            if outside[k:].all():
                text += words("\nand never comes back", "\n再也没有回来")
            left.annotate(text, xy=path_points[k - 1], xytext=(0.55, 0.85),
                          textcoords="axes fraction",
                          color=colour, fontsize=8,
                          arrowprops={"arrowstyle": "->", "color": colour},
                          bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
        right.plot(np.asarray(losses[label]), color=colour, label=localised(label))
    left.plot(*np.asarray(next(iter(points.values())))[0], "*", color="white",
              markeredgecolor="black", markersize=12, label=words("start", "起点"))
    left.set_xlim(w[0], w[-1])
    left.set_ylim(b[0], b[-1])
    left.set_xlabel(words("recurrent weight w", "循环权重 w"))
    left.set_ylabel(words("bias b", "偏置 b"))
    left.set_title(words(r"loss $(x_{50} - 0.7)^2$ of $x_t = w\,\sigma(x_{t-1}) + b$",
                         r"$x_t = w\,\sigma(x_{t-1}) + b$ 的损失 $(x_{50} - 0.7)^2$"))
    left.legend(loc="lower left", fontsize=8, facecolor="0.85", frameon=True)
    left.grid(False)
    right.set(yscale="log", xlabel=words("gradient-descent step", "梯度下降的步数"),
              ylabel=words("loss", "损失"), title=words("loss along each path", "沿每条路径的损失"))
    right.legend(fontsize=8)
    return closed_for_display(fig, alt=_cliff_alt(w, b, points, losses))


def _cliff_alt(w: np.ndarray, b: np.ndarray, points: dict, losses: dict) -> str:
    """What plot_cliff shows: where each path goes (the first step that leaves the plot, and
    where to) and its final loss, as Chapter 2 glues it (.0e)."""
    paths = []
    for label, path_points in points.items():
        path_points = np.asarray(path_points)
        outside = ~((w[0] <= path_points[:, 0]) & (path_points[:, 0] <= w[-1])
                    & (b[0] <= path_points[:, 1]) & (path_points[:, 1] <= b[-1]))
        final = float(np.asarray(losses[label])[-1])
        if outside.any():
            k = int(np.argmax(outside))
            w_k, b_k = path_points[k]
            paths.append(words(
                f"{localised(label)} leaves the plot at step {k}, jumping to (w, b) = "
                f"({w_k:.0f}, {b_k:.0f}), and ends at loss {final:.0e}",
                f"{localised(label)}在第 {k} 步离开图的范围，跳到 (w, b) = ({w_k:.0f}, "
                f"{b_k:.0f})，最终损失为 {final:.0e}"))
        else:
            paths.append(words(f"{localised(label)} stays in the plot and ends at loss "
                               f"{final:.0e}",
                               f"{localised(label)}始终留在图中，最终损失为 {final:.0e}"))
    return words(
        f"Two panels. Left: a heat map of log10 of the loss over w from {w[0]:g} to {w[-1]:g} "
        f"and b from {b[0]:g} to {b[-1]:g}, with {len(points)} gradient-descent paths from the "
        f"same start (a star): " + "; ".join(paths) + ". Right: the loss along each path, "
        "on a log axis.",
        f"两幅图。左图：损失的 log10 在 w 从 {w[0]:g} 到 {w[-1]:g}、b 从 {b[0]:g} 到 "
        f"{b[-1]:g} 上的热图，以及从同一起点（星号）出发的 {len(points)} 条梯度下降路径："
        + "；".join(paths) + "。右图：沿每条路径的损失（对数坐标）。")


def plot_clipping_runs(runs: dict, threshold: float, learned: float):
    """Chapter 2, clipping in training: per-step loss (left) and gradient norm before clipping
    (right), one colour per setting: the median over seeds (line) and the range from the 10th to
    the 90th percentile (band). runs maps a label (a str or a Bilingual) to (losses,
    grad_norms), each (seeds, steps); ``learned`` is the final loss below which a run has
    learned, drawn dotted on the left."""
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    check_array_pairs(runs, "runs", ("losses", "grad_norms"), "(seeds, steps)",
                      most=len(colours))
    check_number("threshold", threshold, positive=True)
    check_number("learned", learned, positive=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for colour, (label, curves) in zip(colours, runs.items()):
        for ax, values in zip((left, right), curves):
            low, median, high = np.percentile(values, [10, 50, 90], axis=0)
            steps = np.arange(len(median))
            ax.fill_between(steps, low, high, color=colour, alpha=0.2, linewidth=0)
            ax.plot(steps, median, color=colour, linewidth=1.2, label=localised(label))
    left.axhline(learned, color="k", linestyle=":", linewidth=0.9,
                 label=words(f"learned below {learned:g}", f"低于 {learned:g} 即学会"))
    right.axhline(threshold, color="k", linestyle="--", linewidth=0.9,
                  label=words(f"threshold {threshold:g}", f"阈值 {threshold:g}"))
    seeds = len(curves[0])
    left.set(yscale="log", xlabel=words("SGD step", "SGD 步数"),
             ylabel=words("cross-entropy loss", "交叉熵损失"),
             title=words(f"training loss, {seeds} seeds per setting",
                         f"训练损失，每种设置 {seeds} 个种子"))
    right.set(yscale="log", xlabel=words("SGD step", "SGD 步数"),
              ylabel=words("gradient norm before clipping", "裁剪前的梯度范数"),
              title=words("gradient norm", "梯度范数"))
    for ax in (left, right):
        ax.legend(fontsize=8)
    return closed_for_display(fig, alt=_clipping_alt(runs, threshold, learned))


def _clipping_alt(runs: dict, threshold: float, learned: float) -> str:
    """What plot_clipping_runs shows: on which side of ``learned`` each setting's median final
    loss (the mean of a run's last 20 steps, the median over the seeds) ends; a comparison that
    Chapter 2 asserts, never the digits of a chaotic training."""
    sides = {True: [], False: []}
    for label, (losses, _) in runs.items():
        sides[bool(np.median(np.asarray(losses)[:, -20:].mean(1)) < learned)].append(
            localised(label))
    below, above = (joined(sides[side], clauses=True) for side in (True, False))
    seeds = len(next(iter(runs.values()))[0])
    return words(
        f"Two panels against the SGD step, on log axes, one colour per setting, {seeds} seeds "
        f"each: the median over the seeds (line) and the range from the 10th to the 90th "
        f"percentile (band). Left: the training loss, with the level {learned:g} below which "
        f"a run has learned dotted; the median run ends below it for {below or 'no setting'} "
        f"and above it for {above or 'no setting'}. Right: the gradient norm before clipping, "
        f"with the threshold {threshold:g} dashed.",
        f"两幅图，横轴为 SGD 步数，对数坐标，每种设置一种颜色，各 {seeds} 个种子：种子的中位数"
        f"（线）和第 10 到第 90 百分位数的范围（带）。左图：训练损失，点线标出学会的标准 "
        f"{learned:g}；中位数运行最终低于它的设置：{below or '无'}，高于它的设置：{above or '无'}。"
        f"右图：裁剪前的梯度范数，虚线是阈值 {threshold:g}。")

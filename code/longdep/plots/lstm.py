"""Chapter 3's figures: LSTM gradients over distance, key-recall accuracy, sequential cost.

Each is drawn in the language chosen at call time (longdep.plots.style.words; a model's name
may be a str or a longdep.book.Bilingual) and says what it shows in its alt text.
"""

import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_curves
from longdep.plots.style import closed_for_display, joined, localised, words

EXTRA_COLOURS = ["#a0522d", "#9acd32", "#8a2be2"]  # after the style's cycle: brown, green, violet


# Chapter 3 figures
def plot_lstm_gradients(distances, measured: dict[str, np.ndarray],
                        cell_path: dict[str, np.ndarray], scaled: dict[str, np.ndarray],
                        scaled_model: str):
    """Chapter 3: ||dL/dx_{T-d}|| against distance d on log axes, in two panels.

    Left: ``measured`` curves (one per model) at initialisation, and dashed in the same colour,
    for the labels also in ``cell_path``, the gradient measured along the cell alone (h_{t-1}
    detached where it enters the gates). Right: ``scaled`` curves, the model ``scaled_model``
    of the left panel with larger W_hh; the first of them (s = 1) is that model and keeps its
    colour, so every model has one colour across both panels. Arrays are indexed by distance.
    """
    check_curves("measured", measured)
    check_curves("cell_path", cell_path, allow_empty=True)
    check_curves("scaled", scaled)
    if scaled_model not in measured:
        raise ValueError(f"scaled_model must be a label of measured {list(measured)}, "
                         f"got {scaled_model!r}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True,
                                      layout="constrained")
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colour_of = dict(zip(measured, colours))
    for label, norms in measured.items():
        left.plot(distances, norms, color=colour_of[label], label=localised(label))
        if label in cell_path:
            left.plot(distances, cell_path[label], "--", color=colour_of[label], linewidth=1)
    left.plot([], [], "--", color="0.4", linewidth=1,
              label=words("dashed: along the cell alone ($h_{t-1}$ detached in the gates)",
                          "虚线：只沿细胞状态（门中的 $h_{t-1}$ 已分离）"))
    left.set_title(words("At initialisation", "初始化时"))
    others = iter(colours[len(measured):])
    for k, (label, norms) in enumerate(scaled.items()):
        right.plot(distances, norms, color=colour_of[scaled_model] if k == 0 else next(others),
                   label=localised(label))
    right.set_title(words(rf"{localised(scaled_model)}, $W_{{hh}}$ multiplied by s",
                          rf"{localised(scaled_model)}，$W_{{hh}}$ 乘以 s"))
    for ax in (left, right):
        ax.set_yscale("log")
        ax.set_xlabel(words("distance d between input and loss (steps)",
                            "输入与损失之间的距离 d（步）"))
        ax.set_ylabel(words(r"gradient norm $\|\partial L/\partial x_{T-d}\|$",
                            r"梯度范数 $\|\partial L/\partial x_{T-d}\|$"))
        ax.legend(loc="lower left", fontsize="small")
    right.yaxis.set_tick_params(labelleft=True)
    return closed_for_display(fig, alt=_lstm_gradients_alt(distances, measured, cell_path,
                                                           scaled, scaled_model))


def _ratios_at_the_end(curves: dict) -> str:
    """Each curve's last value over its first, "name 1.2e-05", joined."""
    return joined((f"{localised(label)} {norms[-1] / norms[0]:.1e}"
                   for label, norms in curves.items()), clauses=True)


def _lstm_gradients_alt(distances, measured: dict, cell_path: dict, scaled: dict,
                        scaled_model) -> str:
    """What plot_lstm_gradients shows: each curve at the largest distance, relative to its
    value at distance 0 (one more digit than the figure's decades, as Chapter 3 glues them)."""
    far = list(distances)[-1]
    dashed = joined((localised(label) for label in cell_path), clauses=True)
    return words(
        f"Two panels of the gradient norm against the distance d from 0 to {far}, on a log "
        f"axis. Left, at initialisation: at d = {far} the gradient is, relative to d = 0, "
        f"{_ratios_at_the_end(measured)}"
        + (f"; dashed, the gradient along the cell alone for {dashed}" if dashed else "")
        + f". Right: {localised(scaled_model)} with W_hh multiplied by s; at d = {far}: "
        f"{_ratios_at_the_end(scaled)}.",
        f"两幅图，对数坐标，显示梯度范数随距离 d（0 到 {far}）的变化。左图为初始化时：在 d = "
        f"{far} 处，梯度相对于 d = 0 处的值为：{_ratios_at_the_end(measured)}"
        + (f"；虚线是{dashed}只沿细胞状态的梯度" if dashed else "")
        + f"。右图：{localised(scaled_model)}，W_hh 乘以 s；在 d = {far} 处："
        f"{_ratios_at_the_end(scaled)}。")


def plot_key_recall_accuracy(distances, accuracies: dict[str, np.ndarray], chance: float,
                             title: str, bound=None):
    """Key-recall accuracy against distance (Chapter 3, reused by later chapters).

    accuracies maps a model's name to a (seeds, distances) array: the line is the mean over seeds,
    the small dots are the seeds. ``chance`` (1 / number of keys) is drawn as a dotted line;
    ``bound`` (one number per distance, such as the best accuracy of any order-blind model),
    if given, as a dashed grey line.
    """
    check_curves("accuracies' means", {k: np.asarray(v, dtype=float).mean(0)
                                       for k, v in dict(accuracies).items()})
    if len(distances) == 0:
        raise ValueError("distances must not be empty")
    if not 0 < chance < 1:
        raise ValueError(f"chance must lie in (0, 1), got {chance!r}")
    if len(accuracies) > len(plt.rcParams["axes.prop_cycle"]) + len(EXTRA_COLOURS):
        raise ValueError(f"at most {len(plt.rcParams['axes.prop_cycle']) + len(EXTRA_COLOURS)} "
                         f"models can get a colour of their own, got {len(accuracies)}")
    fig, ax = plt.subplots(figsize=(7.6, 3.6), layout="constrained")
    # the style's cycle, then colours of their own: no two models share one
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"] + EXTRA_COLOURS
    for colour, (label, grid) in zip(colours, accuracies.items()):
        grid = np.asarray(grid)
        line, = ax.plot(distances, grid.mean(0), marker="o", color=colour,
                        label=localised(label))
        for seed_row in grid:
            ax.plot(distances, seed_row, ".", color=line.get_color(), alpha=0.5, markersize=5)
    if bound is not None:
        ax.plot(distances, bound, "--", color="0.5",
                label=words("best order-blind model (exact)", "最好的不看顺序的模型（精确值）"))
    ax.axhline(chance, color="0.4", linestyle=":",
               label=words(f"chance ({chance:.3f})", f"随机猜测（{chance:.3f}）"))
    ax.set_xscale("log", base=2)
    ax.set_xticks(distances, [str(d) for d in distances])
    ax.minorticks_off()
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(words("distance between key and query (steps)", "键与查询之间的距离（步）"))
    ax.set_ylabel(words("held-out accuracy", "留出集准确率"))
    ax.set_title(localised(title))
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return closed_for_display(fig, alt=_key_recall_alt(distances, accuracies, chance, title,
                                                       bound))


def _longest_solved(distances, grid: np.ndarray, threshold: float = 0.95) -> int:
    """The largest distance up to which every seed reaches ``threshold`` (0 if none), the
    statistic Chapter 3 glues; a distance a row did not train (NaN) is not solved."""
    solved = 0
    for distance, worst in zip(distances, grid.min(0)):
        if not worst >= threshold:
            break
        solved = distance
    return solved


def _key_recall_alt(distances, accuracies: dict, chance: float, title, bound) -> str:
    """What plot_key_recall_accuracy shows: for each model the largest distance up to which
    every seed reaches 0.95, and the chance line."""
    distances = list(distances)
    models = []
    for label, grid in accuracies.items():
        grid = np.asarray(grid, dtype=float)
        solved = _longest_solved(distances, grid)
        seeds = words(f"{grid.shape[0]} seed" + ("s" if grid.shape[0] > 1 else ""),
                      f"{grid.shape[0]} 个种子")
        models.append(words(f"{localised(label)} ({seeds}) {solved or 'none'}",
                            f"{localised(label)}（{seeds}）为 {solved}" if solved else
                            f"{localised(label)}（{seeds}）无"))
    blind = words("; a dashed grey line, the best order-blind model", "；灰色虚线是最好的不看"
                  "顺序的模型") if bound is not None else ""
    return words(
        f"{localised(title)}. Held-out accuracy against the distance between key and query "
        f"({joined(map(str, distances))}, log axis), a line for the mean over the seeds and a "
        f"dot for each seed; a dotted line at chance, {chance:.3f}{blind}. The largest "
        f"distance up to which every seed reaches 0.95: " + "; ".join(models) + ".",
        f"{localised(title)}：留出集准确率随键与查询之间距离（{joined(map(str, distances))}，"
        f"对数坐标）的变化，线为各种子的均值，点为单个种子；点线是随机猜测的水平 "
        f"{chance:.3f}{blind}。所有种子都达到 0.95 的最远距离（此前各距离也都达到）："
        + "；".join(models) + "。")


def plot_sequential_cost(lengths, seconds: dict[str, list[float]], positions: int):
    """Chapter 3: forward time against sequence length T for a fixed amount of work."""
    check_curves("seconds", seconds)
    fig, ax = plt.subplots(layout="constrained")
    for label, values in seconds.items():
        ax.plot(lengths, 1e3 * np.asarray(values), marker="o", label=localised(label))
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [str(length) for length in lengths])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel(words(
        f"sequence length T ({positions} positions cut into {positions}/T sequences)",
        f"序列长度 T（把 {positions} 个位置切成 {positions}/T 个序列）"))
    ax.set_ylabel(words("forward time (ms, best of 3)", "前向时间（毫秒，3 次中最快）"))
    ax.set_title(words("The same work, cut into ever longer sequences",
                       "同样的工作量，切成越来越长的序列"))
    ax.legend()
    # the times differ from run to run and never decide text: the alt text names the lines only
    names = joined((localised(label) for label in seconds), clauses=True)
    return closed_for_display(fig, alt=words(
        f"Log-log plot of the forward time (milliseconds, best of 3 runs, measured in this "
        f"run) against the sequence length T from {lengths[0]} to {lengths[-1]}, for the same "
        f"{positions} positions cut into {positions}/T sequences, one line each for {names}.",
        f"双对数坐标图：同样的 {positions} 个位置切成 {positions}/T 个序列，前向时间（毫秒，"
        f"3 次中最快，本次运行测得）随序列长度 T（{lengths[0]} 到 {lengths[-1]}）的变化，"
        f"{names}各一条线。"))

"""Chapter 6's figures: attention cost, sparse masks, Performer's error, gradients of every
model, MQAR.

Each is drawn in the language chosen at call time (longdep.plots.style.words; a name may be a
str or a longdep.book.Bilingual) and says what it shows in its alt text.
"""

import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_curves
from longdep.plots.style import closed_for_display, joined, localised, words


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
        # dashed: it lies on softmax's FLOPs
        style = "s--" if "fused" in localised(kind, "en") else "o-"
        (line,) = counted.loglog(lengths, counts, style, label=localised(kind))
        memory.loglog(lengths, megabytes[kind], style, color=line.get_color(),
                      label=localised(kind))
        timed.loglog(lengths, np.asarray(seconds[kind]) * 1e3, style, color=line.get_color(),
                     label=words(f"{localised(kind)} (slope {time_slopes[kind]:.1f})",
                                 f"{localised(kind)}（斜率 {time_slopes[kind]:.1f}）"))
    for ax, values in ((counted, flops), (memory, megabytes)):
        _slope_references(ax, lengths, values)
    counted.set_title(words("FLOPs of the matrix products (counted)", "矩阵乘积的 FLOPs（计数）"))
    counted.set_ylabel("FLOPs")
    memory.set_title(words("peak memory allocated (counted)", "分配内存的峰值（计数）"))
    memory.set_ylabel("MiB")
    timed.set_title(words("time of one call (measured, this run)",
                          "一次调用的时间（本次运行测得）"))
    timed.set_ylabel(words("milliseconds", "毫秒"))
    for ax in (counted, memory, timed):
        ax.set_xlabel(words("sequence length T (tokens)", "序列长度 T（词元数）"))
        ax.legend(fontsize=8)
    # the times differ from run to run and never decide text: only the counts are described
    longest = lengths[-1]
    counts = joined((words(f"{localised(kind)} {flops[kind][-1]:.2e} FLOPs and "
                           f"{megabytes[kind][-1]:.3g} MiB",
                           f"{localised(kind)} {flops[kind][-1]:.2e} FLOPs、"
                           f"{megabytes[kind][-1]:.3g} MiB") for kind in flops), clauses=True)
    return closed_for_display(fig, alt=words(
        f"Three log-log panels against the sequence length T from {lengths[0]} to {longest}, "
        f"one line per kind of attention, with grey reference lines of slope 1 and 2: the "
        f"counted FLOPs of the matrix products, the counted peak memory, and the time of one "
        f"call measured in this run. At T = {longest}: {counts}.",
        f"三幅双对数坐标图，横轴为序列长度 T（{lengths[0]} 到 {longest}），每种注意力一条线，"
        f"灰色参考线的斜率为 1 和 2：矩阵乘积的 FLOPs 计数、内存峰值计数，以及本次运行测得的一次"
        f"调用时间。T = {longest} 时：{counts}。"))


def _slope_references(ax, lengths: list[int], values: dict[str, list[float]]) -> None:
    """Dotted lines ~ T (below every curve at the longest length) and ~ T^2 (above)."""
    t = np.asarray(lengths, dtype=float)
    last = [row[-1] for row in values.values()]
    for power, end, style in ((1, min(last) / 2, ":"), (2, max(last) * 2, "--")):
        ax.loglog(t, end * (t / t[-1]) ** power, color="grey", lw=0.9, ls=style,
                  label=words(f"slope {power}", f"斜率 {power}"))


def plot_sparse_masks(masks: dict[str, np.ndarray]):
    """Chapter 6's sparse patterns: one (time, time) boolean mask per panel, key j across,
    query i down; a dark cell means query i may attend to key j."""
    check_curves("masks", masks, dims=2)
    if len(masks) < 2:
        raise ValueError(f"masks must hold at least two masks (one per panel), got {len(masks)}")
    fig, axes = plt.subplots(1, len(masks), figsize=(2.4 * len(masks), 2.9), layout="constrained")
    for ax, (name, mask) in zip(axes, masks.items()):
        ax.imshow(mask, cmap="Greys", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(localised(name), fontsize=9)
        ax.set_xlabel(words("key position j", "键的位置 j"))
        ax.grid(False)
    axes[0].set_ylabel(words("query position i", "查询的位置 i"))
    size = len(next(iter(masks.values())))
    allowed = joined((f"{localised(name)} {int(np.count_nonzero(mask))}"
                      for name, mask in masks.items()), clauses=True)
    return closed_for_display(fig, alt=words(
        f"{len(masks)} attention masks of {size} x {size} positions, query i down and key j "
        f"across, a dark cell where query i may attend to key j. The number of dark cells: "
        f"{allowed}.",
        f"{len(masks)} 个 {size} x {size} 的注意力掩码，纵向为查询 i，横向为键 j，深色格表示查询 "
        f"i 可以关注键 j。深色格的个数：{allowed}。"))


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
        (line,) = ax.loglog(counts, median, "o-", label=words(f"{localised(name)} (median)",
                                                              f"{localised(name)}（中位数）"))
        ax.scatter(np.repeat(counts, grid.shape[1]), grid.ravel(), s=8, alpha=0.35,
                   color=line.get_color())
    first = np.median(next(iter(errors.values())), axis=1)[0]
    ax.loglog(counts, first * (counts / counts[0]) ** -0.5, "k--", lw=1,
              label=r"$\propto m^{-1/2}$")
    ax.set_xlabel(words("number of random features m", "随机特征的个数 m"))
    ax.set_ylabel(words("relative error of the output", "输出的相对误差"))
    ax.set_title(words("Performer (FAVOR+) against exact softmax attention",
                       "Performer（FAVOR+）与精确 softmax 注意力的对比"))
    ax.legend()
    # two digits, as Chapter 6 glues the medians
    ends = joined((words(f"{localised(name)}: from {np.median(grid[0]):.2g} to "
                         f"{np.median(grid[-1]):.2g}",
                         f"{localised(name)}：从 {np.median(grid[0]):.2g} 降到 "
                         f"{np.median(grid[-1]):.2g}") for name, grid in errors.items()),
                  clauses=True)
    return closed_for_display(fig, alt=words(
        f"Log-log plot of the relative error of Performer attention against the number of "
        f"random features m, from {feature_counts[0]} to {feature_counts[-1]}: a dot per random "
        f"draw, a line through the medians, and a dashed line proportional to m^(-1/2). The "
        f"median error, from the fewest features to the most: {ends}.",
        f"双对数坐标图：Performer 注意力的相对误差随随机特征个数 m（{feature_counts[0]} 到 "
        f"{feature_counts[-1]}）的变化，每次随机抽取一个点，线连接各中位数，虚线正比于 "
        f"m^(-1/2)。误差的中位数：{ends}。"))


def plot_model_gradients(ratios: dict[str, np.ndarray], reach: int, distance: int):
    """Chapter 6's gradient figure: |dL/dx_{T-d}| / |dL/dx_T| against the distance d for every
    model of the book, at initialisation; ``ratios`` maps a model's name to a (draws, time)
    array, one row per draw of the weights and inputs, drawn as the median over the draws and
    a band from the lowest to the highest. Exact zeros (beyond the window's ``reach``) cannot be
    drawn on a log axis, so a curve stops where its ratios become zero. The left panel shows the
    whole range, the right one only 1e-5 to 1, where all curves but the tanh RNN's lie; the alt
    text gives each median at ``distance``."""
    check_curves("ratios", ratios, dims=2)
    if isinstance(reach, bool) or not isinstance(reach, (int, np.integer)) or reach < 0:
        raise ValueError(f"reach must be a non-negative int, got {reach!r}")
    steps = np.shape(next(iter(ratios.values())))[1]
    if isinstance(distance, bool) or not isinstance(distance, (int, np.integer)) \
            or not 0 < distance < steps:
        raise ValueError(f"distance must be an int from 1 to {steps - 1}, got {distance!r}")
    fig, (whole, near) = plt.subplots(1, 2, figsize=(11, 4.0), layout="constrained")
    for ax in (whole, near):
        for name, grid in ratios.items():
            grid = np.asarray(grid, dtype=float)
            median, low, high = np.median(grid, axis=0), grid.min(axis=0), grid.max(axis=0)
            d = np.arange(grid.shape[1])
            shown = (low > 0) & (d > 0)
            (line,) = ax.semilogy(d[shown], median[shown], label=localised(name))
            ax.fill_between(d[shown], low[shown], high[shown], color=line.get_color(),
                            alpha=0.2, lw=0)
        ax.axvline(reach, color="grey", lw=0.8, ls=":")
        ax.set_xlabel(words("distance d (steps back from the last position)",
                            "距离 d（从最后一个位置往回数的步数）"))
    whole.annotate(words(f"window reach {reach}:\nexactly 0 beyond",
                         f"窗口的覆盖范围 {reach}：\n之外恰好为 0"), (reach, 1e-30), xytext=(6, 0),
                   textcoords="offset points", fontsize=8, color="grey")
    near.set_ylim(1e-5, 1)
    whole.set_ylabel(r"$\|\partial L/\partial x_{T-d}\| \,/\, \|\partial L/\partial x_T\|$")
    whole.set_title(words("gradient reaching distance d, at initialisation (float64)",
                          "初始化时到达距离 d 的梯度（float64）"))
    near.set_title(words("the same, from 1e-5 to 1", "同上，1e-5 到 1 之间"))
    whole.legend(fontsize=8, loc="lower left")
    return closed_for_display(fig, alt=_gradients_alt(ratios, reach, distance))


def _gradients_alt(ratios: dict, reach: int, distance: int) -> str:
    """What plot_model_gradients shows: each model's median ratio at ``distance`` (two digits,
    as Chapter 6 glues them), and which curves stop (exact zeros in every draw) and where."""
    draws, steps = np.shape(next(iter(ratios.values())))
    ends = []
    for name, grid in ratios.items():
        grid = np.asarray(grid, dtype=float)
        zero = np.flatnonzero((grid[:, 1:] == 0).all(axis=0))
        ends.append(words(f"{localised(name)} exactly 0 from d = {zero[0] + 1} on",
                          f"{localised(name)}从 d = {zero[0] + 1} 起恰好为 0")
                    if zero.size and zero[0] + 1 <= distance else
                    f"{localised(name)} {np.median(grid[:, distance]):.2g}")
    return words(
        f"Two semi-log panels of the gradient reaching distance d, relative to the last "
        f"position, for every model at initialisation, d from 1 to {steps - 1}: the median over "
        f"{draws} draws and a band from the lowest to the highest; the right panel shows only "
        f"1e-5 to 1, and a dotted line marks the window's reach, {reach}. The medians at d = "
        f"{distance}: " + "; ".join(ends) + ".",
        f"两幅半对数坐标图：初始化时每个模型到达距离 d 的梯度相对于最后一个位置的比值，d 从 1 到 "
        f"{steps - 1}：{draws} 次抽取的中位数，带为最低到最高；右图只显示 1e-5 到 1 之间，点线标出"
        f"窗口的覆盖范围 {reach}。d = {distance} 处的中位数：" + "；".join(ends) + "。")


def plot_mqar(pair_counts: list[int], accuracies: dict[str, np.ndarray], budgets: list[int],
              chance: float, width: int, head_width: int, recalled: dict | None = None):
    """Chapter 6's MQAR figure: held-out accuracy against the number of key-value pairs, one
    panel per budget of ``budgets`` (training steps), one line per model (the mean over seeds,
    the band from the lowest to the highest seed), with chance and, dotted, the ``head_width``
    d_k pairs that one head of linear attention holds without cross-talk. ``accuracies`` maps a
    model's name to a (budgets, seeds, len(pair_counts)) array. With ``recalled`` (a model's
    name -> the pairs it recalls after each budget, a str or longdep.book.Bilingual each, as
    Chapter 6 prints them) the alt text gives those; without, each model's mean accuracy at the
    fewest and the most pairs."""
    check_curves("accuracies", accuracies, len(pair_counts), dims=3)
    if any(np.shape(grid)[0] != len(budgets) for grid in accuracies.values()):
        raise ValueError(f"accuracies must hold one grid per budget of budgets ({len(budgets)}) "
                         f"along their first axis, got shapes "
                         f"{[np.shape(grid) for grid in accuracies.values()]}")
    if not 0 < chance < 1:
        raise ValueError(f"chance must be between 0 and 1, got {chance!r}")
    if recalled is not None and (set(recalled) != set(accuracies) or any(
            len(labels) != len(budgets) for labels in recalled.values())):
        raise ValueError("recalled must give every model of accuracies one label per budget")
    fig, axes = plt.subplots(1, len(budgets), figsize=(4.6 * len(budgets), 3.8), sharey=True,
                             layout="constrained")
    axes = np.atleast_1d(axes)
    pairs = np.asarray(pair_counts, dtype=float)
    for panel, (ax, steps) in enumerate(zip(axes, budgets)):
        for name, grids in accuracies.items():
            grid = np.asarray(grids, dtype=float)[panel]
            (line,) = ax.plot(pairs, grid.mean(axis=0), "o-", label=localised(name))
            ax.fill_between(pairs, grid.min(axis=0), grid.max(axis=0), color=line.get_color(),
                            alpha=0.2, lw=0)
        ax.axhline(chance, color="grey", lw=0.9, ls="--",
                   label=words(f"chance ({chance:g})", f"随机猜测（{chance:g}）"))
        ax.axvline(head_width, color="grey", lw=0.9, ls=":",
                   label=words(f"$d_k$ = {head_width} pairs", f"$d_k$ = {head_width} 对"))
        ax.set_xscale("log", base=2)
        ax.set_xticks(pairs, [f"{p:g}" for p in pair_counts])
        ax.minorticks_off()
        ax.set_ylim(0, 1.05)
        ax.set_xlabel(words("key-value pairs to remember", "要记住的键值对数"))
        ax.set_title(words(f"after {steps} training steps", f"训练 {steps} 步后"))
    axes[0].set_ylabel(words("held-out accuracy on the queries\n(line: mean of seeds, band: range)",
                             "查询上的留出集准确率\n（线：种子的均值，带：范围）"))
    axes[0].legend(fontsize=8, loc="lower left")
    fig.suptitle(words(f"Multi-query associative recall, one layer of width {width}",
                       f"多查询联想回忆，一层，宽度 {width}"), fontsize=11)
    return closed_for_display(fig, alt=_mqar_alt(pair_counts, accuracies, budgets, chance,
                                                 width, recalled))


def _mqar_alt(pair_counts: list[int], accuracies: dict, budgets: list[int], chance: float,
              width: int, recalled: dict | None) -> str:
    """What plot_mqar shows: per budget, the pairs each model recalls (or its mean accuracy at
    the fewest and the most pairs), and chance."""
    panels = []
    for panel, steps in enumerate(budgets):
        results = []
        for name, grids in accuracies.items():
            means = np.asarray(grids, dtype=float)[panel].mean(axis=0)
            results.append(
                words(f"{localised(name)} {localised(recalled[name][panel])}",
                      f"{localised(name)}：{localised(recalled[name][panel])}")
                if recalled else words(
                    f"{localised(name)} {means[0]:.2f} at {pair_counts[0]} pairs, "
                    f"{means[-1]:.2f} at {pair_counts[-1]}",
                    f"{localised(name)}：{pair_counts[0]} 对时 {means[0]:.2f}，"
                    f"{pair_counts[-1]} 对时 {means[-1]:.2f}"))
        panels.append(words(f"after {steps} steps, ", f"训练 {steps} 步后，")
                      + joined(results, clauses=True))
    summary = (words("the most pairs that most seeds recall: ",
                     "多数种子能回忆出的最多键值对数：") if recalled else
               words("the mean accuracy over the seeds: ", "各种子的平均准确率："))
    return words(
        f"{len(budgets)} panels of the held-out accuracy of multi-query associative recall "
        f"with one layer of width {width}, against the number of key-value pairs "
        f"({joined(map(str, pair_counts))}, log axis): a line for the mean over the seeds, a "
        f"band from the lowest to the highest seed, a dashed line at chance, {chance:g}, and a "
        f"dotted line at d_k; {summary}" + words("; ", "；").join(panels) + ".",
        f"{len(budgets)} 幅图：宽度为 {width} 的一层模型做多查询联想回忆的留出集准确率，随键值对数"
        f"（{joined(map(str, pair_counts))}，对数坐标）的变化：线为各种子的均值，带为最低到最高的"
        f"种子，虚线是随机猜测的水平 {chance:g}，点线标出 d_k；{summary}"
        + words("; ", "；").join(panels) + "。")

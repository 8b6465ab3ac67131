"""Chapter 7's figures: how much of its context a character-level language model uses.

Each is drawn in the language chosen at call time (longdep.plots.style.words; a model's name may
be a str or a longdep.book.Bilingual) and says what it shows in its alt text, in comparisons
that Chapter 7 asserts in every seed, never a chaotic training's digits. The functions take
NumPy arrays with a leading seed dimension: a line is the mean over seeds, the thin lines or
dots are the seeds.
"""

import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_array, check_array_mapping, check_length, check_number
from longdep.plots.style import closed_for_display, joined, localised, words

MOST_MODELS = 7  # one colour each, from the style's cycle


def plot_position_losses(curves: dict):
    """Chapter 7, "Loss by position": each model's held-out loss at every position of the
    window; ``curves`` maps a model's name to a (seeds, time) array, entry t the loss of the
    prediction made with t + 1 characters of context."""
    check_array_mapping(curves, "curves", "a model's name to a (seeds, time) array",
                        "(seeds, time)", 2, most=MOST_MODELS)
    fig, ax = plt.subplots(figsize=(7.6, 3.6), layout="constrained")
    for name, grid in curves.items():
        grid = np.asarray(grid, dtype=float)
        line, = ax.plot(np.arange(grid.shape[1]), grid.mean(0), label=localised(name))
        for row in grid:
            ax.plot(np.arange(grid.shape[1]), row, color=line.get_color(), alpha=0.25,
                    linewidth=0.7)
    ax.set_xlabel(words("position t in the window (the prediction sees t + 1 characters)",
                        "窗口中的位置 t（预测看到 t + 1 个字符）"))
    ax.set_ylabel(words("held-out loss (nats per character)", "留出损失（每字符奈特）"))
    ax.set_title(words("Loss by position in the window", "窗口中按位置的损失"))
    ax.legend()
    return closed_for_display(fig, alt=_positions_alt(curves))


def _seed_count(grids) -> int:
    return len(np.asarray(next(iter(grids)), dtype=float))


def _positions_alt(curves: dict) -> str:
    """What plot_position_losses shows, from its data: which mean curve is lowest over the
    window and which is highest at position 0 (comparisons Chapter 7 asserts)."""
    means = {name: np.asarray(grid, dtype=float).mean(0) for name, grid in curves.items()}
    lowest = localised(min(means, key=lambda name: means[name].mean()))
    first = localised(max(means, key=lambda name: means[name][0]))
    names, length = joined(localised(name) for name in curves), len(next(iter(means.values())))
    seeds = _seed_count(curves.values())
    falling = all(m[0] > m[length // 2:].mean() for m in means.values())
    fall = (words("every curve falls from position 0 to the second half of the window; ",
                  "每条曲线都从位置 0 下降到窗口的后半段；") if falling else "")
    return words(
        f"Curves of held-out loss against position 0 to {length - 1} in the window for "
        f"{names}: the mean over {seeds} seeds (thick) and each seed (thin). {fall.capitalize()}"
        f"over the window the lowest mean is the {lowest}'s, while at position 0 the highest is "
        f"the {first}'s.",
        f"{names}的留出损失随窗口中位置 0 到 {length - 1} 变化的曲线：{seeds} 个种子的平均"
        f"（粗线）和每个种子（细线）。{fall}在整个窗口上平均最低的是{lowest}，"
        f"而在位置 0 最高的是{first}。")


def plot_context_ablation(distances, rises: dict, threshold: float):
    """Chapter 7, "Sharp nearby, fuzzy far away": the rise of the last position's loss when
    everything farther than d characters back is replaced (left) or shuffled (right), against
    d on a log axis; ``rises`` maps a model's name to {"replace": (seeds, distances),
    "shuffle": (seeds, distances)}. The y axis is linear within ``threshold`` of 0 and
    logarithmic beyond (symlog), so that the tails show beside the rise at d = 1; the
    threshold is drawn dotted."""
    check_array(distances, "distances", "(distances,)", 1)
    check_number("threshold", threshold, positive=True)
    if not isinstance(rises, dict) or not rises or len(rises) > MOST_MODELS:
        raise ValueError(f"rises must map 1 to {MOST_MODELS} model names to their rises")
    for name, modes in rises.items():
        check_array_mapping(modes, f"rises[{name!r}]", "a mode to (seeds, distances)",
                            "(seeds, distances)", 2)
        for mode in ("replace", "shuffle"):
            check_length(np.asarray(modes[mode]), f"rises[{name!r}][{mode!r}]",
                         len(distances), axis=1)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.0), sharey=True, layout="constrained")
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, mode in zip(axes, ("replace", "shuffle")):
        for colour, (name, modes) in zip(colours, rises.items()):
            grid = np.asarray(modes[mode], dtype=float)
            ax.plot(distances, grid.mean(0), marker="o", markersize=3, color=colour,
                    label=localised(name))
            for row in grid:
                ax.plot(distances, row, color=colour, alpha=0.25, linewidth=0.7)
        ax.axhline(threshold, color="0.4", linestyle=":",
                   label=words(f"threshold {threshold:g} nats", f"阈值 {threshold:g} 奈特"))
        ax.axhline(0, color="0.6", linewidth=0.7)
        ax.set_xscale("log", base=2)
        ax.set_xticks(distances, [str(d) for d in distances])
        ax.minorticks_off()
        ax.set_yscale("symlog", linthresh=threshold)
        ax.set_xlabel(words("d: characters kept before the predicted one",
                            "d：预测字符之前保留的字符数"))
        ax.set_title(ABLATIONS[mode](), fontsize=10)
    axes[0].set_ylabel(words("rise of the last position's loss (nats)",
                             "最后一个位置损失的上升（奈特）"))
    axes[1].yaxis.set_tick_params(labelleft=True)
    axes[0].legend(fontsize="small")
    return closed_for_display(fig, alt=_ablation_alt(distances, rises, threshold))


ABLATIONS = {
    "replace": lambda: words("everything farther than d replaced by random characters",
                             "d 之外的一切换成随机字符"),
    "shuffle": lambda: words("everything farther than d shuffled", "d 之外的一切打乱"),
}


def _ablation_alt(distances, rises: dict, threshold: float) -> str:
    """What plot_context_ablation shows, from its data: whose mean rise at the first distance
    is the largest in each panel (comparisons Chapter 7 asserts)."""
    first = {mode: localised(max(rises, key=lambda name: np.mean(
        np.asarray(rises[name][mode], dtype=float)[:, 0]))) for mode in ("replace", "shuffle")}
    names = joined(localised(name) for name in rises)
    seeds = _seed_count(modes["replace"] for modes in rises.values())
    low, high = int(distances[0]), int(distances[-1])
    return words(
        f"Two panels of the rise of the last character's loss against d from {low} to {high} "
        f"on a log axis, for {names}: the mean over {seeds} seeds (dots) and each seed (thin), "
        f"the threshold of {threshold:g} nats dotted. Left, the context farther than d "
        f"replaced by random characters: at d = {low} the largest rise is the "
        f"{first['replace']}'s. Right, that context shuffled: at d = {low} the largest rise "
        f"is the {first['shuffle']}'s.",
        f"两幅图，显示 {names}最后一个字符损失的上升随 d（{low} 到 {high}，对数轴）的变化："
        f"{seeds} 个种子的平均（圆点）和每个种子（细线），{threshold:g} 奈特的阈值画成点线。"
        f"左图把 d 之外的上下文换成随机字符：在 d = {low} 处上升最大的是{first['replace']}。"
        f"右图把这部分上下文打乱：在 d = {low} 处上升最大的是{first['shuffle']}。")


def plot_identifier_losses(repeats: dict, firsts: dict):
    """Chapter 7, "Copying": each model's loss on the characters of identifiers that repeat
    one seen earlier in the window, and of first occurrences; ``repeats`` and ``firsts`` map
    a model's name to a (seeds,) array. Bars are the means, dots the seeds."""
    check_array_mapping(repeats, "repeats", "a model's name to a (seeds,) array", "(seeds,)",
                        1, most=MOST_MODELS)
    check_array_mapping(firsts, "firsts", "a model's name to a (seeds,) array", "(seeds,)",
                        1, most=MOST_MODELS)
    if list(repeats) != list(firsts):
        raise ValueError(f"repeats and firsts must name the same models in the same order, "
                         f"got {list(repeats)} and {list(firsts)}")
    fig, ax = plt.subplots(figsize=(7.6, 3.6), layout="constrained")
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    positions = np.arange(len(repeats))
    kinds = ((firsts, colours[1], words("first occurrence in the window", "窗口中的首次出现")),
             (repeats, colours[0], words("repeats an identifier seen earlier in the window",
                                         "重复窗口中先前出现过的标识符")))
    for offset, (values, colour, label) in enumerate(kinds):
        x = positions + (offset - 0.5) * 0.38
        means = [np.mean(values[name]) for name in repeats]
        ax.bar(x, means, width=0.36, color=colour, alpha=0.7, label=label)
        for xi, name in zip(x, repeats):
            ax.plot(np.full(len(values[name]), xi), values[name], "k.", markersize=4)
    ax.set_xticks(positions, [localised(name) for name in repeats])
    low = min(min(np.min(v) for v in repeats.values()), min(np.min(v) for v in firsts.values()))
    ax.set_ylim(0.9 * low, None)
    ax.set_ylabel(words("held-out loss (nats per character)", "留出损失（每字符奈特）"))
    ax.set_title(words("Characters of identifiers, after their first",
                       "标识符中首字符之后的字符"))
    ax.legend(loc="upper left", fontsize="small")
    return closed_for_display(fig, alt=_identifiers_alt(repeats, firsts))


def _identifiers_alt(repeats: dict, firsts: dict) -> str:
    """What plot_identifier_losses shows, from its data: for how many models the repeats'
    mean loss is lower, and whose repeat bar is the lowest (comparisons Chapter 7 asserts)."""
    easier = sum(np.mean(repeats[name]) < np.mean(firsts[name]) for name in repeats)
    lowest = localised(min(repeats, key=lambda name: np.mean(repeats[name])))
    names, seeds = joined(localised(name) for name in repeats), _seed_count(repeats.values())
    return words(
        f"Bars of the held-out loss on the characters of identifiers after their first, for "
        f"{names}: first occurrences and repeats of an identifier seen earlier in the window, "
        f"the mean over {seeds} seeds, dots the seeds. The repeats' bar is the lower for "
        f"{easier} of the {len(repeats)} models; the lowest repeats' bar is the {lowest}'s.",
        f"条形图，显示 {names}在标识符首字符之后各字符上的留出损失：首次出现的标识符和"
        f"重复窗口中先前出现过的标识符，{seeds} 个种子的平均，圆点为各个种子。"
        f"{len(repeats)} 个模型中有 {easier} 个的重复条更低；重复条最低的是{lowest}。")

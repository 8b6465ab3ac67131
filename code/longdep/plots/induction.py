"""Chapter 5's figures of induction heads ("How attention uses its reach: induction heads"):
the copy loss during training, and the attention maps of a trained two-layer model.

Each is drawn in the language chosen at call time (longdep.plots.style.words; a name may be a
str or a longdep.book.Bilingual) and says what it shows in its alt text.
"""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import (
    check_array,
    check_array_mapping,
    check_length,
    check_number,
)
from longdep.plots.style import closed_for_display, joined, localised, words


def plot_copy_losses(losses: dict, chance: float, budget_steps: int, copies: dict,
                     smooth: int = 10):
    """The copy loss (nats, on the positions only copying predicts) against the training step:
    for every run of ``losses`` ({name: (seeds, steps) array}), each seed as a thin line and
    the median over seeds as a thick one, both averaged over ``smooth`` steps; a dotted line at
    ``chance`` (a uniform guess: the log of the vocabulary's size) and a vertical one at
    ``budget_steps``, the budget of the runs that end there. ``copies`` ({name: (seeds that
    copy, seeds)}) is what the alt text counts."""
    check_array_mapping(losses, "losses", "runs", "(seeds, steps)", 2)
    check_number("chance", chance, positive=True)
    check_number("budget_steps", budget_steps, positive=True)
    check_number("smooth", smooth, positive=True)
    if set(copies) != set(losses):
        raise ValueError("copies must count the seeds of every run of losses, and only those")
    fig, ax = plt.subplots(figsize=(7.2, 3.8), layout="constrained")
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    window = np.ones(int(smooth)) / smooth
    for (name, grid), colour in zip(losses.items(), colours):
        grid = np.asarray(grid, dtype=float)
        smoothed = np.array([np.convolve(row, window, mode="valid") for row in grid])
        steps = np.arange(smoothed.shape[1]) + smooth  # the step each average ends at
        for row in smoothed:
            ax.plot(steps, row, color=colour, linewidth=0.6, alpha=0.35)
        ax.plot(steps, np.median(smoothed, 0), color=colour, linewidth=2, label=localised(name))
    ax.axhline(chance, color="0.4", linestyle=":",
               label=words(f"a uniform guess, ln V = {chance:.2f}",
                           f"均匀猜测，ln V = {chance:.2f}"))
    ax.axvline(budget_steps, color="0.6", linestyle="--", linewidth=1,
               label=words(f"the budget, {budget_steps} steps", f"预算：{budget_steps} 步"))
    ax.set(xlabel=words("training step", "训练步"),
           ylabel=words("copy loss (nats)", "复制损失（奈特）"), ylim=(-0.05, chance + 0.3))
    ax.legend(fontsize=8, loc="center right")
    counted = [words(f"{localised(name)}: {k}/{n} seeds copy",
                     f"{localised(name)}：{n} 个种子中 {k} 个学会复制")
               for name, (k, n) in copies.items()]
    return closed_for_display(fig, alt=words(
        f"The copy loss against the training step, each seed a thin line and the median a "
        f"thick one, with a dotted line at a uniform guess ({chance:.2f} nats) and a dashed one at "
        f"the budget of {budget_steps} steps: " + joined(counted, clauses=True) + ".",
        f"复制损失随训练步的变化，细线为单个种子，粗线为中位数；点线为均匀猜测（{chance:.2f} "
        f"奈特），虚线为 {budget_steps} 步的预算：" + joined(counted, clauses=True) + "。"))


def plot_attention_maps(tokens, maps: dict, sources):
    """The attention weights of chosen heads on one sequence, one panel per head: ``maps``
    ({title: (time, time) array}, row t the weights of query t), ``tokens`` (time,) the ids
    that label both axes, ``sources`` (time,) the position each copied target comes from (-1
    where none), marked by a circle in every panel: where an induction head looks."""
    check_array(tokens, "tokens", "(time,)", 1)
    check_array(sources, "sources", "(time,)", 1)
    time = len(tokens)
    check_length(sources, "sources", time)
    check_array_mapping(maps, "maps", "heads", "(time, time)", 2)
    for title, grid in maps.items():
        check_length(grid, f"maps[{localised(title, 'en')!r}]", time)
        check_length(grid, f"maps[{localised(title, 'en')!r}]", time, axis=1)
    fig, axes = plt.subplots(1, len(maps), figsize=(4.6 * len(maps), 4.4), layout="constrained",
                             squeeze=False)
    labels = [str(int(token)) for token in tokens]
    queries = np.flatnonzero(np.asarray(sources) >= 0)
    for ax, (title, grid) in zip(axes[0], maps.items()):
        image = ax.imshow(np.asarray(grid), cmap="Blues", vmin=0, vmax=1)
        ax.plot(np.asarray(sources)[queries], queries, "o", color="#D55E00", fillstyle="none",
                markersize=7)
        ax.set_xticks(range(time), labels, fontsize=6)
        ax.set_yticks(range(time), labels, fontsize=6)
        ax.set(xlabel=words("key (token id, by position)", "键（词元编号，按位置）"),
               ylabel=words("query (token id, by position)", "查询（词元编号，按位置）"),
               title=localised(title))
        ax.grid(False)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8,
                 label=words("attention weight", "注意力权重"))
    heads = joined((localised(title) for title in maps), clauses=True)
    return closed_for_display(fig, alt=words(
        f"Attention weights on one held-out sequence of {time} tokens, queries down, keys "
        f"across, one panel each for {heads}; circles mark, for the {len(queries)} queries "
        f"inside the repeated segment, the position after the earlier occurrence of their "
        f"token, where an induction head attends.",
        f"一个含 {time} 个词元的留出序列上的注意力权重，纵轴为查询，横轴为键，{heads}各一幅；"
        f"圆圈标出重复片段内 {len(queries)} 个查询各自词元上一次出现之后的那个位置，也就是归纳头"
        f"关注的地方。"))

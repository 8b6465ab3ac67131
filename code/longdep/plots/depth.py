"""Chapter 4's figures of a deep stack at initialisation over many draws: the gradient through
the depth (skip path and in full) and the rank collapse of the tokens' representations.

Every string of a figure is written once, with its Chinese beside it, through ``words``; a
setting's name may be a str or a longdep.book.Bilingual; each figure says what it shows, with
its medians and ranges, in its alt text.
"""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_array, check_array_mapping, check_length
from longdep.plots.style import closed_for_display, joined, localised, words


def median_band(ax, x, values: np.ndarray, label, **style):
    """Draw on ``ax`` the median over draws (rows of ``values``, (draws, len(x))) as a line
    labelled ``label`` (a str or a Bilingual), the range as a shaded band; return the line
    (Chapter 4's figures of quantities measured over draws)."""
    line, = ax.plot(x, np.median(values, axis=0), label=localised(label), **style)
    ax.fill_between(x, values.min(axis=0), values.max(axis=0), color=line.get_color(),
                    alpha=0.15, linewidth=0)
    return line


def plot_gradient_spread(skip: dict[str, np.ndarray], ratios: dict[str, np.ndarray]):
    """Chapter 4, "Residual connections and layer normalisation".

    skip maps a setting's name to a (draws, layers + 1) array of gradient norms at the input of
    every layer of a stack, along the skip path only, entry 0 at the input of the stack (each
    draw is drawn relative to its last entry, the gradient at the output);
    ratios maps a setting's name to the (draws,) input/output ratios of the full gradient.
    Left: the skip-path gradient against the number of layers crossed, median and range over
    draws, with Pre-LN's exact 1. Right: one dot per draw of each full ratio, the median as a
    bar.
    """
    check_array_mapping(skip, "skip", "a setting to a (draws, layers + 1) array", "(draws, "
                        "layers + 1)", 2, most=4)
    check_array_mapping(ratios, "ratios", "a setting to a (draws,) array", "(draws,)", 1,
                        most=8)
    depth = next(iter(skip.values())).shape[1] - 1
    for name, values in skip.items():
        check_length(values, f"skip[{name!r}]", depth + 1, axis=1)
        if not (np.asarray(values) > 0).all():
            raise ValueError(f"skip[{name!r}] must be positive (a log axis)")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained",
                                      width_ratios=(1, 1.25))
    crossed = np.arange(depth, -1, -1)  # entry l has crossed depth - l layers
    for name, values in skip.items():  # each draw relative to its gradient at the output
        values = np.asarray(values, dtype=float)
        median_band(left, crossed, values / values[:, -1:], name)
    left.axhline(1.0, color="0.3", linestyle="--",
                 label=words("Pre-LN (exactly 1)", "Pre-LN（恰为 1）"))
    left.set(yscale="log", xlabel=words("layers crossed", "穿过的层数"),
             ylabel=words("gradient norm / at the output", "梯度范数 / 输出处的值"),
             title=words("skip path only: median and range", "只走跳跃路径：中位数与范围"))
    left.legend(fontsize=8)
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, values) in enumerate(ratios.items()):
        values = np.asarray(values, dtype=float)
        if not (values > 0).all():
            raise ValueError(f"ratios[{name!r}] must be positive (a log axis)")
        offsets = np.linspace(-0.18, 0.18, len(values))
        right.plot(i + offsets, np.sort(values), "o", color=colours[i % len(colours)],
                   fillstyle="none", markersize=5)
        right.plot([i - 0.3, i + 0.3], [np.median(values)] * 2, color="0.2", linewidth=2)
    right.axhline(1.0, color="0.5", linestyle=":")
    right.set_xticks(range(len(ratios)), [localised(name) for name in ratios], rotation=25,
                     ha="right", fontsize=8)
    right.set(yscale="log", ylabel=words("gradient at the input / at the output",
                                         "输入处梯度 / 输出处梯度"),
              title=words("full gradient: one dot per draw, bar = median",
                          "完整梯度：每次抽取一个点，横线为中位数"))
    skip_ends = {name: np.asarray(v, dtype=float)[:, 0] / np.asarray(v, dtype=float)[:, -1]
                 for name, v in skip.items()}
    draws = len(next(iter(ratios.values())))
    return closed_for_display(fig, alt=words(
        f"Two panels on log axes, {draws} draws of the weights. Left: the gradient along the "
        f"skip connections of a stack of {depth} layers against the layers it has crossed, "
        f"relative to the output, median and range; after {depth} layers: "
        f"{_spreads(skip_ends)}; Pre-LN's skip path keeps exactly 1 (dashed). Right: the full "
        f"gradient at the input of the stack over the one at its output, one dot per draw: "
        f"{_spreads(ratios)}.",
        f"两幅对数坐标图，权重抽取 {draws} 次。左图：{depth} 层堆叠中只沿跳跃连接的梯度（相对于输出"
        f"处）随穿过层数的变化，中位数与范围；穿过 {depth} 层后：{_spreads(skip_ends)}；Pre-LN "
        f"的跳跃路径恰好保持为 1（虚线）。右图：堆叠输入处与输出处完整梯度之比，每次抽取一个点："
        f"{_spreads(ratios)}。"))


def _spreads(values: dict) -> str:
    """Each setting's median and range, "name median 0.5 (0.1 to 0.9)", in a list."""
    def one(name, v) -> str:
        v = np.asarray(v, dtype=float)
        low, median, high = f"{v.min():.2g}", f"{np.median(v):.2g}", f"{v.max():.2g}"
        return words(f"{localised(name)} median {median} ({low} to {high})",
                     f"{localised(name)} 中位数 {median}（{low} 到 {high}）")

    return joined((one(name, v) for name, v in values.items()), clauses=True)


def plot_rank_collapse(depths, cosines: dict[str, np.ndarray]):
    """Chapter 4, "Rank collapse".

    depths: the (depths,) layer counts; cosines maps a stack's name to a (draws, depths) array
    of the mean cosine between the tokens' vectors at its output. One line per stack, the median
    over draws, with the range shaded; the depth on a log axis.
    """
    check_array(depths, "depths", "(depths,)", 1)
    depths = np.asarray(depths)
    check_array_mapping(cosines, "cosines", "a stack's name to a (draws, depths) array",
                        "(draws, depths)", 2, most=6)
    for name, values in cosines.items():
        check_length(values, f"cosines[{name!r}]", len(depths), axis=1)
    fig, ax = plt.subplots(figsize=(6.4, 3.9), layout="constrained")
    for (name, values), marker in zip(cosines.items(), "os^vDP"):
        median_band(ax, depths, np.asarray(values, dtype=float), name, marker=marker,
              fillstyle="none")
    ax.set(xscale="log", xlabel=words("depth L (layers)", "深度 L（层数）"), ylim=(-0.05, 1.05),
           ylabel=words("mean cosine between tokens", "词元之间的平均余弦"),
           title=words("at initialisation: median and range over draws",
                       "初始化时：多次抽取的中位数与范围"))
    ax.set_xticks(depths, [str(d) for d in depths])
    ax.xaxis.set_minor_formatter(mpl.ticker.NullFormatter())
    ax.legend(fontsize=8)
    deepest = {name: np.asarray(values, dtype=float)[:, -1] for name, values in cosines.items()}
    draws = len(next(iter(cosines.values())))
    return closed_for_display(fig, alt=words(
        f"The mean cosine between the vectors of two positions, from 0 to 1, against the depth "
        f"from {depths[0]} to {depths[-1]} layers (log axis), one line per stack, the median "
        f"over {draws} draws with the range shaded; at depth {depths[-1]}: "
        f"{_spreads(deepest)}.",
        f"两个位置的向量之间的平均余弦（0 到 1）随深度（{depths[0]} 到 {depths[-1]} 层，对数坐标）"
        f"的变化，每种堆叠一条线，为 {draws} 次抽取的中位数，阴影为范围；深度 {depths[-1]} 处："
        f"{_spreads(deepest)}。"))


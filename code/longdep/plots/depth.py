"""Chapter 4's figures of a deep stack at initialisation over many draws: the gradient through
the depth (skip path and in full) and the rank collapse of the tokens' representations.

Every string of a figure is written once, with its Chinese beside it, through ``words``.
"""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_array, check_array_mapping, check_length
from longdep.plots.style import closed_for_display

try:  # the figures' languages (longdep.plots.style.words), where the book has them
    from longdep.plots.style import words
except ImportError:  # until then, every figure is drawn in English
    def words(en: str, zh: str) -> str:
        return en


def _band(ax, x, values: np.ndarray, label: str, **style) -> None:
    """The median over draws (rows of ``values``) as a line, the range as a shaded band."""
    line, = ax.plot(x, np.median(values, axis=0), label=label, **style)
    ax.fill_between(x, values.min(axis=0), values.max(axis=0), color=line.get_color(),
                    alpha=0.15, linewidth=0)


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
        _band(left, crossed, values / values[:, -1:], name)
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
    right.set_xticks(range(len(ratios)), list(ratios), rotation=25, ha="right", fontsize=8)
    right.set(yscale="log", ylabel=words("gradient at the input / at the output",
                                         "输入处梯度 / 输出处梯度"),
              title=words("full gradient: one dot per draw, bar = median",
                          "完整梯度：每次抽样一个点，横线为中位数"))
    return closed_for_display(fig)


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
        _band(ax, depths, np.asarray(values, dtype=float), name, marker=marker,
              fillstyle="none")
    ax.set(xscale="log", xlabel=words("depth L (layers)", "深度 L（层数）"), ylim=(-0.05, 1.05),
           ylabel=words("mean cosine between tokens", "词元之间的平均余弦"),
           title=words("at initialisation: median and range over draws",
                       "初始化时：多次抽样的中位数与范围"))
    ax.set_xticks(depths, [str(d) for d in depths])
    ax.xaxis.set_minor_formatter(mpl.ticker.NullFormatter())
    ax.legend(fontsize=8)
    return closed_for_display(fig)


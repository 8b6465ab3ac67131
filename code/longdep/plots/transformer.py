"""Chapter 5's figures: Post-LN and Pre-LN gradient profiles, the depth sweep.

Each is drawn in the language chosen at call time (longdep.plots.style.words; a name may be a
str or a longdep.book.Bilingual) and says what it shows in its alt text.
"""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_array, check_length, check_profiles
from longdep.plots.style import _plain_log_ticks, closed_for_display, joined, localised, words


def plot_ffn_gradient_profiles(inits: dict[str, tuple[dict, dict]]):
    """Chapter 5, "Post-LN and Pre-LN at initialisation" (cf. Xiong et al. 2020, figure 3).

    inits maps an initialisation's name to (post, pre): each maps a depth L to the (L,)
    gradient norms of each layer's second feed-forward matrix. Left: the first
    initialisation's norms against the layer index, one colour per depth, Pre-LN dashed.
    Right: the last layer's norm against the depth for every initialisation and order, with a
    line proportional to 1/sqrt(L).
    """
    if not isinstance(inits, dict) or not inits:
        raise TypeError(f"inits must be a non-empty dict {{name: (post, pre)}}, got "
                        f"{type(inits).__name__}")
    for name, pair in inits.items():
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"inits[{name!r}] must be a (post, pre) pair of dicts")
        check_profiles(f"inits[{name!r}] post", pair[0])
        check_profiles(f"inits[{name!r}] pre", pair[1])
        if list(pair[0]) != list(pair[1]) or list(pair[0]) != list(next(iter(inits.values()))[0]):
            raise ValueError("every profile must have the same depths, in the same order")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.4), layout="constrained")
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    first_name, (post, pre) = next(iter(inits.items()))
    for colour, depth in zip(colours, post):
        layers = np.arange(1, depth + 1)
        left.plot(layers, post[depth], color=colour, label=f"L = {depth}")
        left.plot(layers, pre[depth], "--", color=colour)
    left.plot([], [], color="0.4", label=words("Post-LN (solid)", "Post-LN（实线）"))
    left.plot([], [], "--", color="0.4", label=words("Pre-LN (dashed)", "Pre-LN（虚线）"))
    left.set(yscale="log", xlabel=words("layer l (1 = nearest the input)",
                                        "第 l 层（1 = 最靠近输入）"),
             ylabel=r"$\|\partial L / \partial W_2^{(l)}\|_F$",
             title=words(f"each layer at initialisation ({localised(first_name)})",
                         f"初始化时的每一层（{localised(first_name)}）"))
    left.legend(fontsize=8, ncol=2)
    depths = np.array(list(post))
    markers = "os^v"
    for (name, (post, pre)), marker in zip(inits.items(), markers):
        for line, label, profiles, colour in (("-", "Post-LN", post, "0.2"),
                                              ("--", "Pre-LN", pre, colours[1])):
            right.plot(depths, [profiles[d][-1] for d in depths], line + marker,
                       color=colour, label=words(f"{label}, {localised(name)}",
                                                 f"{label}，{localised(name)}"),
                       fillstyle="full" if marker == "o" else "none")
    pre_first = next(iter(inits.values()))[1]
    reference = pre_first[depths[0]][-1] * np.sqrt(depths[0] / depths)
    right.plot(depths, reference, ":", color="0.5", label=r"$\propto 1/\sqrt{L}$")
    right.set(xscale="log", yscale="log", xlabel=words("depth L (layers)", "深度 L（层数）"),
              ylabel=r"$\|\partial L / \partial W_2^{(L)}\|_F$",
              title=words("last layer against depth", "最后一层与深度"))
    _plain_log_ticks(right, depths)
    right.legend(fontsize=8)
    return closed_for_display(fig, alt=_profiles_alt(inits, depths))


def _profiles_alt(inits: dict, depths: np.ndarray) -> str:
    """What plot_ffn_gradient_profiles shows: the last layer's norm at the shallowest and the
    deepest depth for every initialisation and order (two digits, as Chapter 5 glues them)."""
    shallow, deep = depths[0], depths[-1]
    ends = joined((
        words(f"{order}, {localised(name)}: {profiles[shallow][-1]:.2g} at L = {shallow}, "
              f"{profiles[deep][-1]:.2g} at L = {deep}",
              f"{order}，{localised(name)}：L = {shallow} 时为 {profiles[shallow][-1]:.2g}，"
              f"L = {deep} 时为 {profiles[deep][-1]:.2g}")
        for name, pair in inits.items() for order, profiles in zip(("Post-LN", "Pre-LN"), pair)),
        clauses=True)
    first = localised(next(iter(inits)))
    return words(
        f"Two panels on log axes of the gradient norm of the second feed-forward matrix W_2 at "
        f"initialisation. Left: every layer of models of depth {joined(map(str, depths))} "
        f"({first}), Post-LN solid, Pre-LN dashed. Right: the last layer against the depth, "
        f"with a dotted line proportional to 1/sqrt(L): {ends}.",
        f"两幅图，对数坐标，显示初始化时第二个前馈矩阵 W_2 的梯度范数。左图：深度为 "
        f"{joined(map(str, depths))} 的模型的每一层（{first}），Post-LN 为实线，Pre-LN 为虚线。"
        f"右图：最后一层随深度的变化，点线正比于 1/√L：{ends}。")


def plot_depth_sweep(series: dict, trained: float = 0.5):
    """Chapter 5, "Depth, warm-up and the order of the normalisation": for each setting, the
    fraction of seeds whose held-out accuracy reaches ``trained``, against the depth, with its
    95 % Wilson interval.

    series maps a setting's name (a str or a Bilingual) to a dict of (depths,) arrays:
    "depths" (layer counts), "trained" (seeds that reach ``trained``), "seeds" (seeds run),
    "low" and "high" (the interval of trained / seeds) and "worded" (whether the count earns
    a word of the book's rule). A point whose count earns no word, its interval straddling
    0.5, is drawn hollow: the runs there are chaotic, and no claim rests on them. The
    settings are shifted sideways a little, so that settings with equal fractions stay
    visible; a setting at one depth only (a control) is a point.
    """
    if not isinstance(series, dict) or not series:
        raise TypeError(f"series must be a non-empty dict {{name: arrays}}, got "
                        f"{type(series).__name__}")
    if not 0 < trained < 1:
        raise ValueError(f"trained must lie strictly between 0 and 1, got {trained!r}")
    for name, parts in series.items():
        check_depth_series(name, parts)
    fig, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    shifts = np.linspace(-0.12, 0.12, len(series))
    all_depths = sorted({int(d) for parts in series.values() for d in parts["depths"]})
    for (name, parts), marker, colour, shift in zip(series.items(), "os^Dv", colours, shifts):
        depths = np.asarray(parts["depths"], dtype=float) + shift
        fraction = np.asarray(parts["trained"]) / np.asarray(parts["seeds"])
        below, above = fraction - np.asarray(parts["low"]), np.asarray(parts["high"]) - fraction
        label = words(f"{localised(name)} ({int(parts['seeds'][0])} seeds)",
                      f"{localised(name)}（{int(parts['seeds'][0])} 个种子）")
        ax.errorbar(depths, fraction, yerr=(below, above), fmt="-" if len(depths) > 1 else "none",
                    color=colour, capsize=3, linewidth=1.2, label=label)
        worded = np.asarray(parts["worded"], dtype=bool)
        ax.plot(depths[worded], fraction[worded], marker, color=colour, linestyle="none")
        ax.plot(depths[~worded], fraction[~worded], marker, color=colour, linestyle="none",
                fillstyle="none", markersize=9)
    ax.plot([], [], "o", color="0.4", fillstyle="none", markersize=9, linestyle="none",
            label=words("hollow: no word, the interval straddles 0.5 (chaotic)",
                        "空心：区间跨过 0.5，不下结论（混沌）"))
    ax.set(xlabel=words("depth (layers)", "深度（层数）"),
           ylabel=words(f"fraction of seeds with accuracy ≥ {trained:g}",
                        f"准确率 ≥ {trained:g} 的种子比例"),
           ylim=(-0.05, 1.05), xticks=all_depths)
    ax.legend(fontsize=8, loc="lower left")
    return closed_for_display(fig, alt=_depth_sweep_alt(series, trained))


def check_depth_series(name, parts) -> None:
    """Raise unless ``parts`` holds the equal-length arrays :func:`plot_depth_sweep` reads."""
    keys = ("depths", "trained", "seeds", "low", "high", "worded")
    if not isinstance(parts, dict) or set(parts) != set(keys):
        raise TypeError(f"series[{localised(name, 'en')!r}] must be a dict with the keys "
                        f"{list(keys)}, got {type(parts).__name__}")
    for key in keys:
        check_array(parts[key], f"series[{localised(name, 'en')!r}][{key!r}]", "(depths,)", 1)
        check_length(parts[key], f"series[{localised(name, 'en')!r}][{key!r}]",
                     len(parts["depths"]))
    fraction = np.asarray(parts["trained"]) / np.asarray(parts["seeds"])
    if not ((np.asarray(parts["low"]) <= fraction) & (fraction <= np.asarray(parts["high"]))).all():
        raise ValueError(f"series[{localised(name, 'en')!r}]: every interval (low, high) must "
                         f"hold its fraction trained / seeds")


def _depth_sweep_alt(series: dict, trained: float) -> str:
    """What plot_depth_sweep shows: each setting's count of seeds that train at each depth,
    the counts Chapter 5 prints."""
    counts = []
    for name, parts in series.items():
        at = list(zip(parts["depths"], parts["trained"], parts["seeds"]))
        counts.append(words(
            f"{localised(name)}: " + joined(f"{int(k)}/{int(n)} at {int(d)}" for d, k, n in at),
            f"{localised(name)}：" + joined(f"{int(d)} 层 {int(k)}/{int(n)}" for d, k, n in at)))
    return words(
        f"The fraction of seeds whose held-out accuracy reaches {trained:g} against the depth, "
        f"with 95 % Wilson intervals, one line per setting, hollow where the count earns no "
        f"word: " + "; ".join(counts) + ".",
        f"留出集准确率达到 {trained:g} 的种子比例随深度的变化，带 95% Wilson 区间，每种设置一条线，"
        f"计数不足以下结论处为空心：" + "；".join(counts) + "。")

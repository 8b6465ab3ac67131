"""Chapter 4's figures: the score scale, path lengths, gradient over distance, a forget gate
inside attention.

Each is drawn in the language chosen at call time (longdep.plots.style.words; a layer's or a
model's name may be a str or a longdep.book.Bilingual) and says what it shows in its alt text.
"""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_curves
from longdep.plots.depth import median_band
from longdep.plots.style import _plain_log_ticks, closed_for_display, joined, localised, words


def plot_score_scaling(widths, variances: dict[str, list[float]],
                       max_weights: dict[str, list[float]], jacobian_norms: dict[str, list[float]],
                       keys: int):
    """Chapter 4, "Why the 1/sqrt(d_k) scale": score variance and softmax saturation against d_k.

    variances, max_weights and jacobian_norms map "unscaled" and "scaled" to one value per width:
    the variance of the scores, the mean largest softmax weight and the mean Frobenius norm of the
    softmax Jacobian.
    """
    for name, curves in (("variances", variances), ("max_weights", max_weights),
                         ("jacobian_norms", jacobian_norms)):
        check_curves(name, curves, len(widths))
        if set(curves) != {"unscaled", "scaled"}:
            raise ValueError(f"{name} must map 'unscaled' and 'scaled', got {list(curves)}")
    if isinstance(keys, bool) or not isinstance(keys, int) or keys < 1:
        raise ValueError(f"keys must be a positive int, got {keys!r}")
    widths = np.asarray(widths)
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.4), layout="constrained")
    styles = {"unscaled": {"marker": "o", "label": r"$q \cdot k$"},
              "scaled": {"marker": "s", "label": r"$q \cdot k / \sqrt{d_k}$"}}
    axes[0].plot(widths, widths, ":", color="0.4", label="$d_k$")  # math: in every language
    for name, style in styles.items():
        axes[0].plot(widths, variances[name], **style)
        axes[1].plot(widths, max_weights[name], **style)
        axes[2].plot(widths, jacobian_norms[name], **style)
    axes[0].set(yscale="log", ylabel=words("variance of the score", "分数的方差"),
                title=words("score variance", "分数的方差"))
    axes[1].axhline(1 / keys, color="0.4", linestyle=":",
                    label=words(f"uniform, 1/{keys}", f"均匀，1/{keys}"))
    axes[1].set(ylim=(0, 1.05), ylabel=words("mean largest weight", "最大权重的均值"),
                title=words("softmax saturation", "softmax 饱和"))
    axes[2].set(yscale="log", ylabel=words(r"mean $\|\mathrm{diag}(w) - w w^\top\|_F$",
                                           r"$\|\mathrm{diag}(w) - w w^\top\|_F$ 的均值"),
                title=words("gradient through the softmax", "穿过 softmax 的梯度"))
    for ax in axes:
        ax.set(xscale="log", xlabel=words("key width $d_k$", "键的宽度 $d_k$"))
        ax.legend()
    top = f"{widths[-1]:g}"
    values = {name: words(f"{name}: variance {variances[name][-1]:.2g}, largest weight "
                          f"{max_weights[name][-1]:.2f}, Jacobian norm "
                          f"{jacobian_norms[name][-1]:.2g}",
                          f"{'未缩放' if name == 'unscaled' else '缩放后'}：方差 "
                          f"{variances[name][-1]:.2g}，最大权重 {max_weights[name][-1]:.2f}，"
                          f"雅可比范数 {jacobian_norms[name][-1]:.2g}")
              for name in ("unscaled", "scaled")}
    return closed_for_display(fig, alt=words(
        f"Three panels against the key width d_k from {widths[0]:g} to {top} (log axis), for "
        f"the unscaled score q.k and the scaled one q.k/sqrt(d_k): the variance of the score "
        f"(with the line d_k dotted), the mean largest softmax weight over {keys} keys (with "
        f"the uniform weight 1/{keys} dotted) and the mean norm of the softmax Jacobian. At "
        f"d_k = {top}: {values['unscaled']}; {values['scaled']}.",
        f"三幅图，横轴为键的宽度 d_k（{widths[0]:g} 到 {top}，对数坐标），分别对应未缩放的分数 "
        f"q.k 和缩放后的分数 q.k/√d_k：分数的方差（点线为 d_k）、{keys} 个键上 softmax "
        f"最大权重的均值（点线为均匀权重 1/{keys}）、softmax 雅可比矩阵范数的均值。在 d_k = "
        f"{top} 处：{values['unscaled']}；{values['scaled']}。"))


def plot_path_lengths(steps, measured: dict[str, list[int]], predicted: dict[str, list[int]],
                      flop_steps, flops: dict[str, list[int]], features: int):
    """Chapter 4, "Path length: Table 1, measured": fewest layers from the first input to the
    last output, and the FLOPs of one layer, against the sequence length n.

    measured and predicted map a layer kind to one layer count per length in ``steps``; flops
    maps a layer kind to one count per length in ``flop_steps`` at width ``features``.
    """
    check_curves("measured", measured, len(steps))
    check_curves("predicted", predicted, len(steps))
    check_curves("flops", flops, len(flop_steps))
    if not set(measured) <= set(predicted):
        raise ValueError(f"predicted must cover every kind of measured, got {list(predicted)} "
                         f"for {list(measured)}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    for colour, kind in zip(colours, measured):
        left.plot(steps, predicted[kind], color=colour, linewidth=1, alpha=0.7)
        left.plot(steps, measured[kind], "o", color=colour, label=localised(kind))
    length = words("sequence length n (positions)", "序列长度 n（位置数）")
    left.set(xscale="log", yscale="log", xlabel=length, ylabel=words("fewest layers", "最少层数"),
             title=words("first input to last output", "从第一个输入到最后一个输出"))
    _plain_log_ticks(left, steps)
    left.legend(title=words("dots measured, lines predicted", "点为测量值，线为预测值"),
                fontsize=8, title_fontsize=8)
    for colour, (kind, counts) in zip(colours, flops.items()):
        right.plot(flop_steps, counts, marker="o", markersize=3, color=colour,
                   label=localised(kind))
    width = rf"$d_{{\mathrm{{model}}}}$ = {features}"
    right.axvline(features, color="0.4", linestyle=":", label=f"n = {width}")
    right.set(xscale="log", yscale="log", xlabel=length,
              ylabel=words("FLOPs of one layer", "一层的 FLOPs"),
              title=words(f"cost of one layer, {width}", f"一层的代价，{width}"))
    _plain_log_ticks(right, flop_steps)
    right.legend(fontsize=8)
    layers = joined((f"{localised(kind)} {int(measured[kind][-1])}" for kind in measured),
                    clauses=True)
    costs = joined((f"{localised(kind)} {int(counts[-1]):.2e}" for kind, counts in flops.items()),
                   clauses=True)
    return closed_for_display(fig, alt=words(
        f"Two log-log panels against the sequence length n. Left: the fewest layers after "
        f"which the last output depends on the first input, measured (dots) and predicted "
        f"(lines), for n from {steps[0]} to {steps[-1]}; at n = {steps[-1]}: {layers}. Right: "
        f"the counted FLOPs of one layer of width {features}, for n from {flop_steps[0]} to "
        f"{flop_steps[-1]}; at n = {flop_steps[-1]}: {costs}.",
        f"两幅双对数坐标图，横轴为序列长度 n。左图：最后一个输出开始依赖第一个输入所需的最少层数，"
        f"点为测量值，线为预测值，n 从 {steps[0]} 到 {steps[-1]}；n = {steps[-1]} 时：{layers}。"
        f"右图：宽度为 {features} 的一层计数得到的 FLOPs，n 从 {flop_steps[0]} 到 "
        f"{flop_steps[-1]}；n = {flop_steps[-1]} 时：{costs}。"))


def plot_distance_profiles(profiles: dict, dilution: dict[int, np.ndarray]):
    """Chapter 4, "Gradient versus distance": per-position input gradients of the last output,
    over draws.

    profiles maps a model's name (a str or a Bilingual) to its (draws, time) norms
    ||dL/dx_k||, drawn against the distance from the end as the median (line) and the range
    (band); dilution maps a length T to the causal Transformer's (draws, T) norms, whose median
    over draws is drawn as T ||dL/dx_k|| against the relative distance (T - 1 - k) / T.
    """
    check_curves("profiles", profiles, dims=2)
    check_curves("dilution", dilution, dims=2)
    for steps, norms in dilution.items():
        if np.shape(norms)[1] != steps:
            raise ValueError(f"dilution[{steps}] must hold {steps} norms per draw, got "
                             f"{np.shape(norms)[1]}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for name, norms in profiles.items():
        norms = np.asarray(norms, dtype=float)[:, ::-1]
        median_band(left, np.arange(norms.shape[1]), norms, name)
    length = np.shape(next(iter(profiles.values())))[1]
    left.set(yscale="log", xlabel=words("distance T - 1 - k (positions)",
                                        "距离 T - 1 - k（位置数）"),
             ylabel=r"$\|\partial L / \partial x_k\|$",
             title=words(f"T = {length}: median and range over draws",
                         f"T = {length}：多次抽取的中位数与范围"))
    left.legend()
    for steps, norms in dilution.items():
        median = np.median(np.asarray(norms, dtype=float), axis=0)
        right.plot(np.arange(steps) / steps, steps * median[::-1], ".", markersize=3,
                   label=f"T = {steps}")
    right.set(yscale="log", xlabel=words("relative distance (T - 1 - k) / T",
                                         "相对距离 (T - 1 - k) / T"),
              ylabel=r"$T \cdot \|\partial L / \partial x_k\|$",
              title=words("causal Transformer: gradient times length (median)",
                          "因果 Transformer：梯度乘以长度（中位数）"))
    right.legend(markerscale=3)
    return closed_for_display(fig, alt=_distance_alt(profiles, dilution))


def _distance_alt(profiles: dict, dilution: dict) -> str:
    """What plot_distance_profiles shows: each model's median gradient at the largest distance
    relative to distance 1, and each length's median over draws of the mean of T ||dL/dx_k||
    over k < T - 1."""
    length = np.shape(next(iter(profiles.values())))[1]
    far = joined((f"{localised(name)} {np.median(norms[:, 0] / norms[:, -2]):.1e}"
                  for name, norms in profiles.items()), clauses=True)
    shares = joined((f"T = {steps}: {np.median(steps * norms[:, :-1].mean(1)):.2f}"
                     for steps, norms in dilution.items()), clauses=True)
    return words(
        f"Two panels on log axes. Left: the gradient of the last output with respect to each "
        f"input position against the distance from the end, {length} positions, median over "
        f"draws with the range shaded; at distance {length - 1} it is, relative to distance 1 "
        f"(median): {far}. Right: the causal Transformer's gradient times the length T "
        f"against the relative distance; the median over draws of its mean over the positions "
        f"before the last is {shares}.",
        f"两幅图，对数坐标。左图：长 {length} 的序列上，最后一个输出关于每个输入位置的梯度随到末尾"
        f"距离的变化，线为多次抽取的中位数，阴影为范围；在距离 {length - 1} 处，它相对于距离 1 "
        f"处的值（中位数）为：{far}。右图：因果 Transformer 的梯度乘以长度 T，随相对距离的变化；"
        f"它在最后一个位置之前各位置上的均值，其多次抽取的中位数为：{shares}。")


def plot_gate_profiles(profiles: dict[float, np.ndarray], rates: dict[float, float]):
    """Chapter 4, "A forget gate inside attention": the gradient against distance of one layer
    of attention with a constant forget gate f, over draws.

    profiles maps a gate f to the (draws, time) norms ||dL/dx_k|| (entry k at distance
    time - 1 - k), drawn as the median (line) and range (band) against the distance, each draw
    relative to its value at distance 1; rates maps f to the per-step factor fitted to the
    median. A dotted line f^(d - 1) beside each gate is the prediction.
    """
    check_curves("profiles", profiles, dims=2)
    if set(rates) != set(profiles):
        raise ValueError(f"rates must have the gates of profiles, {list(profiles)}, got "
                         f"{list(rates)}")
    fig, ax = plt.subplots(figsize=(6.4, 3.9), layout="constrained")
    for gate, norms in profiles.items():
        norms = np.asarray(norms, dtype=float)[:, ::-1]
        distance = np.arange(1, norms.shape[1])
        relative = norms[:, 1:] / norms[:, 1:2]  # each draw relative to distance 1
        median_band(ax, distance, relative, f"f = {gate:g}")
        ax.plot(distance, float(gate) ** (distance - 1.0), ":", color="0.45", linewidth=1.2,
                zorder=3)
    ax.set(yscale="log", ylim=(1e-10, 10), xlabel=words("distance d (positions)",
                                                       "距离 d（位置数）"),
           ylabel=words("gradient norm / at distance 1", "梯度范数 / 距离 1 处的值"),
           title=words("constant forget gate f: dotted $f^{\\,d-1}$",
                       "恒定遗忘门 f：点线为 $f^{\\,d-1}$"))
    ax.legend(fontsize=8)
    fitted = joined((f"f = {gate:g}: {rates[gate]:.3f}" for gate in profiles), clauses=True)
    steps = np.shape(next(iter(profiles.values())))[1]
    return closed_for_display(fig, alt=words(
        f"Gradient norm on a log axis against the distance from 1 to {steps - 1}, one line per "
        f"constant forget gate f (median over draws, range shaded), each with the dotted "
        f"prediction f to the power d - 1; the per-step factor fitted to each median is "
        f"{fitted}.",
        f"对数坐标的梯度范数随距离（1 到 {steps - 1}）的变化，每个恒定遗忘门 f 一条线（多次抽取的"
        f"中位数，阴影为范围），各配一条点线表示预测值 f 的 d - 1 次方；对各中位数"
        f"拟合出的每步因子为：{fitted}。"))

"""Chapter 2's figures: gradient ratios against distance on log axes, the cliff, clipping.

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
from longdep.plots.style import _distance_axis, closed_for_display, joined, localised, words


def plot_matrix_powers(norms: np.ndarray, spectral_radius: float, sigma_max: float):
    """Chapter 2's non-normal matrix: ||W^k||_2 against k, beside rho^k and sigma_max^k."""
    check_array(norms, "norms", "(powers,)", 1)
    check_number("spectral_radius", spectral_radius, positive=True)
    check_number("sigma_max", sigma_max, positive=True)
    k = np.arange(len(norms))
    fig, ax = plt.subplots(layout="constrained")
    ax.plot(k, norms, marker="o", markersize=3,
            label=words(r"measured $\|W^k\|_2$", r"测得的 $\|W^k\|_2$"))
    ax.plot(k, spectral_radius**k, "--", label=rf"$\rho^k$, $\rho$ = {spectral_radius:.2f}")
    ax.plot(k, sigma_max**k, ":",
            label=rf"$\sigma_{{\max}}^k$, $\sigma_{{\max}}$ = {sigma_max:.2f}")
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    ax.set_ylim(0.5 * min(norms.min(), spectral_radius ** k[-1]), 5 * norms.max())
    ax.set_yscale("log")
    ax.set_xlabel(words("power k (= steps of a linear RNN)", "幂次 k（= 线性 RNN 的步数）"))
    ax.set_ylabel(words(r"spectral norm $\|W^k\|_2$", r"谱范数 $\|W^k\|_2$"))
    ax.set_title(words(r"Powers of $W = [[0.9, 2], [0, 0.9]]$: growth before decay",
                       r"$W = [[0.9, 2], [0, 0.9]]$ 的幂：先增长，后衰减"))
    ax.legend()
    peak = int(np.argmax(norms))
    return closed_for_display(fig, alt=words(
        f"On a log axis, the spectral norm of W^k for k from 0 to {k[-1]} (dots): it rises "
        f"from {norms[0]:.2f} to a peak of {norms[peak]:.2f} at k = {peak} and then falls, "
        f"in the end parallel to the dashed line rho^k (rho = {spectral_radius:.2f}); the "
        f"dotted line sigma_max^k (sigma_max = {sigma_max:.2f}) rises out of the plot.",
        f"对数坐标下，W^k 的谱范数随 k 从 0 到 {k[-1]} 的变化（圆点）：它从 {norms[0]:.2f} "
        f"升到 k = {peak} 处的峰值 {norms[peak]:.2f}，然后下降，最终与虚线 ρ^k（ρ = "
        f"{spectral_radius:.2f}）平行；点线 σ_max^k（σ_max = {sigma_max:.2f}）一路上升，"
        f"超出图的范围。"))


def plot_regimes(profiles: dict[tuple[str, float], np.ndarray]):
    """Chapter 2, experiment (a): gradient ratio against distance for W_hh = s Q.

    profiles maps (nonlinearity, s) to the (time,) ratios ||dL/dh_(T-d)|| / ||dL/dh_T||; each
    panel draws one nonlinearity, the bound s^d dashed in the same colour as its measurement.
    """
    check_array_mapping(profiles, "profiles", "(nonlinearity, s) to ratios (time,)",
                        "(time,)", 1, allow_inf=True)
    for key in profiles:
        if not (isinstance(key, tuple) and len(key) == 2):
            raise TypeError(f"profiles keys must be pairs (nonlinearity, s), got {key!r}")
        localised(key[0])  # a name: a str, or the same in English and Chinese
        check_number(f"s of profiles[{key!r}]", key[1])
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
        _distance_axis(ax, words(f"{localised(name)} RNN, $W_{{hh}} = sQ$",
                                 f"{localised(name)} RNN，$W_{{hh}} = sQ$"))
    handles, labels = axes[0].get_legend_handles_labels()
    handles += [mpl.lines.Line2D([], [], color="0.3"),
                mpl.lines.Line2D([], [], color="0.3", linestyle="--")]
    labels += [words("measured", "测量值"), words("bound $s^d$", "上界 $s^d$")]
    fig.legend(handles, labels, loc="outside right center")
    return closed_for_display(fig, alt=_regimes_alt(profiles, nonlinearities))


def _regimes_alt(profiles: dict, nonlinearities: list) -> str:
    """What plot_regimes shows: per panel, which curves lie on their bound, which fall, which
    rise (their ratio at the largest distance below or above 1)."""
    panels = []
    for name in nonlinearities:
        scales = [s for n, s in profiles if n == name]
        steps = len(profiles[name, scales[0]])
        d = np.arange(steps)
        on_bound = all(np.allclose(profiles[name, s], float(s) ** d, rtol=1e-6)
                       for s in scales)
        falling = joined(f"{s:g}" for s in scales if profiles[name, s][-1] < 1)
        rising = joined(f"{s:g}" for s in scales if profiles[name, s][-1] >= 1)
        panels.append(words(
            f"{localised(name)} RNN: the curves "
            + ("lie exactly on their bounds" if on_bound else "lie below their bounds")
            + (f"; those for s = {falling} fall" if falling else "")
            + (f"; those for s = {rising} rise" if rising else ""),
            f"{localised(name)} RNN：曲线"
            + ("与各自的上界完全重合" if on_bound else "位于各自的上界之下")
            + (f"；s = {falling} 的曲线下降" if falling else "")
            + (f"；s = {rising} 的曲线上升" if rising else "")))
    return words(f"{len(panels)} panels of the gradient ratio against the distance d, up to "
                 f"{steps - 1} steps, on a log axis, one curve per recurrent scale s with its "
                 f"bound s^d dashed. " + ". ".join(panels) + ".",
                 f"{len(panels)} 幅图，对数坐标，显示梯度比值随距离 d（最多 {steps - 1} 步）的"
                 f"变化，每个循环尺度 s 一条曲线，虚线是它的上界 s^d。" + "。".join(panels)
                 + "。")


def plot_input_scales(profiles: dict[float, np.ndarray], sigma_max: float,
                      derivatives: dict[float, np.ndarray]):
    """Chapter 2, experiments (b) and (c): one Gaussian W_hh, inputs of several scales.

    profiles maps an input scale to the (time,) gradient ratios by distance; derivatives maps it
    to the tanh'(a) values of every unit and step, whose histogram shows saturation.
    """
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    check_array_mapping(profiles, "profiles", "an input scale to ratios (time,)", "(time,)", 1,
                        allow_inf=True, most=len(colours))
    check_array_mapping(derivatives, "derivatives", "an input scale to tanh'(a) values",
                        "(...)", None)
    check_keys(derivatives, "derivatives", profiles, "profiles")
    check_number("sigma_max", sigma_max, positive=True)
    steps = len(next(iter(profiles.values())))
    for scale, ratios in profiles.items():
        check_length(ratios, f"profiles[{scale!r}]", steps)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.8), layout="constrained")
    measured = np.concatenate(list(profiles.values()))
    colour_of = dict(zip(profiles, colours))
    for scale, ratios in profiles.items():
        left.plot(np.arange(len(ratios)), ratios, color=colour_of[scale],
                  label=words(f"input scale {scale:g}", f"输入尺度 {scale:g}"))
    d = np.arange(len(measured) // len(profiles))
    left.plot(d, sigma_max**d, "k--", linewidth=0.9,
              label=words(rf"bound $\sigma_{{\max}}^d$ ($\sigma_{{\max}}$ = {sigma_max:.2f})",
                          rf"上界 $\sigma_{{\max}}^d$（$\sigma_{{\max}}$ = {sigma_max:.2f}）"))
    left.set_ylim(0.1 * measured.min(), 10 * measured.max())
    _distance_axis(left, words("gradient ratio against distance", "梯度比值与距离"))
    left.legend(fontsize=8)
    bins = np.linspace(0, 1, 41)
    for scale, values in derivatives.items():
        right.hist(values.ravel(), bins=bins, density=True, histtype="step", linewidth=1.5,
                   color=colour_of[scale], label=words(f"input scale {scale:g}",
                                                       f"输入尺度 {scale:g}"))
    right.set_xlabel(words(r"$\tanh'(a)$ of a unit at a step (1 = linear, 0 = saturated)",
                           r"某一步某个单元的 $\tanh'(a)$（1 = 线性，0 = 饱和）"))
    right.set_ylabel(words("density", "密度"))
    right.set_yscale("log")
    right.set_title(words("how saturated the units are", "单元的饱和程度"))
    right.legend(fontsize=8)
    return closed_for_display(fig, alt=_input_scales_alt(profiles, sigma_max, derivatives))


def _input_scales_alt(profiles: dict, sigma_max: float, derivatives: dict) -> str:
    """What plot_input_scales shows: which input scales' ratios grow and which vanish, and the
    mean tanh'(a) of each histogram."""
    rising = joined(f"{s:g}" for s, r in profiles.items() if r[-1] >= 1)
    falling = joined(f"{s:g}" for s, r in profiles.items() if r[-1] < 1)
    steps = len(next(iter(profiles.values())))
    means = joined(words(f"{np.mean(v):.2f} at input scale {s:g}", f"输入尺度 {s:g} 时为 "
                         f"{np.mean(v):.2f}") for s, v in derivatives.items())
    return words(
        f"Two panels. Left: the gradient ratio against the distance (up to {steps - 1} steps, "
        f"log axis) for input scales {joined(f'{s:g}' for s in profiles)}, with the bound "
        f"sigma_max^d (sigma_max = {sigma_max:.2f}) dashed"
        + (f"; the curves for input scales {rising} rise" if rising else "")
        + (f"; those for {falling} fall" if falling else "")
        + f". Right: histograms, on a log axis, of tanh'(a) over all units and steps; its "
        f"mean is {means}.",
        f"两幅图。左图：输入尺度为 {joined(f'{s:g}' for s in profiles)} 时，梯度比值随距离"
        f"（最多 {steps - 1} 步，对数坐标）的变化，虚线是上界 σ_max^d（σ_max = "
        f"{sigma_max:.2f}）"
        + (f"；输入尺度 {rising} 的曲线上升" if rising else "")
        + (f"；{falling} 的曲线下降" if falling else "")
        + f"。右图：所有单元、所有步上 tanh'(a) 的直方图（对数坐标），其均值在{means}。")


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


def plot_clipping_runs(runs: dict[str, tuple[np.ndarray, np.ndarray]], threshold: float):
    """Chapter 2, clipping in training: per-step loss (left) and gradient norm before clipping
    (right), one colour per setting: the median over seeds (line) and the range from the 10th to
    the 90th percentile (band). runs maps a label to (losses, grad_norms), each (seeds, steps)."""
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    check_array_pairs(runs, "runs", ("losses", "grad_norms"), "(seeds, steps)",
                      most=len(colours))
    check_number("threshold", threshold, positive=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for colour, (label, curves) in zip(colours, runs.items()):
        for ax, values in zip((left, right), curves):
            low, median, high = np.percentile(values, [10, 50, 90], axis=0)
            steps = np.arange(len(median))
            ax.fill_between(steps, low, high, color=colour, alpha=0.2, linewidth=0)
            ax.plot(steps, median, color=colour, linewidth=1.2, label=localised(label))
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
    return closed_for_display(fig, alt=_clipping_alt(runs, threshold))


def _clipping_alt(runs: dict, threshold: float) -> str:
    """What plot_clipping_runs shows: each setting's median final loss (the mean of a run's
    last 20 steps; the lower median of the seeds, as torch.median gives the one Chapter 2
    glues, with one digit)."""
    finals = []
    for label, (losses, _) in runs.items():
        final = np.sort(np.asarray(losses)[:, -20:].mean(1))
        median = final[(len(final) - 1) // 2]
        finals.append(words(f"{localised(label)}: {median:.0e}",
                            f"{localised(label)}：{median:.0e}"))
    seeds = len(next(iter(runs.values()))[0])
    return words(
        f"Two panels against the SGD step, on log axes, one colour per setting, {seeds} seeds "
        f"each: the median over the seeds (line) and the range from the 10th to the 90th "
        f"percentile (band). Left: the training loss; the median final loss is "
        + "; ".join(finals) + f". Right: the gradient norm before clipping, with the "
        f"threshold {threshold:g} dashed.",
        f"两幅图，横轴为 SGD 步数，对数坐标，每种设置一种颜色，各 {seeds} 个种子：种子的中位数"
        f"（线）和第 10 到第 90 百分位数的范围（带）。左图：训练损失；最终损失的中位数为"
        + "；".join(finals) + f"。右图：裁剪前的梯度范数，虚线是阈值 {threshold:g}。")


def plot_mean_field(s_grid: np.ndarray, predicted: np.ndarray, scales: np.ndarray,
                    measured: np.ndarray, onset: float):
    """Chapter 2, "The theory that predicts the measurement": the per-step rate of the
    gradient norm against s for W_hh = s Q. predicted is the (len(s_grid),) mean-field curve,
    measured is (len(scales), draws): one point per random Q, the mean of the draws marked."""
    check_array(s_grid, "s_grid", "(grid,)", 1)
    check_array(predicted, "predicted", "(len(s_grid),)", 1)
    check_length(predicted, "predicted", len(s_grid))
    check_array(scales, "scales", "(scales,)", 1)
    check_array(measured, "measured", "(len(scales), draws)", 2)
    check_length(measured, "measured", len(scales))
    check_number("onset", onset)
    fig, ax = plt.subplots(layout="constrained")
    ax.plot(s_grid, predicted, label=words(r"mean field $\sqrt{\chi}$", r"平均场 $\sqrt{\chi}$"))
    for k in range(measured.shape[1]):
        ax.plot(scales, measured[:, k], "o", color="C1", markersize=3, alpha=0.5,
                label=words("measured, one $Q$ each", "测量值，每个 $Q$ 一个")
                if k == 0 else None)
    ax.plot(scales, measured.mean(axis=1), "x", color="C1", markersize=9,
            label=words("measured, mean", "测量值，均值"))
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    ax.axvline(onset, color="C2", linestyle=":",
               label=words(f"predicted onset of growth, s = {onset:.2f}",
                           f"预测的增长起点，s = {onset:.2f}"))
    ax.set_xlabel(words("recurrent gain s  ($W_{hh} = sQ$)", "循环增益 s（$W_{hh} = sQ$）"))
    ax.set_ylabel(words("per-step rate of the gradient norm", "梯度范数的每步速率"))
    ax.set_title(words("tanh RNN, inputs of unit scale: prediction against measurement",
                       "tanh RNN，单位尺度的输入：预测与测量"))
    ax.legend()
    return closed_for_display(fig, alt=_mean_field_alt(s_grid, predicted, scales, measured,
                                                       onset))


def _mean_field_alt(s_grid, predicted, scales, measured: np.ndarray, onset: float) -> str:
    """What plot_mean_field shows: the predicted curve's ends, how close the measured points
    lie to it (Chapter 2 asserts within 5 %) and the predicted onset."""
    miss = np.abs(measured / np.interp(scales, s_grid, predicted)[:, None] - 1).max()
    close = (words("within 5 % of it", "与它相差不超过 5%") if miss < 0.05 else
             words(f"up to {100 * miss:.0f} % away from it", f"与它最多相差 {100 * miss:.0f}%"))
    return words(
        f"The per-step rate of the gradient norm against the recurrent gain s. The mean-field "
        f"prediction rises from {predicted[0]:.2f} at s = {s_grid[0]:g} to {predicted[-1]:.2f} "
        f"at s = {s_grid[-1]:g}; the {measured.size} measured points ({measured.shape[1]} "
        f"random Q at each of {len(scales)} values of s) lie {close}. A horizontal line marks "
        f"rate 1 and a dotted vertical line the predicted onset of growth, s = {onset:.2f}.",
        f"梯度范数的每步速率随循环增益 s 的变化。平均场预测从 s = {s_grid[0]:g} 时的 "
        f"{predicted[0]:.2f} 升到 s = {s_grid[-1]:g} 时的 {predicted[-1]:.2f}；{measured.size} "
        f"个测量点（{len(scales)} 个 s 值，每个取 {measured.shape[1]} 个随机 Q）{close}。一条"
        f"水平线标出速率 1，竖直点线标出预测的增长起点 s = {onset:.2f}。")

"""Chapter 2's figures of the gradient against distance: the non-normal matrix's powers, the
regimes of W_hh = s Q, the inputs' scale, and the mean-field theory against the measurement.

Each is drawn in the language chosen at call time (longdep.plots.style.words) and says what it
shows in its alt text, with the numbers formatted as Chapter 2's prose glues them.
"""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import (
    check_array,
    check_array_mapping,
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


def _median_and_band(ax, curves: np.ndarray, colour, label: str | None, style: str = "-"):
    """Draw the median over draws of curves (draws, time) as a line and their range as a band."""
    d = np.arange(curves.shape[1])
    ax.fill_between(d, curves.min(0), curves.max(0), color=colour, alpha=0.15, linewidth=0)
    ax.plot(d, np.median(curves, axis=0), style, color=colour, label=label)


def _check_draws(profiles: dict, name: str, what: str, most: int | None = None) -> int:
    """Raise unless profiles maps keys to (draws, time) arrays of one time length; return it."""
    check_array_mapping(profiles, name, what, "(draws, time)", 2, allow_inf=True, most=most)
    steps = np.shape(next(iter(profiles.values())))[1]
    for key, ratios in profiles.items():
        check_length(ratios, f"{name}[{key!r}]", steps, 1)
    return steps


def plot_regimes(profiles: dict[tuple[str, float], np.ndarray]):
    """Chapter 2, experiment (a): gradient ratio against distance for W_hh = s Q.

    profiles maps (nonlinearity, s) to the (draws, time) ratios ||dL/dh_(T-d)|| / ||dL/dh_T||
    of several random Q; each panel draws one nonlinearity: per s the median over the draws
    (line), their range (band) and the bound s^d (dashed), in one colour.
    """
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    steps = _check_draws(profiles, "profiles", "(nonlinearity, s) to ratios (draws, time)")
    for key in profiles:
        if not (isinstance(key, tuple) and len(key) == 2):
            raise TypeError(f"profiles keys must be pairs (nonlinearity, s), got {key!r}")
        localised(key[0])  # a name: a str, or the same in English and Chinese
        check_number(f"s of profiles[{key!r}]", key[1])
    nonlinearities = list(dict.fromkeys(name for name, _ in profiles))
    fig, axes = plt.subplots(1, len(nonlinearities), figsize=(9.5, 3.8), sharey=True,
                             layout="constrained")
    axes = np.atleast_1d(axes)
    d = np.arange(steps)
    for ax, name in zip(axes, nonlinearities):
        scales = [s for n, s in profiles if n == name]
        for colour, s in zip(colours, scales):
            _median_and_band(ax, np.asarray(profiles[name, s]), colour, f"s = {s:g}")
            ax.plot(d, float(s) ** d, "--", color=colour, linewidth=0.9, alpha=0.8)
        _distance_axis(ax, words(f"{localised(name)} RNN, $W_{{hh}} = sQ$",
                                 f"{localised(name)} RNN，$W_{{hh}} = sQ$"))
    handles, labels = axes[0].get_legend_handles_labels()
    handles += [mpl.lines.Line2D([], [], color="0.3"),
                mpl.lines.Line2D([], [], color="0.3", linestyle="--")]
    labels += [words("measured: median of the draws (band: range)",
                     "测量值：各次抽取的中位数（带：范围）"),
               words("bound $s^d$", "上界 $s^d$")]
    fig.legend(handles, labels, loc="outside right center")
    return closed_for_display(fig, alt=_regimes_alt(profiles, nonlinearities))


def _regimes_alt(profiles: dict, nonlinearities: list) -> str:
    """What plot_regimes shows: per panel, whether every draw lies on its bound or below it,
    and which median curves fall, which stay at 1 and which rise (their value at the largest
    distance below 1, equal to it to round-off, or above it: the linear RNN at s = 1 keeps the
    norm exactly, and round-off alone would put it on either side)."""
    panels = []
    for name in nonlinearities:
        scales = [s for n, s in profiles if n == name]
        draws, steps = np.shape(profiles[name, scales[0]])
        d = np.arange(steps)
        on_bound = all(np.allclose(profiles[name, s], float(s) ** d, rtol=1e-6)
                       for s in scales)
        last = {s: np.median(np.asarray(profiles[name, s])[:, -1]) for s in scales}
        trend = {s: 0 if abs(last[s] - 1) <= 1e-9 else np.sign(last[s] - 1) for s in scales}
        falling, level, rising = (joined(f"{s:g}" for s in scales if trend[s] == sign)
                                  for sign in (-1, 0, 1))
        panels.append(words(
            f"{localised(name)} RNN: the curves of all {draws} draws "
            + ("lie exactly on their bounds" if on_bound else "lie below their bounds")
            + (f"; the medians for s = {falling} fall" if falling else "")
            + (f"; those for s = {level} stay at 1" if level else "")
            + (f"; those for s = {rising} rise" if rising else ""),
            f"{localised(name)} RNN：全部 {draws} 次抽取的曲线"
            + ("与各自的上界完全重合" if on_bound else "位于各自的上界之下")
            + (f"；s = {falling} 的中位数曲线下降" if falling else "")
            + (f"；s = {level} 的中位数曲线保持在 1" if level else "")
            + (f"；s = {rising} 的中位数曲线上升" if rising else "")))
    steps = np.shape(next(iter(profiles.values())))[1]
    return words(f"{len(panels)} panels of the gradient ratio against the distance d, up to "
                 f"{steps - 1} steps, on a log axis, one colour per recurrent scale s: the "
                 f"median over random Q (line), their range (band) and the bound s^d (dashed). "
                 + ". ".join(panels) + ".",
                 f"{len(panels)} 幅图，对数坐标，显示梯度比值随距离 d（最多 {steps - 1} 步）的"
                 f"变化，每个循环尺度 s 一种颜色：随机 Q 的中位数（线）、范围（带）和上界 s^d"
                 f"（虚线）。" + "。".join(panels) + "。")


def plot_input_scales(profiles: dict[float, np.ndarray], sigma_max: float,
                      derivatives: dict[float, np.ndarray]):
    """Chapter 2, experiments (b) and (c): Gaussian W_hh of one gain, inputs of several scales.

    profiles maps an input scale to the (draws, time) gradient ratios by distance of several
    weight draws (median line, range band); sigma_max is the median sigma_max of the draws
    (the bound sigma_max^d, dashed); derivatives maps some input scales to the tanh'(a) values
    of every unit and step, whose histogram shows saturation.
    """
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    steps = _check_draws(profiles, "profiles", "an input scale to ratios (draws, time)",
                         most=len(colours))
    check_array_mapping(derivatives, "derivatives", "an input scale to tanh'(a) values",
                        "(...)", None)
    check_keys(derivatives, "derivatives", profiles, "profiles")
    check_number("sigma_max", sigma_max, positive=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.8), layout="constrained")
    colour_of = dict(zip(profiles, colours))
    for scale, ratios in profiles.items():
        _median_and_band(left, np.asarray(ratios), colour_of[scale],
                         words(f"input scale {scale:g}", f"输入尺度 {scale:g}"))
    d = np.arange(steps)
    left.plot(d, sigma_max**d, "k--", linewidth=0.9,
              label=words(rf"bound $\sigma_{{\max}}^d$ ($\sigma_{{\max}}$ = {sigma_max:.2f})",
                          rf"上界 $\sigma_{{\max}}^d$（$\sigma_{{\max}}$ = {sigma_max:.2f}）"))
    measured = np.concatenate([np.asarray(r).ravel() for r in profiles.values()])
    left.set_ylim(0.1 * measured.min(), 10 * measured.max())
    _distance_axis(left, words("gradient ratio against distance", "梯度比值与距离"))
    left.legend(fontsize=8)
    bins = np.linspace(0, 1, 41)
    for scale, values in derivatives.items():
        right.hist(np.ravel(values), bins=bins, density=True, histtype="step", linewidth=1.5,
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
    """What plot_input_scales shows: which input scales' median ratios grow and which vanish,
    and the mean tanh'(a) of each histogram (one decimal: in the growing regime the dynamics
    are chaotic)."""
    last = {s: np.median(np.asarray(r)[:, -1]) for s, r in profiles.items()}
    rising = joined(f"{s:g}" for s in profiles if last[s] >= 1)
    falling = joined(f"{s:g}" for s in profiles if last[s] < 1)
    draws, steps = np.shape(next(iter(profiles.values())))
    means = joined(words(f"{np.mean(v):.1f} at input scale {s:g}", f"输入尺度 {s:g} 时为 "
                         f"{np.mean(v):.1f}") for s, v in derivatives.items())
    return words(
        f"Two panels. Left: the gradient ratio against the distance (up to {steps - 1} steps, "
        f"log axis) for input scales {joined(f'{s:g}' for s in profiles)}, the median of "
        f"{draws} weight draws (line) and their range (band), with the bound sigma_max^d "
        f"(sigma_max = {sigma_max:.2f}) dashed"
        + (f"; the curves for input scales {rising} rise" if rising else "")
        + (f"; those for {falling} fall" if falling else "")
        + f". Right: histograms, on a log axis, of tanh'(a) over all units, steps and draws; "
        f"its mean is {means}.",
        f"两幅图。左图：输入尺度为 {joined(f'{s:g}' for s in profiles)} 时，梯度比值随距离"
        f"（最多 {steps - 1} 步，对数坐标）的变化，线为 {draws} 次权重抽取的中位数，带为其范围，"
        f"虚线是上界 σ_max^d（σ_max = {sigma_max:.2f}）"
        + (f"；输入尺度 {rising} 的曲线上升" if rising else "")
        + (f"；{falling} 的曲线下降" if falling else "")
        + f"。右图：所有单元、所有步、所有抽取上 tanh'(a) 的直方图（对数坐标），其均值在{means}。")


def plot_mean_field(s_grid: np.ndarray, predicted: np.ndarray, scales: np.ndarray,
                    measured: np.ndarray, onset: float, zoom: tuple[float, float]):
    """Chapter 2, "The theory that predicts the measurement": the per-step rate of the
    gradient norm against s for W_hh = s Q. predicted is the (len(s_grid),) mean-field curve,
    measured is (len(scales), draws): one point per random Q, the median of the draws marked.
    The right panel repeats the values of s within ``zoom`` = (low, high), around the onset."""
    check_array(s_grid, "s_grid", "(grid,)", 1)
    check_array(predicted, "predicted", "(len(s_grid),)", 1)
    check_length(predicted, "predicted", len(s_grid))
    check_array(scales, "scales", "(scales,)", 1)
    check_array(measured, "measured", "(len(scales), draws)", 2)
    check_length(measured, "measured", len(scales))
    check_number("onset", onset)
    if not (isinstance(zoom, tuple) and len(zoom) == 2):
        raise TypeError(f"zoom must be a pair (low, high) of gains, got {type(zoom).__name__}")
    check_number("zoom[0]", zoom[0])
    check_number("zoom[1]", zoom[1])
    inside = (zoom[0] <= scales) & (scales <= zoom[1])
    if not zoom[0] < zoom[1] or not inside.any():
        raise ValueError(f"zoom must be (low, high) with low < high around some of the scales, "
                         f"got {zoom}")
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.8), width_ratios=(1.6, 1),
                             layout="constrained")
    for ax, keep in zip(axes, (np.ones_like(inside), inside)):
        near = (s_grid >= zoom[0]) & (s_grid <= zoom[1]) if ax is axes[1] else slice(None)
        ax.plot(s_grid[near], predicted[near],
                label=words(r"mean field $\sqrt{\chi}$", r"平均场 $\sqrt{\chi}$"))
        for k in range(measured.shape[1]):
            ax.plot(scales[keep], measured[keep, k], "o", color="C1", markersize=3, alpha=0.4,
                    label=words("measured, one $Q$ each", "测量值，每个 $Q$ 一个")
                    if k == 0 else None)
        ax.plot(scales[keep], np.median(measured[keep], axis=1), "x", color="C1",
                markersize=9, label=words("measured, median", "测量值，中位数"))
        ax.axhline(1.0, color="0.5", linewidth=0.8)
        ax.axvline(onset, color="C2", linestyle=":",
                   label=words(f"predicted onset of growth, s = {onset:.2f}",
                               f"预测的增长起点，s = {onset:.2f}"))
        ax.set_xlabel(words("recurrent gain s  ($W_{hh} = sQ$)", "循环增益 s（$W_{hh} = sQ$）"))
    axes[0].set_ylabel(words("per-step rate of the gradient norm", "梯度范数的每步速率"))
    axes[0].set_title(words("tanh RNN, inputs of unit scale", "tanh RNN，单位尺度的输入"))
    axes[1].set_title(words(f"near the onset, s from {zoom[0]:g} to {zoom[1]:g}",
                            f"增长起点附近，s 从 {zoom[0]:g} 到 {zoom[1]:g}"))
    axes[0].legend(fontsize=8)
    return closed_for_display(fig, alt=_mean_field_alt(s_grid, predicted, scales, measured,
                                                       onset, zoom))


def _mean_field_alt(s_grid, predicted, scales, measured: np.ndarray, onset: float,
                    zoom: tuple[float, float]) -> str:
    """What plot_mean_field shows: the predicted curve's ends, how close the measured medians
    lie to it (Chapter 2 asserts within 1 %), the predicted onset, and on which side of 1 the
    medians near it lie where the prediction is at least 0.01 away from 1 (closer to the onset
    ten draws cannot tell the side, and the chapter claims none)."""
    median = np.median(measured, axis=1)
    expected = np.interp(scales, s_grid, predicted)
    miss = np.abs(median / expected - 1).max()
    close = (words("within 1 % of it", "与它相差不超过 1%") if miss < 0.01 else
             words(f"up to {100 * miss:.0f} % away from it", f"与它最多相差 {100 * miss:.0f}%"))
    order = np.argsort(scales)
    near = (zoom[0] <= scales) & (scales <= zoom[1])
    clear = np.abs(expected - 1) >= 0.01

    def listed(where) -> str:
        return joined(f"{s:g}" for s in scales[order][where[order]]) or words("none", "无")

    return words(
        f"Two panels of the per-step rate of the gradient norm against the recurrent gain s. "
        f"Left: the mean-field prediction rises from {predicted[0]:.2f} at s = {s_grid[0]:g} "
        f"to {predicted[-1]:.2f} at s = {s_grid[-1]:g}; the medians of the measured points "
        f"({measured.shape[1]} random Q at each of {len(scales)} values of s) lie {close}. A "
        f"horizontal line marks rate 1 and a dotted vertical line the predicted onset of "
        f"growth, s = {onset:.2f}. Right: the same from s = {zoom[0]:g} to {zoom[1]:g}; the "
        f"medians lie below 1 at s = {listed(near & clear & (median < 1))} and above 1 at "
        f"s = {listed(near & clear & (median >= 1))}; at s = {listed(near & ~clear)} the "
        f"prediction is within 0.01 of 1.",
        f"两幅图，显示梯度范数的每步速率随循环增益 s 的变化。左图：平均场预测从 s = "
        f"{s_grid[0]:g} 时的 {predicted[0]:.2f} 升到 s = {s_grid[-1]:g} 时的 "
        f"{predicted[-1]:.2f}；测量点（{len(scales)} 个 s 值，每个取 {measured.shape[1]} 个随机 "
        f"Q）的中位数{close}。一条水平线标出速率 1，竖直点线标出预测的增长起点 s = "
        f"{onset:.2f}。右图：s 从 {zoom[0]:g} 到 {zoom[1]:g} 的同一内容；中位数在 s = "
        f"{listed(near & clear & (median < 1))} 时低于 1，在 s = "
        f"{listed(near & clear & (median >= 1))} 时高于 1；s = {listed(near & ~clear)} 时"
        f"预测值与 1 相差不到 0.01。")

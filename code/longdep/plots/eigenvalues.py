"""Chapter 2's figures of "What the eigenvalues allow": parity against the test length for
transitions of either sign, and the LRU's gradient and state scale.

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
    check_length,
    check_mapping,
    check_number,
)
from longdep.plots.style import _distance_axis, closed_for_display, joined, localised, words


def plot_parity(lengths, accuracies: dict, training_length: int, solved: float = 0.99):
    """Chapter 2, parity: the test accuracy of every trained seed (dots) and their median
    (line) against the length of the test strings, one colour per setting. accuracies maps a
    label (a str or a Bilingual) to (seeds, len(lengths)); a seed at ``solved`` or more solves
    that length; training_length is marked."""
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    check_array(lengths, "lengths", "(lengths,)", 1)
    check_array_mapping(accuracies, "accuracies", "a label to accuracies (seeds, lengths)",
                        "(seeds, lengths)", 2, most=len(colours))
    for label, values in accuracies.items():
        localised(label)
        check_length(values, f"accuracies[{label!r}]", len(lengths), 1)
    check_number("training_length", training_length, positive=True)
    check_number("solved", solved, positive=True)
    lengths = np.asarray(lengths, dtype=float)
    fig, ax = plt.subplots(layout="constrained")
    for k, (colour, (label, values)) in enumerate(zip(colours, accuracies.items())):
        values = np.asarray(values)
        offsets = lengths * 1.06 ** (k - (len(accuracies) - 1) / 2)  # side by side
        for row in values:
            ax.plot(offsets, row, "o", color=colour, markersize=3, alpha=0.35)
        ax.plot(offsets, np.median(values, axis=0), "-", color=colour, label=localised(label))
    ax.axhline(0.5, color="0.5", linewidth=0.8)
    ax.axvline(training_length, color="0.3", linestyle=":",
               label=words(f"training length {training_length}",
                           f"训练长度 {training_length}"))
    ax.set_xscale("log")
    ax.set_xticks(lengths, [f"{length:g}" for length in lengths])
    ax.xaxis.set_minor_formatter(mpl.ticker.NullFormatter())
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel(words("length of the test strings (bits)", "测试串的长度（比特）"))
    ax.set_ylabel(words("test accuracy (0.5 = chance)", "测试准确率（0.5 = 随机猜测）"))
    ax.set_title(words("Parity: one dot per seed, line: median",
                       "奇偶校验：每个种子一个点，线为中位数"))
    ax.legend(fontsize=8)
    return closed_for_display(fig, alt=_parity_alt(lengths, accuracies, training_length,
                                                    solved))


def _parity_alt(lengths, accuracies: dict, training_length: int, solved: float) -> str:
    """What plot_parity shows: per setting, how many seeds solve each test length."""
    settings = []
    for label, values in accuracies.items():
        counts = (np.asarray(values) >= solved).sum(axis=0)
        seeds = len(values)
        settings.append(words(
            f"{localised(label)}: " + joined(f"{c} of {seeds} seeds at length {n:g}"
                                             for c, n in zip(counts, lengths)),
            f"{localised(label)}：" + joined(f"长度 {n:g} 时 {seeds} 个种子中有 {c} 个"
                                            for c, n in zip(counts, lengths))))
    return words(
        f"The test accuracy on parity against the length of the test strings, from "
        f"{lengths[0]:g} to {lengths[-1]:g} bits on a log axis, one dot per trained seed, a "
        f"line through the medians, a horizontal line at chance (0.5) and a dotted vertical "
        f"line at the training length {training_length}. Seeds that solve a length (accuracy "
        f"at least {solved:g}): " + joined(settings, clauses=True) + ".",
        f"奇偶校验的测试准确率随测试串长度的变化，长度从 {lengths[0]:g} 到 {lengths[-1]:g} "
        f"比特（对数坐标），每个训练好的种子一个点，线连接中位数，水平线为随机猜测（0.5），竖直"
        f"点线为训练长度 {training_length}。解决某一长度（准确率至少 {solved:g}）的种子数："
        + joined(settings, clauses=True) + "。")


def plot_lru(gradients: dict, modulus: np.ndarray, scales: dict):
    """Chapter 2, the LRU. Left: the gradient modulus |dL/dh_(T-d)| of every channel against
    d, for each ring of eigenvalues: gradients maps a ring's label to (measured, predicted),
    each (distances, channels), drawn as the range over the channels (band) and the median
    channel (line), with the predicted |lambda|^d of the slowest and the fastest channel dashed.
    Right: the root mean square of each channel's state over its drive's against 1 - |lambda|
    (modulus (channels,)): scales maps a label to (measured, predicted), each (channels,),
    drawn as dots and a line."""
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    check_array_pairs(gradients, "gradients", ("measured", "predicted"),
                      "(distances, channels)", most=len(colours))
    check_array(modulus, "modulus", "(channels,)", 1)
    if not ((0 <= modulus) & (modulus < 1)).all():
        raise ValueError("modulus must lie in [0, 1): the LRU's |lambda| is below 1")
    check_mapping(scales, "scales", "a label to (measured, predicted)")
    for label, pair in scales.items():
        localised(label)
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"scales[{label!r}] must be a pair (measured, predicted), got "
                            f"{type(pair).__name__}")
        for part, values in zip(("measured", "predicted"), pair):
            check_array(values, f"scales[{label!r}] {part}", "(channels,)", 1)
            check_length(values, f"scales[{label!r}] {part}", len(modulus))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for colour, (label, (measured, predicted)) in zip(colours, gradients.items()):
        measured, predicted = np.asarray(measured), np.asarray(predicted)
        d = np.arange(len(measured))
        left.fill_between(d, measured.min(1), measured.max(1), color=colour, alpha=0.12,
                          linewidth=0)
        left.plot(d, np.median(measured, axis=1), color=colour, label=localised(label))
        for column in (predicted[-1].argmin(), predicted[-1].argmax()):
            left.plot(d, predicted[:, column], "--", color="k", linewidth=0.7)
    left.plot([], [], "--", color="k", linewidth=0.7,
              label=words(r"$|\lambda|^d$ of the slowest and fastest channel",
                          r"最慢与最快通道的 $|\lambda|^d$"))
    left.set_ylim(bottom=1e-12)
    _distance_axis(left, words("LRU: gradient of every channel", "LRU：每个通道的梯度"))
    left.set_ylabel(r"$|\partial L/\partial h_{T-d}|$")
    left.legend(fontsize=8)
    gap = 1 - np.asarray(modulus)
    order = np.argsort(gap)
    for colour, (label, (measured, predicted)) in zip(colours[len(gradients):], scales.items()):
        right.plot(gap, measured, "o", color=colour, markersize=3, label=localised(label))
        right.plot(gap[order], np.asarray(predicted)[order], "-", color=colour, linewidth=0.9)
    right.set_xscale("log")
    right.set_yscale("log")
    top = max(np.max(m) for m, _ in scales.values())
    ticks = [t for t in (0.5, 1, 2, 4, 8, 16, 32) if t <= 1.2 * top]
    right.set_yticks(ticks, [f"{t:g}" for t in ticks])
    for axis in (right.xaxis, right.yaxis):
        axis.set_minor_formatter(mpl.ticker.NullFormatter())
    right.set(xlabel=words(r"distance from the unit circle, $1 - |\lambda|$",
                           r"到单位圆的距离 $1 - |\lambda|$"),
              ylabel=words("RMS of the state / RMS of its drive", "状态的均方根 / 驱动的均方根"),
              title=words("state scale: dots measured, lines predicted",
                          "状态的尺度：点为测量值，线为预测值"))
    right.legend(fontsize=8)
    return closed_for_display(fig, alt=_lru_alt(gradients, modulus, scales))


def _lru_alt(gradients: dict, modulus: np.ndarray, scales: dict) -> str:
    """What plot_lru shows: each ring's band at the largest distance, and the range of each
    state-scale setting (two significant digits)."""
    rings = []
    for label, (measured, _) in gradients.items():
        last = np.asarray(measured)[-1]
        rings.append(words(f"{localised(label)} from {last.min():.1e} to {last.max():.1e}",
                           f"{localised(label)}：{last.min():.1e} 到 {last.max():.1e}"))
    steps = len(np.asarray(next(iter(gradients.values()))[0]))
    ranges = joined((words(f"{localised(label)} from {np.min(m):.2g} to {np.max(m):.2g}",
                           f"{localised(label)}：{np.min(m):.2g} 到 {np.max(m):.2g}")
                     for label, (m, _) in scales.items()), clauses=True)
    return words(
        f"Two panels. Left: the gradient modulus of every channel of an LRU against the "
        f"distance d, up to {steps - 1} steps, on a log axis, one band per ring of eigenvalues; "
        f"each band lies on the dashed lines |lambda|^d of its slowest and fastest channel. At "
        f"d = {steps - 1}: " + joined(rings, clauses=True) + ". Right: the ratio of each "
        f"channel's state to its drive, in root mean square, against 1 - |lambda| "
        f"({1 - np.max(modulus):.1g} to {1 - np.min(modulus):.2g}) on log axes, dots measured "
        f"and lines predicted: " + ranges + ".",
        f"两幅图。左图：LRU 每个通道的梯度模随距离 d（最多 {steps - 1} 步，对数坐标）的变化，"
        f"每个特征值环一条带；每条带都落在其最慢与最快通道的虚线 |λ|^d 上。d = {steps - 1} 时："
        + joined(rings, clauses=True) + "。右图：每个通道的状态与其驱动的均方根之比随 1 - |λ|"
        f"（{1 - np.max(modulus):.1g} 到 {1 - np.min(modulus):.2g}）的变化，双对数坐标，点为"
        f"测量值，线为预测值：" + ranges + "。")

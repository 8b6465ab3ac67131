"""Chapter 6's figures of the one recurrence S_t = A_t S_{t-1} + B_t: the gradient over distance
of the newer recurrences, and what the delta rule and the additive write recall.

Each is drawn in the language chosen at call time (longdep.plots.style.words; a name may be a
str or a longdep.book.Bilingual) and says what it shows in its alt text, from the medians it
draws. The functions take NumPy arrays with a leading draw dimension: a line is the median over
draws, the band the range.
"""

import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_array, check_array_mapping, check_keys, check_length
from longdep.plots.style import closed_for_display, joined, localised, words

MOST_CURVES = 6  # one colour each, from the style's cycle


def _band(ax, x: np.ndarray, values: np.ndarray, label: str, **style) -> None:
    """Draw the median over draws (rows of ``values``) as a line and the range as a band."""
    line, = ax.plot(x, np.median(values, axis=0), label=label, **style)
    ax.fill_between(x, values.min(axis=0), values.max(axis=0), color=line.get_color(),
                    alpha=0.18, linewidth=0)


def plot_recurrence_gradients(ratios: dict, products: dict, distance: int):
    """Chapter 6, "One recurrence for every model": |dL/dx_{T-d}| / |dL/dx_T| against d at
    initialisation, median and range over draws, for each model of ``ratios`` (name -> a
    (draws, steps) array, entry d at distance d); dashed, the product of the keep gates of
    each model of ``products`` (name -> (draws, steps), a key of ``ratios``; may be empty),
    which the gradient follows. A dotted line marks ``distance``, where the alt text reads the
    medians."""
    check_array_mapping(ratios, "ratios", "a model's name to a (draws, steps) array",
                        "(draws, steps)", 2, most=MOST_CURVES)
    if products:  # none: no dashed line
        check_array_mapping(products, "products", "a model's name to a (draws, steps) array",
                            "(draws, steps)", 2, most=MOST_CURVES)
    elif not isinstance(products, dict):
        raise TypeError(f"products must be a dict of a model's name to a (draws, steps) "
                        f"array, got {type(products).__name__}")
    steps = np.shape(next(iter(ratios.values())))[1]
    for name, values in (*ratios.items(), *products.items()):
        check_length(np.asarray(values), f"curves[{name!r}]", steps, axis=1)
    check_keys(products, "products", ratios, "ratios")
    if isinstance(distance, bool) or not isinstance(distance, (int, np.integer)) or not (
            0 < distance < steps):
        raise ValueError(f"distance must be an int in [1, {steps - 1}], got {distance!r}")
    fig, ax = plt.subplots(figsize=(7.2, 4.0), layout="constrained")
    d = np.arange(1, steps)
    for name, values in ratios.items():
        _band(ax, d, np.asarray(values, dtype=float)[:, 1:], localised(name))
        if name in products:
            # dark and on top: it lies on the model's own line, which would hide it
            ax.plot(d, np.median(np.asarray(products[name], dtype=float)[:, 1:], axis=0),
                    color="0.1", ls=(0, (4, 3)), lw=1.0, zorder=3,
                    label=words(f"{localised(name)}: product of 1 − z",
                                f"{localised(name)}：1 − z 的乘积"))
    ax.axvline(distance, color="grey", lw=0.8, ls=":")
    ax.set_yscale("log")
    ax.set_xlabel(words("distance d (steps back from the last position)",
                        "距离 d（从最后一个位置往回数的步数）"))
    ax.set_ylabel(r"$\|\partial L/\partial x_{T-d}\| \,/\, \|\partial L/\partial x_T\|$")
    draws = np.shape(next(iter(ratios.values())))[0]
    ax.set_title(words(f"at initialisation, float64: median and range over {draws} draws",
                       f"初始化时，float64：{draws} 次抽样的中位数和范围"))
    ax.legend(fontsize=8, loc="lower left")
    return closed_for_display(fig, alt=_gradients_alt(ratios, products, distance))


def _gradients_alt(ratios: dict, products: dict, distance: int) -> str:
    """What plot_recurrence_gradients shows: each model's median ratio at ``distance`` and at
    the largest distance, two digits."""
    far = np.shape(next(iter(ratios.values())))[1] - 1
    medians = [f"{localised(name)} {np.median(np.asarray(v, dtype=float)[:, distance]):.1e}, "
               f"{np.median(np.asarray(v, dtype=float)[:, far]):.1e}"
               for name, v in ratios.items()]
    following = joined((localised(name) for name in products), clauses=True)
    dashed = (words(f"; dashed, for {following}, the product of its keep gates 1 − z, which "
                    f"its gradient follows",
                    f"；虚线是{following}各自的保留门 1 − z 的乘积，梯度随之变化")
              if products else "")
    return words(
        f"A semi-log plot of the gradient reaching distance d, relative to the last position, "
        f"d from 1 to {far}, at initialisation: a line for the median over the draws and a "
        f"band for their range, for each model{dashed}. Median at d = {distance} and at "
        f"d = {far}: " + joined(medians, clauses=True) + ".",
        f"半对数坐标图：初始化时到达距离 d 的梯度相对于最后一个位置的比值，d 从 1 到 {far}；"
        f"每个模型一条线为各次抽样的中位数，带为其范围{dashed}。d = {distance} 与 d = {far} "
        f"处的中位数：" + joined(medians, clauses=True) + "。")


WRITE_NAMES = {"delta": ("delta rule", "增量规则"), "additive": ("additive write", "加性写入")}
PANELS = {True: ("a reassigned key: is its new value read?", "重新赋值的键：读出的是新值吗？"),
          False: ("distinct keys: is each key's value read?", "互不相同的键：读出的是各自的值吗？")}


def plot_write_rules(key_counts, recalls: dict, key_size: int):
    """Chapter 6, "How a state is written": the fraction of reads that find the right value
    against the number of keys written, median and range over draws, for the delta rule and
    the additive write. ``recalls`` maps (reassigned, write) for reassigned in (True, False)
    and write in ("delta", "additive") to a (draws, len(key_counts)) array; left the reads of a
    reassigned key, right the reads of distinct keys. A dotted line marks ``key_size``, the
    dimension of the keys."""
    counts = np.asarray(key_counts, dtype=float)
    check_array(counts, "key_counts", "(counts,)", 1)
    expected = {(reassigned, write) for reassigned in PANELS for write in WRITE_NAMES}
    if not isinstance(recalls, dict) or set(recalls) != expected:
        raise ValueError(f"recalls must map each of {sorted(expected)} to a (draws, counts) "
                         f"array, got {sorted(recalls) if isinstance(recalls, dict) else recalls}")
    for key, values in recalls.items():
        check_array(np.asarray(values, dtype=float), f"recalls[{key!r}]", "(draws, counts)", 2)
        check_length(np.asarray(values), f"recalls[{key!r}]", len(counts), axis=1)
    if isinstance(key_size, bool) or not isinstance(key_size, (int, np.integer)) or key_size < 1:
        raise ValueError(f"key_size must be a positive int, got {key_size!r}")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained", sharey=True)
    for ax, reassigned in zip(axes, PANELS):
        for write, name in WRITE_NAMES.items():
            _band(ax, counts, np.asarray(recalls[reassigned, write], dtype=float),
                 words(*name), marker="o")
        ax.axvline(key_size, color="grey", lw=0.8, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_xticks(counts, [f"{c:g}" for c in counts])
        ax.set_title(words(*PANELS[reassigned]), fontsize=10)
        ax.set_xlabel(words(f"keys written (dotted: key dimension {key_size})",
                            f"写入的键数（点线：键的维数 {key_size}）"))
    axes[0].set_ylim(0, 1.05)
    axes[0].set_ylabel(words("fraction of reads right\n(median and range over draws)",
                             "读对的比例\n（各次抽样的中位数和范围）"))
    axes[0].legend(fontsize=8, loc="lower left")
    return closed_for_display(fig, alt=_write_alt(counts, recalls, key_size))


def _write_alt(counts: np.ndarray, recalls: dict, key_size: int) -> str:
    """What plot_write_rules shows: each rule's median at the fewest and the most keys, two
    digits, in each panel."""
    def ends(reassigned: bool) -> str:
        return joined([words(f"{words(*name)} from {np.median(grid[:, 0]):.2f} to "
                             f"{np.median(grid[:, -1]):.2f}",
                             f"{words(*name)}从 {np.median(grid[:, 0]):.2f} 到 "
                             f"{np.median(grid[:, -1]):.2f}")
                       for write, name in WRITE_NAMES.items()
                       for grid in [np.asarray(recalls[reassigned, write], dtype=float)]])

    first, last = f"{counts[0]:g}", f"{counts[-1]:g}"
    return words(
        f"Two panels of the fraction of reads right against the number of keys written, "
        f"{first} to {last} (log axis), keys of dimension {key_size} (dotted line), median "
        f"and range over draws. Left, reading a key written twice for its newer value: "
        f"{ends(True)}. Right, reading distinct keys: {ends(False)}.",
        f"两幅图：读对的比例随写入键数（{first} 到 {last}，对数坐标）的变化，键的维数为 "
        f"{key_size}（点线），各次抽样的中位数和范围。左图，读一个写过两次的键，要新值："
        f"{ends(True)}。右图，读互不相同的键：{ends(False)}。")

"""Chapter 7's figures: how much of its context a character-level language model uses.

Every string a figure draws is in :data:`TEXT`, one entry per figure, so that an edition in
another language replaces them in one place. The functions take NumPy arrays with a leading
seed dimension: a line is the mean over seeds, the thin lines or dots are the seeds.
"""

import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_array, check_array_mapping, check_length, check_number
from longdep.plots.style import closed_for_display

TEXT = {
    "positions": {
        "xlabel": "position t in the window (the prediction sees t + 1 characters)",
        "ylabel": "held-out loss (nats per character)",
        "title": "Loss by position in the window",
    },
    "ablation": {
        "replace": "everything farther than d replaced by random characters",
        "shuffle": "everything farther than d shuffled",
        "xlabel": "d: characters kept before the predicted one",
        "ylabel": "rise of the last position's loss (nats)",
        "threshold": "threshold {threshold:g} nats",
    },
    "identifiers": {
        "repeat": "repeats an identifier seen earlier in the window",
        "first": "first occurrence in the window",
        "ylabel": "held-out loss (nats per character)",
        "title": "Characters of identifiers, after their first",
    },
}
"""Every string of Chapter 7's figures."""

MOST_MODELS = 7  # one colour each, from the style's cycle


def plot_position_losses(curves: dict[str, np.ndarray], text: dict = TEXT["positions"]):
    """Chapter 7, "Loss by position": each model's held-out loss at every position of the
    window; ``curves`` maps a model's name to a (seeds, time) array, entry t the loss of the
    prediction made with t + 1 characters of context."""
    check_array_mapping(curves, "curves", "a model's name to a (seeds, time) array",
                        "(seeds, time)", 2, most=MOST_MODELS)
    fig, ax = plt.subplots(figsize=(7.6, 3.6), layout="constrained")
    for name, grid in curves.items():
        grid = np.asarray(grid, dtype=float)
        line, = ax.plot(np.arange(grid.shape[1]), grid.mean(0), label=name)
        for row in grid:
            ax.plot(np.arange(grid.shape[1]), row, color=line.get_color(), alpha=0.25,
                    linewidth=0.7)
    ax.set_xlabel(text["xlabel"])
    ax.set_ylabel(text["ylabel"])
    ax.set_title(text["title"])
    ax.legend()
    return closed_for_display(fig)


def plot_context_ablation(distances, rises: dict[str, dict[str, np.ndarray]],
                          threshold: float, text: dict = TEXT["ablation"]):
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
                    label=name)
            for row in grid:
                ax.plot(distances, row, color=colour, alpha=0.25, linewidth=0.7)
        ax.axhline(threshold, color="0.4", linestyle=":",
                   label=text["threshold"].format(threshold=threshold))
        ax.axhline(0, color="0.6", linewidth=0.7)
        ax.set_xscale("log", base=2)
        ax.set_xticks(distances, [str(d) for d in distances])
        ax.minorticks_off()
        ax.set_yscale("symlog", linthresh=threshold)
        ax.set_xlabel(text["xlabel"])
        ax.set_title(text[mode], fontsize=10)
    axes[0].set_ylabel(text["ylabel"])
    axes[1].yaxis.set_tick_params(labelleft=True)
    axes[0].legend(fontsize="small")
    return closed_for_display(fig)


def plot_identifier_losses(repeats: dict[str, np.ndarray], firsts: dict[str, np.ndarray],
                           text: dict = TEXT["identifiers"]):
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
    for offset, (kind, values, colour) in enumerate((("first", firsts, colours[1]),
                                                     ("repeat", repeats, colours[0]))):
        x = positions + (offset - 0.5) * 0.38
        means = [np.mean(values[name]) for name in repeats]
        ax.bar(x, means, width=0.36, color=colour, alpha=0.7, label=text[kind])
        for xi, name in zip(x, repeats):
            ax.plot(np.full(len(values[name]), xi), values[name], "k.", markersize=4)
    ax.set_xticks(positions, list(repeats))
    low = min(min(np.min(v) for v in repeats.values()), min(np.min(v) for v in firsts.values()))
    ax.set_ylim(0.9 * low, None)
    ax.set_ylabel(text["ylabel"])
    ax.set_title(text["title"])
    ax.legend(loc="upper left", fontsize="small")
    return closed_for_display(fig)

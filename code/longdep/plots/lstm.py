"""Chapter 3's figures: LSTM gradients over distance, key-recall accuracy, sequential cost."""

import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_curves
from longdep.plots.style import closed_for_display

EXTRA_COLOURS = ["#a0522d", "#9acd32", "#8a2be2"]  # after the style's cycle: brown, green, violet


# Chapter 3 figures
def plot_lstm_gradients(distances, measured: dict[str, np.ndarray],
                        cell_path: dict[str, np.ndarray], scaled: dict[str, np.ndarray],
                        scaled_model: str):
    """Chapter 3: ||dL/dx_{T-d}|| against distance d on log axes, in two panels.

    Left: ``measured`` curves (one per model) at initialisation, and dashed in the same colour,
    for the labels also in ``cell_path``, the gradient measured along the cell alone (h_{t-1}
    detached where it enters the gates). Right: ``scaled`` curves, the model ``scaled_model``
    of the left panel with larger W_hh; the first of them (s = 1) is that model and keeps its
    colour, so every model has one colour across both panels. Arrays are indexed by distance.
    """
    check_curves("measured", measured)
    check_curves("cell_path", cell_path, allow_empty=True)
    check_curves("scaled", scaled)
    if scaled_model not in measured:
        raise ValueError(f"scaled_model must be a label of measured {list(measured)}, "
                         f"got {scaled_model!r}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True,
                                      layout="constrained")
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colour_of = dict(zip(measured, colours))
    for label, norms in measured.items():
        left.plot(distances, norms, color=colour_of[label], label=label)
        if label in cell_path:
            left.plot(distances, cell_path[label], "--", color=colour_of[label], linewidth=1)
    left.plot([], [], "--", color="0.4", linewidth=1,
              label="dashed: along the cell alone ($h_{t-1}$ detached in the gates)")
    left.set_title("At initialisation")
    others = iter(colours[len(measured):])
    for k, (label, norms) in enumerate(scaled.items()):
        right.plot(distances, norms, color=colour_of[scaled_model] if k == 0 else next(others),
                   label=label)
    right.set_title(rf"{scaled_model}, $W_{{hh}}$ multiplied by s")
    for ax in (left, right):
        ax.set_yscale("log")
        ax.set_xlabel("distance d between input and loss (steps)")
        ax.set_ylabel(r"gradient norm $\|\partial L/\partial x_{T-d}\|$")
        ax.legend(loc="lower left", fontsize="small")
    right.yaxis.set_tick_params(labelleft=True)
    return closed_for_display(fig)


def plot_key_recall_accuracy(distances, accuracies: dict[str, np.ndarray], chance: float,
                             title: str, bound=None):
    """Key-recall accuracy against distance (Chapter 3, reused by later chapters).

    accuracies maps a model's name to a (seeds, distances) array: the line is the mean over seeds,
    the small dots are the seeds. ``chance`` (1 / number of keys) is drawn as a dotted line;
    ``bound`` (one number per distance, such as the best accuracy of any order-blind model),
    if given, as a dashed grey line.
    """
    check_curves("accuracies' means", {k: np.asarray(v, dtype=float).mean(0)
                                       for k, v in dict(accuracies).items()})
    if len(distances) == 0:
        raise ValueError("distances must not be empty")
    if not 0 < chance < 1:
        raise ValueError(f"chance must lie in (0, 1), got {chance!r}")
    if len(accuracies) > len(plt.rcParams["axes.prop_cycle"]) + len(EXTRA_COLOURS):
        raise ValueError(f"at most {len(plt.rcParams['axes.prop_cycle']) + len(EXTRA_COLOURS)} "
                         f"models can get a colour of their own, got {len(accuracies)}")
    fig, ax = plt.subplots(figsize=(7.6, 3.6), layout="constrained")
    # the style's cycle, then colours of their own: no two models share one
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"] + EXTRA_COLOURS
    for colour, (label, grid) in zip(colours, accuracies.items()):
        grid = np.asarray(grid)
        line, = ax.plot(distances, grid.mean(0), marker="o", color=colour, label=label)
        for seed_row in grid:
            ax.plot(distances, seed_row, ".", color=line.get_color(), alpha=0.5, markersize=5)
    if bound is not None:
        ax.plot(distances, bound, "--", color="0.5", label="best order-blind model (exact)")
    ax.axhline(chance, color="0.4", linestyle=":", label=f"chance ({chance:.3f})")
    ax.set_xscale("log", base=2)
    ax.set_xticks(distances, [str(d) for d in distances])
    ax.minorticks_off()
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("distance between key and query (steps)")
    ax.set_ylabel("held-out accuracy")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return closed_for_display(fig)


def plot_sequential_cost(lengths, seconds: dict[str, list[float]], positions: int):
    """Chapter 3: forward time against sequence length T for a fixed amount of work."""
    check_curves("seconds", seconds)
    fig, ax = plt.subplots(layout="constrained")
    for label, values in seconds.items():
        ax.plot(lengths, 1e3 * np.asarray(values), marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [str(length) for length in lengths])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel(f"sequence length T ({positions} positions cut into {positions}/T sequences)")
    ax.set_ylabel("forward time (ms, best of 3)")
    ax.set_title("The same work, cut into ever longer sequences")
    ax.legend()
    return closed_for_display(fig)

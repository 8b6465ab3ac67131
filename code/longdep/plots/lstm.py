"""Chapter 3's figures: LSTM gradients over distance, key-recall accuracy, sequential cost."""

import matplotlib.pyplot as plt
import numpy as np

from longdep.plots.style import closed_for_display


# Chapter 3 figures
def plot_lstm_gradients(distances: np.ndarray, measured: dict[str, np.ndarray],
                        forget_products: dict[str, np.ndarray],
                        scaled: dict[str, np.ndarray]):
    """Chapter 3: ||dL/dx_{T-d}|| against distance d on log axes, in two panels.

    Left: ``measured`` curves (one per model) at initialisation, and dashed in the same colour,
    for the labels also in ``forget_products``, the norm of the product of forget gates scaled to
    meet the measured curve at d = 0. Right: ``scaled`` curves (an LSTM with larger W_hh).
    All arrays are indexed by distance, like ``distances``.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), sharey=True, layout="constrained")
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for colour, (label, norms) in zip(colours, measured.items()):
        left.plot(distances, norms, color=colour, label=label)
        if label in forget_products:
            product = forget_products[label] * norms[0] / forget_products[label][0]
            left.plot(distances, product, "--", color=colour, linewidth=1)
    left.plot([], [], "--", color="0.4", linewidth=1,
              label=r"dashed: forget gates alone, $\|\prod f_t\|$ (matched at d = 0)")
    left.set_title("At initialisation")
    for colour, (label, norms) in zip(colours[len(measured):], scaled.items()):
        right.plot(distances, norms, color=colour, label=label)
    right.set_title(r"LSTM, forget bias 1, $W_{hh}$ multiplied by s")
    for ax in (left, right):
        ax.set_yscale("log")
        ax.set_xlabel("distance d between input and loss (steps)")
        ax.legend(loc="lower left")
    left.set_ylabel(r"gradient norm $\|\partial L/\partial x_{T-d}\|$")
    return closed_for_display(fig)


def plot_key_recall_accuracy(distances, accuracies: dict[str, np.ndarray], chance: float,
                             title: str):
    """Key-recall accuracy against distance (Chapter 3, reused by later chapters).

    accuracies maps a model's name to a (seeds, distances) array: the line is the mean over seeds,
    the small dots are the seeds. ``chance`` (1 / number of keys) is drawn as a dotted line.
    """
    fig, ax = plt.subplots(figsize=(7.6, 3.6), layout="constrained")
    for label, grid in accuracies.items():
        grid = np.asarray(grid)
        line, = ax.plot(distances, grid.mean(0), marker="o", label=label)
        for seed_row in grid:
            ax.plot(distances, seed_row, ".", color=line.get_color(), alpha=0.5, markersize=5)
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

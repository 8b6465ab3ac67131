"""One plotting style for the whole book, and the figures the chapters draw.

Figures keep an opaque white background, so they read the same on the theme's light and dark
pages; gradient norms go on log axes; every axis says what it measures.
"""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

BOOK_STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "font.size": 10,
    "axes.prop_cycle": mpl.cycler(
        color=["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
    ),
}


def use_book_style() -> None:
    """Apply the book's matplotlib style (a colour-blind-safe palette, white background)."""
    mpl.rcParams.update(BOOK_STYLE)


def finished(fig: mpl.figure.Figure) -> mpl.figure.Figure:
    """Close ``fig`` and return it, for a notebook cell to display as its value.

    A closed figure is shown exactly once, by the cell's display hook. An open one is also shown by
    the inline backend when the cell ends, and twice where the backend was activated twice (nbval
    does that), which would make the stored output differ from a fresh run.
    """
    plt.close(fig)
    return fig


def plot_bptt_contributions(loss_to_step: np.ndarray, step_terms: np.ndarray):
    """Chapter 1's figure: how far back each loss term sends gradient, and where dL/dW_hh comes from.

    loss_to_step: (time, time) norms of dL_t/dh_k (zero above the diagonal).
    step_terms: (time,) norms of the immediate term that step k adds to dL/dW_hh.
    """
    steps = len(step_terms)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.6), width_ratios=(1.15, 1),
                                   layout="constrained")
    masked = np.ma.masked_where(loss_to_step <= 0, loss_to_step)
    image = left.imshow(
        masked, origin="lower", cmap="viridis", norm=mpl.colors.LogNorm(), aspect="auto"
    )
    left.set_xlabel("state step k")
    left.set_ylabel("loss step t")
    left.set_title(r"$\|\partial L_t / \partial h_k\|$ (log colour scale)")
    left.grid(False)
    fig.colorbar(image, ax=left, label="gradient norm", pad=0.02)
    fig.get_layout_engine().set(w_pad=0.15)
    right.bar(np.arange(steps), step_terms, color="#0072B2")
    right.set_xlabel("step k of the unrolled sequence")
    right.set_ylabel("norm of step k's term")
    right.set_title(r"terms of $\partial L / \partial W_{hh}$")
    return finished(fig)


# Chapter 2 figures


# Chapter 3 figures


# Chapters 4 and 5 figures


# Chapter 6 figures

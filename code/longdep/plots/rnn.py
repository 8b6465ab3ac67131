"""Chapter 1's figure."""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_array, check_length
from longdep.plots.style import closed_for_display


def plot_bptt_contributions(loss_to_step: np.ndarray, step_terms: np.ndarray):
    """Chapter 1's figure: how far back each loss term sends gradient, and where dL/dW_hh comes from.

    loss_to_step: (time, time) norms of dL_t/dh_k (zero above the diagonal).
    step_terms: (time,) norms of the immediate term that step k adds to dL/dW_hh.
    """
    check_array(step_terms, "step_terms", "(time,)", 1)
    check_array(loss_to_step, "loss_to_step", "(time, time)", 2)
    steps = len(step_terms)
    check_length(loss_to_step, "loss_to_step", steps, 0)
    check_length(loss_to_step, "loss_to_step", steps, 1)
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
    return closed_for_display(fig)

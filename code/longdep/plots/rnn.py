"""Chapter 1's figure."""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_array, check_length
from longdep.plots.style import closed_for_display, words


def plot_bptt_contributions(loss_to_step: np.ndarray, step_terms: np.ndarray, reach: int = 10):
    """Chapter 1's figure: how far back each loss term sends gradient, and where dL/dW_hh comes
    from.

    loss_to_step: (time, time) norms of dL_t/dh_k (zero above the diagonal).
    step_terms: (time,) norms of the immediate term that step k adds to dL/dW_hh.
    The alt text gives the last loss term's gradient ``reach`` steps back, relative to its
    gradient at the last state (Chapter 1 glues the same ratio, printed as 1.5e-04).
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
    left.set_xlabel(words("state step k", "状态的步 k"))
    left.set_ylabel(words("loss step t", "损失的步 t"))
    left.set_title(words(r"$\|\partial L_t / \partial h_k\|$ (log colour scale)",
                         r"$\|\partial L_t / \partial h_k\|$（对数色标）"))
    left.grid(False)
    fig.colorbar(image, ax=left, label=words("gradient norm", "梯度范数"), pad=0.02)
    fig.get_layout_engine().set(w_pad=0.15)
    right.bar(np.arange(steps), step_terms, color="#0072B2")
    right.set_xlabel(words("step k of the unrolled sequence", "展开序列的第 k 步"))
    right.set_ylabel(words("norm of step k's term", "第 k 步那一项的范数"))
    right.set_title(words(r"terms of $\partial L / \partial W_{hh}$",
                          r"$\partial L / \partial W_{hh}$ 的各项"))
    return closed_for_display(fig, alt=_bptt_alt(loss_to_step, step_terms, reach))


def _bptt_alt(loss_to_step: np.ndarray, step_terms: np.ndarray, reach: int) -> str:
    """What plot_bptt_contributions shows, from its data."""
    steps = len(step_terms)
    reach = min(reach, steps - 1)
    decay = loss_to_step[-1, -1 - reach] / loss_to_step[-1, -1]
    later = step_terms[1:]
    similar = later.size > 0 and later.min() > step_terms.max() / 5
    right = (words("of similar size at every later step (each at least a fifth of the largest)",
                   "之后各步的项大小相近（每一项都至少是最大项的五分之一）") if similar else
             words("of very different sizes at the later steps",
                   "之后各步的项大小悬殊"))
    first = (words("zero at the first step, ", "第一步的项为零，") if step_terms[0] == 0
             else "")
    return words(
        f"Two panels. Left: a heat map, on a log colour scale, of the gradient norm of each "
        f"loss term L_t (rows, {steps} steps) with respect to each state h_k (columns), zero "
        f"above the diagonal; along every row the colour fades quickly to the left of the "
        f"diagonal: {reach} steps back, the last loss term's gradient is {decay:.1e} times its "
        f"gradient with respect to the last state. Right: a bar chart of the norm of the term "
        f"that each step adds to the gradient of W_hh, {first}{right}.",
        f"两幅图。左图是热图（对数色标），显示 {steps} 步中每个损失项 L_t（行）关于每个状态 "
        f"h_k（列）的梯度范数，对角线以上为零；每一行的颜色在对角线左侧迅速变淡：回溯 {reach} "
        f"步时，最后一个损失项的梯度只有它关于最后一个状态的梯度的 {decay:.1e} 倍。右图是条形图，"
        f"显示每一步为 W_hh 的梯度贡献的那一项的范数：{first}{right}。")

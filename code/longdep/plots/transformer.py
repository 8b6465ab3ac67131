"""Chapter 5's figures: Post-LN and Pre-LN gradient profiles, the depth sweep."""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from longdep.plots._checks import check_profiles
from longdep.plots.style import _plain_log_ticks, closed_for_display


def plot_ffn_gradient_profiles(inits: dict[str, tuple[dict, dict]]):
    """Chapter 5, "Post-LN and Pre-LN at initialisation" (cf. Xiong et al. 2020, figure 3).

    inits maps an initialisation's name to (post, pre): each maps a depth L to the (L,)
    gradient norms of each layer's second feed-forward matrix. Left: the first
    initialisation's norms against the layer index, one colour per depth, Pre-LN dashed.
    Right: the last layer's norm against the depth for every initialisation and order, with a
    line proportional to 1/sqrt(L).
    """
    if not isinstance(inits, dict) or not inits:
        raise TypeError(f"inits must be a non-empty dict {{name: (post, pre)}}, got "
                        f"{type(inits).__name__}")
    for name, pair in inits.items():
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"inits[{name!r}] must be a (post, pre) pair of dicts")
        check_profiles(f"inits[{name!r}] post", pair[0])
        check_profiles(f"inits[{name!r}] pre", pair[1])
        if list(pair[0]) != list(pair[1]) or list(pair[0]) != list(next(iter(inits.values()))[0]):
            raise ValueError("every profile must have the same depths, in the same order")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.4), layout="constrained")
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    first_name, (post, pre) = next(iter(inits.items()))
    for colour, depth in zip(colours, post):
        layers = np.arange(1, depth + 1)
        left.plot(layers, post[depth], color=colour, label=f"L = {depth}")
        left.plot(layers, pre[depth], "--", color=colour)
    left.plot([], [], color="0.4", label="Post-LN (solid)")
    left.plot([], [], "--", color="0.4", label="Pre-LN (dashed)")
    left.set(yscale="log", xlabel="layer l (1 = nearest the input)",
             ylabel=r"$\|\partial L / \partial W_2^{(l)}\|_F$",
             title=f"each layer at initialisation ({first_name})")
    left.legend(fontsize=8, ncol=2)
    depths = np.array(list(post))
    markers = "os^v"
    for (name, (post, pre)), marker in zip(inits.items(), markers):
        for line, label, profiles, colour in (("-", "Post-LN", post, "0.2"),
                                              ("--", "Pre-LN", pre, colours[1])):
            right.plot(depths, [profiles[d][-1] for d in depths], line + marker,
                       color=colour, label=f"{label}, {name}",
                       fillstyle="full" if marker == "o" else "none")
    pre_first = next(iter(inits.values()))[1]
    reference = pre_first[depths[0]][-1] * np.sqrt(depths[0] / depths)
    right.plot(depths, reference, ":", color="0.5", label=r"$\propto 1/\sqrt{L}$")
    right.set(xscale="log", yscale="log", xlabel="depth L (layers)",
              ylabel=r"$\|\partial L / \partial W_2^{(L)}\|_F$", title="last layer against depth")
    _plain_log_ticks(right, depths)
    right.legend(fontsize=8)
    return closed_for_display(fig)


def plot_depth_sweep(depths, accuracies: dict, trained: float = 0.5):
    """Chapter 5, "Depth, warm-up and the order of the normalisation": the fraction of seeds
    whose held-out accuracy reaches ``trained``, against the depth, one line per setting.

    depths: the (depths,) layer counts; accuracies maps a setting's name to a
    (depths, seeds) array of accuracies.
    """
    depths = np.asarray(depths)
    if depths.ndim != 1 or depths.size == 0:
        raise ValueError(f"depths must be a non-empty 1-d array, got shape {depths.shape}")
    if not isinstance(accuracies, dict) or not accuracies:
        raise TypeError(f"accuracies must be a non-empty dict {{name: (depths, seeds) array}}, "
                        f"got {type(accuracies).__name__}")
    if not 0 < trained < 1:
        raise ValueError(f"trained must lie strictly between 0 and 1, got {trained!r}")
    fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
    for (name, grid), marker in zip(accuracies.items(), "os^v"):
        grid = np.asarray(grid, dtype=float)
        if grid.ndim != 2 or grid.shape[0] != depths.size:
            raise ValueError(f"accuracies[{name!r}] must have shape ({depths.size}, seeds), "
                             f"got {grid.shape}")
        ax.plot(depths, (grid >= trained).mean(1), "-" + marker, fillstyle="none",
                label=f"{name} ({grid.shape[1]} seeds)")
    ax.set(xlabel="depth (layers)", ylabel=f"fraction of seeds with accuracy ≥ {trained:g}",
           ylim=(-0.05, 1.05), xticks=depths)
    ax.legend()
    return closed_for_display(fig)

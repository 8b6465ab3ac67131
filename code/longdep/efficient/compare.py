"""The book's models side by side (Chapter 6, "The book's summary table").

Six sequence models, all mapping embeddings (batch, time, input_size) to features
(batch, time, width): a tanh RNN, an LSTM, and four one-layer Pre-LN stacks that differ only in
their token mixer (softmax attention, sliding-window attention, linear attention, a selective
SSM). Every column of the summary table is measured here, none is typed:

- cost per layer: the exponent p of matrix-product FLOPs ~ T^p, fitted over doubling lengths;
- sequential steps: how the longest chain of the autograd graph grows with T;
- path length: the fewest layers after which the last output depends on the first input
  (Chapter 4's measurement; a recurrence evaluated step by step counts one layer per step);
- gradient ratio |dL/dx_{T-d}| / |dL/dx_T| at distance d, at initialisation, in float64;
- key-recall accuracy at distance d under the book's one training budget.
"""

import html
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.autograd import forward_ad
from torch.utils._pytree import tree_map

from longdep.attention import causal_mask
from longdep.efficient.cost import fitted_exponent, graph_depth, growth_label, matmul_flops
from longdep.efficient.mixers import mixer_stack
from longdep.lstm import LSTM
from longdep.paths import distance_profile
from longdep.probes import ratios_by_distance
from longdep.rnn import ElmanRNN
from longdep.training import KEY_RECALL_BUDGET, train_key_recall

MIXER_OF = {"Transformer (softmax attention)": "softmax", "sliding-window attention": "window",
            "linear attention": "linear", "selective SSM": "ssm"}
BOOK_MODELS = ("tanh RNN", "LSTM", *MIXER_OF)


@dataclass(frozen=True)
class ModelShape:
    """The sizes every compared model shares. ``input_size`` and ``width`` are the key-recall
    budget's embedding and model widths; the stacks have ``num_layers`` layers, ``num_heads``
    heads and a feed-forward width ``d_ff``; ``window`` keys per query for the sliding window,
    ``state_size`` states per channel for the SSM, ``forget_bias`` for the LSTM (Chapter 3)."""

    input_size: int = KEY_RECALL_BUDGET.embedding_dim
    width: int = KEY_RECALL_BUDGET.model_dim
    num_layers: int = 1
    num_heads: int = 2
    d_ff: int = 64
    window: int = 8
    state_size: int = 4
    forget_bias: float = 3.0
    max_len: int = 4096


def check_model(name: str) -> None:
    """Raise a clear ``ValueError`` unless ``name`` is one of :data:`BOOK_MODELS`."""
    if name not in BOOK_MODELS:
        raise ValueError(f"model must be one of {BOOK_MODELS}, got {name!r}")


def book_model(name: str, shape: ModelShape = ModelShape(), input_size: int | None = None
               ) -> nn.Module:
    """A fresh model ``name`` of :data:`BOOK_MODELS`: (batch, time, input_size) -> (batch, time,
    width), or a tuple starting with that for the recurrent ones. ``input_size`` defaults to
    ``shape.input_size``; the stacks read it through a linear map when it differs from width."""
    check_model(name)
    size = shape.input_size if input_size is None else input_size
    if name == "tanh RNN":
        return ElmanRNN(size, shape.width)
    if name == "LSTM":
        return LSTM(size, shape.width, forget_bias=shape.forget_bias)
    return mixer_stack(MIXER_OF[name], shape.width, shape.num_heads, shape.num_layers, shape.d_ff,
                       shape.max_len, shape.window, shape.state_size,
                       None if size == shape.width else size)


def first_output(outputs) -> torch.Tensor:
    """The (batch, time, features) outputs of a model that may return a tuple starting with them."""
    return outputs[0] if isinstance(outputs, tuple) else outputs


def layer_cost_exponent(name: str, lengths: Sequence[int], shape: ModelShape = ModelShape()
                        ) -> float:
    """Fitted exponent p of the model's matrix-product FLOPs ~ T^p over ``lengths`` (batch 1)."""
    torch.manual_seed(0)
    model = book_model(name, shape)
    flops = [matmul_flops(lambda: model(torch.zeros(1, n, shape.input_size))) for n in lengths]
    return fitted_exponent(lengths, flops)


def sequential_depths(name: str, lengths: Sequence[int], shape: ModelShape = ModelShape()
                      ) -> list[int]:
    """:func:`longdep.efficient.cost.graph_depth` of the model's output at each length."""
    torch.manual_seed(0)
    model = book_model(name, shape)
    return [graph_depth(first_output(model(torch.zeros(1, n, shape.input_size,
                                                       requires_grad=True))))
            for n in lengths]


def stack_outputs(mixer: str, x: torch.Tensor, max_layers: int, shape: ModelShape
                  ) -> Iterator[torch.Tensor]:
    """Outputs after 1, 2, ... layers of a stack of ``mixer`` on x (batch, time, width)."""
    stack = mixer_stack(mixer, shape.width, shape.num_heads, max_layers, shape.d_ff,
                        shape.max_len, shape.window, shape.state_size).to(x.dtype)
    mask = causal_mask(x.size(1)) if mixer == "softmax" else None
    h = stack.positional_encoding(x)
    for layer in stack.layers:
        h = layer(h, mask)
        yield h


def sweep_outputs(model: nn.Module, x: torch.Tensor, max_sweeps: int) -> Iterator[torch.Tensor]:
    """Outputs (batch, time, hidden) after 1, 2, ... parallel sweeps of a recurrent ``model``.

    Sweep l updates every position at once from the previous sweep's states,
    s^(l)_t = step(x_t, s^(l-1)_{t-1}), with s^(0) = 0 (Chapter 4's convention for a recurrent
    layer): after l sweeps the states of the first l positions are exact. ``model`` has
    ``step(x_t, state)``, like :class:`longdep.rnn.ElmanRNN` and :class:`longdep.lstm.LSTM`.
    """
    batch, steps, _ = x.shape
    zeros = x.new_zeros(batch, steps, model.hidden_size)
    state = (zeros, zeros) if isinstance(model, LSTM) else zeros
    for _ in range(max_sweeps):
        previous = tree_map(lambda s: nn.functional.pad(s, (0, 0, 1, 0))[:, :-1], state)
        flat = model.step(x.reshape(batch * steps, -1),
                          tree_map(lambda s: s.reshape(batch * steps, -1), previous))
        state = tree_map(lambda s: s.reshape(batch, steps, -1), flat)
        yield first_output(state)


def path_length(name: str, steps: int, shape: ModelShape = ModelShape(), seed: int = 0) -> int:
    """The fewest layers (sweeps, for the RNN and the LSTM) after which output ``steps - 1`` of
    model ``name`` depends on input 0, found through the derivative as in Chapter 4.

    Forward-mode differentiation carries a random perturbation of x_0 through the layers; the
    answer is the first layer whose last output has a derivative that is not exactly zero.
    """
    check_model(name)
    if steps < 2:
        raise ValueError(f"steps must be at least 2, got {steps}")
    with torch.random.fork_rng(devices=[]), forward_ad.dual_level(), torch.no_grad():
        torch.manual_seed(seed)
        x = torch.randn(1, steps, shape.width, dtype=torch.float64)
        direction = torch.zeros_like(x)
        direction[:, 0] = torch.randn(shape.width, dtype=torch.float64)
        dual = forward_ad.make_dual(x, direction)
        if name in MIXER_OF:
            outputs = stack_outputs(MIXER_OF[name], dual, steps, shape)
        else:
            outputs = sweep_outputs(book_model(name, shape, shape.width).double(), dual, steps)
        for layers, y in enumerate(outputs, 1):
            if forward_ad.unpack_dual(y).tangent[:, -1].abs().max() > 0:
                return layers
    raise AssertionError(f"{steps} layers of {name} never reach the first input")


def gradient_ratios(name: str, steps: int, shape: ModelShape = ModelShape(), batch: int = 4,
                    seed: int = 0) -> torch.Tensor:
    """|dL/dx_{T-d}| / |dL/dx_T| for d = 0 .. steps - 1 at initialisation, in float64.

    Measured with :func:`longdep.paths.distance_profile` (which uses
    :func:`longdep.probes.input_gradient_norms`) on a model initialised from ``seed`` that reads
    ``width`` features, as that probe needs inputs and outputs of one width.
    """
    torch.manual_seed(seed)
    model = book_model(name, shape, shape.width).double()
    return ratios_by_distance(distance_profile(model, steps, shape.width, batch, seed))


def key_recall_accuracy(name: str, distance: int, shape: ModelShape = ModelShape(),
                        seed: int = 0) -> float:
    """Held-out key-recall accuracy at ``distance`` after training under the book's budget."""
    torch.manual_seed(seed)
    return train_key_recall(book_model(name, shape), shape.width, distance, seed).accuracy


class Table:
    """A table that a notebook shows as HTML (rendered by the book) and as aligned text."""

    def __init__(self, header: Sequence[str], rows: Sequence[Sequence[str]]):
        self.header, self.rows = list(header), [list(map(str, row)) for row in rows]
        if any(len(row) != len(self.header) for row in self.rows):
            raise ValueError("every row needs one cell per column")

    def _repr_html_(self) -> str:
        def cells(row: list[str], tag: str) -> str:
            return "".join(f"<{tag}>{html.escape(cell)}</{tag}>" for cell in row)

        body = "".join(f"<tr>{cells(row, 'td')}</tr>" for row in self.rows)
        return (f"<table><thead><tr>{cells(self.header, 'th')}</tr></thead>"
                f"<tbody>{body}</tbody></table>")

    def __repr__(self) -> str:
        widths = [max(len(row[i]) for row in [self.header, *self.rows])
                  for i in range(len(self.header))]
        return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                         for row in [self.header, *self.rows])


def big_o(label: str) -> str:
    """"T^2" -> "O(T²)", "log T" -> "O(log T)", "1" -> "O(1)"."""
    return f"O({label.replace('^2', '²').replace('^3', '³')})"


@dataclass
class ModelMeasures:
    """Everything the summary table says about one model, measured.

    cost_exponent: fitted p of FLOPs ~ T^p; depths: graph depths at the table's doubling
    lengths; path_lengths: :func:`path_length` at the table's doubling lengths; gradient_ratio
    and accuracy at the table's distance.
    """

    cost_exponent: float
    depths: list[int]
    path_lengths: list[int]
    gradient_ratio: float
    accuracy: float


def summary_table(measures: dict[str, ModelMeasures], lengths: Sequence[int], distance: int
                  ) -> Table:
    """The book's summary table: one row per model, every cell from ``measures``. ``lengths``
    are the doubling lengths at which depths and path lengths were measured."""
    header = ["model", "cost per layer (fitted exponent)", "sequential steps",
              f"path length at T = {lengths[-1]}", f"gradient ratio at d = {distance}",
              f"key recall at d = {distance}"]
    rows = []
    for name, m in measures.items():
        power = round(m.cost_exponent)
        ratio = "0 (exactly)" if m.gradient_ratio == 0 else f"{m.gradient_ratio:.1e}"
        rows.append([
            name,
            f"{big_o('T' if power == 1 else f'T^{power}')} ({m.cost_exponent:.2f})",
            big_o(growth_label(lengths, m.depths)),
            f"{m.path_lengths[-1]}, {big_o(growth_label(lengths, m.path_lengths))}",
            ratio,
            f"{m.accuracy:.2f}",
        ])
    return Table(header, rows)

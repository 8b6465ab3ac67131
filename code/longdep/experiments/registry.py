"""The book's one registry of model kinds (Chapters 3 to 6).

Every kind of sequence model that a chapter compares is named once, in :data:`KINDS`, with what
the chapters need of it: its display name, how to build it for a :class:`ModelShape`
(:meth:`ModelKind.build`), its token-mixer key when it is one of the mixers that
:func:`longdep.models.mixers.mixer_stack` puts in a Transformer layer (a key of
:data:`longdep.models.mixers.MIXERS`), and its row of Vaswani et al.'s (2017) Table 1 when it
has one (:class:`Table1Row`: the layer Chapter 4 stacks, the path length the paper states and
the receptive-field formula). A driver that compares models names them in a tuple of its own,
beside the code that uses it (``SUMMARY_MODELS`` in summary.py, ``MQAR_MODELS`` in mqar.py,
``TABLE_1_LAYERS`` in attention.py, ``CHAPTER_3_ROWS`` in key_recall.py).

Every compared model reads the same two widths, :data:`BOOK_SIZES`: key recall's budget
(:class:`longdep.experiments.key_recall.KeyRecallBudget`) and :class:`ModelShape` both take
their defaults from it.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import nn

from longdep.models.attention import CausalSelfAttention
from longdep.models.bag import BagOfTokens
from longdep.models.conv import CausalConvolution
from longdep.models.gru import GRU
from longdep.models.lstm import LSTM
from longdep.models.mingru import MinGRU
from longdep.models.mixers import MIXERS, mixer_stack
from longdep.models.rnn import ElmanRNN
from longdep.models.transformer import EncoderStack


@dataclass(frozen=True)
class Sizes:
    """The two widths every compared model of the book shares (Chapters 3, 5 and 6):
    ``input_size``, the width of the token embeddings a model reads, and ``width``, its own
    (the hidden size of a recurrent core, d_model of a stack)."""

    input_size: int = 16
    width: int = 32


BOOK_SIZES = Sizes()


@dataclass(frozen=True)
class ModelShape:
    """The sizes every compared model shares (Chapters 3 to 6). ``input_size`` and ``width`` are
    :data:`BOOK_SIZES`'s; the stacks have ``num_layers`` layers, ``num_heads`` heads and a
    feed-forward width ``d_ff``; ``window`` keys per query for the sliding window,
    ``state_size`` states per channel for the SSM, ``forget_bias`` for the LSTM (Chapter 3);
    ``max_len`` positions of the stacks' sinusoidal table; ``norm_first`` (Pre-LN) for the
    encoder stack of key recall (Chapter 5)."""

    input_size: int = BOOK_SIZES.input_size
    width: int = BOOK_SIZES.width
    num_layers: int = 1
    num_heads: int = 2
    d_ff: int = 64
    window: int = 8
    state_size: int = 2
    forget_bias: float = 3.0
    max_len: int = 4096
    norm_first: bool = True


# (features, index from 0 in the stack, kernel size k, window r) -> one layer of a stack
LayerMaker = Callable[[int, int, int, int], nn.Module]


@dataclass(frozen=True)
class Table1Row:
    """A row of Vaswani et al.'s (2017) Table 1, as Chapter 4 measures it ("Table 1,
    measured"): ``label`` the paper's name of the layer type, ``column`` a short heading for a
    printed table (at the chapter's k = 3 and r = 8), ``path_length`` the maximum path
    length the paper gives (n the sequence length, k the kernel size, r the window), ``layer``
    the layer Chapter 4 stacks, ``layers_needed`` the receptive-field formula: (steps, k, r) ->
    the fewest layers after which output ``steps - 1`` depends on input 0; ``stated_in`` where
    the paper gives that path length: Table 1 has one convolutional row, O(log_k(n)), and the
    O(n/k) of contiguous kernels is in the text of its section 4, beside the O(log_k(n)) of
    dilated ones."""

    label: str
    column: str
    path_length: str
    layer: LayerMaker
    layers_needed: Callable[[int, int, int], int]
    stated_in: str = "Table 1"


def dilated_layers_needed(steps: int, kernel_size: int, window: int) -> int:
    """Dilations 1, 2, 4, ... reach (k - 1)(2^L - 1) steps back after L layers (Chapter 4)."""
    layers = 1
    while (kernel_size - 1) * (2**layers - 1) < steps - 1:
        layers += 1
    return layers


@dataclass(frozen=True)
class ModelKind:
    """One kind of sequence model (see the module docstring).

    ``name`` is its display name. ``mixer`` is its key of
    :data:`longdep.models.mixers.MIXERS` when it is a Pre-LN stack with that token mixer; a
    kind that is no mixer stack gives ``make(shape, input_size)`` instead. ``recurrent`` marks
    a recurrence evaluated step by step (a path length counts one layer per step, Chapter 4).
    ``twin(shape)`` is a faster equal model to train, when there is one: PyTorch's twin
    (Chapter 3), or for the bag of tokens the one that computes only the last step, all that
    key recall's classifier reads. ``table_1`` is its row of Table 1.
    """

    name: str
    mixer: str | None = None
    make: Callable[[ModelShape, int], nn.Module] | None = None
    recurrent: bool = False
    twin: Callable[[ModelShape], nn.Module] | None = None
    table_1: Table1Row | None = None

    def __post_init__(self):
        if self.mixer is not None and self.make is not None:
            raise ValueError(f"{self.name}: give a mixer key or a maker, not both")
        if self.mixer is None and self.make is None and self.table_1 is None:
            raise ValueError(f"{self.name}: a kind needs a mixer key, a maker or a Table 1 row")
        if self.mixer is not None and self.mixer not in MIXERS:
            raise ValueError(f"{self.name}: mixer must be one of {MIXERS}, got {self.mixer!r}")

    def build(self, shape: ModelShape = ModelShape(), input_size: int | None = None
              ) -> nn.Module:
        """A fresh model: (batch, time, input_size) -> (batch, time, shape.width), or a tuple
        starting with that for the recurrent ones. ``input_size`` defaults to
        ``shape.input_size``; a stack reads it through a linear map when it differs from the
        width (Chapter 6)."""
        if not isinstance(shape, ModelShape):
            raise TypeError(f"shape must be a ModelShape, got {type(shape).__name__}")
        size = shape.input_size if input_size is None else input_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"input_size must be an int of at least 1, got {size!r}")
        if self.mixer is None:
            if self.make is None:
                raise ValueError(f"{self.name} is only a layer of Table 1, not a model")
            return self.make(shape, size)
        return mixer_stack(self.mixer, shape.width, shape.num_heads, shape.num_layers,
                           shape.d_ff, shape.max_len, shape.window, shape.state_size,
                           None if size == shape.width else size)

    def stack(self, shape: ModelShape, num_layers: int) -> nn.Module:
        """The mixer stack of ``num_layers`` layers reading ``shape.width`` features (Chapter
        6's path lengths); it has ``positional_encoding`` and ``layer_outputs``."""
        if self.mixer is None:
            raise ValueError(f"{self.name} is not a mixer stack")
        return self.build(replace(shape, num_layers=num_layers), shape.width)

    def training_core(self, shape: ModelShape = ModelShape()) -> nn.Module:
        """What a training loop trains: :attr:`twin` when there is one, else :meth:`build`."""
        return self.twin(shape) if self.twin is not None else self.build(shape)


def causal_attention_layer(window: bool) -> LayerMaker:
    """Table 1's attention layer, full or restricted to a window of r positions."""
    return lambda features, index, k, r: CausalSelfAttention(features, r if window else None)


def convolution_layer(dilated: bool) -> LayerMaker:
    """Table 1's causal convolution of kernel k; dilated, the dilation doubles per layer."""
    return lambda features, index, k, r: CausalConvolution(features, k,
                                                           2**index if dilated else 1)


def orthogonal_rnn(shape: ModelShape, size: int) -> ElmanRNN:
    """A tanh RNN whose recurrent matrix is orthogonal (Saxe et al. 2014; Chapter 3): every
    singular value of W_hh is 1, so at zero state one step neither shrinks nor stretches."""
    rnn = ElmanRNN(size, shape.width)
    nn.init.orthogonal_(rnn.weight_hh)
    return rnn


def identity_relu_rnn(shape: ModelShape, size: int) -> ElmanRNN:
    """The IRNN (Le, Jaitly & Hinton 2015; Chapter 3): a relu RNN with W_hh = I and both biases
    0, so that with no input the state is carried unchanged. W_ih keeps PyTorch's
    U(-1/sqrt(width), 1/sqrt(width)), not the paper's N(0, 0.001^2)."""
    rnn = ElmanRNN(size, shape.width, nonlinearity="relu")
    with torch.no_grad():
        rnn.weight_hh.copy_(torch.eye(shape.width))
        rnn.bias_hh.zero_()
        rnn.bias_ih.zero_()
    return rnn


def last_position_encoder(shape: ModelShape, size: int) -> EncoderStack:
    """The encoder stack that Chapter 5 trains on key recall: ``shape.num_layers`` layers, Post-
    or Pre-LN by ``shape.norm_first``, an input projection from ``size`` features. Not causal:
    the classifier reads only the last position, which a causal mask would not restrict; and it
    computes only that position's output (``last_only``), the same number at a fraction of the
    cost."""
    return EncoderStack(shape.width, shape.num_heads, shape.num_layers, shape.d_ff,
                        max_len=shape.max_len, norm_first=shape.norm_first, input_size=size,
                        last_only=True)


ORDER_BLIND = "bag of tokens (order-blind control)"
"""The control row of the key-recall results: :class:`longdep.models.bag.BagOfTokens`."""

LAST_POSITION_ENCODER = "Transformer encoder (last position)"
"""Chapter 5's key-recall Transformer, :func:`last_position_encoder`."""

KINDS = (
    ModelKind("tanh RNN", make=lambda shape, size: ElmanRNN(size, shape.width),
              recurrent=True,
              twin=lambda shape: nn.RNN(shape.input_size, shape.width, batch_first=True),
              table_1=Table1Row("recurrent", "recurrent", "O(n)",
                                lambda features, index, k, r: ElmanRNN(features, features),
                                lambda steps, k, r: steps)),
    ModelKind("LSTM",
              make=lambda shape, size: LSTM(size, shape.width, forget_bias=shape.forget_bias),
              recurrent=True,
              twin=lambda shape: LSTM(shape.input_size, shape.width,
                                      forget_bias=shape.forget_bias).to_torch()),
    ModelKind("Transformer (softmax attention)", mixer="softmax",
              table_1=Table1Row("self-attention", "attention", "O(1)",
                                causal_attention_layer(window=False), lambda steps, k, r: 1)),
    ModelKind("sliding-window attention", mixer="window",
              table_1=Table1Row("windowed attention", "window r=8", "O(n/r)",
                                causal_attention_layer(window=True),
                                lambda steps, k, r: math.ceil((steps - 1) / (r - 1)))),
    ModelKind("linear attention", mixer="linear"),
    ModelKind("selective SSM", mixer="ssm"),
    ModelKind("convolution",
              table_1=Table1Row("convolution", "conv k=3", "O(n/k)",
                                convolution_layer(dilated=False),
                                lambda steps, k, r: math.ceil((steps - 1) / (k - 1)), "§4")),
    ModelKind("dilated convolution",
              table_1=Table1Row("dilated convolution", "dilated", "O(log_k n)",
                                convolution_layer(dilated=True), dilated_layers_needed,
                                "Table 1, §4")),
    ModelKind(ORDER_BLIND,
              make=lambda shape, size: BagOfTokens(size, shape.width),
              twin=lambda shape: BagOfTokens(shape.input_size, shape.width, last_only=True)),
    # Chapter 3's key recall: two initialisations of the plain RNN, the GRU; Chapter 5's encoder
    ModelKind("tanh RNN, orthogonal", make=orthogonal_rnn, recurrent=True),
    ModelKind("IRNN (relu, identity)", make=identity_relu_rnn, recurrent=True),
    ModelKind("GRU", make=lambda shape, size: GRU(size, shape.width), recurrent=True,
              twin=lambda shape: GRU(shape.input_size, shape.width).to_torch()),
    ModelKind(LAST_POSITION_ENCODER, make=last_position_encoder),
    # Chapter 6, "One recurrence for every model": S_t = A_t S_{t-1} + B_t, one layer each
    ModelKind("scalar SSM (Mamba-2)", mixer="ssd"),
    ModelKind("DeltaNet", mixer="delta"),
    ModelKind("Gated DeltaNet", mixer="gated delta"),
    ModelKind("additive write", mixer="additive"),
    ModelKind("minGRU", make=lambda shape, size: MinGRU(size, shape.width)),
    ModelKind("minGRU, keep bias",
              make=lambda shape, size: MinGRU(size, shape.width, forget_bias=shape.forget_bias)),
)
"""Every kind of model of the book, once."""

KIND = {kind.name: kind for kind in KINDS}

TABLE_1_KIND = {kind.table_1.label: kind for kind in KINDS if kind.table_1 is not None}
"""Table 1's layer types (its rows' labels) -> their kinds."""


def model_kind(name: str, among: tuple[str, ...] = tuple(KIND)) -> ModelKind:
    """The kind named ``name``; a clear ``ValueError`` unless it is one of ``among``."""
    if name not in among:
        raise ValueError(f"model must be one of {among}, got {name!r}")
    return KIND[name]

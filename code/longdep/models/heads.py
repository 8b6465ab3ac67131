"""Heads around a sequence model: classify a whole sequence from its last step (Chapter 3 onwards).

    logits = W h_T + b,    h_1 .. h_T = core(embedding(tokens))

Inputs are checked as :mod:`._checks` describes; a NaN reaching h_T reaches every logit. A head
checks that it meets its core: the core must read the embedding's width (if it says what it
reads: ``input_size``, ``d_model``, ``features`` or ``in_features``) and return (batch, time,
features) of the width the head reads, else a ValueError names both sides.
"""

import torch
from torch import Tensor, nn

try:  # inside the longdep package
    from . import _checks as check
except ImportError:  # copied into a folder of its own, beside _checks.py
    import _checks as check


WIDTHS = ("input_size", "d_model", "features", "in_features")  # what a core may call its input


def check_core(core, width_name: str, width: int) -> None:
    """Raise unless ``core`` is a torch.nn.Module that reads ``width`` features, if it says how
    many it reads (the first of :data:`WIDTHS` it has)."""
    check.instance(core, "core", nn.Module)
    reads = next((getattr(core, a) for a in WIDTHS if isinstance(getattr(core, a, None), int)),
                 None)
    if reads is not None and reads != width:
        raise ValueError(f"{width_name}={width}, but the core ({type(core).__name__}) reads "
                         f"{reads} features: the two must be equal")


def core_outputs(core: nn.Module, x: Tensor, width_name: str, width: int) -> Tensor:
    """The (batch, time, width) outputs of ``core`` on x, checked to be what the head reads."""
    outputs = check.first_output(core(x))
    if not isinstance(outputs, Tensor) or outputs.dim() != 3 or outputs.size(-1) != width:
        raise ValueError(f"the core ({type(core).__name__}) must return (batch, time, "
                         f"{width_name}) = (batch, time, {width}), got {check.describe(outputs)}")
    return outputs


class LastStepClassifier(nn.Module):
    """Embed tokens, run a sequence model, classify from its output at the last step.

    ``core`` maps (batch, time, embedding_dim) to (batch, time, core_dim), or to a tuple whose
    first element is that (as :class:`longdep.models.rnn.ElmanRNN` and :class:`torch.nn.LSTM`
    return).
    """

    def __init__(self, vocab_size: int, embedding_dim: int, core: nn.Module, core_dim: int,
                 num_classes: int):
        super().__init__()
        check.positive(vocab_size=vocab_size, embedding_dim=embedding_dim, core_dim=core_dim,
                       num_classes=num_classes)
        check_core(core, "embedding_dim", embedding_dim)
        self.vocab_size, self.core_dim = vocab_size, core_dim
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.core = core
        self.head = nn.Linear(core_dim, num_classes)

    def forward(self, tokens: Tensor) -> Tensor:
        """tokens (batch, time) int64 -> logits (batch, num_classes)."""
        check.tokens(tokens, self.vocab_size)
        outputs = core_outputs(self.core, self.embedding(tokens), "core_dim", self.core_dim)
        return self.head(outputs[:, -1])  # from (batch, time, core_dim)


class PairRecallClassifier(nn.Module):
    """The model that multi-query associative recall trains around a causal ``core`` (Chapter 6,
    "The price of a fixed state: multi-query associative recall").

    A step of :func:`longdep.tasks.mqar_batch` carries (key, value); it enters the core as the
    sum of a key embedding and a value embedding (the value "asked for" has its own), and every
    step is classified into a value: tokens (batch, time, 2) -> logits (batch * time,
    num_values), in order. The task's targets score the query steps only.
    """

    def __init__(self, core: nn.Module, width: int, num_keys: int, num_values: int):
        super().__init__()
        check.positive(width=width, num_keys=num_keys, num_values=num_values)
        check_core(core, "width", width)
        self.width, self.num_keys, self.num_values = width, num_keys, num_values
        self.key_embedding = nn.Embedding(num_keys, width)
        self.value_embedding = nn.Embedding(num_values + 1, width)  # + "value asked for"
        self.core = core
        self.head = nn.Linear(width, num_values)

    def forward(self, tokens: Tensor) -> Tensor:
        """tokens (batch, time, 2) int64 -> logits (batch * time, num_values)."""
        self.check_tokens(tokens)
        x = self.key_embedding(tokens[..., 0]) + self.value_embedding(tokens[..., 1])
        outputs = core_outputs(self.core, x, "width", self.width)  # (batch, time, width)
        return self.head(outputs).flatten(0, 1)  # (batch * time, num_values)

    def check_tokens(self, tokens) -> None:
        """Raise unless tokens is (batch, time, 2) int64 with keys in [0, num_keys) and values
        in [0, num_values] (num_values: "value asked for")."""
        check.tensor(tokens, "tokens", "(batch, time, 2)", 3, floating=False)
        if tokens.dtype != torch.int64:
            raise TypeError(f"tokens must be int64 ids (batch, time, 2), got "
                            f"{check.describe(tokens)}")
        if tokens.dim() != 3 or tokens.size(-1) != 2:
            raise ValueError(f"tokens must have shape (batch, time, 2), got "
                             f"{check.describe(tokens)}")
        if check.unreadable(tokens):
            return
        for part, name, high in ((0, "keys", self.num_keys), (1, "values", self.num_values + 1)):
            ids = tokens[..., part]
            if ids.min() < 0 or ids.max() >= high:
                raise ValueError(f"tokens' {name} (tokens[..., {part}]) must lie in [0, {high}), "
                                 f"got values from {ids.min().item()} to {ids.max().item()}")

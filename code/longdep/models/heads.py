"""Heads around a sequence model: classify a whole sequence from its last step (Chapter 3 onwards).

    logits = W h_T + b,    h_1 .. h_T = core(embedding(tokens))

Inputs are checked as :mod:`._checks` describes; a NaN reaching h_T reaches every logit.
"""

from torch import Tensor, nn

try:  # inside the longdep package
    from . import _checks as check
except ImportError:  # copied into a folder of its own, beside _checks.py
    import _checks as check


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
        if not isinstance(core, nn.Module):
            raise TypeError(f"core must be a torch.nn.Module, got {type(core).__name__}")
        self.vocab_size = vocab_size
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.core = core
        self.head = nn.Linear(core_dim, num_classes)

    def forward(self, tokens: Tensor) -> Tensor:
        """tokens (batch, time) int64 -> logits (batch, num_classes)."""
        check.tokens(tokens, self.vocab_size)
        outputs = check.first_output(self.core(self.embedding(tokens)))  # (batch, time, core_dim)
        return self.head(outputs[:, -1])


class PairRecallClassifier(nn.Module):
    """The model that multi-query associative recall trains around a causal ``core`` (Chapter 6,
    "The price of a fixed state: multi-query associative recall").

    A step of :func:`longdep.tasks.mqar_batch` carries (key, value); it enters the core as the
    sum of a key embedding and a value embedding (the value "asked for" has its own), and every
    query step, the second half of the sequence, is classified into a value:
    tokens (batch, time, 2) -> logits (batch * time / 2, num_values), queries in order.
    """

    def __init__(self, core: nn.Module, width: int, num_keys: int, num_values: int):
        super().__init__()
        check.instance(core, "core", nn.Module)
        check.positive(width=width, num_keys=num_keys, num_values=num_values)
        self.key_embedding = nn.Embedding(num_keys, width)
        self.value_embedding = nn.Embedding(num_values + 1, width)  # + "value asked for"
        self.core = core
        self.head = nn.Linear(width, num_values)

    def forward(self, tokens: Tensor) -> Tensor:
        """tokens (batch, time, 2) int64 -> logits (batch * time / 2, num_values)."""
        x = self.key_embedding(tokens[..., 0]) + self.value_embedding(tokens[..., 1])
        outputs = check.first_output(self.core(x))  # (batch, time, width)
        queries = outputs[:, tokens.shape[1] // 2:]  # (batch, time / 2, width)
        return self.head(queries).flatten(0, 1)  # (batch * time / 2, num_values)

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


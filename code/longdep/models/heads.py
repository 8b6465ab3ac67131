"""Heads around a sequence model: classify a whole sequence from its last step (Chapter 3 onwards)."""

import torch
from torch import nn


class LastStepClassifier(nn.Module):
    """Embed tokens, run a sequence model, classify from its output at the last step.

    ``core`` maps (batch, time, embedding_dim) to (batch, time, core_dim), or to a tuple whose
    first element is that (as :class:`longdep.models.rnn.ElmanRNN` and :class:`torch.nn.LSTM` return).
    """

    def __init__(self, vocab_size: int, embedding_dim: int, core: nn.Module, core_dim: int,
                 num_classes: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.core = core
        self.head = nn.Linear(core_dim, num_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (batch, time) int64 -> logits (batch, num_classes)."""
        outputs = self.core(self.embedding(tokens))
        if isinstance(outputs, tuple):
            outputs = outputs[0]
        return self.head(outputs[:, -1])

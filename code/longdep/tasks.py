"""Synthetic tasks with a known long-range dependency (Chapter 3 onwards)."""

import torch


def key_recall_batch(
    batch_size: int,
    distance: int,
    num_keys: int = 8,
    vocab_size: int = 16,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of the key-recall task: remember the first token across ``distance`` steps
    (Chapter 3, "A task that needs memory: key recall").

    Token 0 of each sequence is a key from {0, ..., num_keys - 1}; tokens 1 .. distance - 1 are
    distractors from {num_keys, ..., vocab_size - 2}; the last token, at position ``distance``, is
    the query token vocab_size - 1, where the model must output the key. Like "born in France ...
    speaks fluent ___", the answer was given ``distance`` steps before it is asked for.

    Returns tokens (batch, distance + 1) and targets (batch,), both int64.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if distance < 1:
        raise ValueError(f"distance must be at least 1, got {distance}")
    if num_keys < 2:
        raise ValueError(f"num_keys must be at least 2, got {num_keys}")
    if vocab_size < num_keys + 2:
        raise ValueError(
            f"vocab_size must leave room for the keys, one distractor and the query token: "
            f"at least num_keys + 2 = {num_keys + 2}, got {vocab_size}"
        )
    keys = torch.randint(0, num_keys, (batch_size,), generator=generator)
    distractors = torch.randint(
        num_keys, vocab_size - 1, (batch_size, distance - 1), generator=generator
    )
    query = torch.full((batch_size, 1), vocab_size - 1)
    return torch.cat([keys[:, None], distractors, query], dim=1), keys

"""Synthetic tasks with a known long-range dependency (Chapter 3 onwards)."""

import torch


def key_recall_batch(
    batch_size: int,
    distance: int,
    num_keys: int = 8,
    vocab_size: int = 9,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of the key-recall task: remember the first token across ``distance`` steps
    (Chapter 3, "A task that needs memory: key recall").

    Token 0 of each sequence is the key, drawn from {0, ..., num_keys - 1}; tokens 1 .. distance
    - 1 are distractors drawn from the same set, so the key can be told apart from them only by
    its position (it comes first), never by its content; the last token, at position
    ``distance``, is the query token vocab_size - 1, where the model must output the key. Like
    "born in France ... speaks fluent ___", the answer was given ``distance`` steps before it is
    asked for. Ids from num_keys to vocab_size - 2, if any, are never drawn.

    Returns tokens (batch, distance + 1) and targets (batch,), both int64.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if distance < 1:
        raise ValueError(f"distance must be at least 1, got {distance}")
    if num_keys < 2:
        raise ValueError(f"num_keys must be at least 2, got {num_keys}")
    if vocab_size < num_keys + 1:
        raise ValueError(
            f"vocab_size must leave room for the keys and the query token: "
            f"at least num_keys + 1 = {num_keys + 1}, got {vocab_size}"
        )
    keys_and_distractors = torch.randint(0, num_keys, (batch_size, distance), generator=generator)
    query = torch.full((batch_size, 1), vocab_size - 1)
    return torch.cat([keys_and_distractors, query], dim=1), keys_and_distractors[:, 0]

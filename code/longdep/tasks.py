"""Synthetic tasks with a known long-range dependency (Chapter 3 onwards)."""

from collections.abc import Sequence

import torch

from longdep.models import _checks as check


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
    check.positive(batch_size=batch_size, distance=distance)
    check.int_range(2, None, num_keys=num_keys)
    check.positive(vocab_size=vocab_size)
    if vocab_size < num_keys + 1:
        raise ValueError(f"vocab_size must leave room for the keys and the query token: at "
                         f"least num_keys + 1 = {num_keys + 1}, got {vocab_size}")
    check.generator(generator)
    keys_and_distractors = torch.randint(0, num_keys, (batch_size, distance), generator=generator)
    query = torch.full((batch_size, 1), vocab_size - 1)
    return torch.cat([keys_and_distractors, query], dim=1), keys_and_distractors[:, 0]


IGNORED = -100
"""The target of a step that is not scored: the ``ignore_index`` of ``torch.nn.functional.
cross_entropy``, so the loss leaves it out."""


def mqar_batch(
    batch_size: int,
    num_pairs: int,
    num_keys: int = 32,
    num_values: int = 16,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of multi-query associative recall (MQAR, Arora et al. 2023): remember
    ``num_pairs`` key-value pairs, then answer a query for each key (Chapter 6, "The price of a
    fixed state: multi-query associative recall").

    Each sequence has ``num_pairs`` pair steps followed by ``num_pairs`` query steps, and every
    step carries two ids, (key, value). A pair step holds a key from {0, ..., num_keys - 1}
    (distinct within a sequence) and its value from {0, ..., num_values - 1}; a query step holds
    one of those keys again, in a random order, and the id ``num_values``, which marks "value
    asked for". The target of a query step is the value paired with its key; a pair step has
    none (:data:`IGNORED`). Key and value share a step (Zoology's sequences put them on
    consecutive steps) so that a single layer can solve the task: the query's key must find the
    step with the same key and read its value.

    Returns tokens (batch, 2 * num_pairs, 2) and targets (batch, 2 * num_pairs), both int64.
    """
    check.positive(batch_size=batch_size, num_pairs=num_pairs, num_keys=num_keys)
    check.int_range(2, None, num_values=num_values)
    check.generator(generator)
    if num_pairs > num_keys:
        raise ValueError(f"num_pairs must be at most num_keys = {num_keys} (the keys of a "
                         f"sequence are distinct), got {num_pairs}")
    scores = torch.rand(batch_size, num_keys, generator=generator)
    keys = scores.argsort(dim=1)[:, :num_pairs]  # distinct keys, (batch, num_pairs)
    values = torch.randint(0, num_values, (batch_size, num_pairs), generator=generator)
    order = torch.rand(batch_size, num_pairs, generator=generator).argsort(dim=1)
    query_keys = keys.gather(1, order)  # (batch, num_pairs)
    asked = torch.full_like(query_keys, num_values)
    tokens = torch.cat([torch.stack([keys, values], dim=-1),
                        torch.stack([query_keys, asked], dim=-1)], dim=1)
    return tokens, torch.cat([torch.full_like(values, IGNORED), values.gather(1, order)], dim=1)


def mqar_mixture_batch(
    batch_size: int,
    pair_counts: Sequence[int],
    num_keys: int = 32,
    num_values: int = 16,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """MQAR sequences with different numbers of pairs in one batch, as Zoology trains (Chapter
    6, "The price of a fixed state"): batch_size / len(pair_counts) sequences for each count P
    of ``pair_counts``, in that order, each laid out as :func:`mqar_batch` lays out P pairs and
    then padded at its end to 2 * max(pair_counts) steps with the step (key 0, value 0), whose
    target is :data:`IGNORED`. A causal model's outputs at the real steps never see the
    padding.

    Returns tokens (batch, 2 * max(pair_counts), 2) and targets (batch, 2 * max(pair_counts)).
    """
    counts = check.ints("pair_counts", pair_counts)
    check.positive(batch_size=batch_size, num_keys=num_keys)
    check.int_range(2, None, num_values=num_values)
    check.generator(generator)
    if batch_size % len(counts):
        raise ValueError(f"batch_size must be a multiple of the {len(counts)} pair counts, "
                         f"got {batch_size}")
    most = max(counts)
    if most > num_keys:
        raise ValueError(f"pair_counts must be at most num_keys = {num_keys} (the keys of a "
                         f"sequence are distinct), got {most}")
    pairs = torch.tensor(counts).repeat_interleave(batch_size // len(counts))[:, None]
    keys = torch.rand(batch_size, num_keys, generator=generator).argsort(dim=1)[:, :most]
    values = torch.randint(0, num_values, (batch_size, most), generator=generator)
    slot = torch.arange(most)  # (most,): a sequence's pairs fill its first P slots
    order = torch.rand(batch_size, most, generator=generator).masked_fill(slot >= pairs, 2)
    order = order.argsort(dim=1)  # its first P entries: the pairs' order of asking
    step = torch.arange(2 * most)  # (time,)
    asking = (step >= pairs) & (step < 2 * pairs)  # (batch, time): the query steps
    index = torch.where(asking, order.gather(1, (step - pairs).clamp(0, most - 1)),
                        step.clamp(max=most - 1).expand(batch_size, -1))
    real = step < 2 * pairs
    tokens = torch.stack([torch.where(real, keys.gather(1, index), 0),
                          torch.where(asking, num_values,
                                      torch.where(real, values.gather(1, index), 0))], dim=-1)
    targets = torch.where(asking, values.gather(1, index), IGNORED)
    return tokens, targets

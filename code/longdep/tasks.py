"""Synthetic tasks with a known long-range dependency (Chapter 3 onwards)."""

import torch
from torch import nn

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


def distinct_keys(batch_size: int, num_pairs: int, num_keys: int, num_values: int,
                  generator: torch.Generator | None) -> torch.Tensor:
    """``num_pairs`` distinct keys from {0, ..., num_keys - 1} for each of ``batch_size``
    sequences of multi-query associative recall, (batch, num_pairs) int64, after checking the
    arguments of :func:`mqar_batch` and :func:`mqar_reassigned_batch` (Chapter 6)."""
    check.positive(batch_size=batch_size, num_pairs=num_pairs, num_keys=num_keys)
    check.int_range(2, None, num_values=num_values)
    check.generator(generator)
    if num_pairs > num_keys:
        raise ValueError(f"num_pairs must be at most num_keys = {num_keys} (the keys of a "
                         f"sequence are distinct), got {num_pairs}")
    scores = torch.rand(batch_size, num_keys, generator=generator)
    return scores.argsort(dim=1)[:, :num_pairs]
def parity_batch(
    batch_size: int,
    length: int,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of parity: is the number of ones in a random bit string odd? (Chapter 2, "What
    the eigenvalues allow").

    Every bit is 0 or 1 with probability 1/2, independently, so the answer depends on every bit
    equally, however long the string: no part of it can be forgotten. Returns bits
    (batch, length) and targets (batch,), both int64; a target is 1 for an odd count of ones.
    """
    check.positive(batch_size=batch_size, length=length)
    check.generator(generator)
    bits = torch.randint(0, 2, (batch_size, length), generator=generator)
    return bits, bits.sum(dim=1) % 2


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
    asked for". The target of query step j is the value paired with its key. Key and value
    share a step (Zoology's sequences put them on consecutive steps) so that a single layer can
    solve the task: the query's key must find the step with the same key and read its value.

    Returns tokens (batch, 2 * num_pairs, 2) and targets (batch, num_pairs), both int64.
    """
    keys = distinct_keys(batch_size, num_pairs, num_keys, num_values, generator)
    values = torch.randint(0, num_values, (batch_size, num_pairs), generator=generator)
    order = torch.rand(batch_size, num_pairs, generator=generator).argsort(dim=1)
    query_keys = keys.gather(1, order)  # (batch, num_pairs)
    asked = torch.full_like(query_keys, num_values)
    tokens = torch.cat([torch.stack([keys, values], dim=-1),
                        torch.stack([query_keys, asked], dim=-1)], dim=1)
    return tokens, values.gather(1, order)


def mqar_reassigned_batch(
    batch_size: int,
    num_pairs: int,
    num_keys: int = 32,
    num_values: int = 16,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of multi-query associative recall in which every key is reassigned: the last
    write wins (Chapter 6, "How a state is written"; the layout of :func:`mqar_batch`).

    Each of ``num_pairs`` distinct keys is written twice, on two of the first ``2 * num_pairs``
    steps in a random order, the second time with a new value (never the first one again); the
    next ``2 * num_pairs`` steps ask for every key twice, in a random order, with the id
    ``num_values`` ("value asked for"). The target of a query is the key's later value, so a
    model must replace what it stored, not add to it: the old value is always wrong.

    Returns tokens (batch, 4 * num_pairs, 2) and targets (batch, 2 * num_pairs), both int64.
    """
    keys = distinct_keys(batch_size, num_pairs, num_keys, num_values, generator)
    first = torch.randint(0, num_values, (batch_size, num_pairs), generator=generator)
    shift = torch.randint(1, num_values, (batch_size, num_pairs), generator=generator)
    values = torch.cat([first, (first + shift) % num_values], dim=1)  # (batch, 2 pairs)

    def twice_shuffled() -> torch.Tensor:  # each of the pairs' indices twice, in a random order
        order = torch.rand(batch_size, 2 * num_pairs, generator=generator).argsort(dim=1)
        return order % num_pairs  # (batch, 2 pairs)

    slots = twice_shuffled()
    seen = nn.functional.one_hot(slots, num_pairs).cumsum(dim=1).gather(2, slots[..., None])
    step_values = values.gather(1, slots + num_pairs * (seen[..., 0] - 1))  # 0 first, 1 later
    asked = twice_shuffled()
    tokens = torch.cat([torch.stack([keys.gather(1, slots), step_values], dim=-1),
                        torch.stack([keys.gather(1, asked),
                                     torch.full_like(asked, num_values)], dim=-1)], dim=1)
    return tokens, values[:, num_pairs:].gather(1, asked)
IGNORED = -100
"""The target of a position that carries no loss: torch's cross-entropy skips it."""


def repeated_segment_batch(
    batch_size: int,
    length: int,
    vocab_size: int,
    segment: tuple[int, int] = (5, 8),
    offset: int | None = None,
    generator: torch.Generator | None = None,
    sources: bool = False,
) -> tuple[torch.Tensor, ...]:
    """A batch of in-context copying: random tokens in which a segment occurs twice (Chapter 5,
    "How attention uses its reach: induction heads").

    Each sequence holds ``length`` tokens drawn uniformly from {0, ..., vocab_size - 1}; a
    segment of n tokens, n uniform in [segment[0], segment[1]], starting at position a, is
    repeated at position b = a + k. With ``offset=None`` the offset k varies from sequence to
    sequence, uniform in [n, length - n], so only the content of the tokens says where the
    earlier occurrence is; with an ``offset`` k it is fixed, and the position alone says it (k
    must be at least segment[1], so that the two occurrences never overlap). The start a is
    uniform in [0, length - k - n]. Inside the second occurrence,
    position t (b <= t < b + n - 1) has as target the next token, which the earlier occurrence
    shows at position t - k + 1; every other target is :data:`IGNORED`, since random tokens
    cannot be predicted.

    Returns tokens (batch, length) and targets (batch, length), int64; with ``sources`` also
    the position each target is copied from, t - k + 1 (-1 where the target is IGNORED).
    """
    check.positive(batch_size=batch_size, length=length)
    check.int_range(2, None, vocab_size=vocab_size)
    if not (isinstance(segment, tuple) and len(segment) == 2):
        raise TypeError(f"segment must be a pair (shortest, longest), got "
                        f"{check.describe(segment)}")
    check.int_range(2, None, **{"segment[0]": segment[0]})
    check.int_range(segment[0], None, **{"segment[1]": segment[1]})
    longest = segment[1] + (segment[1] if offset is None else offset)
    if offset is not None:
        check.int_range(segment[1], None, offset=offset)
    if longest > length:
        raise ValueError(f"length must hold both occurrences of the longest segment: at least "
                         f"{longest}, got {length}")
    check.generator(generator)
    check.flags(sources=sources)
    tokens = torch.randint(0, vocab_size, (batch_size, length), generator=generator)
    n = torch.randint(segment[0], segment[1] + 1, (batch_size, 1), generator=generator)
    u, w = torch.rand(2, batch_size, 1, generator=generator, dtype=torch.float64)
    k = n + (u * (length - 2 * n + 1)).long() if offset is None else torch.full_like(n, offset)
    a = (w * (length - k - n + 1)).long()  # uniform in [0, length - k - n]
    b = a + k
    position = torch.arange(length)[None]  # (1, length)
    second = (position >= b) & (position < b + n)
    tokens = tokens.gather(1, torch.where(second, position - (b - a), position))
    asked = second & (position < b + n - 1)
    following = torch.roll(tokens, -1, dims=1)  # (batch, length): the next token
    targets = torch.where(asked, following, IGNORED)
    if not sources:
        return tokens, targets
    return tokens, targets, torch.where(asked, position - (b - a) + 1, -1)

"""Synthetic tasks with a known long-range dependency (Chapter 3 onwards)."""

from collections.abc import Sequence

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


IGNORED = -100
"""The target of a step that is not scored: the ``ignore_index`` of ``torch.nn.functional.
cross_entropy``, so the loss leaves it out."""


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
    asked for". The target of a query step is the value paired with its key; a pair step has
    none (:data:`IGNORED`). Key and value share a step (Zoology's sequences put them on
    consecutive steps) so that a single layer can solve the task: the query's key must find the
    step with the same key and read its value.

    Returns tokens (batch, 2 * num_pairs, 2) and targets (batch, 2 * num_pairs), both int64.
    """
    keys = distinct_keys(batch_size, num_pairs, num_keys, num_values, generator)
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
    model must replace what it stored, not add to it: the old value is always wrong; a write
    step has none (:data:`IGNORED`), as in :func:`mqar_batch`.

    Returns tokens (batch, 4 * num_pairs, 2) and targets (batch, 4 * num_pairs), both int64.
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
    answers = values[:, num_pairs:].gather(1, asked)  # (batch, 2 pairs)
    return tokens, torch.cat([torch.full_like(answers, IGNORED), answers], dim=1)


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

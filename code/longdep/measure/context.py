"""How much of its context a language model uses (Chapter 7, "Loss by position" and "Sharp
nearby, fuzzy far away").

A language model maps tokens (batch, time) to next-token logits (batch, time, vocab). Given
windows of held-out text (n, time + 1):

- :func:`token_losses` is the loss at every position (Kaplan et al. 2020), position t predicting
  token t + 1 from tokens 0 .. t, and :func:`last_losses` the loss of the last token alone;
- :func:`ablated_windows` destroys everything farther than d tokens before the last one, by
  replacing it with random tokens or by shuffling it (Khandelwal et al. 2018), and
  :func:`context_rises` measures how much the last loss rises when it does;
- :func:`context_reach` is the largest d at which that rise still exceeds a threshold.

The functions take any ``nn.Module`` with that call and never train it.
"""

from collections.abc import Sequence

import torch
from torch import nn


@torch.no_grad()
def token_losses(model: nn.Module, windows: torch.Tensor, chunk: int = 128) -> torch.Tensor:
    """Cross-entropy (nats) of the prediction of every character of ``windows`` (n, time + 1)
    from the characters before it in its window: (n, time), entry t the loss of character
    t + 1 given characters 0 .. t (Chapter 7, "Loss by position")."""
    model.eval()
    losses = []
    for part in windows.split(chunk):
        logits = model(part[:, :-1])  # (chunk, time, vocab)
        losses.append(nn.functional.cross_entropy(logits.transpose(1, 2), part[:, 1:],
                                                  reduction="none"))
    return torch.cat(losses)


@torch.no_grad()
def last_losses(model: nn.Module, windows: torch.Tensor, chunk: int = 256) -> torch.Tensor:
    """The loss of the last character of each window (n, time + 1) given all the others:
    (n,). A model may compute only its last position's logits, (chunk, 1, vocab)."""
    model.eval()
    return torch.cat([nn.functional.cross_entropy(model(part[:, :-1])[:, -1], part[:, -1],
                                                  reduction="none")
                      for part in windows.split(chunk)])


def ablated_windows(windows: torch.Tensor, distances: Sequence[int], mode: str,
                    pool: torch.Tensor, generator: torch.Generator) -> dict[int, torch.Tensor]:
    """For every d of ``distances``, ``windows`` (n, time + 1) with every character farther
    than d before the last one changed (Khandelwal et al. 2018): "replace" puts characters
    from random places of ``pool`` (the text, so with its frequencies), "shuffle" permutes
    them within their window. The last d context characters and the target stay. The random
    draw is one for all distances (the same replacement characters, the same random keys),
    so that the distances differ only in how far the change reaches."""
    if mode not in ("replace", "shuffle"):
        raise ValueError(f"mode must be 'replace' or 'shuffle', got {mode!r}")
    context = windows.size(1) - 1
    for distance in distances:
        if isinstance(distance, bool) or not isinstance(distance, int) or not (
                1 <= distance <= context):
            raise ValueError(f"distances must be ints in [1, {context}], got {distance!r}")
    shape = (len(windows), context)
    replacement = pool[torch.randint(0, len(pool), shape, generator=generator)]
    keys = torch.rand(shape, generator=generator)
    ablated = {}
    for distance in distances:
        far = context - distance  # characters 0 .. far - 1 are farther than distance
        changed = windows.clone()
        if mode == "replace":
            changed[:, :far] = replacement[:, :far]
        else:
            changed[:, :far] = windows[:, :far].gather(1, keys[:, :far].argsort(dim=1))
        ablated[distance] = changed
    return ablated


def context_rises(model: nn.Module, windows: torch.Tensor,
                  ablated: dict[int, torch.Tensor],
                  base: torch.Tensor | None = None) -> torch.Tensor:
    """For every distance d of ``ablated`` (d -> windows ablated beyond d), the mean rise of
    the last position's loss over the intact ``windows``: (len(ablated),), in nats. ``base``
    may give the intact windows' :func:`last_losses`, if already computed."""
    base = last_losses(model, windows) if base is None else base
    return torch.stack([(last_losses(model, changed) - base).mean()
                        for changed in ablated.values()])


def context_reach(rises: torch.Tensor, distances: Sequence[int],
                  threshold: float) -> torch.Tensor:
    """How far back the loss still depends on the context: for each row of ``rises``
    (seeds, distances), the largest distance whose rise exceeds ``threshold`` nats (0 if
    none): (seeds,) int64."""
    grid = torch.tensor(list(distances))
    return torch.where(rises > threshold, grid, 0).max(dim=1).values

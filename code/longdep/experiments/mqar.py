"""The price of a fixed state: multi-query associative recall (Chapter 6, "The price of a
fixed state: multi-query associative recall"; Arora et al. 2023, Zoology).

One-layer models of one width learn to recall the values of several key-value pairs; every
(model, number of pairs) trains its own seeds at once with :func:`longdep.train.train_seeds`.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from longdep.experiments.registry import KIND, ModelShape
from longdep.experiments.workers import over_cores
from longdep.models.heads import PairRecallClassifier
from longdep.seeds import manual_seed
from longdep.tasks import mqar_batch
from longdep.train import train_seeds

MQAR_MODELS = ("Transformer (softmax attention)", "linear attention", "selective SSM")
"""The models of the summary table that Chapter 6 compares on MQAR: softmax attention and the
two with a fixed state."""


@dataclass(frozen=True)
class MQARSetting:
    """The one small setting of Chapter 6's multi-query associative recall: models of ``width``
    features with ``num_heads`` heads (so linear attention's state is num_heads matrices of
    (width / num_heads)^2 numbers) and a selective SSM of ``state_size`` states per channel
    (width x state_size numbers, the same size by default), trained ``steps`` Adam steps on
    batches of ``batch_size`` sequences, one per seed of ``seeds``, all seeds at once."""

    width: int = 16
    num_heads: int = 2
    state_size: int = 8
    num_keys: int = 16
    num_values: int = 16
    steps: int = 60
    batch_size: int = 32
    lr: float = 2e-2
    clip_norm: float = 1.0
    seeds: tuple[int, ...] = (0, 1, 2)

    def shape(self, max_len: int) -> ModelShape:
        """The one-layer models' sizes: feed-forward width 2 x width, ``max_len`` positions."""
        return ModelShape(input_size=self.width, width=self.width, num_heads=self.num_heads,
                          d_ff=2 * self.width, state_size=self.state_size, max_len=max_len)

    def state_numbers(self, mixer: str) -> int:
        """Numbers in the fixed state of one layer of ``mixer`` ("linear" or "ssm"; linear
        attention's normaliser z left out)."""
        if mixer == "linear":
            return self.width**2 // self.num_heads
        if mixer == "ssm":
            return self.width * self.state_size
        raise ValueError(f"mixer must be 'linear' or 'ssm' (a fixed state), got {mixer!r}")


def mqar_accuracies(name: str, pair_counts: Sequence[int],
                    setting: MQARSetting = MQARSetting()) -> torch.Tensor:
    """Held-out MQAR accuracy of one-layer model ``name`` of :data:`MQAR_MODELS` at every number
    of pairs, one column per count and one row per seed: a (len(setting.seeds),
    len(pair_counts)) tensor (Chapter 6, "The price of a fixed state"). Every count trains fresh
    models, all seeds at once with :func:`longdep.train.train_seeds` (vmap)."""
    if name not in MQAR_MODELS:
        raise ValueError(f"name must be one of {MQAR_MODELS}, got {name!r}")
    if not isinstance(setting, MQARSetting):
        raise TypeError(f"setting must be an MQARSetting, got {type(setting).__name__}")
    counts = list(pair_counts)
    if not counts or any(isinstance(p, bool) or not isinstance(p, int)
                         or not 1 <= p <= setting.num_keys for p in counts):
        raise ValueError(f"pair_counts must be ints from 1 to num_keys = {setting.num_keys}, "
                         f"at least one, got {pair_counts!r}")
    s = setting
    accuracies = torch.empty(len(s.seeds), len(counts), dtype=torch.float64)
    for column, pairs in enumerate(counts):
        def make_batch(generator: torch.Generator, pairs: int = pairs):
            tokens, targets = mqar_batch(s.batch_size, pairs, s.num_keys, s.num_values,
                                         generator)
            return tokens, targets.flatten()  # (batch * pairs,), as the logits

        models = []
        for seed in s.seeds:
            manual_seed(seed)
            core = KIND[name].build(s.shape(2 * pairs))
            models.append(PairRecallClassifier(core, s.width, s.num_keys, s.num_values))
        results = train_seeds(models, make_batch, s.steps, s.seeds, lr=s.lr,
                              clip_norm=s.clip_norm)
        accuracies[:, column] = torch.tensor([result.accuracy for result in results])
    return accuracies


def mqar_grids(names: Sequence[str], pair_counts: Sequence[int],
               setting: MQARSetting = MQARSetting()) -> dict[str, torch.Tensor]:
    """:func:`mqar_accuracies` of every model of ``names``, each (model, number of pairs) on its
    own core (:func:`longdep.experiments.workers.over_cores`), the most pairs first."""
    counts = list(pair_counts)
    runs = over_cores(mqar_accuracies, [(name, (p,), setting) for name in names for p in counts],
                      cost=lambda point: point[1][0])
    return {name: torch.cat([runs[name, (p,), setting] for p in counts], dim=1)
            for name in names}


RECALLED = 0.7
"""Mean held-out MQAR accuracy from which a number of pairs counts as recalled."""


def pairs_recalled(pair_counts: Sequence[int], accuracies: torch.Tensor) -> str:
    """The largest number of pairs at which the mean accuracy over seeds (rows of
    ``accuracies``, one column per count of ``pair_counts``, as :func:`mqar_accuracies`
    returns) reaches :data:`RECALLED`, in words for the summary table: "4", "16 (the most
    tried)", or "fewer than 4" (Chapter 6, "The price of a fixed state")."""
    counts = list(pair_counts)
    if not isinstance(accuracies, torch.Tensor) or accuracies.dim() != 2 \
            or accuracies.shape[1] != len(counts) or accuracies.shape[0] < 1:
        raise ValueError(f"accuracies must be a (seeds, {len(counts)}) tensor, got "
                         f"{getattr(accuracies, 'shape', type(accuracies).__name__)}")
    if counts != sorted(set(counts)):
        raise ValueError(f"pair_counts must be increasing, got {pair_counts!r}")
    recalled = [p for p, mean in zip(counts, accuracies.mean(dim=0).tolist())
                if mean >= RECALLED]
    if not recalled:
        return f"fewer than {counts[0]}"
    return f"{recalled[-1]} (the most tried)" if recalled[-1] == counts[-1] else str(recalled[-1])

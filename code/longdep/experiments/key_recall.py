"""Key recall under one fixed training budget (Chapters 3, 5 and 6, "A task that needs memory:
key recall").

Every model of the book is trained by :func:`train_key_recall` with the same steps, batch,
learning rate and clipping (:class:`KeyRecallBudget`), so the accuracy tables compare models,
not training efforts.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from longdep.experiments.workers import in_worker_processes
from longdep.models import _checks as check
from longdep.models.bag import BagOfTokens
from longdep.models.gru import GRU
from longdep.models.heads import LastStepClassifier
from longdep.models.lstm import LSTM
from longdep.models.transformer import EncoderStack
from longdep.seeds import manual_seed
from longdep.tasks import key_recall_batch
from longdep.train import Batch, TrainingResult, train, train_seeds


@dataclass(frozen=True)
class KeyRecallBudget:
    """The one fixed training budget under which every model of the book meets key recall.

    Comparing models "at distance d" means: ``steps`` Adam steps on fresh batches of
    ``batch_size`` sequences at learning rate ``lr``, gradients clipped to ``clip_norm``, and no
    more. A model that fails here might succeed with more training (Chapter 3). ``model_dim`` is
    the width every compared model gets (hidden size of a recurrent core, d_model of a
    Transformer); ``distances`` and ``seeds`` are the grid of the book's accuracy tables.

    The values were chosen by hand, not derived: so that one run costs about a second on one
    CPU core and so that, over the three seeds of the tables, the grid separates the models of
    Chapter 3 on the task whose distractors share the keys' ids. Measured there: every model
    with memory solves distance 5; a tanh RNN splits at 10 and is no better than order-blind at
    20; an LSTM with forget-gate bias 3 solves 20 in every seed, mostly solves 40 and fails at
    80; the order-blind bag of tokens stays at the bound :func:`content_only_accuracy` (0.39 at
    5 down to 0.18 at 80). Runs at the boundary between solved and failed are chaotic (one
    changed bit can flip a seed), which is why the tables report several seeds.
    """

    steps: int = 150
    batch_size: int = 64
    lr: float = 5e-3
    clip_norm: float | None = 1.0
    num_keys: int = 8
    vocab_size: int = 9
    embedding_dim: int = 16
    eval_batches: int = 4
    model_dim: int = 32
    distances: tuple[int, ...] = (5, 10, 20, 40, 80)
    seeds: tuple[int, ...] = (0, 1, 2)


KEY_RECALL_BUDGET = KeyRecallBudget()


def tanh_rnn(budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> nn.RNN:
    """The plain tanh RNN of the key-recall table (Chapter 3), PyTorch's initialisation."""
    check.instance(budget, "budget", KeyRecallBudget)
    return nn.RNN(budget.embedding_dim, budget.model_dim, batch_first=True)


def orthogonal_tanh_rnn(budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> nn.RNN:
    """The tanh RNN with an orthogonal recurrent matrix (Saxe et al. 2014; Chapter 3): every
    singular value of W_hh is 1, so at zero state one step neither shrinks nor stretches."""
    rnn = tanh_rnn(budget)
    nn.init.orthogonal_(rnn.weight_hh_l0)
    return rnn


def identity_relu_rnn(budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> nn.RNN:
    """The IRNN (Le, Jaitly & Hinton 2015; Chapter 3): a relu RNN with W_hh = I and both
    biases 0, so that with no input the state is carried unchanged; W_ih keeps PyTorch's
    initialisation."""
    check.instance(budget, "budget", KeyRecallBudget)
    rnn = nn.RNN(budget.embedding_dim, budget.model_dim, nonlinearity="relu", batch_first=True)
    with torch.no_grad():
        rnn.weight_hh_l0.copy_(torch.eye(budget.model_dim))
        rnn.bias_hh_l0.zero_()
        rnn.bias_ih_l0.zero_()
    return rnn


def lstm_with_forget_bias(forget_bias: float,
                          budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> nn.LSTM:
    """:class:`longdep.models.lstm.LSTM`'s initialisation with ``forget_bias``, as a
    ``torch.nn.LSTM`` (Chapter 3; the compiled loop trains faster)."""
    check.instance(budget, "budget", KeyRecallBudget)
    return LSTM(budget.embedding_dim, budget.model_dim, forget_bias=forget_bias).to_torch()


def gru(budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> nn.GRU:
    """:class:`longdep.models.gru.GRU` as a ``torch.nn.GRU`` (Chapter 3)."""
    check.instance(budget, "budget", KeyRecallBudget)
    return GRU(budget.embedding_dim, budget.model_dim).to_torch()


def bag_of_tokens(budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> BagOfTokens:
    """The order-blind control of every key-recall table (Chapter 3); it computes only the last
    step's output, all that the classifier reads."""
    check.instance(budget, "budget", KeyRecallBudget)
    return BagOfTokens(budget.embedding_dim, budget.model_dim, last_only=True)


def key_recall_classifier(core: nn.Module, core_dim: int, seed: int,
                          budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> LastStepClassifier:
    """The embedding, ``core`` and the classifier head that key recall trains, the embedding
    and the head initialised after seeding torch with ``seed``."""
    check.instance(budget, "budget", KeyRecallBudget)
    if not isinstance(core, nn.Module):
        raise TypeError(f"core must be a torch.nn.Module, got {type(core).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    manual_seed(seed)
    return LastStepClassifier(budget.vocab_size, budget.embedding_dim, core, core_dim,
                              budget.num_keys)


def key_recall_batches(distance: int, budget: KeyRecallBudget = KEY_RECALL_BUDGET
                       ) -> Callable[[torch.Generator], Batch]:
    """The batch function of key recall at ``distance`` under ``budget``."""
    check.instance(budget, "budget", KeyRecallBudget)
    check.positive(distance=distance)
    def make_batch(generator: torch.Generator) -> Batch:
        return key_recall_batch(budget.batch_size, distance, budget.num_keys, budget.vocab_size,
                                generator=generator)

    return make_batch


def train_key_recall(
    core: nn.Module,
    core_dim: int,
    distance: int,
    seed: int = 0,
    budget: KeyRecallBudget = KEY_RECALL_BUDGET,
    warmup_steps: int = 0,
) -> TrainingResult:
    """Train ``core`` on key recall at ``distance`` under ``budget``; see :class:`KeyRecallBudget`.

    ``core`` maps (batch, time, budget.embedding_dim) to (batch, time, core_dim) (or a tuple
    starting with that); the embedding and the classifier head around it are created here, after
    seeding torch with ``seed``. The training and held-out batches also depend only on ``seed``.
    """
    check.positive(core_dim=core_dim, distance=distance)
    model = key_recall_classifier(core, core_dim, seed, budget)
    return train(model, key_recall_batches(distance, budget), budget.steps, lr=budget.lr,
                 clip_norm=budget.clip_norm, warmup_steps=warmup_steps, seed=seed,
                 eval_batches=budget.eval_batches)


def train_key_recall_seeds(
    make_core: Callable[[], nn.Module],
    core_dim: int,
    distance: int,
    seeds: Sequence[int],
    budget: KeyRecallBudget = KEY_RECALL_BUDGET,
    warmup_steps: int | Sequence[int] = 0,
    vectorized: bool = True,
) -> list[TrainingResult]:
    """:func:`train_key_recall` of a fresh ``make_core()`` for every seed (Chapters 3 and 5).

    ``make_core()`` is called after ``torch.manual_seed(seed)``, so the core's initialisation,
    too, is fixed by the seed. The seeds are trained at once by
    :func:`longdep.train.train_seeds`; ``vectorized=False`` runs the forward pass once per seed
    instead of under vmap, which a compiled loop such as ``torch.nn.LSTM`` needs (and for which
    it is faster). The results equal one :func:`train_key_recall` per seed to round-off.
    ``warmup_steps`` may give one warm-up length per seed, as :func:`longdep.train.train_seeds`
    allows; a seed may then be repeated.
    """
    check.callables(make_core=make_core)
    check.instance(budget, "budget", KeyRecallBudget)
    check.positive(core_dim=core_dim, distance=distance)
    models = []
    for seed in seeds:
        manual_seed(seed)
        models.append(key_recall_classifier(make_core(), core_dim, seed, budget))
    settings = dict(lr=budget.lr, clip_norm=budget.clip_norm, warmup_steps=warmup_steps,
                    eval_batches=budget.eval_batches)
    make_batch = key_recall_batches(distance, budget)
    return train_seeds(models, make_batch, budget.steps, seeds, vectorized=vectorized,
                       **settings)


def key_recall_accuracies(
    make_core: Callable[[], nn.Module],
    core_dim: int,
    budget: KeyRecallBudget = KEY_RECALL_BUDGET,
    warmup_steps: int = 0,
    vectorized: bool = True,
    stop_below: float | Sequence[float] | None = None,
) -> torch.Tensor:
    """Held-out key-recall accuracy of one kind of model over the budget's grid (Chapter 3,
    "A task that needs memory: key recall").

    Every distance trains a fresh ``make_core()`` for every seed of the budget with
    :func:`train_key_recall_seeds` (``vectorized`` as there). With ``stop_below``, once every
    seed's accuracy at a distance is below it, the longer distances are not trained (a longer
    distance is only harder) and their entries are NaN; ``stop_below`` may also be one number
    per distance, such as :func:`content_only_accuracy` plus a margin. Returns a
    (len(budget.seeds), len(budget.distances)) tensor of accuracies.
    """
    check.callables(make_core=make_core)
    check.instance(budget, "budget", KeyRecallBudget)
    check.positive(core_dim=core_dim)
    if stop_below is not None:
        limits = (list(stop_below) if isinstance(stop_below, (list, tuple))
                  else [stop_below] * len(budget.distances))
        if len(limits) != len(budget.distances) or any(
                isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf
                for v in limits):
            raise ValueError(f"stop_below must be None, a positive number or one such number "
                             f"per distance ({len(budget.distances)}), got {stop_below!r}")
    accuracies = torch.full((len(budget.seeds), len(budget.distances)), math.nan,
                            dtype=torch.float64)
    for j, distance in enumerate(budget.distances):
        results = train_key_recall_seeds(make_core, core_dim, distance, budget.seeds, budget,
                                         warmup_steps, vectorized)
        accuracies[:, j] = torch.tensor([result.accuracy for result in results])
        if stop_below is not None and accuracies[:, j].max() < limits[j]:
            break
    return accuracies


def key_recall_rows(makers: dict[str, Callable[[], nn.Module]], core_dim: int,
                    budget: KeyRecallBudget = KEY_RECALL_BUDGET) -> dict[str, torch.Tensor]:
    """:func:`key_recall_accuracies` of every ``name: make_core`` of ``makers`` (vectorized,
    every distance trained), each (model, distance) trained on its own in worker processes, one
    per core (:func:`longdep.experiments.workers.in_worker_processes`: the same numbers, bit for
    bit, sooner; each ``make_core`` must be a function of a module). The longest distances go
    first, so that no core waits for one long run at the end (Chapter 5). Returns
    {name: (len(budget.seeds), len(budget.distances)) tensor}."""
    check.instance(budget, "budget", KeyRecallBudget)
    check.positive(core_dim=core_dim)
    if not isinstance(makers, dict) or not makers:
        raise TypeError(f"makers must be a non-empty dict of name -> make_core, got "
                        f"{type(makers).__name__}")
    for make_core in makers.values():
        check.callables(make_core=make_core)
    columns = in_worker_processes({
        (name, distance): (key_recall_accuracies,
                           (make_core, core_dim, replace(budget, distances=(distance,))))
        for distance in sorted(budget.distances, reverse=True)
        for name, make_core in makers.items()})
    return {name: torch.cat([columns[name, distance] for distance in budget.distances], dim=1)
            for name in makers}


def content_only_accuracy(distance: int, num_keys: int = KEY_RECALL_BUDGET.num_keys) -> float:
    """The best accuracy at key recall of any model blind to order (Chapter 3, "A task that
    needs memory: key recall"): it sees which ids the ``distance`` tokens before the query hold
    and how often, not where.

    The key is token 0 and the distractors are drawn from the same ``num_keys`` ids, so given
    the counts n_v, the key is v with probability n_v / distance, and the best guess is the most
    frequent id: accuracy E[max_v n_v] / distance, with E[max] = sum_{m >= 1} P(max >= m).
    P(max < m) comes from independent Poisson(distance / num_keys) counts conditioned on their
    sum being ``distance`` (which makes them multinomial): the chance that all stay below m and
    sum to ``distance``, divided by P(Poisson(distance) = distance), by a truncated
    convolution in float64 (every term positive, so relative error near 1e-15). The result is
    rounded to 12 digits, so it is the same on every machine.
    """
    if isinstance(distance, bool) or not isinstance(distance, int) or distance < 1:
        raise ValueError(f"distance must be an int of at least 1, got {distance!r}")
    if isinstance(num_keys, bool) or not isinstance(num_keys, int) or num_keys < 2:
        raise ValueError(f"num_keys must be an int of at least 2, got {num_keys!r}")
    rate = distance / num_keys
    j = np.arange(distance + 1)
    pmf = np.exp(-rate + j * math.log(rate) - np.array([math.lgamma(n + 1) for n in j]))
    total = math.exp(-distance + distance * math.log(distance) - math.lgamma(distance + 1))
    expected_max = 0.0
    for m in range(1, distance + 1):  # E[max] = sum over m >= 1 of P(max >= m)
        power, factor = np.ones(1), pmf[:m]
        for _ in range(num_keys):  # the counts' joint law, truncated at distance
            power = np.convolve(power, factor)[: distance + 1]
        below = power[distance] / total if len(power) > distance else 0.0
        expected_max += 1.0 - below
    return float(round(expected_max / distance, 12))


def accuracy_word(accuracies: torch.Tensor, solved: float = 0.95, mostly: float = 0.6,
                  chance_below: float = 0.3, bound: float | None = None,
                  margin: float = 0.1) -> str:
    """What the seeds' accuracies (seeds,) at one grid point say, in a word (Chapter 3).

    "solved": every seed reaches ``solved``; "chance": every seed stays below ``chance_below``
    (chance is 1 / num_keys); "mostly": the mean reaches ``mostly``; otherwise "partly"; "-"
    if the point was not trained (NaN). With ``bound`` (the best accuracy of any order-blind
    model at this distance, :func:`content_only_accuracy`), "blind" replaces "chance": every
    seed stays below ``bound + margin``, no better than a model that ignores order. Between
    solved and failed, single runs are chaotic (one changed bit can flip a seed) and a mean
    over a few seeds moves by tenths between machines; the thresholds sit far from where the
    seeds cluster, so the words do not move.
    """
    if not isinstance(accuracies, torch.Tensor) or accuracies.dim() != 1 or not len(accuracies):
        raise TypeError(f"accuracies must be a non-empty 1-d tensor (seeds,), got "
                        f"{type(accuracies).__name__} of shape "
                        f"{tuple(getattr(accuracies, 'shape', ()))}")
    if not 0 < chance_below <= mostly <= solved <= 1:
        raise ValueError(f"need 0 < chance_below <= mostly <= solved <= 1, got "
                         f"{chance_below}, {mostly}, {solved}")
    if accuracies.isnan().any():
        return "-"
    if accuracies.min() >= solved:
        return "solved"
    if bound is not None:  # "blind": no seed beats the best order-blind model by margin
        if accuracies.max() < bound + margin:
            return "blind"
        return "mostly" if accuracies.mean() >= mostly else "partly"
    if accuracies.max() < chance_below:
        return "chance"
    return "mostly" if accuracies.mean() >= mostly else "partly"


def format_accuracy_table(accuracies: dict[str, torch.Tensor],
                          budget: KeyRecallBudget = KEY_RECALL_BUDGET,
                          bound: Sequence[float] | None = None) -> str:
    """A plain-text table: one row per model, one column per distance, each cell the
    :func:`accuracy_word` of its seeds. ``accuracies`` maps a model's name to the output of
    :func:`key_recall_accuracies`. With ``bound`` (one number per distance, such as
    :func:`content_only_accuracy`), the words are taken relative to it (see
    :func:`accuracy_word`) and a last row prints it with two decimals."""
    check.instance(budget, "budget", KeyRecallBudget)
    if not isinstance(accuracies, dict) or not accuracies:
        raise TypeError(f"accuracies must be a non-empty dict of name -> (seeds, distances) "
                        f"tensor, got {type(accuracies).__name__}")
    if bound is not None and len(bound) != len(budget.distances):
        raise ValueError(f"bound must have one number per distance ({len(budget.distances)}), "
                         f"got {len(bound)}")
    width = max(len("model"), len("order-blind bound"), *(len(name) for name in accuracies))
    lines = [f"{'model':<{width}}" + "".join(f"  {f'd={d}':>7}" for d in budget.distances)]
    for name, grid in accuracies.items():
        if grid.shape != (len(budget.seeds), len(budget.distances)):
            raise ValueError(
                f"accuracies[{name!r}] must have shape (seeds, distances) = "
                f"{(len(budget.seeds), len(budget.distances))}, got {tuple(grid.shape)}"
            )
        words = [accuracy_word(column, bound=None if bound is None else b)
                 for column, b in zip(grid.T, [None] * len(budget.distances) if bound is None
                                             else list(bound))]
        lines.append(f"{name:<{width}}" + "".join(f"  {word:>7}" for word in words))
    if bound is not None:
        lines.append(f"{'order-blind bound':<{width}}" + "".join(f"  {b:>7.2f}" for b in bound))
    return "\n".join(lines)


def key_recall_transformer(budget: KeyRecallBudget = KEY_RECALL_BUDGET, num_layers: int = 1,
                           num_heads: int = 2, norm_first: bool = True) -> EncoderStack:
    """The small Transformer core that Chapter 5 trains on key recall under ``budget``.

    Width ``budget.model_dim`` (as the recurrent cores get), feed-forward width twice that, a
    positional table long enough for the budget's longest distance, and an input projection from
    the budget's embeddings. Not causal: the classifier reads only the last position, which a
    causal mask would not restrict; and the stack computes only that position's output
    (``last_only``: the last layer's one query), which is the same number at a fraction of the
    cost.
    """
    check.instance(budget, "budget", KeyRecallBudget)
    check.positive(num_layers=num_layers, num_heads=num_heads)
    return EncoderStack(budget.model_dim, num_heads, num_layers, 2 * budget.model_dim,
                        max_len=max(budget.distances) + 1, norm_first=norm_first,
                        input_size=budget.embedding_dim, last_only=True)

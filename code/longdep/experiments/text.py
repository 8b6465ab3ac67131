"""Chapter 7's experiments: character-level language models on real text, and how much of
their context they use.

Three models of the book read the frozen corpus of :mod:`longdep.corpus` one character at a
time and predict the next: an LSTM (Chapter 3), a causal Pre-LN Transformer (Chapter 5) and
linear attention (Chapter 6), built from the registry with about the same number of parameters
(:data:`TEXT_SHAPES`) and trained with :func:`longdep.train.train_seeds`, the seeds batched
(:class:`FlatLogits` presents a prediction at every position). Then they are
measured on held-out windows of :attr:`TextBudget.window` characters (:class:`HeldOutSet`,
:func:`measure_context_use`): the loss at every position and Khandelwal et al.'s (2018)
ablation, the context beyond d replaced or shuffled (:mod:`longdep.measure.context`), and the
loss on repeated identifiers against first occurrences (:func:`longdep.corpus.identifier_classes`).
:func:`context_use` does it all for the three models, side by side on the cores, after the
budget and after twice it; :func:`context_statistics` gives the numbers the chapter compares.
"""

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import nn

from longdep.book import Bilingual
from longdep.corpus import Corpus, identifier_classes
from longdep.experiments.registry import KIND, ModelShape
from longdep.experiments.workers import in_worker_processes
from longdep.measure.context import (
    ablated_windows,
    context_reach,
    context_rises,
    last_losses,
    token_losses,
)
from longdep.models._checks import first_output
from longdep.train import Batch, train_seeds

LANGUAGE_MODELS = ("LSTM", "Transformer (softmax attention)", "linear attention")
"""The registry's names of the three models Chapter 7 trains."""

MODEL_LABELS = {"LSTM": Bilingual("LSTM", "LSTM"),
                "Transformer (softmax attention)": Bilingual("Transformer (softmax attention)",
                                                             "Transformer（softmax 注意力）"),
                "linear attention": Bilingual("linear attention", "线性注意力")}
"""Each model's name as Chapter 7's tables and figures show it, in both languages."""


@dataclass(frozen=True)
class TextBudget:
    """What every language model of Chapter 7 gets: ``steps`` Adam steps on ``batch_size``
    random training windows of ``window`` characters (learning rate ``lr``, linear warm-up
    over ``warmup_steps``, gradients clipped to ``clip_norm``), for every seed of ``seeds``;
    then ``eval_windows`` held-out windows (drawn with ``eval_seed``) for the loss by
    position and on identifiers, the first ``ablation_windows`` of them for the ablation at
    the context lengths ``distances``. Chosen by hand so that the chapter fits its time
    budget on two cores."""

    window: int = 64
    batch_size: int = 8
    steps: int = 200
    lr: float = 1e-2
    clip_norm: float = 1.0
    warmup_steps: int = 30
    seeds: tuple[int, ...] = (0, 1, 2, 3)
    eval_windows: int = 512
    ablation_windows: int = 192
    eval_seed: int = 7
    distances: tuple[int, ...] = (1, 2, 4, 8, 16, 24, 32, 63)


TEXT_BUDGET = TextBudget()

TEXT_SHAPES = {
    "LSTM": ModelShape(input_size=32, width=48, forget_bias=1.0),
    "Transformer (softmax attention)": ModelShape(input_size=32, width=32, num_layers=2,
                                                  num_heads=1, d_ff=64, max_len=64),
    "linear attention": ModelShape(input_size=32, width=32, num_layers=2, num_heads=1,
                                   d_ff=64, max_len=64),
}
"""Each model's sizes: the same 32-wide character embedding, widths that match the parameter
counts to within a few per cent (Chapter 7 glues them)."""


class CharacterModel(nn.Module):
    """Embed characters, run a sequence model, predict the next character at every position:
    tokens (batch, time) -> logits (batch, time, vocab_size) (Chapter 7)."""

    def __init__(self, vocab_size: int, embedding_dim: int, core: nn.Module, core_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.core = core
        self.head = nn.Linear(core_dim, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(first_output(self.core(self.embedding(tokens))))


def character_model(name: str, vocab_size: int, seed: int,
                    shapes: dict[str, ModelShape] = TEXT_SHAPES) -> CharacterModel:
    """A fresh :class:`CharacterModel` of the registry's kind ``name`` (PyTorch's twin for the
    LSTM, as Chapter 3 trains it), initialised after seeding torch with ``seed``."""
    if name not in shapes:
        raise ValueError(f"name must be one of {tuple(shapes)}, got {name!r}")
    shape = shapes[name]
    torch.manual_seed(seed)
    return CharacterModel(vocab_size, shape.input_size, KIND[name].training_core(shape),
                          shape.width)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def random_windows(text: torch.Tensor, count: int, length: int,
                   generator: torch.Generator) -> torch.Tensor:
    """``count`` windows of ``length`` consecutive characters of ``text`` (characters,), at
    random places: (count, length) int64."""
    starts = torch.randint(0, len(text) - length + 1, (count,), generator=generator)
    return text[starts[:, None] + torch.arange(length)]


class FlatLogits(nn.Module):
    """``model``'s logits (batch, time, vocab) as (batch * time, vocab): one prediction per
    position, as :func:`longdep.train.train_seeds` compares them with the flat targets of
    :func:`window_batches` (cross-entropy and accuracy over every position of every window)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model(tokens).flatten(0, 1)


def window_batches(text: torch.Tensor, budget: TextBudget):
    """The batch function of training: ``budget.batch_size`` random windows of
    ``budget.window + 1`` characters; tokens (batch, window), next characters flattened
    (batch * window,) for :class:`FlatLogits`."""
    def make_batch(generator: torch.Generator) -> Batch:
        windows = random_windows(text, budget.batch_size, budget.window + 1, generator)
        return windows[:, :-1], windows[:, 1:].flatten()

    return make_batch


def train_character_models(models: Sequence[CharacterModel], text: torch.Tensor,
                           seeds: Sequence[int], budget: TextBudget = TEXT_BUDGET,
                           vectorized: bool = True) -> list[float]:
    """Train ``models[i]`` on ``text`` with seed ``seeds[i]``, in place, all at once
    (:func:`longdep.train.train_seeds`); returns each one's mean loss over the last tenth of
    the steps."""
    views = [FlatLogits(model) for model in models]  # train_seeds leaves them trained
    results = train_seeds(views, window_batches(text, budget), budget.steps, list(seeds),
                          lr=budget.lr, clip_norm=budget.clip_norm,
                          warmup_steps=budget.warmup_steps, eval_batches=1,
                          vectorized=vectorized)
    tail = max(1, budget.steps // 10)
    return [sum(r.losses[-tail:]) / tail for r in results]


@dataclass(frozen=True)
class HeldOutSet:
    """What every model is measured on (Chapter 7): ``windows`` (n, time + 1) of held-out
    text; ``ablated[mode][d]`` the first ``ablation_windows`` of them ablated beyond d;
    ``repeat`` and ``first`` (n, time) boolean, True where the character a position predicts
    continues a repeated identifier or a first occurrence (:func:`identifier_classes`)."""

    windows: torch.Tensor
    ablated: dict[str, dict[int, torch.Tensor]]
    repeat: torch.Tensor
    first: torch.Tensor

    def at(self, distances: dict[str, Sequence[int]]) -> "HeldOutSet":
        """The same set with the ablations of only ``distances[mode]`` for each mode."""
        return replace(self, ablated={mode: {d: self.ablated[mode][d] for d in chosen}
                                      for mode, chosen in distances.items()})


def held_out_set(corpus: Corpus, budget: TextBudget = TEXT_BUDGET) -> HeldOutSet:
    """The held-out windows of ``corpus`` and their ablations, drawn from
    ``budget.eval_seed``."""
    generator = torch.Generator().manual_seed(budget.eval_seed)
    windows = random_windows(corpus.held_out, budget.eval_windows, budget.window + 1, generator)
    near = windows[:budget.ablation_windows]
    ablated = {mode: ablated_windows(near, budget.distances, mode, corpus.held_out, generator)
               for mode in ("replace", "shuffle")}
    repeat = torch.zeros(len(windows), budget.window, dtype=torch.bool)
    first = repeat.clone()
    for i, window in enumerate(windows):
        repeats, firsts = identifier_classes(corpus.decode(window))
        repeat[i, [p - 1 for p in repeats]] = True  # position p - 1 predicts character p
        first[i, [p - 1 for p in firsts]] = True
    return HeldOutSet(windows, ablated, repeat, first)


@dataclass(frozen=True)
class ContextUse:
    """One kind of model's measurements on a :class:`HeldOutSet`, each tensor with a leading
    seed dimension: ``training_losses`` (seeds,) at the end of ``steps`` steps;
    ``position_losses`` (seeds, time); ``rises[mode]`` (seeds, distances), the ablation's rise
    of the last loss at the context lengths ``distances[mode]``; ``repeat_losses`` and
    ``first_losses`` (seeds,), the mean loss on characters of repeated identifiers and of
    first occurrences (Chapter 7)."""

    name: str
    parameters: int
    steps: int
    training_losses: torch.Tensor
    position_losses: torch.Tensor
    rises: dict[str, torch.Tensor]
    distances: dict[str, tuple[int, ...]]
    repeat_losses: torch.Tensor
    first_losses: torch.Tensor


@contextlib.contextmanager
def last_position_only(model: CharacterModel):
    """Within the block a causal Transformer core computes only its last position (its last
    layer's one query: :class:`longdep.models.transformer.EncoderStack` ``last_only``), all
    that the ablation reads; other cores compute every position, as always."""
    saved = getattr(model.core, "last_only", None)
    if getattr(model.core, "causal", False):
        model.core.last_only = True
    try:
        yield model
    finally:
        if saved is not None:
            model.core.last_only = saved


def measure_context_use(name: str, models: Sequence[CharacterModel], held_out: HeldOutSet,
                        steps: int, training_losses: Sequence[float]) -> ContextUse:
    """Every measurement of Chapter 7 for the trained ``models`` (one per seed)."""
    near = held_out.windows[:len(next(iter(held_out.ablated["replace"].values())))]
    positions, rises, repeats, firsts = [], {mode: [] for mode in held_out.ablated}, [], []
    for model in models:
        losses = token_losses(model, held_out.windows)  # (windows, time)
        positions.append(losses.mean(0))
        repeats.append(losses[held_out.repeat].mean())
        firsts.append(losses[held_out.first].mean())
        with last_position_only(model):
            base = last_losses(model, near)
            for mode, ablated in held_out.ablated.items():
                rises[mode].append(context_rises(model, near, ablated, base))
    return ContextUse(name, parameter_count(models[0]), steps, torch.tensor(training_losses),
                      torch.stack(positions), {m: torch.stack(r) for m, r in rises.items()},
                      {m: tuple(ablated) for m, ablated in held_out.ablated.items()},
                      torch.stack(repeats), torch.stack(firsts))


CONTINUATION_SEED = 500
"""Added to each seed for the batches of the second half of a doubled budget."""

CHECKED_DISTANCES = {"replace": (1, 4, 32), "shuffle": (1,)}
"""The ablations measured again after twice the budget: those Chapter 7's claims read."""


def train_and_measure(name: str, corpus: Corpus, held_out: HeldOutSet,
                      budget: TextBudget = TEXT_BUDGET) -> tuple[ContextUse, ContextUse]:
    """Train one model of kind ``name`` per seed of ``budget`` on ``corpus.train`` for
    ``budget.steps`` steps and measure it; then train the same models as many steps again
    (fresh batches, a fresh Adam) and measure them again, the ablations only at
    :data:`CHECKED_DISTANCES`: (after the budget, after twice it)."""
    models = [character_model(name, corpus.vocab_size, seed) for seed in budget.seeds]
    vectorized = not KIND[name].recurrent  # torch.nn.LSTM has no batching rule for vmap
    measured = []
    for half, measured_on in enumerate((held_out, held_out.at(CHECKED_DISTANCES))):
        seeds = [seed + half * CONTINUATION_SEED for seed in budget.seeds]
        losses = train_character_models(models, corpus.train, seeds, budget, vectorized)
        measured.append(measure_context_use(name, models, measured_on,
                                            (half + 1) * budget.steps, losses))
    return measured[0], measured[1]


def context_use(corpus: Corpus, budget: TextBudget = TEXT_BUDGET,
                names: Sequence[str] = LANGUAGE_MODELS, beside: dict | None = None
                ) -> tuple[dict[str, tuple[ContextUse, ...]], dict]:
    """:func:`train_and_measure` for every kind of ``names``, side by side on the cores
    (:func:`longdep.experiments.workers.in_worker_processes`), the recurrent ones last (they
    are the cheapest), and every further call ``key: (function, arguments)`` of ``beside`` in
    the same pool, last: it fills the core that the trainings leave idle (Chapter 7 counts its
    summary columns there). Returns ({name: (after the budget, after twice it)}, {key: result
    of beside})."""
    beside = beside or {}
    if set(beside) & set(names):
        raise ValueError(f"beside must not use a model's name as a key, got {list(beside)}")
    held_out = held_out_set(corpus, budget)
    order = sorted(names, key=lambda name: KIND[name].recurrent)
    runs = in_worker_processes({name: (train_and_measure, (name, corpus, held_out, budget))
                                for name in order} | beside)
    return {name: runs[name] for name in names}, {key: runs[key] for key in beside}


REACH_THRESHOLD = 0.01
"""Nats: a rise of the last loss below this counts as "no longer depends" (Chapter 7)."""


def context_statistics(use: ContextUse, keep: int = 4,
                       threshold: float = REACH_THRESHOLD) -> dict[str, torch.Tensor]:
    """What Chapter 7 compares, each (seeds,): the held-out ``loss`` (mean over positions and
    windows); ``rise_1``, the rise of the last loss when only the last character is kept (how
    much the context beyond it is worth); ``beyond_keep``, the share of that worth which
    needs more than ``keep`` characters, rise(keep) / rise(1); ``order``, shuffling over
    replacing at d = 1 (how much of the worth lies in the order of the characters, not in
    which ones occur); ``reach`` (:func:`context_reach` at ``threshold``, on the distances
    measured); ``repeat_gain``, the loss on first occurrences minus that on repeated
    identifiers. Both ablations must have been measured at d = 1, the first distance."""
    replaced, shuffled = use.rises["replace"], use.rises["shuffle"]
    distances = use.distances["replace"]
    if distances[0] != 1 or use.distances["shuffle"][0] != 1 or keep not in distances:
        raise ValueError(f"the ablations must start at d = 1 and include keep = {keep}, got "
                         f"{use.distances}")
    near = distances.index(keep)
    return {"loss": use.position_losses.mean(1), "rise_1": replaced[:, 0],
            "beyond_keep": replaced[:, near] / replaced[:, 0],
            "order": shuffled[:, 0] / replaced[:, 0],
            "reach": context_reach(replaced, distances, threshold),
            "repeat_gain": use.first_losses - use.repeat_losses}


def rise_at(use: ContextUse, distance: int, mode: str = "replace") -> torch.Tensor:
    """The rise of the last loss when the context beyond ``distance`` is ablated by
    ``mode``, one per seed: (seeds,) (Chapter 7)."""
    return use.rises[mode][:, use.distances[mode].index(distance)]

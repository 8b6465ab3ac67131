"""The one training engine of the book (Chapters 2, 3, 5, 6 and 7).

:func:`train` trains one model on fresh batches from ``make_batch(generator)``; it knows no task
and no model kind. :func:`train_seeds` trains several models of one architecture at once, one
per seed, as one model whose parameters carry a leading seed dimension: training runs are
chaotic, so the book reports statistics over seeds, and the seeds share the per-operation
overhead of tiny models on a CPU. Both take the optimizer, the learning rate, the clipping
threshold and the warm-up (:func:`train_seeds` the last three per model); the optimizers, the
warm-up and Pascanu et al.'s clipping (Algorithm 1) are in :mod:`longdep.optim`.

Arguments are checked at the boundary (:mod:`longdep.models._checks`): learning rates as
``torch.optim`` checks them and refused when not finite, Adam's ``betas`` and ``eps`` as
``torch.optim.Adam`` does, a function argument against the call it must accept.
"""

import copy
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from longdep.models import _checks as check
from longdep.optim import (
    Adam,
    Optimizer,
    check_rate,
    clip_per_seed_,
    set_learning_rate,
    warmup_factor,
)
from longdep.seeds import seeded_generator

Batch = tuple[Tensor, Tensor]
HELD_OUT = 1_000_003  # the held-out batches of seed s come from the generator of s + HELD_OUT


@dataclass
class TrainingResult:
    """Per-step loss and gradient norm (before clipping; inf where the gradient was not finite),
    the held-out accuracy at the end (NaN without held-out batches), and what ``observe`` saw of
    the parameters before each step (empty without it)."""

    losses: list[float] = field(default_factory=list)
    grad_norms: list[float] = field(default_factory=list)
    accuracy: float = math.nan
    observed: list = field(default_factory=list)


def cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """The mean cross-entropy of logits (..., classes) against integer targets (...): one target
    per sequence (key recall) or one per position (a language model)."""
    check.tensor(logits, "logits", "(..., classes)")
    check.tensor(targets, "targets", "(...)", 0, floating=False)
    if targets.dtype != torch.int64 or targets.shape != logits.shape[:-1]:
        raise ValueError(f"targets must be int64 classes of shape (...) = "
                         f"{tuple(logits.shape[:-1])}, one per row of the logits "
                         f"{tuple(logits.shape)}, got {check.describe(targets)}")
    return nn.functional.cross_entropy(logits.flatten(0, -2), targets.flatten())


def train(
    model: nn.Module,
    make_batch: Callable[[torch.Generator], Batch],
    steps: int,
    *,
    optimizer: Callable[..., object] = Adam,
    lr: float = 1e-3,
    clip_norm: float | None = None,
    warmup_steps: int = 0,
    seed: int = 0,
    eval_batches: int = 4,
    loss: Callable[[Tensor, Tensor], Tensor] = cross_entropy,
    observe: Callable[[dict[str, Tensor]], object] | None = None,
) -> TrainingResult:
    """Train ``model`` in place for ``steps`` steps on fresh batches ``make_batch(generator)``.

    optimizer: a class or function ``optimizer(parameters, lr=...)``: :class:`Adam` (the
    default), :class:`SGD`, or a ``torch.optim`` optimizer. lr: the learning rate, warmed up
    linearly over the first ``warmup_steps`` steps (:func:`warmup_factor`). clip_norm: if given,
    every gradient is clipped to this norm by :func:`clip_gradient_norm_`. The batches come from
    a generator seeded with ``seed``; at the end the accuracy (argmax of the logits against the
    targets) is measured on ``eval_batches`` held-out batches from a generator the training never
    sees (0: none, and the accuracy is NaN). loss: (logits, targets) -> a scalar,
    :func:`cross_entropy` by default. observe: called with the parameters ({name: tensor})
    before every step; what it returns is kept in ``observed`` (Chapter 2 follows a descent so).
    This is :func:`train_seeds` with one model.
    """
    for name, value in (("lr", lr), ("clip_norm", clip_norm), ("warmup_steps", warmup_steps)):
        if isinstance(value, (list, tuple)):
            raise TypeError(f"{name} must be one value for train's one model, got "
                            f"{check.describe(value)}; train_seeds takes one per model")
    return train_seeds([model], make_batch, steps, [seed], optimizer=optimizer, lr=lr,
                       clip_norm=clip_norm, warmup_steps=warmup_steps,
                       eval_batches=eval_batches, loss=loss, observe=observe,
                       vectorized=False)[0]


def train_seeds(
    models: Sequence[nn.Module],
    make_batch: Callable[[torch.Generator], Batch],
    steps: int,
    seeds: Sequence[int],
    *,
    optimizer: Callable[..., object] = Adam,
    lr: float | Sequence[float] = 1e-3,
    clip_norm: float | None | Sequence[float | None] = None,
    warmup_steps: int | Sequence[int] = 0,
    eval_batches: int = 4,
    loss: Callable[[Tensor, Tensor], Tensor] = cross_entropy,
    observe: Callable[[dict[str, Tensor]], object] | None = None,
    vectorized: bool = True,
) -> list[TrainingResult]:
    """Train ``models[i]`` with seed ``seeds[i]``, all at once, in place (Chapters 2, 3, 5, 6).

    Each model is trained as :func:`train` trains it, with its own batches (drawn from a
    generator seeded with its seed: models with one seed see the same data), its own gradient
    norm and clipping, and its own Adam or SGD, since both act elementwise. ``lr``, ``clip_norm``
    and ``warmup_steps`` take one value for every model or one per model, so that settings that
    differ only in these train in one computation (Chapter 2's clipping, Chapter 5's warm-up).
    The models must share one architecture (the same parameter names and shapes).

    The parameters are stacked along a leading seed dimension. With ``vectorized`` the forward
    and backward passes run once, under ``torch.func.vmap``, so their per-operation overhead is
    paid once for all seeds; the models must then draw no random numbers in ``forward`` (no
    dropout) and use only operations vmap can batch (not ``torch.nn.RNN``, ``LSTM`` or ``GRU``,
    whose fused loops have no batching rule). With ``vectorized=False`` the forward pass runs
    once per seed on its slice of the stacked parameters, and the rest (backward, clipping, the
    optimizer, the warm-up) is shared. At the end every model holds its trained weights.
    ``observe`` is called with each seed's parameters before every step (see :func:`train`).
    """
    runs = check_training(models, make_batch, steps, seeds, optimizer, eval_batches, loss,
                          observe, vectorized)
    rates = torch.tensor(per_model("lr", lr, runs), dtype=torch.float64)
    thresholds = torch.tensor([math.inf if c is None else float(c)
                               for c in per_model("clip_norm", clip_norm, runs)])
    warmups = per_model("warmup_steps", warmup_steps, runs)
    params, buffers = stack_module_state(list(models))  # each (seeds, ...), leaves
    base = copy.deepcopy(models[0]).to("meta")  # the architecture, without weights

    def step_loss(p, b, inputs, targets):
        return loss(functional_call(base, (p, b), (inputs,)), targets)

    def predictions(p, b, inputs):
        return functional_call(base, (p, b), (inputs,)).argmax(-1)

    over_seeds = vmap if vectorized else one_seed_after_another
    distinct = list(dict.fromkeys(seeds))  # one batch per distinct seed, shared
    train_generators = [seeded_generator(s) for s in distinct]
    opt = built_optimizer(optimizer, list(params.values()), rates, warmups)
    results = [TrainingResult() for _ in seeds]
    base.train()
    for step in range(steps):
        if observe is not None:
            for i, result in enumerate(results):
                result.observed.append(observe({k: v[i].detach() for k, v in params.items()}))
        scheduled = rates * torch.tensor([warmup_factor(step, w) for w in warmups],
                                         dtype=torch.float64)
        set_learning_rate(opt, float(scheduled[0]) if bool((scheduled == scheduled[0]).all())
                          else scheduled)
        inputs, targets = draw(make_batch, train_generators, distinct, seeds)
        losses = over_seeds(step_loss)(params, buffers, inputs, targets)  # (seeds,)
        if step == 0:
            check_losses(losses, len(seeds))
        opt.zero_grad()
        losses.sum().backward()  # seed i's loss depends on seed i's parameters only
        norms = clip_per_seed_(list(params.values()),
                               None if bool(torch.isinf(thresholds).all()) else thresholds)
        opt.step()
        for result, value, norm in zip(results, losses.tolist(), norms.tolist()):
            result.losses.append(value)
            result.grad_norms.append(norm)
    base.eval()
    if eval_batches:
        held_out = [seeded_generator(s + HELD_OUT) for s in distinct]
        correct, total = torch.zeros(len(seeds)), 0
        with torch.no_grad():
            for _ in range(eval_batches):
                inputs, targets = draw(make_batch, held_out, distinct, seeds)
                hits = over_seeds(predictions)(params, buffers, inputs) == targets
                correct += hits.flatten(1).sum(1)
                total += targets[0].numel()
        for result, count in zip(results, correct.tolist()):
            result.accuracy = count / total
    write_back(models, params, buffers)
    return results


def per_model(name: str, value, runs: int) -> list:
    """``value`` for each of ``runs`` models: one value for all, or a list or tuple of one per
    model (checked by :func:`check_training`'s rules for ``name``)."""
    values = list(value) if isinstance(value, (list, tuple)) else [value] * runs
    if len(values) != runs:
        raise ValueError(f"{name} must be one value or one per model ({runs}), got "
                         f"{len(values)} values")
    for i, v in enumerate(values):
        label = name if not isinstance(value, (list, tuple)) else f"{name}[{i}]"
        if name == "warmup_steps":
            check.int_range(0, None, **{label: v})
        elif name == "lr":
            check_rate(v, label)
        elif v is not None:
            check.finite(**{label: v})
            if v <= 0:
                raise ValueError(f"{label} must be positive, got {v}")
    return values


def built_optimizer(optimizer: Callable, parameters: list[Tensor], rates: Tensor,
                    warmups: list[int]):
    """``optimizer(parameters, lr=...)``, checked to be one that :func:`set_learning_rate` can
    drive: the book's (one rate per seed) or a ``torch.optim`` one (one rate for all seeds)."""
    opt = optimizer(parameters, lr=float(rates[0]))
    if not (callable(getattr(opt, "step", None)) and callable(getattr(opt, "zero_grad", None))
            and (isinstance(opt, Optimizer) or hasattr(opt, "param_groups"))):
        raise TypeError(f"optimizer must build a longdep.optim.Optimizer or a torch.optim "
                        f"optimizer (step, zero_grad, and lr or param_groups), got "
                        f"{check.describe(opt)}")
    schedules_differ = len(set(rates.tolist())) > 1 or len(set(warmups)) > 1
    if schedules_differ and not isinstance(opt, Optimizer):
        raise ValueError(f"lr and warmup_steps that differ between the models need the book's "
                         f"Adam or SGD (longdep.optim), one rate per seed; "
                         f"{type(opt).__name__} has one rate for all of them")
    return opt


def check_losses(losses, runs: int) -> None:
    """Raise unless the loss gave one number per model, (runs,)."""
    if not isinstance(losses, Tensor) or losses.shape != (runs,):
        raise ValueError(f"loss must return one number (a 0-d tensor) per model, got "
                         f"{check.describe(losses)} for {runs} model(s)")


def check_training(models, make_batch, steps, seeds, optimizer, eval_batches, loss, observe,
                   vectorized) -> int:
    """Raise a clear error for a bad argument of :func:`train_seeds`; return the model count."""
    if not isinstance(models, (list, tuple)) or not models:
        raise TypeError(f"models must be a non-empty list of torch.nn.Module, got "
                        f"{check.describe(models)}")
    for i, model in enumerate(models):
        check.instance(model, f"models[{i}]", nn.Module)
    if not isinstance(seeds, (list, tuple)) or len(seeds) != len(models):
        raise ValueError(f"seeds must be a list of one seed per model ({len(models)}), got "
                         f"{check.describe(seeds)}")
    if len({id(model) for model in models}) != len(models):
        raise ValueError("models must be distinct objects: each seed's weights are written back "
                         "into its own model; pass a copy (copy.deepcopy) for each seed")
    check.int_range(0, None, **{f"seeds[{i}]": s for i, s in enumerate(seeds)})
    check.positive(steps=steps)
    check.int_range(0, None, eval_batches=eval_batches)
    check.flags(vectorized=vectorized)
    accepts("make_batch", make_batch, "make_batch(generator)", None)
    accepts("optimizer", optimizer, "optimizer(parameters, lr=...)", [], lr=1.0)
    accepts("loss", loss, "loss(logits, targets)", None, None)
    if observe is not None:
        accepts("observe", observe, "observe(parameters)", {})
    shapes = [{n: p.shape for n, p in m.named_parameters()} for m in models]
    for i, shape in enumerate(shapes):
        if shape != shapes[0]:
            raise ValueError(f"models must share one architecture: models[{i}] has other "
                             f"parameters than models[0] ({sorted(set(shape) ^ set(shapes[0]))} "
                             "or other shapes)")
    if vectorized:
        for module in models[0].modules():
            if isinstance(module, (nn.RNNBase,)):
                raise TypeError(f"vectorized=True cannot batch a torch.nn.{type(module).__name__}"
                                " (its fused loop has no vmap rule): pass vectorized=False")
            if isinstance(module, nn.Dropout) and module.p > 0 or (
                    isinstance(getattr(module, "dropout", 0), float) and module.dropout > 0):
                raise ValueError("vectorized=True needs models without dropout (vmap draws one "
                                 "mask for every seed): pass vectorized=False or dropout=0")
    return len(models)


def accepts(name: str, fn, call: str, *args, **kwargs) -> None:
    """Raise a ``TypeError`` unless ``fn`` is callable as ``call`` (``args`` and ``kwargs`` stand
    for its arguments); a callable whose signature Python cannot read passes."""
    check.callables(**{name: fn})
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as error:
        shown = getattr(fn, "__qualname__", type(fn).__name__)
        raise TypeError(f"{name} must be callable as {call}, but {shown}{signature} is not: "
                        f"{error}") from None


def one_seed_after_another(function: Callable) -> Callable:
    """What vmap does, as a loop: ``function`` on each seed's slice of stacked parameters,
    buffers and inputs, the results stacked (for models that vmap cannot batch)."""
    def looped(params, buffers, *inputs):
        return torch.stack([function({k: v[i] for k, v in params.items()},
                                     {k: v[i] for k, v in buffers.items()},
                                     *(x[i] for x in inputs))
                            for i in range(len(next(iter(params.values()))))])
    return looped


def draw(make_batch: Callable[[torch.Generator], Batch], generators: Sequence[torch.Generator],
         distinct: Sequence[int], seeds: Sequence[int]) -> Batch:
    """One batch per distinct seed, stacked in the order of ``seeds``: (seeds, batch, ...)."""
    drawn = dict(zip(distinct, (make_batch(g) for g in generators)))
    shapes = None
    for s, batch in drawn.items():
        if not (isinstance(batch, (tuple, list)) and len(batch) == 2
                and all(isinstance(x, Tensor) for x in batch)):
            raise TypeError(f"make_batch must return a pair (inputs, targets) of tensors, got "
                            f"{check.describe(batch)} for seed {s}")
        if shapes is not None and shapes != [x.shape for x in batch]:
            raise ValueError(f"make_batch must return batches of one shape for every seed, got "
                             f"{[tuple(x) for x in shapes]} and "
                             f"{[tuple(x.shape) for x in batch]} (seed {s})")
        shapes = [x.shape for x in batch]
    return (torch.stack([drawn[s][0] for s in seeds]),
            torch.stack([drawn[s][1] for s in seeds]))


def write_back(models: Sequence[nn.Module], params: dict, buffers: dict) -> None:
    """Copy each seed's slice of the stacked parameters and buffers into its model."""
    with torch.no_grad():
        for i, model in enumerate(models):
            for name, tensor in model.named_parameters():
                tensor.copy_(params[name][i])
            for name, tensor in model.named_buffers():
                if name in buffers:
                    tensor.copy_(buffers[name][i])


@torch.no_grad()
def accuracy(model: nn.Module, batches: Sequence[Batch]) -> float:
    """The fraction of correct argmax predictions of ``model`` over ``batches``, a non-empty list
    of (inputs, targets) pairs."""
    check.instance(model, "model", nn.Module)
    if not isinstance(batches, (list, tuple)) or not batches or not all(
            isinstance(b, (list, tuple)) and len(b) == 2 for b in batches):
        raise TypeError(f"batches must be a non-empty list of (inputs, targets) pairs, got "
                        f"{check.describe(batches)}")
    model.eval()
    correct = total = 0
    for inputs, targets in batches:
        correct += (model(inputs).argmax(-1) == targets).sum().item()
        total += targets.numel()
    model.train()
    return correct / total

"""The one training loop of the book (Chapters 2, 3, 5 and 6), and gradient clipping.

:func:`train` takes a model and a function that draws a batch; it knows no task and no model
kind. :func:`train_seeds` trains several copies of one architecture at once, one per seed, as
one model with a seed dimension (``torch.func.vmap``): a training run of hundreds of steps is
chaotic, so the book reports statistics over seeds, and on a CPU the book's tiny models cost
per-operation overhead, which the seeds then share. :func:`clip_gradient_norm_` is Algorithm 1
of Pascanu, Mikolov & Bengio (2013). :class:`Adam` and :class:`SGD` are the two optimizers,
written out.
"""

import copy
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

Batch = tuple[torch.Tensor, torch.Tensor]


@dataclass
class TrainingResult:
    """Per-step loss and gradient norm (before clipping), and held-out accuracy at the end."""

    losses: list[float] = field(default_factory=list)
    grad_norms: list[float] = field(default_factory=list)
    accuracy: float = float("nan")


class Optimizer:
    """What the book's two optimizers, :class:`SGD` and :class:`Adam`, share: the parameters,
    the learning rate ``lr`` (it may change between steps: the warm-up changes it), and
    ``zero_grad``.

    They are written out, a few lines each, rather than taken from ``torch.optim``: its first
    use imports ``torch._dynamo`` (1.6 s in every process), and its general loop over
    parameters costs more than the update itself for models this small.
    """

    def __init__(self, parameters: Iterable[torch.Tensor], lr: float):
        self.parameters, self.lr = list(parameters), lr
        if not self.parameters or not all(isinstance(p, torch.Tensor) for p in self.parameters):
            raise ValueError("parameters must be a non-empty iterable of tensors")
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not (
                math.isfinite(lr) and lr > 0):
            raise ValueError(f"lr must be a positive finite number, got {lr!r}")

    def zero_grad(self) -> None:
        for p in self.parameters:
            p.grad = None


class SGD(Optimizer):
    """Plain stochastic gradient descent, p <- p - lr * grad (Chapter 2), computed as
    ``torch.optim.SGD`` computes it with its defaults, so the two agree bit for bit (tested)."""

    @torch.no_grad()
    def step(self) -> None:
        for p in self.parameters:
            if p.grad is not None:
                p.add_(p.grad, alpha=-self.lr)


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015) with PyTorch's defaults, betas (0.9, 0.999) and eps 1e-8: every
    step computes what ``torch.optim.Adam`` computes on a CPU, operation for operation, so the
    two agree bit for bit (tested).

    m <- beta1 m + (1 - beta1) g and v <- beta2 v + (1 - beta2) g^2 are running means of the
    gradient and of its square, and the step is lr * m_hat / (sqrt(v_hat) + eps), where
    m_hat = m / (1 - beta1^t) and v_hat = v / (1 - beta2^t) undo their bias towards the zeros
    they start from. Each parameter's step is about lr in size whatever its gradient's scale.

    ``lr`` may also be a (seeds,) tensor, one learning rate per seed of parameters stacked
    along a leading seed dimension (:func:`train_seeds` with one warm-up per seed): each
    seed's slice then takes the step a float ``lr`` of its own gives, bit for bit (tested).
    """

    def __init__(self, parameters: Iterable[torch.Tensor], lr: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        super().__init__(parameters, lr)
        (self.beta1, self.beta2), self.eps = betas, eps
        self.means = [torch.zeros_like(p) for p in self.parameters]
        self.squares = [torch.zeros_like(p) for p in self.parameters]
        self.steps = [0] * len(self.parameters)  # t counts the steps that had a gradient

    @torch.no_grad()
    def step(self) -> None:
        for i, (p, m, v) in enumerate(zip(self.parameters, self.means, self.squares)):
            if p.grad is None:
                continue
            self.steps[i] = t = self.steps[i] + 1
            m.lerp_(p.grad, 1 - self.beta1)
            v.mul_(self.beta2).addcmul_(p.grad, p.grad, value=1 - self.beta2)
            denominator = (v.sqrt() / (1 - self.beta2**t) ** 0.5).add_(self.eps)
            if isinstance(self.lr, torch.Tensor):  # per seed: addcdiv_'s (value * m) / denom
                value = (-self.lr / (1 - self.beta1**t)).to(p.dtype)
                p.add_(m.mul(value.view(-1, *[1] * (p.dim() - 1))).div_(denominator))
            else:
                p.addcdiv_(m, denominator, value=-self.lr / (1 - self.beta1**t))


def warmup_factor(step: int, warmup_steps: int) -> float:
    """Linear learning-rate warm-up: (step + 1) / warmup_steps for the first steps, then 1."""
    return 1.0 if warmup_steps <= 0 else min(1.0, (step + 1) / warmup_steps)


@torch.no_grad()
def accuracy(model: nn.Module, batches: list[Batch]) -> float:
    """Fraction of correct argmax predictions over the given batches."""
    model.eval()
    correct = total = 0
    for tokens, targets in batches:
        correct += (model(tokens).argmax(-1) == targets).sum().item()
        total += targets.numel()
    model.train()
    return correct / total


def train(
    model: nn.Module,
    make_batch: Callable[[torch.Generator], Batch],
    steps: int,
    lr: float = 1e-3,
    clip_norm: float | None = None,
    warmup_steps: int = 0,
    seed: int = 0,
    eval_batches: int = 4,
    optimizer_class: type[Optimizer] = Adam,
    clip: Callable[..., torch.Tensor] = nn.utils.clip_grad_norm_,
) -> TrainingResult:
    """Train ``model`` with Adam and cross-entropy on fresh batches from ``make_batch(generator)``.

    clip_norm: if given, rescale the gradient to this norm when it is larger (Pascanu et al. 2013),
    with ``clip(parameters, max_norm)``, which returns the norm before clipping.
    warmup_steps: linear learning-rate warm-up length. Accuracy is measured at the end on
    ``eval_batches`` held-out batches drawn from a generator the training never sees.
    optimizer_class: :class:`Adam` by default; Chapter 2 trains with plain :class:`SGD`.
    """
    check_training_arguments(steps, lr, clip_norm, warmup_steps, eval_batches)
    train_generator = torch.Generator().manual_seed(seed)
    held_out_generator = torch.Generator().manual_seed(seed + 1_000_003)
    optimizer = optimizer_class(model.parameters(), lr=lr)
    result = TrainingResult()
    model.train()
    for step in range(steps):
        optimizer.lr = lr * warmup_factor(step, warmup_steps)
        tokens, targets = make_batch(train_generator)
        loss = nn.functional.cross_entropy(model(tokens), targets)
        optimizer.zero_grad()
        loss.backward()
        grad_norm = clip(model.parameters(), math.inf if clip_norm is None else clip_norm)
        optimizer.step()
        result.losses.append(loss.item())
        result.grad_norms.append(grad_norm.item())
    result.accuracy = accuracy(model, [make_batch(held_out_generator) for _ in range(eval_batches)])
    return result


def check_training_arguments(steps: int, lr: float, clip_norm: float | None,
                             warmup_steps: int, eval_batches: int) -> None:
    """Raise a ``ValueError`` naming the first bad argument of :func:`train`.

    ``lr`` and ``clip_norm`` must be finite and positive: a NaN passes ``lr <= 0`` (every
    comparison with NaN is false) and an infinite learning rate turns the loss into NaN.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    if not (math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be positive and finite, got {lr}")
    if clip_norm is not None and not (math.isfinite(clip_norm) and clip_norm > 0):
        raise ValueError(f"clip_norm must be positive and finite, got {clip_norm}")
    if warmup_steps < 0:
        raise ValueError(f"warmup_steps must be non-negative, got {warmup_steps}")
    if eval_batches < 1:
        raise ValueError(f"eval_batches must be at least 1, got {eval_batches}")


def train_seeds(
    models: Sequence[nn.Module],
    make_batch: Callable[[torch.Generator], Batch],
    steps: int,
    seeds: Sequence[int],
    lr: float = 1e-3,
    clip_norm: float | None = None,
    warmup_steps: int | Sequence[int] = 0,
    eval_batches: int = 4,
    vectorized: bool = True,
) -> list[TrainingResult]:
    """Train ``models[i]`` with seed ``seeds[i]``, all at once (Chapters 3 and 5).

    The result equals ``[train(m, make_batch, steps, lr, clip_norm, warmup_steps, s,
    eval_batches) for m, s in zip(models, seeds)]`` to round-off: every model draws its own
    batches from its own generators, as :func:`train` does with its seed; its gradient is
    clipped by its own norm, over all of its parameters, as ``torch.nn.utils.clip_grad_norm_``
    does; and one Adam on the stacked parameters is one Adam per model, since Adam acts
    elementwise. The models must share one architecture (the same parameter names and shapes)
    and must not draw random numbers in ``forward`` (no dropout). Unlike :func:`train`, they are
    not modified: the trained weights are not returned.

    The parameters are stacked along a leading seed dimension. With ``vectorized`` the forward
    and backward passes run once, under ``torch.func.vmap``, so their per-operation overhead is
    paid once for all seeds. A model whose operations have no batching rule (``torch.nn.LSTM``,
    a compiled loop) needs ``vectorized=False``: its forward pass then runs once per seed on
    that seed's slice of the stacked parameters, and only the rest (the backward call, clipping,
    Adam, the warm-up) is shared. Which is faster depends on the model: Chapter 3 measures it.

    ``warmup_steps`` may also give one warm-up length per model, so that runs that differ only
    in their schedule share one computation (Chapter 5 trains Post-LN with and without
    warm-up so); a seed may then appear more than once in ``seeds``.
    """
    if len(models) != len(seeds) or not seeds:
        raise ValueError(f"need one seed per model and at least one model, got {len(models)} "
                         f"models and {len(seeds)} seeds")
    warmups = ([warmup_steps] * len(seeds) if isinstance(warmup_steps, int)
               else list(warmup_steps))
    if len(warmups) != len(seeds):
        raise ValueError(f"warmup_steps must be an int or one int per model ({len(seeds)}), "
                         f"got {warmup_steps!r}")
    for warmup in warmups:
        check_training_arguments(steps, lr, clip_norm, warmup, eval_batches)
    params, buffers = stack_module_state(list(models))  # each (seeds, ...), leaves
    base = copy.deepcopy(models[0]).to("meta")  # the architecture, without weights

    def logits(p, b, tokens):
        return functional_call(base, (p, b), (tokens,))

    def loss(p, b, tokens, targets):
        return nn.functional.cross_entropy(logits(p, b, tokens), targets)

    def per_seed(function):  # the loop that vmap replaces
        def looped(p, b, *inputs):
            return torch.stack([function({k: v[i] for k, v in p.items()},
                                         {k: v[i] for k, v in b.items()},
                                         *(x[i] for x in inputs)) for i in range(len(seeds))])
        return looped

    batch_over_seeds = vmap if vectorized else per_seed
    losses_of = batch_over_seeds(loss)
    train_generators = [torch.Generator().manual_seed(seed) for seed in seeds]
    optimizer = Adam(params.values(), lr=lr)
    results = [TrainingResult() for _ in seeds]
    base.train()
    for step in range(steps):
        rates = [lr * warmup_factor(step, warmup) for warmup in warmups]
        optimizer.lr = (rates[0] if len(set(rates)) == 1
                        else torch.tensor(rates, dtype=torch.float64))  # one per seed
        tokens, targets = stacked_batches(make_batch, train_generators)
        losses = losses_of(params, buffers, tokens, targets)  # (seeds,)
        optimizer.zero_grad()
        losses.sum().backward()  # seed i's loss depends on seed i's parameters only
        grad_norms = clip_per_seed_(list(params.values()), clip_norm)
        optimizer.step()
        for result, step_loss, norm in zip(results, losses.tolist(), grad_norms.tolist()):
            result.losses.append(step_loss)
            result.grad_norms.append(norm)
    base.eval()
    held_out = [torch.Generator().manual_seed(seed + 1_000_003) for seed in seeds]
    correct = torch.zeros(len(seeds), dtype=torch.int64)
    total = 0
    with torch.no_grad():
        for _ in range(eval_batches):
            tokens, targets = stacked_batches(make_batch, held_out)
            predictions = batch_over_seeds(logits)(params, buffers, tokens).argmax(-1)
            correct += (predictions == targets).flatten(1).sum(1)
            total += targets[0].numel()
    for result, count in zip(results, correct.tolist()):
        result.accuracy = count / total
    return results


def stacked_batches(make_batch: Callable[[torch.Generator], Batch],
                    generators: Sequence[torch.Generator]) -> Batch:
    """One batch per generator, stacked: tokens (seeds, batch, ...), targets (seeds, batch)."""
    batches = [make_batch(generator) for generator in generators]
    return (torch.stack([tokens for tokens, _ in batches]),
            torch.stack([targets for _, targets in batches]))


@torch.no_grad()
def clip_per_seed_(stacked: list[torch.Tensor], clip_norm: float | None) -> torch.Tensor:
    """Clip the gradients of stacked parameters (seeds, ...) per seed, in place, as
    ``torch.nn.utils.clip_grad_norm_`` clips one model's; returns the (seeds,) norms before."""
    grads = [p.grad for p in stacked if p.grad is not None]
    norms = torch.stack([g.flatten(1).norm(dim=1) for g in grads]).norm(dim=0)  # (seeds,)
    if clip_norm is not None:
        factors = (clip_norm / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(factors.view(-1, *[1] * (g.dim() - 1)))
    return norms


def scaled_norm(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """The 2-norm of all entries of ``tensors`` together, without overflow.

    The plain formula squares the entries: a finite float32 gradient [1e30, 1e30] has the
    finite norm 1.4e30, but its squares are inf. When the plain norm overflows although every
    entry is finite, it is recomputed as m * ||tensors / m|| with m the largest |entry|, which
    is inf only when the norm itself is not representable. (Otherwise the plain norm is kept,
    bit for bit. :func:`longdep.measure.gradients.norm_without_overflow` scales one tensor the
    same way; ``measure`` and ``train`` may not import each other.)
    """
    def plain(parts):
        return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(t)
                                                     for t in parts]))

    norm = plain(tensors)
    if torch.isfinite(norm):
        return norm
    largest = torch.stack([t.abs().max() for t in tensors]).max()
    if largest == 0 or not torch.isfinite(largest):
        return norm  # an inf or NaN entry: no scaling helps
    return largest * plain([t / largest for t in tensors])


@torch.no_grad()
def clip_gradient_norm_(parameters: Iterable[torch.Tensor], threshold: float) -> torch.Tensor:
    """Algorithm 1 of Pascanu et al. 2013, in place (Chapter 2, "Gradient clipping").

    g is the gradient of all ``parameters`` together (their ``.grad``); if ||g|| >= threshold,
    every gradient is multiplied by threshold / ||g||, so the step keeps its direction and has norm
    ``threshold``. Returns ||g|| before clipping; ``threshold=math.inf`` only measures it. Unlike
    ``torch.nn.utils.clip_grad_norm_`` no 1e-6 is added to the norm, the norm is computed without
    overflow (:func:`scaled_norm`: a huge but finite gradient, the exploding case clipping is
    for, is rescaled), and a non-finite norm (an inf or NaN entry) raises a
    ``FloatingPointError``: there is no direction left to rescale.
    """
    if not threshold > 0:
        raise ValueError(f"threshold must be positive, got {threshold}")
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        raise ValueError("no parameter has a gradient: call backward() before clipping")
    norm = scaled_norm(grads)
    if not torch.isfinite(norm):
        raise FloatingPointError(f"the gradient norm is {norm.item()}: nothing to rescale")
    if norm >= threshold:
        for g in grads:
            g.mul_(threshold / norm)
    return norm

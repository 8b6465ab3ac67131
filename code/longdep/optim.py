"""The book's two optimizers, the learning-rate warm-up and gradient clipping, which
:mod:`longdep.train` drives.

:class:`Adam` and :class:`SGD` are written out; each equals its ``torch.optim`` twin bit for
bit, and :func:`set_learning_rate` sets the rate of either kind. Gradient clipping is Algorithm 1
of Pascanu, Mikolov & Bengio (2013), in one form for one model (:func:`clip_gradient_norm_`) and
one for parameters stacked along a seed dimension (:func:`clip_per_seed_`). Learning rates are
checked where ``torch.optim`` checks them (at least 0), and also refused when not finite.
"""

import math
from collections.abc import Iterable, Sequence

import torch
from torch import Tensor

from longdep.models import _checks as check


# speed-up: the book's own SGD and Adam, because the first use of torch.optim imports the
# compiler (torch._dynamo, over a second per process) and its general loop over parameters
# costs more than the update itself for models this small; each equals its torch.optim twin bit
# for bit. Delete when torch.optim no longer imports the compiler (README.md, "Speed patches").
class Optimizer:
    """What the book's :class:`SGD` and :class:`Adam` share: the parameters, the learning rate
    ``lr`` (a warm-up changes it between steps) and ``zero_grad``. Each equals its
    ``torch.optim`` twin bit for bit (tests/test_training.py). ``lr`` may also be a (seeds,)
    tensor: one learning rate per seed of parameters stacked along a leading seed dimension, each
    slice stepped as a float ``lr`` of its own would step it.
    """

    def __init__(self, parameters: Iterable[Tensor], lr: float | Tensor):
        self.parameters = tensors("parameters", parameters)
        check_rate(lr)
        self.lr = lr

    def check_step_size(self, divisor: float = 1.0) -> None:
        """Raise a ``ValueError`` naming lr if the largest step multiplier, lr / ``divisor``,
        cannot be held in a parameter's dtype: torch.optim then fails with "value cannot be
        converted to type float without overflow"."""
        lr = float(self.lr.max() if isinstance(self.lr, Tensor) else self.lr)
        for p in self.parameters:
            if p.is_floating_point() and lr / divisor > torch.finfo(p.dtype).max:
                raise ValueError(f"lr={lr:g} gives steps of lr / {divisor:g} = "
                                 f"{lr / divisor:g}, more than {str(p.dtype)[6:]} can hold")

    def zero_grad(self) -> None:
        for p in self.parameters:
            p.grad = None

    def scaled(self, value: float | Tensor, p: Tensor) -> float | Tensor:
        """``value`` (a float, or one number per seed) shaped to multiply a stacked ``p``."""
        if isinstance(value, Tensor):
            return value.to(p.dtype).view(-1, *[1] * (p.dim() - 1))
        return value


class SGD(Optimizer):
    """Plain stochastic gradient descent, p <- p - lr * grad (Chapter 2), as ``torch.optim.SGD``
    computes it with its defaults."""

    def __init__(self, parameters: Iterable[Tensor], lr: float | Tensor):
        super().__init__(parameters, lr)
        self.check_step_size()

    @torch.no_grad()
    def step(self) -> None:
        for p in self.parameters:
            if p.grad is not None:
                if isinstance(self.lr, Tensor):
                    p.sub_(p.grad * self.scaled(self.lr, p))
                else:
                    p.add_(p.grad, alpha=-self.lr)


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015), computed operation for operation as ``torch.optim.Adam`` with
    its defaults computes it on a CPU.

    m <- beta1 m + (1 - beta1) g and v <- beta2 v + (1 - beta2) g^2 are running means of the
    gradient and of its square, and the step is lr * m_hat / (sqrt(v_hat) + eps), where
    m_hat = m / (1 - beta1^t) and v_hat = v / (1 - beta2^t) undo their bias towards the zeros
    they start from: each parameter's step is about lr whatever its gradient's scale. ``betas``
    and ``eps`` are checked where ``torch.optim.Adam`` checks them (each beta in [0, 1),
    eps >= 0).
    """

    def __init__(self, parameters: Iterable[Tensor], lr: float | Tensor,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        super().__init__(parameters, lr)
        if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
            raise TypeError(f"betas must be a pair (beta1, beta2), got {check.describe(betas)}")
        check.finite(**{"betas[0]": betas[0], "betas[1]": betas[1]}, eps=eps)
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"betas[{i}] must be in [0, 1), got {beta}")
        if eps < 0:
            raise ValueError(f"eps must be at least 0, got {eps}")
        (self.beta1, self.beta2), self.eps = betas, eps
        self.check_step_size(1 - self.beta1**1)  # the first step's multiplier, as step() has it
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
            if isinstance(self.lr, Tensor):  # addcdiv_'s (value * m) / denominator, per seed
                p.add_(m.mul(self.scaled(-self.lr / (1 - self.beta1**t), p)).div_(denominator))
            else:
                p.addcdiv_(m, denominator, value=-self.lr / (1 - self.beta1**t))


def tensors(name: str, values) -> list[Tensor]:
    """``values``, an iterable of tensors (or one tensor), as a non-empty list; else raise."""
    if isinstance(values, Tensor):
        return [values]
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be an iterable of tensors, got {check.describe(values)}")
    values = list(values)
    for i, value in enumerate(values):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name} must hold tensors only, got {check.describe(value)} at "
                            f"position {i}")
    if not values:
        raise ValueError(f"{name} must be a non-empty iterable of tensors, got none")
    return values


def check_rate(lr, name: str = "lr") -> None:
    """Raise unless ``lr`` is a finite number of at least 0 (torch.optim's range, without inf),
    or a 1-D floating tensor of such numbers, one per seed."""
    if isinstance(lr, Tensor):
        if lr.dim() != 1 or not lr.is_floating_point() or not bool(
                (torch.isfinite(lr) & (lr >= 0)).all()):
            raise ValueError(f"{name} as a tensor must hold one finite rate >= 0 per seed, "
                             f"(seeds,), got {check.describe(lr)}")
        return
    check.finite(**{name: lr})
    if lr < 0:
        raise ValueError(f"{name} must be at least 0 (as in torch.optim), got {lr!r}")


def set_learning_rate(optimizer, lr: float | Tensor) -> None:
    """Give ``optimizer`` the learning rate ``lr`` for its next step: the book's optimizers read
    ``optimizer.lr``, ``torch.optim``'s read each parameter group's ``"lr"``. A per-seed
    (tensor) rate needs the book's optimizers."""
    check_rate(lr)
    if isinstance(optimizer, Optimizer):
        optimizer.lr = lr
    elif hasattr(optimizer, "param_groups"):
        if isinstance(lr, Tensor):
            raise ValueError("lr: one learning rate per seed needs the book's Adam or SGD "
                             f"(longdep.optim), not {type(optimizer).__name__}")
        for group in optimizer.param_groups:
            group["lr"] = lr
    else:
        raise TypeError(f"optimizer must build a longdep.optim.Optimizer or a torch.optim "
                        f"optimizer (it needs an lr or param_groups), got "
                        f"{type(optimizer).__name__}")


def warmup_factor(step: int, warmup_steps: int) -> float:
    """Linear learning-rate warm-up: (step + 1) / warmup_steps for the first steps, then 1."""
    check.int_range(0, None, step=step, warmup_steps=warmup_steps)
    return 1.0 if warmup_steps <= 0 else min(1.0, (step + 1) / warmup_steps)


def norms_without_overflow(grads: Sequence[Tensor]) -> Tensor:
    """The 2-norm over the entries of every tensor of ``grads`` together, per seed: for tensors
    (seeds, ...), a (seeds,) tensor; for tensors of one model, give each a leading axis of 1.

    The plain formula squares the entries: a finite float32 gradient [1e30, 1e30] has the finite
    norm 1.4e30, but its squares are inf. Where the plain norm overflows although every entry is
    finite, it is recomputed as m * ||g / m|| with m the largest |entry| of that seed. (One
    tensor's norm is scaled the same way by longdep.measure.gradients.norm_without_overflow;
    measure and train may not import each other.)
    """
    def plain(parts):
        return torch.stack([g.flatten(1).norm(dim=1) for g in parts]).norm(dim=0)

    norms = plain(grads)
    if torch.isfinite(norms).all():
        return norms
    largest = torch.stack([g.flatten(1).abs().amax(dim=1) for g in grads]).amax(dim=0)
    rescale = ~torch.isfinite(norms) & torch.isfinite(largest) & (largest > 0)
    scale = torch.where(rescale, largest, torch.ones_like(largest))
    shaped = [scale.view(-1, *[1] * (g.dim() - 1)) for g in grads]
    return torch.where(rescale, scale * plain([g / s for g, s in zip(grads, shaped)]), norms)


@torch.no_grad()
def clip_(grads: Sequence[Tensor], thresholds: Tensor | None) -> Tensor:
    """Algorithm 1 of Pascanu et al. (2013) on gradients stacked along a leading seed dimension,
    in place: where the norm of seed i's gradient, over all of ``grads`` together, is at least
    ``thresholds[i]``, it is multiplied by thresholds[i] / norm, so it keeps its direction. A
    gradient with an inf or NaN entry has no direction to keep: it is set to zero (plain SGD then
    skips the step). ``thresholds`` (seeds,) may hold inf (no clipping); None only measures.
    Returns the (seeds,) norms before clipping, inf where they are not finite."""
    if not grads:
        raise ValueError("no parameter has a gradient: call backward() before clipping")
    norms = norms_without_overflow(grads)
    finite = torch.isfinite(norms)
    factors = finite.to(norms.dtype)  # 1 to keep a gradient, 0 to skip a non-finite one
    if thresholds is not None:
        thresholds = thresholds.to(norms)
        factors = torch.where(finite & (norms >= thresholds), thresholds / norms, factors)
    if not bool((factors == 1).all()):
        for g in grads:
            g.mul_(factors.view(-1, *[1] * (g.dim() - 1))).nan_to_num_(0.0, 0.0, 0.0)
    return torch.where(finite, norms, torch.full_like(norms, math.inf))


def clip_per_seed_(stacked: Sequence[Tensor], thresholds: Tensor | None) -> Tensor:
    """:func:`clip_` on the gradients of parameters stacked along a seed dimension (seeds, ...):
    each seed is clipped by its own norm, as :func:`clip_gradient_norm_` clips one model."""
    return clip_([p.grad for p in stacked if p.grad is not None], thresholds)


def clip_gradient_norm_(parameters: Iterable[Tensor], threshold: float) -> Tensor:
    """Algorithm 1 of Pascanu et al. (2013) for one model, in place (Chapter 2, "Gradient
    clipping"): g is the gradient of all ``parameters`` together; if ||g|| >= threshold, every
    gradient is multiplied by threshold / ||g||, so the step keeps its direction and has norm
    ``threshold``. Returns ||g|| before clipping; ``threshold=math.inf`` only measures it.

    Unlike ``torch.nn.utils.clip_grad_norm_``, no 1e-6 is added to the norm, the norm does not
    overflow for a huge but finite gradient (the exploding case clipping is for), and a gradient
    with an inf or NaN entry is set to zero, its norm returned as inf (see :func:`clip_`).
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise TypeError(f"threshold must be a number, got {check.describe(threshold)}")
    if not threshold > 0:
        raise ValueError(f"threshold must be positive, got {threshold}")
    parameters = tensors("parameters", parameters)  # one tensor, as torch's clip_grad_norm_
    grads = [p.grad.unsqueeze(0) for p in parameters if p.grad is not None]  # views: one seed
    return clip_(grads, torch.tensor([float(threshold)], dtype=torch.float64))[0]

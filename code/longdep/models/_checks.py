"""Argument checks shared by the model files (copying weights to and from PyTorch's own
modules is in ``_twins.py``).

Every model file imports from here only (and from torch), so a reader can copy one model file
with this one into a project of their own. The conventions, the same for every model:

- a wrong type (not a tensor, a float mask, an integer input, the wrong torch module) raises
  ``TypeError``; a wrong value or shape raises ``ValueError``. The message names the argument,
  what it got and what it expects, with shapes written as in the docstrings;
- inputs must have the dtype and device of the model's parameters (one message naming both);
- empty inputs (a batch or a time axis of size 0) are refused with ``ValueError``: a model of
  the book has no meaningful output for a sequence without steps;
- hyperparameters are checked where torch.nn and torch.optim draw their ranges (a dropout rate
  in [0, 1], as torch.nn.Dropout); a bool option must be a bool;
- NaN and inf in the inputs are not checked, as in PyTorch: they propagate to the outputs they
  reach (each model file says which outputs those are);
- a NaN that finite inputs and finite parameters produce (float overflow inside a layer: a
  LayerNorm squares its inputs, so float32 overflows past about 1e19, and inf - inf is NaN) is
  refused with a ``ValueError`` naming the input, by the modules that can produce one
  (:func:`overflow_checked`), where PyTorch's own layers return the NaN silently. An inf from
  overflow is returned as inf (an honest "too large"), as in PyTorch.
"""

import functools
import inspect
import math
import threading

import torch


def describe(x) -> str:
    """A short description of ``x`` for messages: a tensor's dtype and shape, else its type."""
    if isinstance(x, torch.Tensor):
        dtype = str(x.dtype).removeprefix("torch.")
        return f"{'an' if dtype[0] == 'i' else 'a'} {dtype} tensor of shape {tuple(x.shape)}"
    return f"{type(x).__name__} {x!r}" if isinstance(x, (int, float, str)) else type(x).__name__


def tensor(x, name: str, dims: str, min_dim: int = 1, floating: bool = True) -> None:
    """Raise unless ``x`` is a non-empty tensor of at least ``min_dim`` dimensions, floating
    point if ``floating``; ``dims`` is the expected shape as the docstrings write it."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {dims}, got {describe(x)}")
    if floating and not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor of shape {dims}, got "
                        f"{describe(x)}; convert it with .float() or .double()")
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have shape {dims}, got {describe(x)}")
    if x.numel() == 0:
        raise ValueError(f"{name} is empty, {describe(x)}: {dims} needs every size >= 1")


def device_dtype(x: torch.Tensor, reference: torch.Tensor, name: str,
                 what: str = "the model's parameters are", dtype: bool = True) -> None:
    """Raise a ``TypeError`` unless ``x`` has the device and (if ``dtype``) the dtype of
    ``reference``; the message names both."""
    if (dtype and x.dtype != reference.dtype) or x.device != reference.device:
        raise TypeError(
            f"{name} is {str(x.dtype).removeprefix('torch.')} on {x.device}, but {what} "
            f"{str(reference.dtype).removeprefix('torch.')} on {reference.device}: dtype and "
            "device must match; convert one with .to()")


def sequence(x, features: int, name: str = "x", like: torch.Tensor | None = None) -> None:
    """Raise unless ``x`` is a non-empty floating tensor (batch, time, features), with the
    dtype and device of ``like`` (a parameter of the model) when given."""
    tensor(x, name, f"(batch, time, {features})", 3)
    if x.dim() != 3 or x.size(-1) != features:
        raise ValueError(f"{name} must have shape (batch, time, {features}), got {describe(x)}")
    if like is not None:
        device_dtype(x, like, name)


def state(value, name: str, shape: tuple[int, ...], like: torch.Tensor,
          dims: str = "(batch, hidden)") -> None:
    """Raise unless the state ``value`` is a floating tensor of exactly ``shape`` (written
    ``dims``; a batch of 1 is not broadcast to a larger batch) with the dtype and device of the
    inputs ``like``."""
    tensor(value, name, f"{dims} = {shape}")
    if value.shape != shape:
        raise ValueError(f"{name} must have shape {dims} = {shape}, got {describe(value)}")
    device_dtype(value, like, name, "the inputs are")


def state_or_zeros(given, x: torch.Tensor, hidden_size: int, names: str | tuple = "h0"):
    """Zeros (batch, hidden_size) like x (batch, ...) for ``given=None``, else the checked state;
    with a tuple of ``names`` the state is that many tensors, such as the LSTM's (h0, c0)."""
    if isinstance(names, tuple):
        if given is not None and (not isinstance(given, (tuple, list)) or len(given) != len(names)):
            raise TypeError(f"state must be None or a pair ({', '.join(names)}) of tensors "
                            f"(batch, hidden), got {describe(given)}")
        return tuple(state_or_zeros(None if given is None else s, x, hidden_size, name)
                     for s, name in zip(given or (None,) * len(names), names))
    if given is None:
        return x.new_zeros(x.size(0), hidden_size)
    state(given, names, (x.size(0), hidden_size), x)
    return given


def step_input(x_t, features: int, like: torch.Tensor) -> None:
    """Raise unless x_t is one step (batch, features) with the dtype and device of ``like``."""
    tensor(x_t, "x_t", f"(batch, {features})", 2)
    if x_t.dim() != 2 or x_t.size(1) != features:
        raise ValueError(f"x_t must have shape (batch, {features}), got {describe(x_t)}")
    device_dtype(x_t, like, "x_t")


def step(x_t, h, input_size: int, hidden_size: int, like: torch.Tensor,
         names: str | tuple = "h") -> None:
    """Raise unless x_t is (batch, input_size) like ``like`` and the state ``h`` (or the tuple of
    states named ``names``) is (batch, hidden_size)."""
    step_input(x_t, input_size, like)
    if isinstance(names, tuple):
        state_or_zeros(h, x_t, hidden_size, names)
    else:
        state(h, names, (x_t.size(0), hidden_size), x_t)


def qkv(q, k, v, same_shape: bool = False, causal: bool = False,
        names: tuple[str, str, str] = ("q", "k", "v")) -> None:
    """Raise unless q, k, v (called ``names``) are floating tensors (..., time_q, d_k),
    (..., time_k, d_k), (..., time_k, d_v) of one dtype and device; with ``same_shape`` their
    leading dimensions are equal (else they broadcast, as in a matrix product), with ``causal``
    time_q = time_k."""
    for name, x in zip(names, (q, k, v)):
        tensor(x, name, "(..., time, features)", 2)
        device_dtype(x, q, name, f"{names[0]} is")
    if q.size(-1) != k.size(-1) or k.size(-2) != v.size(-2) or (
            same_shape and not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        raise ValueError(
            f"{', '.join(names)} must have shapes (..., time_q, d_k), (..., time_k, d_k), "
            f"(..., time_k, d_v){' with the same leading dimensions' if same_shape else ''}, "
            f"got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if causal and q.size(-2) != k.size(-2):
        raise ValueError(f"{names[0]} (..., time_q, d_k) and {names[1]} (..., time_k, d_k): this "
                         f"attention needs time_q = time_k, got {q.size(-2)} and {k.size(-2)}")


def mask(mask, shape: tuple[int, ...], dims: str, like: torch.Tensor) -> None:
    """Raise unless ``mask`` is a boolean tensor on ``like``'s device that broadcasts to
    ``shape`` (written ``dims`` in the docstrings) without enlarging it."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"mask must be a boolean tensor (True = may attend) broadcastable to "
                        f"{dims} = {tuple(shape)}, got {describe(mask)}")
    sizes = zip(reversed(mask.shape), reversed(shape))
    if mask.dim() > len(shape) or any(m not in (1, s) for m, s in sizes):
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to {dims} = "
                         f"{tuple(shape)}: a mask may repeat along the leading axes, never "
                         "enlarge them")
    device_dtype(mask, like, "mask", "the scores are", dtype=False)


def unreadable(x: torch.Tensor) -> bool:
    """True where a check may not read the values of ``x``: on the meta device, and under
    torch.func transforms (vmap trains several seeds at once), whose values cannot decide a
    branch."""
    return x.device.type == "meta" or torch._C._functorch.is_functorch_wrapped_tensor(x)


def finite_output(output: torch.Tensor, module: torch.nn.Module | None = None,
                  **inputs: torch.Tensor) -> torch.Tensor:
    """Return ``output``, unless it holds a NaN although the named floating ``inputs`` and the
    parameters of ``module`` are all finite: float overflow inside the computation made it (an
    inf that a later operation turned into NaN). Then raise a ``ValueError`` that names the
    inputs and their largest entry. A NaN or inf given in an input or a parameter propagates,
    unchecked; so do values a check cannot read (:func:`unreadable`). Costs one sum without NaN."""
    if unreadable(output) or not math.isnan(output.detach().sum().item()):
        return output
    parameters = list(module.parameters()) if module is not None else []
    if not torch.isnan(output).any() or not all(torch.isfinite(t).all()
                                                for t in [*inputs.values(), *parameters]):
        return output  # a sum of +inf and -inf, or a NaN that was given: as in PyTorch
    largest = max(t.detach().abs().max().item() for t in inputs.values())
    names = ", ".join(inputs)
    raise ValueError(f"{names} {'is' if len(inputs) == 1 else 'are'} finite (largest |entry| "
                     f"{largest:.3g}), but the output holds NaN: {str(output.dtype)[6:]} "
                     f"overflowed inside the computation; scale {names} down or use float64")


_CHECKING = threading.local()  # how many overflow-checked forwards are running in this thread


def overflow_checked(forward):
    """Decorate a module's ``forward``: a NaN in its output (the first, if it returns a tuple)
    that finite floating tensor arguments and finite parameters made raises the ``ValueError``
    of :func:`finite_output`, naming those arguments. Only the outermost decorated forward
    checks (a layer inside a checked stack does not), so the message names what the caller
    passed, and a call costs one sum."""
    names = list(inspect.signature(forward).parameters)[1:]

    @functools.wraps(forward)
    def checked(self, *args, **kwargs):
        depth = getattr(_CHECKING, "depth", 0)
        _CHECKING.depth = depth + 1
        try:
            result = forward(self, *args, **kwargs)
        finally:
            _CHECKING.depth = depth
        if depth:
            return result
        inputs = {}
        for name, value in (dict(zip(names, args)) | kwargs).items():
            if isinstance(value, torch.Tensor) and value.is_floating_point() and not any(
                    value is seen for seen in inputs.values()):  # self-attention: x once
                inputs[name] = value
        finite_output(result[0] if isinstance(result, tuple) else result, self, **inputs)
        return result
    return checked


def tokens(tokens, vocab_size: int, name: str = "tokens") -> None:
    """Raise unless ``tokens`` is a non-empty int64 (batch, time) tensor of ids in [0, vocab)."""
    tensor(tokens, name, "(batch, time)", 2, floating=False)
    if tokens.dtype != torch.int64:
        raise TypeError(f"{name} must be int64 token ids of shape (batch, time), got "
                        f"{describe(tokens)}")
    if tokens.dim() != 2:
        raise ValueError(f"{name} must have shape (batch, time), got {describe(tokens)}")
    if unreadable(tokens):  # nn.Embedding still refuses an id out of range there
        return
    if tokens.min() < 0 or tokens.max() >= vocab_size:
        raise ValueError(f"{name} must lie in [0, {vocab_size}), got values from "
                         f"{tokens.min().item()} to {tokens.max().item()}")


def positive(**values: int) -> None:
    """Raise a clear error unless every named value is an integer of at least 1."""
    int_range(1, None, **values)


def int_range(low: int, high: int | None, **values: int) -> None:
    """Raise a ``TypeError`` unless every named value is an int, a ``ValueError`` unless it lies
    in [low, high] (no upper limit for ``high=None``)."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {describe(value)}")
        if value < low:
            raise ValueError(f"{name} must be at least {low}, got {value}")
        if high is not None and value > high:
            raise ValueError(f"{name} must be in [{low}, {high}], got {value}")


def ints(name: str, values, least: int = 1, count: int = 1) -> list[int]:
    """Raise unless ``values`` is a list or tuple of at least ``count`` ints (not bools), each at
    least ``least``, such as the lengths or the seeds of a sweep; return them as a list."""
    if not isinstance(values, (list, tuple, range)):
        raise TypeError(f"{name} must be a list of ints, got {describe(values)}")
    if len(values) < count:
        raise ValueError(f"{name} must hold at least {count} ints, got {len(values)}")
    int_range(least, None, **{f"{name}[{i}]": value for i, value in enumerate(values)})
    return list(values)


def multiple(**values: int) -> None:
    """Raise a ``ValueError`` unless the first named value is a multiple of the second, as
    ``multiple(d_model=512, num_heads=8)``."""
    (name, value), (of_name, of) = values.items()
    if value % of:
        raise ValueError(f"{name} must be a multiple of {of_name}, got {name}={value}, "
                         f"{of_name}={of}")


def finite(**values: float) -> None:
    """Raise a clear error unless every named value is a finite real number."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, got {describe(value)}")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value}")


def probability(**values: float) -> None:
    """Raise a clear error unless every named value (a dropout rate) lies in [0, 1], the range
    of :class:`torch.nn.Dropout`."""
    finite(**values)
    for name, value in values.items():
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value}")


def flags(**values) -> None:
    """Raise a ``TypeError`` unless every named value is a bool (True or False, not 1 or "yes")."""
    for name, value in values.items():
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {describe(value)}")


def choice(**values: tuple[str, object]) -> None:
    """Raise a ``ValueError`` unless each named value (value, choices) is one of its choices."""
    for name, (value, choices) in values.items():
        if value not in choices:
            raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")


def dt_range(dt_min: float, dt_max: float) -> None:
    """Raise unless 0 < dt_min <= dt_max are finite numbers: the range of a state-space model's
    initial step size (Mamba's dt_min and dt_max)."""
    finite(dt_min=dt_min, dt_max=dt_max)
    if not 0 < dt_min <= dt_max:
        raise ValueError(f"need 0 < dt_min <= dt_max, got dt_min={dt_min}, dt_max={dt_max}")


def generator(value, name: str = "generator") -> None:
    """Raise a ``TypeError`` unless ``value`` is None or a ``torch.Generator``."""
    if value is not None and not isinstance(value, torch.Generator):
        raise TypeError(f"{name} must be None or a torch.Generator, got {describe(value)}")


def callables(**values) -> None:
    """Raise a ``TypeError`` unless every named value is callable (a function or a module)."""
    for name, value in values.items():
        if not callable(value):
            raise TypeError(f"{name} must be callable (a function or a module), got "
                            f"{describe(value)}")


def instance(model, name: str, *needs):
    """Raise a ``TypeError`` unless ``model`` is an instance of every class in ``needs`` and has
    every attribute named there, as ``instance(rnn, "rnn", ElmanRNN)`` or
    ``instance(model, "model", "step", "hidden_size")``; return ``model``."""
    for need in needs:
        if isinstance(need, str) and not hasattr(model, need):
            raise TypeError(f"{name} must have a {need!r} attribute, got {type(model).__name__}")
        if isinstance(need, type) and not isinstance(model, need):
            shown = (f"torch.nn.{need.__name__}" if need.__module__.startswith("torch.nn")
                     else need.__name__)
            spelled = shown[:2].isupper()  # an acronym is read letter by letter
            article = "an" if shown[0] in ("AEFHILMNORSX" if spelled else "AEIOU") else "a"
            raise TypeError(f"{name} must be {article} {shown}, got {describe(model)}")
    return model


def first_output(outputs) -> torch.Tensor:
    """The (batch, time, features) outputs of a model that may return a tuple starting with them."""
    return outputs[0] if isinstance(outputs, tuple) else outputs

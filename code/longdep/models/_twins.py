"""Copying weights between a model of the book and its PyTorch twin (the ``from_torch`` and
``to_torch`` of the model files that have one): check that the torch module is one a copy can
represent, then copy tensors by name. Like ``_checks.py``, it imports only torch.
"""

import torch


def torch_module(module, cls: type, method: str = "from_torch", **needed) -> None:
    """Raise a ``TypeError`` unless ``module`` is a ``cls`` (a torch.nn module class), then a
    ``ValueError`` naming the first attribute whose value is not the one ``needed`` names."""
    if not isinstance(module, cls):
        raise TypeError(f"{method} needs a torch.nn.{cls.__name__}, got {type(module).__name__}")
    options(module, method, **{name: (getattr(module, name), want)
                                      for name, want in needed.items()})


def options(module, method: str = "from_torch", **needed) -> None:
    """Raise a ``ValueError`` naming the first option of ``module`` that a copy cannot represent;
    ``needed`` maps each option to (its value, the value needed)."""
    for option, (got, want) in needed.items():
        if (got is not want) if want is None or got is None else got != want:
            shown = "a tensor" if isinstance(got, torch.Tensor) else repr(got)
            raise ValueError(f"{method} cannot take a torch.nn.{type(module).__name__} with "
                             f"{option}={shown}: it needs {option}={want!r}")


def copy_parameters(target: torch.nn.Module, tensors: dict[str, torch.Tensor]
                    ) -> torch.nn.Module:
    """Copy ``tensors`` into the parameters of ``target`` with those names, under no_grad; the
    target first takes the tensors' dtype and device. Returns ``target``; nothing is shared."""
    first = next(iter(tensors.values()))
    target.to(device=first.device, dtype=first.dtype)
    parameters = dict(target.named_parameters())
    with torch.no_grad():
        for name, tensor in tensors.items():
            if parameters[name].shape != tensor.shape:
                raise ValueError(f"cannot copy {name}: shape {tuple(tensor.shape)} into "
                                 f"{tuple(parameters[name].shape)}")
            parameters[name].copy_(tensor)
    return target

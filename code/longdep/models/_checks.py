"""Argument checks shared by the model files, and the one weight-copy helper.

Every model file imports from here only (and from torch), so a reader can copy one model file
with this one into a project of their own.
"""

import torch


def check_sequence(x: torch.Tensor, features: int, name: str = "x") -> None:
    """Raise a clear ``ValueError`` unless ``x`` has shape (batch, time, features)."""
    if x.dim() != 3:
        raise ValueError(
            f"{name} must have shape (batch, time, features), got {x.dim()} dimensions "
            f"{tuple(x.shape)}"
        )
    if x.size(-1) != features:
        raise ValueError(f"{name} has {x.size(-1)} features per step, expected {features}")


def check_positive(**values: int) -> None:
    """Raise a clear ``ValueError`` unless every named value is a positive integer."""
    for name, value in values.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")


def first_output(outputs) -> torch.Tensor:
    """The (batch, time, features) outputs of a model that may return a tuple starting with them."""
    return outputs[0] if isinstance(outputs, tuple) else outputs

def check_window(length: int, window: int) -> None:
    """Raise a clear ``ValueError`` unless 1 <= window <= length."""
    if length < 1:
        raise ValueError(f"length must be at least 1, got {length}")
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    if window > length:
        raise ValueError(f"window {window} is larger than the sequence ({length} steps)")

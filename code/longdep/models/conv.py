"""A causal one-dimensional convolution over (batch, time, features) (Chapter 4, "Path length:
Table 1, measured").

    y_t = b + sum_{j=0}^{k-1} W_j x_{t - j * dilation}     (x_s = 0 for s < 0)

so output t sees only inputs t, t - dilation, ..., t - (k - 1) dilation.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError).
NaN and inf are not checked, as in PyTorch: one in x_s reaches exactly the outputs that see s.
"""

from torch import Tensor, nn

try:  # inside the longdep package
    from . import _checks as check
except ImportError:  # copied into a folder of its own, beside _checks.py
    import _checks as check


class CausalConvolution(nn.Module):
    """One causal 1-d convolution (Chapter 4, "Path length: Table 1, measured"), ``conv`` a
    :class:`torch.nn.Conv1d` (features -> features); (batch, time, features) -> same shape."""

    def __init__(self, features: int, kernel_size: int, dilation: int = 1):
        super().__init__()
        check.positive(features=features, kernel_size=kernel_size, dilation=dilation)
        self.features = features
        self.conv = nn.Conv1d(features, features, kernel_size, dilation=dilation)
        self.left_padding = (kernel_size - 1) * dilation

    def forward(self, x: Tensor) -> Tensor:
        check.sequence(x, self.features, like=self.conv.weight)
        padded = nn.functional.pad(x.transpose(1, 2), (self.left_padding, 0))  # (batch, f, p + t)
        return self.conv(padded).transpose(1, 2)  # (batch, time, features)

"""A causal one-dimensional convolution over (batch, time, features) (Chapter 4, "Path length:
Table 1, measured").

    y_t = b + sum_{j=0}^{k-1} W_j x_{t - j * dilation}     (x_s = 0 for s < 0)

so output t sees only inputs t, t - dilation, ..., t - (k - 1) dilation.
"""

import torch
from torch import nn


class CausalConvolution(nn.Module):
    """One causal 1-d convolution (Chapter 4, "Path length: Table 1, measured").

    Output t sees inputs t, t - dilation, ..., t - (kernel_size - 1) dilation;
    (batch, time, features) -> same shape.
    """

    def __init__(self, features: int, kernel_size: int, dilation: int = 1):
        super().__init__()
        self.conv = nn.Conv1d(features, features, kernel_size, dilation=dilation)
        self.left_padding = (kernel_size - 1) * dilation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        padded = nn.functional.pad(x.transpose(1, 2), (self.left_padding, 0))
        return self.conv(padded).transpose(1, 2)

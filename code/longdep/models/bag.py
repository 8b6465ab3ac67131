"""An order-blind control: a bag of tokens (Chapter 3, "A task that needs memory: key recall").

    m_t = (1 / t) sum_{s <= t} x_s,    u_t = max_{s <= t} x_s  (elementwise),
    y_t = W_2 relu(W_1 [m_t; u_t] + b_1) + b_2

y_t depends on which inputs came before t and how often, never on their order: a model that
solves key recall with it found the key by content, not by remembering where it was.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError).
NaN and inf are not checked, as in PyTorch: one in x_s reaches every output from s on. Finite
float32 inputs near the float32 limit (3e38) overflow the running sum or the MLP: a NaN that
results raises a ValueError naming x.
"""

import torch
from torch import Tensor, nn

try:  # inside the longdep package
    from . import _checks as check
except ImportError:  # copied into a folder of its own, beside _checks.py
    import _checks as check


class BagOfTokens(nn.Module):
    """Running mean and running max of the inputs, then a two-layer MLP (Chapter 3);
    (batch, time, input_size) -> (batch, time, hidden_size), blind to the inputs' order.

    With ``last_only=True`` only y_T is computed, from the mean and max of all inputs:
    (batch, 1, hidden_size), all that a classifier of the last step reads
    (:class:`longdep.models.heads.LastStepClassifier`)."""

    def __init__(self, input_size: int, hidden_size: int, last_only: bool = False):
        super().__init__()
        check.positive(input_size=input_size, hidden_size=hidden_size)
        check.flags(last_only=last_only)
        self.input_size, self.last_only = input_size, last_only
        self.mlp = nn.Sequential(nn.Linear(2 * input_size, hidden_size), nn.ReLU(),
                                 nn.Linear(hidden_size, hidden_size))

    @check.overflow_checked
    def forward(self, x: Tensor) -> Tensor:
        check.sequence(x, self.input_size, like=self.mlp[0].weight)
        if self.last_only:
            summary = [x.mean(dim=1, keepdim=True), x.amax(dim=1, keepdim=True)]
            return self.mlp(torch.cat(summary, dim=-1))  # (batch, 1, hidden_size)
        counts = torch.arange(1, x.shape[1] + 1, dtype=x.dtype, device=x.device)[:, None]
        mean = x.cumsum(dim=1) / counts  # (batch, time, input_size)
        running_max = x.cummax(dim=1).values  # (batch, time, input_size)
        return self.mlp(torch.cat([mean, running_max], dim=-1))  # (batch, time, hidden_size)

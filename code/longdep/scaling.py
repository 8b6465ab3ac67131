"""Why attention divides its scores by sqrt(d_k) (Chapter 4, "Why the 1/sqrt(d_k) scale").

If the entries of a query q and a key k are independent with mean 0 and variance 1, the score
q . k = sum_i q_i k_i is a sum of d_k terms of variance 1, so Var(q . k) = d_k. Unscaled scores
spread further apart as d_k grows, the softmax over them approaches a one-hot vector, and its
Jacobian diag(w) - w w^T, through which every gradient of the scores passes, goes to zero.
"""

from typing import NamedTuple

import torch


def check_positive(**values: int) -> None:
    """Raise a clear ``ValueError`` unless every named value is a positive integer."""
    for name, value in values.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")


class ScoreVariance(NamedTuple):
    """An empirical variance and its standard error (see :func:`score_variance`)."""

    variance: float
    standard_error: float


def score_variance(d_k: int, samples: int, generator: torch.Generator | None = None
                   ) -> ScoreVariance:
    """Empirical variance of q . k over ``samples`` pairs of (d_k,) vectors with N(0, 1)
    entries, in float64 (Chapter 4, "Why the 1/sqrt(d_k) scale").

    The standard error of the estimate is measured from the same scores,
    sqrt((m4 - s^4) / samples) with m4 their fourth central moment and s^2 their variance. The
    pairs are drawn in chunks of about a million numbers each, so memory stays small for many
    samples of wide vectors.
    """
    check_positive(d_k=d_k)
    if samples < 2:
        raise ValueError(f"samples must be at least 2 for a variance, got {samples}")
    chunk = max(1, 2**20 // d_k)
    scores = torch.cat([
        torch.randn(2, min(chunk, samples - start), d_k, dtype=torch.float64,
                    generator=generator).prod(0).sum(-1)
        for start in range(0, samples, chunk)])
    centred = scores - scores.mean()
    variance = centred.square().sum() / (samples - 1)
    fourth_moment = centred.pow(4).mean()
    standard_error = ((fourth_moment - variance**2) / samples).sqrt()
    return ScoreVariance(variance.item(), standard_error.item())


def softmax_jacobian_norm(weights: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of the softmax Jacobian diag(w) - w w^T, for weights (..., keys)."""
    jacobian = torch.diag_embed(weights) - weights[..., :, None] * weights[..., None, :]
    return torch.linalg.matrix_norm(jacobian)


class Saturation(NamedTuple):
    """Averages over queries of the softmax over one query's scores (see :func:`saturation`)."""

    max_weight: float
    entropy: float
    jacobian_norm: float


def saturation(d_k: int, keys: int, samples: int, scaled: bool,
               generator: torch.Generator | None = None) -> Saturation:
    """How saturated the attention softmax is for random unit-variance queries and keys.

    For ``samples`` queries, each against its own ``keys`` keys of width d_k (float64), takes
    w = softmax(q K^T / sqrt(d_k)) when ``scaled``, softmax(q K^T) otherwise, and returns the
    means of the largest weight (1/keys when uniform, 1 when one-hot), of the entropy in nats
    (log keys when uniform, 0 when one-hot) and of the Frobenius norm of the Jacobian dw/ds.
    """
    check_positive(d_k=d_k, keys=keys, samples=samples)
    q = torch.randn(samples, 1, d_k, dtype=torch.float64, generator=generator)
    k = torch.randn(samples, keys, d_k, dtype=torch.float64, generator=generator)
    scores = (q @ k.transpose(1, 2))[:, 0]
    if scaled:
        scores = scores / d_k**0.5
    weights = torch.softmax(scores, dim=-1)
    entropy = -(weights * torch.log_softmax(scores, dim=-1)).sum(-1)
    return Saturation(
        max_weight=weights.max(-1).values.mean().item(),
        entropy=entropy.mean().item(),
        jacobian_norm=softmax_jacobian_norm(weights).mean().item(),
    )

"""Attention in linear time: kernel (linear) attention, Performer and Linformer (Chapter 6).

Linear attention (Katharopoulos et al. 2020) replaces exp(q . k / sqrt(d)) by a product of
feature maps phi(q) . phi(k). The causal output

    y_t = phi(q_t)^T S_t / phi(q_t)^T z_t,
    S_t = sum_{j<=t} phi(k_j) v_j^T,    z_t = sum_{j<=t} phi(k_j)

can be computed for all t at once (the parallel form, here chunk by chunk) or step by step with
a matrix-valued state S_t = S_{t-1} + phi(k_t) v_t^T (the recurrent form): causal linear
attention is an RNN. With phi = elu + 1 it is a different model from softmax attention; with
Performer's positive random features (Choromanski et al. 2021) phi(q) . phi(k) is an unbiased
estimate of exp(q . k / sqrt(d)), so the output approximates softmax attention. Linformer
(Wang et al. 2020) instead projects the time axis of the keys and values to a fixed length.

Inputs are checked as :mod:`._checks` describes (an empty batch or time axis raises ValueError).
NaN and inf are not checked, as in PyTorch. In the causal forms a NaN or inf at step j never
reaches an output of an earlier *chunk*: the state of the earlier chunks is an exclusive prefix
sum, which adds and never subtracts, so step j's terms are not cancelled out of it either (a
subtraction would leave round-off of the size of step j's terms in every earlier output). Within
a chunk the causal mask is a matrix product with zero weights, so a NaN or inf value at step j
still reaches the earlier steps of its own chunk (0 * inf = NaN), as in softmax attention; the
recurrent form keeps it out of every earlier step.
"""

import math
from collections.abc import Callable

import torch

try:  # inside the longdep package
    from . import _checks as check
    from .attention import scaled_dot_product_attention
except ImportError:  # copied into a folder of its own, beside _checks.py
    import _checks as check
    from attention import scaled_dot_product_attention


FeatureMap = Callable[[torch.Tensor], torch.Tensor]


def elu_feature_map(x: torch.Tensor) -> torch.Tensor:
    """phi(x) = elu(x) + 1 > 0, the feature map of Katharopoulos et al. (2020)."""
    check.tensor(x, "x", "(..., features)")
    return torch.nn.functional.elu(x) + 1


def exclusive_cumsum(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Entry i is the sum of the entries before i along ``dim`` (0 for the first): a cumulative
    sum shifted by one, formed without subtracting, so no entry is cancelled out of another."""
    check.tensor(x, "x", "(...)")
    check.int_range(-x.dim(), x.dim() - 1, dim=dim)
    zeros = torch.zeros_like(x.narrow(dim, 0, 1))
    return torch.cat([zeros, x.narrow(dim, 0, x.size(dim) - 1).cumsum(dim)], dim)


def linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True,
                     feature_map: FeatureMap = elu_feature_map, chunk_size: int = 64
                     ) -> torch.Tensor:
    """Kernel attention in its parallel form (Chapter 6, "Linear attention is an RNN").

    q: (..., time, d_k), k: (..., time_k, d_k), v: (..., time_k, d_v) -> (..., time, d_v).
    Without ``causal``, one sum over all keys: phi(q_t)^T (sum_j phi(k_j) v_j^T) / phi(q_t)^T z.
    Causal, chunk by chunk: within a chunk of ``chunk_size`` steps as masked kernel attention
    (chunk_size^2 scores), plus the state S (the sum of phi(k_j) v_j^T) of all earlier chunks,
    an exclusive cumulative sum over chunks (:func:`exclusive_cumsum`, which never subtracts).
    Time and memory grow linearly with the length; no
    (time, time) matrix is formed.
    """
    check.flags(causal=causal)
    check.qkv(q, k, v, same_shape=True, causal=causal)
    check.positive(chunk_size=chunk_size)
    check.callables(feature_map=feature_map)
    if not causal:
        phi_q, phi_k = feature_map(q), feature_map(k)
        numerator = phi_q @ (phi_k.transpose(-2, -1) @ v)
        return numerator / (phi_q @ phi_k.sum(-2)[..., None])
    steps = q.size(-2)
    chunks = -(-steps // chunk_size)

    def blocks(x: torch.Tensor) -> torch.Tensor:  # (..., time, f) -> (..., chunks, chunk_size, f)
        # Padding goes after the last step, so causality keeps it out of every real output; it
        # is padded before the feature map, so that a padded query's normaliser is not zero.
        padded = torch.nn.functional.pad(x, (0, 0, 0, chunks * chunk_size - steps))
        return padded.unflatten(-2, (chunks, chunk_size))

    phi_q, phi_k, v = feature_map(blocks(q)), feature_map(blocks(k)), blocks(v)
    scores = (phi_q @ phi_k.transpose(-2, -1)).tril()  # (..., chunks, chunk_size, chunk_size)
    states, sums = phi_k.transpose(-2, -1) @ v, phi_k.sum(-2)  # (..., chunks, f, d_v), (.., f)
    earlier_states, earlier_sums = exclusive_cumsum(states, -3), exclusive_cumsum(sums, -2)
    numerator = scores @ v + phi_q @ earlier_states  # (..., chunks, chunk_size, d_v)
    denominator = scores.sum(-1) + (phi_q * earlier_sums[..., None, :]).sum(-1)
    return (numerator / denominator[..., None]).flatten(-3, -2)[..., :steps, :]


def linear_attention_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                               feature_map: FeatureMap = elu_feature_map) -> torch.Tensor:
    """Causal kernel attention as an RNN with a matrix-valued state (Chapter 6).

    S_t = S_{t-1} + phi(k_t) v_t^T (features x d_v), z_t = z_{t-1} + phi(k_t),
    y_t = phi(q_t)^T S_t / phi(q_t)^T z_t. Same shapes and outputs as
    ``linear_attention(q, k, v, causal=True)``, one step at a time.
    """
    check.qkv(q, k, v, same_shape=True, causal=True)
    check.callables(feature_map=feature_map)
    phi_q, phi_k = feature_map(q), feature_map(k)
    state = phi_k.new_zeros(*phi_k.shape[:-2], phi_k.size(-1), v.size(-1))
    normaliser = phi_k.new_zeros(*phi_k.shape[:-2], phi_k.size(-1))
    outputs = []
    for t in range(q.size(-2)):
        state = state + phi_k[..., t, :, None] * v[..., t, None, :]
        normaliser = normaliser + phi_k[..., t, :]
        query = phi_q[..., t, :]
        numerator = (query[..., None] * state).sum(-2)
        outputs.append(numerator / (query * normaliser).sum(-1, keepdim=True))
    return torch.stack(outputs, dim=-2)


def random_projection(num_features: int, dim: int, orthogonal: bool = True,
                      generator: torch.Generator | None = None,
                      dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Performer's random directions w_1 .. w_m, a (num_features, dim) matrix with rows ~ N(0, I).

    ``orthogonal``: rows orthogonal within each block of ``dim`` rows (the "OR" of FAVOR+), each
    rescaled to the length of a Gaussian vector so that every row keeps the N(0, I) marginal.
    """
    check.positive(num_features=num_features, dim=dim)
    check.flags(orthogonal=orthogonal)
    check.generator(generator)
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {check.describe(dtype)}")
    gaussian = torch.randn(num_features, dim, generator=generator, dtype=dtype)
    if not orthogonal:
        return gaussian
    squares = torch.randn(-(-num_features // dim), dim, dim, generator=generator, dtype=dtype)
    q, r = torch.linalg.qr(squares)
    # QR fixes the signs of R's diagonal, which biases Q's columns; undoing that makes Q
    # uniformly distributed over orthogonal matrices, so each row is a uniform direction.
    q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))[..., None, :]
    rows = q.transpose(-2, -1).reshape(-1, dim)[:num_features]
    return rows * gaussian.norm(dim=1, keepdim=True)


def favor_features(x: torch.Tensor, projection: torch.Tensor) -> torch.Tensor:
    """FAVOR+ positive random features (Choromanski et al. 2021), (..., time, d) -> (..., time, m).

    With x' = x / d^(1/4) and w_i the rows of ``projection`` (m, d),
    phi(x)_i = exp(w_i . x' - |x'|^2 / 2) / sqrt(m), so that
    E[phi(q) . phi(k)] = exp(q . k / sqrt(d)), the softmax kernel, and every feature is positive
    (no cancelling signs, unlike sin/cos features).
    """
    check.tensor(x, "x", "(..., time, d)")
    check.tensor(projection, "projection", "(m, d)", 2)
    if projection.dim() != 2 or x.size(-1) != projection.size(-1):
        raise ValueError(f"x (..., time, d) has d = {x.size(-1)} features, the projection (m, d) "
                         f"is {tuple(projection.shape)}")
    scaled = x * x.size(-1) ** -0.25
    exponent = scaled @ projection.T - (scaled**2).sum(-1, keepdim=True) / 2
    return torch.exp(exponent) / math.sqrt(projection.size(0))


def performer_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        projection: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Linear attention with FAVOR+ features: an approximation of softmax attention (Chapter 6)."""
    check.tensor(projection, "projection", "(m, d)", 2)
    return linear_attention(q, k, v, causal, lambda x: favor_features(x, projection))


def linformer_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        projection: torch.Tensor) -> torch.Tensor:
    """Softmax attention over keys and values projected along time (Wang et al. 2020).

    q, k: (..., time, d_k); v: (..., time, d_v); projection E: (k, n), learned for one length n.
    K' = E K and V' = E V have k rows, so the scores are (time, k), linear in time for fixed k.
    E mixes all positions, so there is no causal version, and the layer only accepts time = n.
    """
    check.qkv(q, k, v, same_shape=True)
    check.tensor(projection, "projection", "(k, n)", 2)
    if projection.dim() != 2 or projection.size(1) != k.size(-2):
        raise ValueError(
            f"the projection (k, n) = {tuple(projection.shape)} was made for sequences of length "
            f"n = {projection.size(-1)}; it cannot project {k.size(-2)} keys"
        )
    return scaled_dot_product_attention(q, projection @ k, projection @ v)[0]

"""Generating one token at a time: what each mixer must keep between steps (Chapter 6,
"Decoding: the cost of one more token").

A causal mixer that generates token t sees only what it kept from steps 1..t-1:

- softmax attention keeps a *KV cache*, every key and value so far, (batch, t, d_k) each;
  step t reads all of it: O(t d) work and bytes per token and layer, growing with t;
- causal linear attention keeps S_t = S_{t-1} + phi(k_t) v_t^T (features x d_v) and
  z_t = z_{t-1} + phi(k_t): O(1) in t;
- the selective SSM keeps h_t = Abar_t h_{t-1} + Bbar_t x_t, (batch, d_model, state_size): O(1).

Each step takes one time step, shape (batch, 1, features), and the state returned by the step
before (None at the first), and returns (output (batch, 1, features), new state). Run over a
sequence, the steps give the outputs of the parallel forward pass (tests/test_decoding.py).
"""

import torch

try:  # inside the longdep package
    from . import _checks as check
    from .attention import scaled_dot_product_attention
    from .linear import elu_feature_map
    from .ssm import SelectiveSSM
except ImportError:  # copied into a folder of its own, beside its siblings
    import _checks as check
    from attention import scaled_dot_product_attention
    from linear import elu_feature_map
    from ssm import SelectiveSSM

KVCache = tuple[torch.Tensor, torch.Tensor]


def softmax_attention_step(q_t: torch.Tensor, k_t: torch.Tensor, v_t: torch.Tensor,
                           cache: KVCache | None = None) -> tuple[torch.Tensor, KVCache]:
    """One step of causal softmax attention: append (k_t, v_t) to the cache, attend over it."""
    check.qkv(q_t, k_t, v_t, same_shape=True, causal=True)
    keys, values = (k_t, v_t) if cache is None else (torch.cat([cache[0], k_t], -2),
                                                     torch.cat([cache[1], v_t], -2))
    output, _ = scaled_dot_product_attention(q_t, keys, values)  # (batch, 1, d_v)
    return output, (keys, values)  # the cache grows by one row: (batch, t, d_k) each


def linear_attention_step(q_t: torch.Tensor, k_t: torch.Tensor, v_t: torch.Tensor,
                          state: KVCache | None = None, feature_map=elu_feature_map
                          ) -> tuple[torch.Tensor, KVCache]:
    """One step of causal linear attention with its state (S, z) of fixed size."""
    check.qkv(q_t, k_t, v_t, same_shape=True, causal=True)
    phi_q, phi_k = feature_map(q_t), feature_map(k_t)  # (batch, 1, features)
    S = phi_k.transpose(-1, -2) @ v_t  # (batch, features, d_v)
    z = phi_k[..., 0, :]  # (batch, features)
    if state is not None:
        S, z = state[0] + S, state[1] + z
    output = (phi_q @ S) / (phi_q[..., 0, :] * z).sum(-1)[..., None, None]
    return output, (S, z)


def ssm_step(layer: SelectiveSSM, x_t: torch.Tensor, h: torch.Tensor | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """One step of ``layer``: h = Abar_t h + Bbar_t x_t, y_t = C_t h + D x_t."""
    decay, drive, C = layer.discretize(x_t)  # (batch, 1, d_model, state), ..., (batch, 1, state)
    h = drive[:, 0] if h is None else decay[:, 0] * h + drive[:, 0]  # (batch, d_model, state)
    y = torch.einsum("bcn,bn->bc", h, C[:, 0])[:, None] + layer.D * x_t
    return y, h


def state_bytes(state) -> int:
    """Bytes of the tensors in a step's state (a tensor or a tuple of tensors)."""
    tensors = state if isinstance(state, tuple) else (state,)
    return sum(t.numel() * t.element_size() for t in tensors)

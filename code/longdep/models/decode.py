"""Generating tokens one block at a time: what each mixer must keep between steps (Chapter 6,
"Decoding: the cost of one more token").

A causal mixer that generates token t sees only what it kept from steps 1..t-1:

- softmax attention keeps a *KV cache*, every key and value so far, (batch, t, d_k) each;
  step t reads all of it: O(t d) work and bytes per token and layer, growing with t;
- causal linear attention keeps S_t = S_{t-1} + phi(k_t) v_t^T (features x d_v) and
  z_t = z_{t-1} + phi(k_t): O(1) in t;
- the selective SSM keeps h_t = Abar_t h_{t-1} + Bbar_t x_t, (batch, d_model, state_size): O(1).

Each step takes the new tokens, shape (batch, new, features) (one token while generating, a whole
prompt at once to fill the cache), and the state returned by the step before (None at the
first), and returns (outputs (batch, new, features), new state). The new tokens are causal among
themselves: new token i sees the kept past and new tokens 0..i, so a sequence cut into blocks of
any sizes gives the outputs of the parallel forward pass (tests/test_decoding.py).

Arguments are checked as :mod:`._checks` describes; a cache or state must have exactly the batch,
widths, dtype and device of the new tokens (a batch of 1 is not broadcast).
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
    """Causal softmax attention for new tokens q_t, k_t (..., new, d_k), v_t (..., new, d_v):
    append (k_t, v_t) to the cache (keys (..., t, d_k), values (..., t, d_v)) and attend over it.
    Returns the outputs (..., new, d_v) and the cache, grown by ``new`` rows."""
    check.qkv(q_t, k_t, v_t, same_shape=True, causal=True, names=("q_t", "k_t", "v_t"))
    if cache is not None:
        lead = q_t.shape[:-2]
        check_pair(cache, "cache", ("keys", "values"),
                   ((*lead, None, k_t.size(-1)), (*lead, cache_steps(cache), v_t.size(-1))), q_t)
        k_t, v_t = torch.cat([cache[0], k_t], -2), torch.cat([cache[1], v_t], -2)
    new, seen = q_t.size(-2), k_t.size(-2)
    # New token i sits at position seen - new + i: it sees the cache and new tokens 0..i.
    mask = None if new == 1 else torch.ones(new, seen, dtype=torch.bool,
                                            device=q_t.device).tril(seen - new)
    output, _ = scaled_dot_product_attention(q_t, k_t, v_t, mask)  # (..., new, d_v)
    return output, (k_t, v_t)


def linear_attention_step(q_t: torch.Tensor, k_t: torch.Tensor, v_t: torch.Tensor,
                          state: KVCache | None = None, feature_map=elu_feature_map
                          ) -> tuple[torch.Tensor, KVCache]:
    """Causal linear attention for new tokens (shapes as in :func:`softmax_attention_step`)
    with its state (S (..., features, d_v), z (..., features)) of fixed size."""
    check.qkv(q_t, k_t, v_t, same_shape=True, causal=True, names=("q_t", "k_t", "v_t"))
    check.callables(feature_map=feature_map)
    phi_q, phi_k = feature_map(q_t), feature_map(k_t)  # (..., new, features)
    writes = phi_k[..., :, None] @ v_t[..., None, :]  # phi(k_i) v_i^T, (..., new, features, d_v)
    S, z = writes.cumsum(-3), phi_k.cumsum(-2)  # the state after each new token
    if state is not None:
        lead, features = q_t.shape[:-2], phi_k.size(-1)
        check_pair(state, "state", ("S", "z"), ((*lead, features, v_t.size(-1)),
                                                (*lead, features)), q_t)
        S, z = state[0][..., None, :, :] + S, state[1][..., None, :] + z
    output = (phi_q[..., None, :] @ S)[..., 0, :] / (phi_q * z).sum(-1, keepdim=True)
    return output, (S[..., -1, :, :], z[..., -1, :])  # (..., new, d_v), the last state


def ssm_step(layer: SelectiveSSM, x_t: torch.Tensor, h: torch.Tensor | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """``layer`` on new tokens x_t (batch, new, d_model) from the state h (batch, d_model,
    state_size): h = Abar_t h + Bbar_t x_t, y_t = C_t h + D x_t, token by token."""
    check.instance(layer, "layer", SelectiveSSM)
    check.sequence(x_t, layer.d_model, "x_t", like=layer.D)
    if h is not None:
        check.state(h, "h", (x_t.size(0), layer.d_model, layer.state_size), x_t,
                    "(batch, d_model, state_size)")
    decay, drive, C = layer.discretize(x_t)  # (batch, new, d_model, state), ..., (b, new, state)
    outputs = []
    for t in range(x_t.size(1)):
        h = drive[:, t] if h is None else decay[:, t] * h + drive[:, t]  # (batch, d_model, state)
        outputs.append(torch.einsum("bcn,bn->bc", h, C[:, t]))
    return torch.stack(outputs, 1) + layer.D * x_t, h


def cache_steps(cache) -> int | None:
    """The number of steps t a KV cache holds (its keys' second-to-last size), if it has keys."""
    keys = cache[0] if isinstance(cache, (tuple, list)) and cache else None
    return keys.size(-2) if isinstance(keys, torch.Tensor) and keys.dim() >= 2 else None


def check_pair(pair, name: str, parts: tuple[str, str], shapes: tuple, like: torch.Tensor
               ) -> None:
    """Raise unless ``pair`` is two tensors, named ``parts``, of the ``shapes`` (None: any size)
    and of the dtype and device of the new tokens ``like``."""
    shown = [f"({', '.join('t' if s is None else str(s) for s in shape)})" for shape in shapes]
    if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
        raise TypeError(f"{name} must be None or a pair ({', '.join(parts)}) of tensors "
                        f"{shown[0]} and {shown[1]}, got {check.describe(pair)}")
    for part, tensor, shape, dims in zip(parts, pair, shapes, shown):
        label = f"{name} {part}"
        check.tensor(tensor, label, dims, len(shape))
        check.device_dtype(tensor, like, label, "the new tokens are")
        if tensor.dim() != len(shape) or any(s not in (None, n) for s, n in zip(shape,
                                                                              tensor.shape)):
            raise ValueError(f"{label} must have shape {dims} to fit the new tokens "
                             f"{tuple(like.shape)}, got {check.describe(tensor)}")


def state_bytes(state) -> int:
    """Bytes of the tensors in a step's state (a tensor or a tuple of tensors)."""
    tensors = state if isinstance(state, (tuple, list)) else (state,)
    if not all(isinstance(t, torch.Tensor) for t in tensors):
        raise TypeError(f"state must be a tensor or a tuple of tensors, got "
                        f"{check.describe(state)}")
    return sum(t.numel() * t.element_size() for t in tensors)

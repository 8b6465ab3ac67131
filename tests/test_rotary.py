"""Rotary position embedding (Chapter 4, "Rotary position embedding"): the formula of Su et al.
(2021), written here independently as a rotation matrix per position, and the relative
property (R_i q) . (R_j k) = q . (R_(j-i) k)."""

import math

import pytest
import torch
from longdep.models.attention import rotary_embedding


def paper_rotation(m: float, d: int, base: float = 10000.0) -> torch.Tensor:
    """R_{Theta,m} of RoFormer, equation (15): block-diagonal, block i (from 1) rotating by
    m theta_i, theta_i = base^(-2(i-1)/d)."""
    rotation = torch.zeros(d, d, dtype=torch.float64)
    for i in range(1, d // 2 + 1):
        theta = base ** (-2 * (i - 1) / d)
        c, s = math.cos(m * theta), math.sin(m * theta)
        a, b = 2 * (i - 1), 2 * (i - 1) + 1
        rotation[a, a], rotation[a, b] = c, -s
        rotation[b, a], rotation[b, b] = s, c
    return rotation


@pytest.mark.parametrize("d_k, base", [(2, 10000.0), (8, 10000.0), (16, 500.0)])
def test_rotary_embedding_equals_the_papers_rotation_matrix(d_k, base):
    x = torch.randn(3, 2, 12, d_k, dtype=torch.float64)  # (batch, heads, time, d_k)
    ours = rotary_embedding(x, base=base)
    for m in range(12):
        expected = x[..., m, :] @ paper_rotation(m, d_k, base).T  # R_m x_m for each row
        assert torch.allclose(ours[..., m, :], expected, rtol=0, atol=1e-13)


def test_rotary_embedding_with_given_positions_and_float32():
    x = torch.randn(2, 5, 8)
    positions = torch.tensor([3.0, 7.0, 7.0, 100.0, 2.5])
    ours = rotary_embedding(x, positions)
    assert ours.dtype == torch.float32 and ours.shape == x.shape
    for t, m in enumerate(positions.tolist()):
        expected = x[:, t].double() @ paper_rotation(m, 8).T
        assert torch.allclose(ours[:, t].double(), expected, atol=1e-5)


def test_rotary_scores_depend_on_the_offset_only():
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 64, 32, dtype=torch.float64, generator=generator)
    i = torch.randint(0, 200, (64,), generator=generator)
    j = torch.randint(0, 200, (64,), generator=generator)
    def score(a, b):  # (R_a q) . (R_b k), one pair per row
        return (rotary_embedding(q, a) * rotary_embedding(k, b)).sum(-1)
    for shift in (1, 17, 300):
        assert (score(i, j) - score(i + shift, j + shift)).abs().max() < 1e-12
    relative = (q * rotary_embedding(k, j - i)).sum(-1)  # q . (R_(j-i) k)
    assert (score(i, j) - relative).abs().max() < 1e-12


def test_rotary_embedding_keeps_norms():
    x = torch.randn(4, 9, 16, dtype=torch.float64)
    assert torch.allclose(rotary_embedding(x).norm(dim=-1), x.norm(dim=-1), atol=1e-13)


@pytest.mark.parametrize("x, positions, base, error", [
    (torch.randn(2, 5, 7), None, 10000.0, ValueError),             # odd d_k
    (torch.randn(8), None, 10000.0, ValueError),                    # no time axis
    (torch.ones(2, 5, 8, dtype=torch.long), None, 10000.0, TypeError),
    (torch.randn(2, 5, 8), torch.arange(4), 10000.0, ValueError),   # positions (time,)
    (torch.randn(2, 5, 8), torch.ones(5, dtype=torch.bool), 10000.0, TypeError),
    (torch.randn(2, 5, 8), [0, 1, 2, 3, 4], 10000.0, TypeError),
    (torch.randn(2, 5, 8), None, 1.0, ValueError),
    (torch.randn(2, 5, 8), None, float("nan"), ValueError),
])
def test_rotary_embedding_refuses_bad_arguments(x, positions, base, error):
    with pytest.raises(error):
        rotary_embedding(x, positions, base)

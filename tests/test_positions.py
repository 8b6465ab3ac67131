"""Self-attention is permutation-equivariant, not invariant; PE(pos + k) = M_k PE(pos)."""

import pytest
import torch
from longdep.experiments.attention import shift_matrix
from longdep.experiments.order import permutation_errors
from longdep.models.attention import (
    MultiHeadAttention,
    PositionalEncoding,
    causal_mask,
    sinusoidal_table,
)


@pytest.fixture
def attention():
    torch.manual_seed(0)
    return MultiHeadAttention(8, 2).double()


@pytest.fixture
def x():
    return torch.randn(2, 7, 8, dtype=torch.float64)


PERMUTATION = torch.tensor([3, 0, 6, 1, 5, 2, 4])


def test_self_attention_is_equivariant_not_invariant(attention, x):
    equivariance, invariance = permutation_errors(lambda h: attention(h, h, h)[0], x, PERMUTATION)
    assert equivariance < 1e-12
    assert invariance > 1e-2


def test_mean_over_positions_is_invariant(attention, x):
    def pooled(h):
        return attention(h, h, h)[0].mean(1, keepdim=True).expand_as(h)

    equivariance, invariance = permutation_errors(pooled, x, PERMUTATION)
    assert equivariance < 1e-12 and invariance < 1e-12


def test_positional_encoding_and_causal_mask_break_equivariance(attention, x):
    encoding = PositionalEncoding(8, 7)

    def encoded(h):
        h = encoding(h)
        return attention(h, h, h)[0]

    assert permutation_errors(encoded, x, PERMUTATION)[0] > 1e-2
    mask = causal_mask(7)
    assert permutation_errors(lambda h: attention(h, h, h, mask)[0], x, PERMUTATION)[0] > 1e-2


def test_permutation_errors_reject_bad_arguments(attention, x):
    with pytest.raises(ValueError, match="permutation must reorder"):
        permutation_errors(lambda h: h, x, torch.tensor([0, 0, 1, 2, 3, 4, 5]))
    with pytest.raises(ValueError, match="batch, time, features"):
        permutation_errors(lambda h: h, x[0], PERMUTATION)


@pytest.mark.parametrize("offset", [0, 1, 7, 150])
def test_shift_matrix_maps_pe_pos_to_pe_pos_plus_k(offset):
    table = sinusoidal_table(400, 32)
    shift = shift_matrix(32, offset)
    torch.testing.assert_close(table[: 400 - offset] @ shift.T, table[offset:],
                               rtol=0, atol=1e-12)


def test_shift_matrix_is_a_rotation_group():
    identity = torch.eye(16, dtype=torch.float64)
    torch.testing.assert_close(shift_matrix(16, 0), identity)
    torch.testing.assert_close(shift_matrix(16, 5) @ shift_matrix(16, 5).T, identity)
    torch.testing.assert_close(shift_matrix(16, 3) @ shift_matrix(16, 4), shift_matrix(16, 7))
    assert torch.equal(shift_matrix(16, 3)[2:, :2], torch.zeros(14, 2, dtype=torch.float64))


def test_shift_matrix_errors():
    with pytest.raises(ValueError, match="offset must be a non-negative int, got -1"):
        shift_matrix(8, -1)
    with pytest.raises(ValueError, match="even"):
        shift_matrix(7, 1)


def test_shifted_score_error_is_zero_exactly_for_relative_scores():
    from longdep.experiments.attention import shifted_score_error

    generator = torch.Generator().manual_seed(0)
    relative = shifted_score_error(lambda a, b, i, j: (a * b).sum(-1) * (i - j), 8, 5,
                                   generator=generator)
    absolute = shifted_score_error(lambda a, b, i, j: (a * b).sum(-1) * i, 8, 5,
                                   generator=generator)
    assert relative == 0.0 and absolute > 1.0

"""What the eigenvalues allow (Chapter 2): the parity classifiers, their count formula against
their own forward pass, hand-set transitions that do and cannot compute parity, and the LRU's
gradient and state scale against their closed forms."""

import copy
from dataclasses import replace

import pytest
import torch
from longdep.experiments.eigenvalues import (
    PARITY_BUDGET,
    lru_gradient_moduli,
    lru_state_scale,
    parity_accuracies,
    parity_classifier,
    parity_logits,
    token_transitions,
    train_parity,
)
from longdep.models.lru import LRU
from longdep.tasks import parity_batch

F64 = torch.float64


def hand_set(transitions: str):
    """A parity classifier whose channel 0 has a = +1 for a zero and a = -1 (signed) or a
    near 0 (positive) for a one; the readout reads channel 0 alone."""
    model = parity_classifier(transitions, budget=replace(PARITY_BUDGET, hidden=2)).double()
    with torch.no_grad():
        model.embedding.weight.copy_(torch.eye(2, PARITY_BUDGET.embedding_dim, dtype=F64))
        model.core.linear_a.weight.zero_()
        model.core.linear_a.weight[0, :2] = torch.tensor([100.0, -100.0], dtype=F64)
        model.core.linear_a.bias.zero_()
        model.head.weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=F64))
    return model


def test_the_classifier_reads_h_t_without_bias_and_starts_with_scaled_transitions():
    model = parity_classifier("signed", seed=3)
    assert model.head.bias is None
    fresh = parity_classifier("signed", seed=3, budget=replace(PARITY_BUDGET, init_scale=1.0))
    torch.testing.assert_close(model.core.linear_a.weight,
                               PARITY_BUDGET.init_scale * fresh.core.linear_a.weight)
    a = token_transitions(model)
    assert a.shape == (2, PARITY_BUDGET.hidden) and (a.abs() < 1).all() and (a < 0).any()
    assert (token_transitions(parity_classifier("positive", seed=3)) > 0).all()


@pytest.mark.parametrize("transitions", ["positive", "signed"])
def test_the_count_formula_equals_the_models_forward_pass(transitions):
    model = parity_classifier(transitions, seed=1).double()
    bits, _ = parity_batch(16, 60, torch.Generator().manual_seed(0))
    by_counts = parity_logits(model, bits)
    torch.testing.assert_close(by_counts, model(bits), rtol=1e-12, atol=1e-300)
    shuffled = bits[:, torch.randperm(60, generator=torch.Generator().manual_seed(1))]
    torch.testing.assert_close(parity_logits(model, shuffled), by_counts)  # order is irrelevant


def test_a_sign_flip_computes_parity_at_any_length_and_positive_transitions_cannot():
    accuracy = parity_accuracies([hand_set("signed"), hand_set("positive")], [20, 1000, 5000])
    assert (accuracy[0] == 1).all()
    # the positive channel never changes sign: one class at every length, about half right
    assert ((accuracy[1] - 0.5).abs() < 0.1).all()
    bits, _ = parity_batch(64, 300, torch.Generator().manual_seed(2))
    assert parity_logits(hand_set("positive"), bits).argmax(-1).unique().numel() == 1


def test_parity_training_is_batched_over_seeds_and_reproducible():
    budget = replace(PARITY_BUDGET, steps=3)
    first = train_parity("signed", [0, 1], budget)
    again = train_parity("signed", [0, 1], budget)
    for a, b in zip(first, again):
        for (name, x), (_, y) in zip(a.named_parameters(), b.named_parameters()):
            assert torch.equal(x, y), name
    assert not torch.equal(first[0].head.weight, parity_classifier("signed", 0).head.weight)


def test_the_lru_gradient_is_the_eigenvalue_modulus_to_the_distance():
    torch.manual_seed(0)
    model = LRU(1, 8, 0.5, 0.99).double()
    moduli = lru_gradient_moduli(model, steps=50)
    assert moduli.measured.shape == (50, 8)
    torch.testing.assert_close(moduli.measured, moduli.predicted, rtol=1e-12, atol=0)
    modulus = torch.exp(-torch.exp(model.nu_log.detach()))  # |lambda| from the parameters
    torch.testing.assert_close(moduli.predicted[7], modulus**7)


def test_the_state_scale_follows_the_geometric_sum_with_and_without_gamma():
    torch.manual_seed(1)
    model = LRU(1, 16, 0.3, 0.95).double()
    normalised = lru_state_scale(model, steps=200, batch=2000)
    raw = lru_state_scale(model, steps=200, batch=2000, normalised=False)
    gamma = model.gamma_log.exp().detach()
    # linear in the input: without gamma the state is the same state divided by gamma
    torch.testing.assert_close(raw.measured, normalised.measured / gamma, rtol=1e-10, atol=0)
    torch.testing.assert_close(raw.predicted * gamma, normalised.predicted)
    squared = torch.exp(-2 * torch.exp(model.nu_log.detach()))
    # gamma^2 = 1 - |lambda|^2 at initialisation (to float32, in which the LRU draws them)
    torch.testing.assert_close(normalised.predicted, (1 - squared**200).sqrt(), rtol=1e-6,
                               atol=0)
    ratio = normalised.measured / normalised.predicted  # 2000 sequences: within 10 %
    assert ((ratio > 0.9) & (ratio < 1.1)).all()
    assert copy.deepcopy(model).gamma_log.abs().sum() > 0  # the model itself is not changed


def test_eigenvalue_drivers_check_their_arguments():
    with pytest.raises(ValueError, match=r"transitions must be one of"):
        parity_classifier("negative")
    with pytest.raises(TypeError, match=r"budget must be"):
        parity_classifier("signed", budget={"steps": 3})
    with pytest.raises(TypeError, match=r"models must be a non-empty list of parity classifiers"):
        parity_accuracies([], [20])
    with pytest.raises(ValueError, match=r"lengths\[0\] must be at least 1"):
        parity_accuracies([parity_classifier("signed")], [0])
    with pytest.raises(ValueError, match=r"bits must lie in \[0, 2\)"):
        parity_logits(parity_classifier("signed"), torch.full((2, 3), 2))
    with pytest.raises(ValueError, match=r"model must be a float64 LRU with d_model = 1"):
        lru_gradient_moduli(LRU(1, 4), 10)
    with pytest.raises(TypeError, match=r"normalised must be True or False"):
        lru_state_scale(LRU(1, 4).double(), normalised="no")

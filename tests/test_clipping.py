"""Gradient clipping (Pascanu et al. 2013, Algorithm 1), the cliff, and SGD with clipping."""

import math

import pytest
import torch
from longdep.book import seed_everything
from longdep.experiments.clipping import (
    classifier_with_recurrent_gain,
    cliff_descent,
    cliff_final_state,
    cliff_loss,
    train_settings,
)
from longdep.seeds import seeded_generator
from longdep.tasks import key_recall_batch
from longdep.optim import SGD, clip_gradient_norm_, clip_per_seed_
from longdep.train import train, train_seeds
from torch import nn


def parameters_with_gradients(scale, seed=0):
    seed_everything(seed)
    parameters = [nn.Parameter(torch.randn(3, 4, dtype=torch.float64)),
                  nn.Parameter(torch.randn(5, dtype=torch.float64)),
                  nn.Parameter(torch.randn(2, dtype=torch.float64))]  # this one gets no gradient
    for p in parameters[:2]:
        p.grad = scale * torch.randn_like(p)
    return parameters


@pytest.mark.parametrize("scale", [0.01, 1.0, 50.0])
def test_clipping_equals_torch_clip_grad_norm(scale):
    ours, theirs = parameters_with_gradients(scale), parameters_with_gradients(scale)
    norm = clip_gradient_norm_(ours, 1.0)
    torch_norm = nn.utils.clip_grad_norm_(theirs, 1.0)
    assert norm.item() == pytest.approx(torch_norm.item(), rel=1e-14)
    for a, b in zip(ours[:2], theirs[:2]):
        # torch divides by norm + 1e-6: a relative difference of at most 1e-6 / norm
        torch.testing.assert_close(a.grad, b.grad, rtol=2e-6, atol=0)
    assert ours[2].grad is None


def test_clipped_gradient_has_the_threshold_norm_and_the_same_direction():
    parameters = parameters_with_gradients(10.0)
    before = torch.cat([p.grad.flatten() for p in parameters[:2]])
    norm = clip_gradient_norm_(parameters, 0.5)
    after = torch.cat([p.grad.flatten() for p in parameters[:2]])
    assert norm.item() == pytest.approx(before.norm().item(), rel=1e-14) and norm > 0.5
    assert after.norm().item() == pytest.approx(0.5, rel=1e-14)
    torch.testing.assert_close(after, before * 0.5 / before.norm(), rtol=1e-14, atol=0)


def test_below_the_threshold_or_with_infinite_threshold_nothing_changes():
    for threshold in (1e3, math.inf):
        parameters = parameters_with_gradients(1.0)
        before = [p.grad.clone() for p in parameters[:2]]
        clip_gradient_norm_(parameters, threshold)
        assert all(torch.equal(p.grad, g) for p, g in zip(parameters, before))


def test_cliff_final_state_equals_the_scalar_recurrence():
    w = torch.tensor([[1.0, 6.0], [5.0, -2.0]], dtype=torch.float64)
    b = torch.tensor([[0.5, -3.0], [-2.4, 1.0]], dtype=torch.float64)
    final = cliff_final_state(w, b, steps=20)
    for i in range(2):
        for j in range(2):
            x = 0.5
            for _ in range(20):
                x = w[i, j].item() / (1 + math.exp(-x)) + b[i, j].item()
            assert final[i, j].item() == pytest.approx(x, rel=1e-13)
    torch.testing.assert_close(cliff_loss(w, b, target=0.7, steps=20), (final - 0.7) ** 2)


@pytest.mark.parametrize("threshold", [None, 0.5])
def test_cliff_descent_takes_gradient_steps_clipped_by_algorithm_1(threshold):
    lr, start = 0.05, (6.8, -4.0)
    path = cliff_descent(start, lr, steps=40, threshold=threshold)
    assert path.points.shape == (41, 2) and path.losses.shape == (41,)
    assert path.grad_norms.shape == (40,)
    for k in (0, 17, 39):
        point = path.points[k].clone().requires_grad_()
        (grad,) = torch.autograd.grad(cliff_loss(point[0], point[1]), point)
        assert path.grad_norms[k].item() == pytest.approx(grad.norm().item(), rel=1e-12)
        if threshold is not None and grad.norm() >= threshold:
            grad = grad * threshold / grad.norm()
        torch.testing.assert_close(path.points[k + 1], path.points[k] - lr * grad,
                                   rtol=1e-12, atol=1e-14)
        assert path.losses[k].item() == pytest.approx(cliff_loss(*path.points[k]).item())


def test_gained_classifier_has_the_requested_largest_singular_value():
    model = classifier_with_recurrent_gain(3.0, seed=1)
    singular_values = torch.linalg.svdvals(model.core.weight_hh.detach().double())
    torch.testing.assert_close(singular_values, torch.full((32,), 3.0, dtype=torch.float64),
                               rtol=1e-5, atol=0)
    again = classifier_with_recurrent_gain(3.0, seed=1)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), again.parameters()))


@pytest.mark.parametrize("threshold", [None, 0.1])
def test_train_with_sgd_takes_clipped_sgd_steps(threshold):
    def make_batch(generator):
        return key_recall_batch(8, 4, generator=generator)

    model = classifier_with_recurrent_gain(3.0, seed=2)
    reference = classifier_with_recurrent_gain(3.0, seed=2)
    result = train(model, make_batch, 1, optimizer=SGD, lr=0.3, clip_norm=threshold, seed=5)

    tokens, targets = make_batch(seeded_generator(5))
    loss = nn.functional.cross_entropy(reference(tokens), targets)
    loss.backward()
    norm = torch.cat([p.grad.flatten() for p in reference.parameters()]).norm()
    factor = threshold / norm if threshold is not None and norm >= threshold else 1.0
    with torch.no_grad():
        for p in reference.parameters():
            p -= 0.3 * factor * p.grad
    assert result.losses == [pytest.approx(loss.item(), rel=1e-6)]
    assert result.grad_norms == [pytest.approx(norm.item(), rel=1e-5)]
    assert norm > 0.1  # so the clipped run really was clipped
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    assert 0.0 <= result.accuracy <= 1.0


def test_a_gradient_with_inf_or_nan_is_skipped_and_its_norm_is_inf():
    for bad in (math.inf, math.nan):
        parameters = parameters_with_gradients(1.0)
        parameters[0].grad[0, 0] = bad
        assert clip_gradient_norm_(parameters, 1.0) == math.inf
        assert all(torch.equal(p.grad, torch.zeros_like(p)) for p in parameters[:2])


def test_clipping_per_seed_clips_each_seed_as_one_model_alone():
    seeds = [parameters_with_gradients(scale, seed=s) for s, scale in enumerate((0.1, 3.0, 40.0))]
    stacked = [torch.stack([p[i].detach() for p in seeds]).requires_grad_() for i in range(2)]
    for i, p in enumerate(stacked):
        p.grad = torch.stack([ps[i].grad for ps in seeds])
    thresholds = torch.tensor([1.0, math.inf, 2.0])
    norms = clip_per_seed_(stacked, thresholds)
    for s, parameters in enumerate(seeds):
        assert norms[s] == clip_gradient_norm_(parameters, thresholds[s].item())
        for i in range(2):
            assert torch.equal(stacked[i].grad[s], parameters[i].grad)


def test_bad_arguments_raise():
    parameters = parameters_with_gradients(1.0)
    with pytest.raises(ValueError, match="threshold must be positive"):
        clip_gradient_norm_(parameters, 0.0)
    with pytest.raises(ValueError, match="call backward"):
        clip_gradient_norm_([nn.Parameter(torch.ones(2))], 1.0)
    with pytest.raises(ValueError, match="steps must be at least 1"):
        cliff_final_state(torch.ones(1), torch.ones(1), steps=0)
    with pytest.raises(ValueError, match="lr must be at least 0"):
        cliff_descent((1.0, 0.0), lr=-0.1, steps=5)
    with pytest.raises(ValueError, match="steps must be at least 1"):
        train(classifier_with_recurrent_gain(1.0), lambda g: key_recall_batch(2, 3, generator=g),
              steps=0, optimizer=SGD, lr=0.1)


def test_settings_trained_together_follow_train_with_sgd(one_thread):
    def make_batch(generator):
        return key_recall_batch(8, 4, generator=generator)

    settings = {"clipped": (0.3, 0.1), "plain": (0.3, None), "slow": (0.1, None)}
    runs = train_settings(settings, 3.0, 2, make_batch, 3, hidden_size=8)
    for label, (lr, threshold) in settings.items():
        assert runs[label].losses.shape == runs[label].grad_norms.shape == (2, 3)
        for seed in range(2):
            model = classifier_with_recurrent_gain(3.0, hidden_size=8, seed=seed)
            one = train(model, make_batch, 3, optimizer=SGD, lr=lr, clip_norm=threshold,
                        seed=seed)
            torch.testing.assert_close(runs[label].losses[seed], torch.tensor(one.losses),
                                       rtol=1e-4, atol=0)
            torch.testing.assert_close(runs[label].grad_norms[seed],
                                       torch.tensor(one.grad_norms), rtol=1e-4, atol=0)
            assert runs[label].accuracy[seed].item() == pytest.approx(one.accuracy, abs=1 / 16)
    assert runs["clipped"].grad_norms.min() > 0.1  # the clipped runs were clipped at every step


def test_one_learning_rate_and_threshold_per_model():
    models = [classifier_with_recurrent_gain(1.0, hidden_size=4)]
    with pytest.raises(ValueError, match="lr must be one value or one per model"):
        train_seeds(models, lambda g: key_recall_batch(2, 3, generator=g), 1, [0],
                    optimizer=SGD, lr=[0.1, 0.1])
    with pytest.raises(ValueError, match=r"clip_norm\[0\] must be positive"):
        train_seeds(models, lambda g: key_recall_batch(2, 3, generator=g), 1, [0],
                    optimizer=SGD, clip_norm=[-1.0])

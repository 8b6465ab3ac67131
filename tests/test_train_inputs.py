"""train.py's boundary (issue 27): warm-up, clipping and learning rates act on any optimizer or
refuse one they cannot drive, and every argument is checked by name, in the vocabulary of
longdep.models._checks."""

import copy
import math

import pytest
import torch
from longdep.optim import SGD, Adam, clip_gradient_norm_, set_learning_rate, warmup_factor
from longdep.train import accuracy, cross_entropy, train, train_seeds
from torch import nn


def tiny(seed=0):
    torch.manual_seed(seed)
    return nn.Linear(3, 2)


def batch(generator):
    return (torch.randn(4, 3, generator=generator),
            torch.randint(0, 2, (4,), generator=generator))


@pytest.mark.parametrize("ours, theirs", [(SGD, torch.optim.SGD), (Adam, torch.optim.Adam)])
def test_warm_up_and_clipping_drive_torch_optimizers_as_they_drive_the_books(ours, theirs):
    """torch.optim reads each parameter group's lr, the book's optimizers their lr: the warm-up
    reaches both, so a torch optimizer trains step for step as its twin does."""
    book, torch_twin = tiny(), tiny()
    kwargs = dict(lr=0.5, warmup_steps=5, clip_norm=0.3, eval_batches=0)
    a = train(book, batch, 4, optimizer=ours, **kwargs)
    b = train(torch_twin, batch, 4, optimizer=theirs, **kwargs)
    assert a.losses == b.losses and a.grad_norms == b.grad_norms
    for p, q in zip(book.parameters(), torch_twin.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    without = tiny()
    train(without, batch, 4, optimizer=theirs, lr=0.5, clip_norm=0.3, eval_batches=0)
    assert not torch.equal(without.weight, torch_twin.weight)  # the warm-up did act


def test_a_zero_learning_rate_leaves_the_weights_as_torch_optim_does():
    model = tiny()
    before = copy.deepcopy(model)
    train(model, batch, 3, optimizer=Adam, lr=0.0, eval_batches=0)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), before.parameters()))


def test_schedules_a_torch_optimizer_cannot_drive_are_refused_before_training():
    models = [tiny(), tiny(1)]
    with pytest.raises(ValueError, match=r"lr and warmup_steps that differ between the models "
                                         r"need the book's Adam or SGD .* Adam has one rate"):
        train_seeds(models, batch, 2, [0, 1], optimizer=torch.optim.Adam, lr=[0.1, 0.2])
    with pytest.raises(ValueError, match=r"lr and warmup_steps that differ"):
        train_seeds(models, batch, 2, [0, 1], optimizer=torch.optim.SGD, warmup_steps=[0, 3])
    with pytest.raises(TypeError, match=r"optimizer must build a longdep.optim.Optimizer or a "
                                        r"torch.optim optimizer .*got object"):
        train(tiny(), batch, 2, optimizer=lambda parameters, lr: object())
    with pytest.raises(ValueError, match=r"lr: one learning rate per seed needs the book's"):
        set_learning_rate(torch.optim.SGD(tiny().parameters(), lr=0.1), torch.tensor([0.1, 0.2]))


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(make_batch=3), TypeError, r"make_batch must be callable"),
    (dict(make_batch=lambda: batch(None)), TypeError,
     r"make_batch must be callable as make_batch\(generator\), but .* is not: too many"),
    (dict(make_batch=lambda g: torch.zeros(3)), TypeError,
     r"make_batch must return a pair \(inputs, targets\) of tensors"),
    (dict(optimizer=3), TypeError, r"optimizer must be callable"),
    (dict(optimizer=lambda parameters: torch.optim.SGD(parameters, 0.1)), TypeError,
     r"optimizer must be callable as optimizer\(parameters, lr=...\)"),
    (dict(loss=3), TypeError, r"loss must be callable"),
    (dict(loss=lambda logits: logits.sum()), TypeError,
     r"loss must be callable as loss\(logits, targets\)"),
    (dict(loss=lambda logits, targets: logits.sum(-1)), ValueError,
     r"loss must return one number \(a 0-d tensor\) per model, got a float32 tensor of shape "
     r"\(1, 4\)"),
    (dict(observe=3), TypeError, r"observe must be callable"),
    (dict(observe=lambda: None), TypeError, r"observe must be callable as observe\(parameters\)"),
    (dict(steps=2.5), TypeError, r"steps must be an int"),
    (dict(lr="0.1"), TypeError, r"lr must be a number"),
    (dict(seed=-1), ValueError, r"seeds\[0\] must be at least 0"),
    (dict(model=3), TypeError, r"models\[0\] must be a torch.nn.Module"),
])
def test_train_checks_its_arguments_by_name(kwargs, error, message):
    arguments = dict(model=tiny(), make_batch=batch, steps=2) | kwargs
    with pytest.raises(error, match=message):
        train(arguments.pop("model"), arguments.pop("make_batch"), arguments.pop("steps"),
              **arguments)


def test_train_seeds_checks_the_models_and_their_batches():
    model = tiny()
    with pytest.raises(ValueError, match=r"models must be distinct objects"):
        train_seeds([model, model], batch, 2, [0, 1])
    with pytest.raises(TypeError, match=r"vectorized must be True or False, got str 'yes'"):
        train_seeds([tiny()], batch, 2, [0], vectorized="yes")
    with pytest.raises(ValueError, match=r"lr must be one value or one per model \(2\), got 1"):
        train_seeds([tiny(), tiny(1)], batch, 2, [0, 1], lr=[0.1])

    def ragged(generator):  # a batch size that depends on the seed's draws
        return batch(generator) if torch.rand(1, generator=generator) < 0.5 else (
            torch.randn(5, 3), torch.zeros(5, dtype=torch.long))
    seeds = [0, 1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match=r"make_batch must return batches of one shape for "
                                         r"every seed"):
        train_seeds([tiny(s) for s in seeds], ragged, 1, seeds)


def test_clipping_takes_one_tensor_as_torch_does_and_checks_the_rest():
    p, q = nn.Parameter(torch.ones(4)), nn.Parameter(torch.ones(4))
    p.grad, q.grad = torch.full((4,), 3.0), torch.full((4,), 3.0)
    assert clip_gradient_norm_(p, 1.0) == pytest.approx(6.0)
    torch.nn.utils.clip_grad_norm_(q, 1.0)
    torch.testing.assert_close(p.grad, q.grad, rtol=1e-6, atol=0)  # torch adds 1e-6 to the norm
    with pytest.raises(TypeError, match=r"parameters must be an iterable of tensors, got int 3"):
        clip_gradient_norm_(3, 1.0)
    with pytest.raises(TypeError, match=r"parameters must hold tensors only, got str 'a'"):
        clip_gradient_norm_(["a"], 1.0)
    for threshold, error in ((0.0, ValueError), (math.nan, ValueError), ("1", TypeError)):
        with pytest.raises(error, match="threshold"):
            clip_gradient_norm_([p], threshold)


@pytest.mark.parametrize("call, error, message", [
    (lambda: warmup_factor(-1, 3), ValueError, r"step must be at least 0"),
    (lambda: warmup_factor(1, 1.5), TypeError, r"warmup_steps must be an int"),
    (lambda: accuracy(3, [batch(None)]), TypeError, r"model must be a torch.nn.Module"),
    (lambda: accuracy(tiny(), 3), TypeError, r"batches must be a non-empty list of \(inputs, "),
    (lambda: cross_entropy(torch.zeros(2, 3), torch.zeros(2)), ValueError,
     r"targets must be int64 classes of shape \(...\) = \(2,\)"),
    (lambda: cross_entropy(torch.zeros(2, 3), torch.zeros(3, dtype=torch.long)), ValueError,
     r"one per row of the logits \(2, 3\)"),
    (lambda: cross_entropy(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2).long()),
     TypeError, r"logits must be a floating-point tensor"),
    (lambda: set_learning_rate(SGD(tiny().parameters(), 0.1), math.nan), ValueError,
     r"lr must be finite"),
    (lambda: set_learning_rate(3, 0.1), TypeError, r"optimizer must build"),
    (lambda: Adam(tiny().parameters(), 1e-3, betas=(0.9, 1.0)), ValueError,
     r"betas\[1\] must be in \[0, 1\), got 1.0"),
    (lambda: Adam(tiny().parameters(), 1e-3, betas=(1.0, 0.999)), ValueError,
     r"betas\[0\] must be in \[0, 1\)"),
    (lambda: Adam(tiny().parameters(), 1e-3, eps=-1.0), ValueError, r"eps must be at least 0"),
    (lambda: Adam(tiny().parameters(), 3.402823466385288e37), ValueError,
     r"lr=3.40282e\+37 gives steps of lr / 0.1 = 3.40282e\+38, more than float32 can hold"),
    (lambda: train(tiny(), batch, 1, lr=[0.1]), TypeError,
     r"lr must be one value for train's one model"),
    (lambda: SGD(tiny().parameters(), torch.tensor([[0.1]])), ValueError,
     r"lr as a tensor must hold one finite rate >= 0 per seed"),
])
def test_the_other_functions_of_train_check_their_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()

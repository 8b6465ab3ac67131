"""What every model of the one recurrence S_t = A_t S_{t-1} + B_t shares (Chapter 6, "One
recurrence for every model"): its forms give the same outputs to round-off, it is causal, its
decoding step gives the forward pass one token and several tokens at a time, it checks its
inputs, and the book's batched training loop can train it. Model-specific identities (the
gradient over distance, the duality, the delta rule) are in tests/test_<model file>.py."""

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from longdep.models.delta import DeltaNet
from longdep.models.diagonal import DiagonalLinearRNN
from longdep.models.lru import LRU
from longdep.models.mingru import MinGRU
from longdep.models.ssd import ScalarSSM
from longdep.train import train_seeds
from torch import nn

FAST = settings(max_examples=20, deadline=None, database=None)
F64 = torch.float64
FEATURES = 6

# name: (maker, the attribute that selects the form, its values); each makes a float64 model of
# FEATURES inputs, with small chunks so that a sequence spans several of them.
MODELS = {
    "minGRU": (lambda: MinGRU(FEATURES, 5, forget_bias=1.0), "scan", ("parallel", "sequential")),
    "Mamba-2 SSM": (lambda: ScalarSSM(FEATURES, 2, 3, chunk_size=4), "form",
                    ("chunked", "attention", "recurrent")),
    "DeltaNet": (lambda: DeltaNet(FEATURES, 2, chunk_size=4), "form", ("chunked", "recurrent")),
    "Gated DeltaNet": (lambda: DeltaNet(FEATURES, 3, gated=True, chunk_size=5), "form",
                       ("chunked", "recurrent")),
    "additive write": (lambda: DeltaNet(FEATURES, 2, gated=True, write="additive", chunk_size=4),
                       "form", ("chunked", "recurrent")),
    "diagonal, signed": (lambda: DiagonalLinearRNN(FEATURES, 4, drive=True), "scan",
                         ("parallel", "sequential")),
    "diagonal, positive": (lambda: DiagonalLinearRNN(FEATURES, 4, "positive"), "scan",
                           ("parallel", "sequential")),
    "LRU": (lambda: LRU(FEATURES, 5, r_min=0.5), "scan", ("parallel", "sequential")),
}


def make(name: str, seed: int = 0, form: str | None = None) -> nn.Module:
    maker, attribute, forms = MODELS[name]
    torch.manual_seed(seed)
    model = maker().double()
    setattr(model, attribute, form or forms[0])
    return model


def sequence(batch: int, steps: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(batch, steps, FEATURES, dtype=F64,
                       generator=torch.Generator().manual_seed(seed))


def assert_states_close(got, want, **tolerance):
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12, **tolerance)


@pytest.mark.parametrize("name", MODELS)
@FAST
@given(batch=st.integers(1, 3), steps=st.integers(1, 40), prefix=st.integers(0, 9),
       seed=st.integers(0, 99))
def test_the_forms_give_the_same_outputs_and_state(name, batch, steps, prefix, seed):
    """From zeros or from the state a prefix left (prefix > 0), every form agrees to 1e-12."""
    x, start = sequence(batch, steps, seed), sequence(batch, max(prefix, 1), seed + 1)
    results = []
    for form in MODELS[name][2]:
        model = make(name, seed, form)
        with torch.no_grad():
            state = model(start)[1] if prefix else None
            results.append(model(x, state))
    for outputs, last in results[1:]:
        assert_states_close(outputs, results[0][0])
        assert_states_close(last, results[0][1])


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("form_index", [0, -1])
def test_changing_step_t_changes_no_earlier_output(name, form_index):
    model = make(name, form=MODELS[name][2][form_index])
    x = sequence(2, 23)
    changed = x.clone()
    changed[:, 13] += 1.0
    with torch.no_grad():
        before, after = model(x)[0], model(changed)[0]
    assert torch.equal(before[:, :13], after[:, :13])  # exactly, not to round-off
    assert not torch.equal(before[:, 13], after[:, 13])


@pytest.mark.parametrize("name", MODELS)
def test_decoding_one_token_at_a_time_gives_the_forward_pass(name):
    model = make(name)
    x = sequence(3, 17)
    state, outputs = None, []
    with torch.no_grad():
        for x_t in x.unbind(1):
            y_t, state = model.step(x_t, state)
            outputs.append(y_t)
        expected, last = model(x)
    assert_states_close(torch.stack(outputs, dim=1), expected)
    assert_states_close(state, last)


@pytest.mark.parametrize("name", MODELS)
def test_several_tokens_at_a_time_continue_from_the_state(name):
    model = make(name)
    x = sequence(2, 29)
    with torch.no_grad():
        expected, last = model(x)
        first, state = model(x[:, :11])
        second, state = model(x[:, 11:], state)
    assert_states_close(torch.cat([first, second], dim=1), expected)
    assert_states_close(state, last)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("call, error, message", [
    (lambda m: m(torch.ones(2, 5, FEATURES + 1, dtype=F64)), ValueError, r"x must have shape"),
    (lambda m: m(torch.ones(2, 5, dtype=F64)), ValueError, r"x must have shape"),
    (lambda m: m(torch.ones(2, 5, FEATURES, dtype=torch.int64)), TypeError, r"x must be a float"),
    (lambda m: m(torch.ones(2, 5, FEATURES)), TypeError, r"x is float32 on cpu, but the model"),
    (lambda m: m(torch.ones(2, 0, FEATURES, dtype=F64)), ValueError, r"x is empty"),
    (lambda m: m([[0.0] * FEATURES]), TypeError, r"x must be a torch.Tensor"),
    (lambda m: m.step(torch.ones(2, FEATURES + 1, dtype=F64)), ValueError, r"x_t must have shape"),
    (lambda m: m.step(torch.ones(2, 1, FEATURES, dtype=F64)), ValueError, r"x_t must have shape"),
    (lambda m: m.step(torch.ones(2, FEATURES)), TypeError, r"x_t is float32"),
])
def test_bad_inputs_raise_naming_the_argument(name, call, error, message):
    with pytest.raises(error, match=message):
        call(make(name))


@pytest.mark.parametrize("name", MODELS)
def test_a_state_of_the_wrong_shape_or_kind_is_refused(name):
    model = make(name)
    x = sequence(2, 5)
    with torch.no_grad():
        state = model(x)[1]
    with pytest.raises(ValueError, match=r"must have shape"):
        model(x, state[:1])  # the state of one sequence for a batch of two
    with pytest.raises(TypeError):
        model(x, state.to(torch.complex64 if state.is_complex() else torch.float32))
    with pytest.raises(TypeError, match=r"must be a torch.Tensor"):
        model(x, state.tolist())


class LastStepClassifier(nn.Module):
    """Two logits from the last output of a model, for the batched-training test."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model, self.readout = model, nn.Linear(FEATURES if not hasattr(
            model, "hidden_size") else model.hidden_size, 2)

    def forward(self, x):
        return self.readout(self.model(x)[0][:, -1])


def sign_batch(generator: torch.Generator):
    x = torch.randn(8, 12, FEATURES, generator=generator)
    return x, (x[:, 0, 0] > 0).long()


@pytest.mark.parametrize("name", MODELS)
def test_the_books_batched_training_trains_each_seed_as_alone(name):
    """train_seeds runs every seed at once under torch.func.vmap: the model must have batching
    rules for all it does. Each seed's loss equals that of its copy trained on its own."""
    models = [LastStepClassifier(make(name, seed).float()) for seed in (0, 1)]
    second = copy.deepcopy(models[1])  # train_seeds writes the trained weights back
    together = train_seeds(models, sign_batch, steps=3, seeds=[0, 1], lr=1e-2)
    alone = train_seeds([second], sign_batch, steps=3, seeds=[1], lr=1e-2)
    assert together[1].losses == pytest.approx(alone[0].losses, rel=1e-4)
    assert together[0].losses != pytest.approx(together[1].losses, rel=1e-4)

"""Property-based tests of longdep's boundary (issue 27), with hypothesis.

For random bad arguments every public constructor and function of models/, tasks.py and
train.py raises a ValueError or TypeError whose message names the argument: never another
exception, never a silent result. For random good inputs the results equal torch's twins: the
optimizers, the clipping, the loss, the GRU, and decoding cut into random blocks equals the
parallel pass. tests/test_model_properties.py does the same for tensors given to the models.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from longdep.models.attention import (
    CausalSelfAttention,
    MultiHeadAttention,
    PositionalEncoding,
    causal_mask,
    scaled_dot_product_attention,
)
from longdep.models.bag import BagOfTokens
from longdep.models.conv import CausalConvolution
from longdep.models.decode import linear_attention_step, softmax_attention_step, ssm_step
from longdep.models.delta import DeltaNet
from longdep.models.diagonal import DiagonalLinearRNN
from longdep.models.forgetting import ForgettingAttention
from longdep.models.gru import GRU
from longdep.models.heads import LastStepClassifier, PairRecallClassifier
from longdep.models.linear import linear_attention
from longdep.models.lru import LRU
from longdep.models.lstm import LSTM
from longdep.models.mingru import MinGRU
from longdep.models.mixers import mixer_stack
from longdep.models.rnn import ElmanRNN
from longdep.models.ssd import ScalarSSM
from longdep.models.ssm import SelectiveSSM
from longdep.models.transformer import (
    EncoderLayer,
    EncoderStack,
    NextTokenHead,
    TransformerEncoder,
)
from longdep.tasks import key_recall_batch, mqar_batch
from longdep.optim import SGD, Adam, clip_gradient_norm_
from longdep.train import cross_entropy, train
from torch import nn

FAST = settings(max_examples=40, deadline=None, database=None)

# Bad values by the kind of argument they stand in for --------------------------------------
NOT_NUMBERS = st.sampled_from(["4", None, [1], (2,), {}, b"x"])
BAD = {
    "positive": NOT_NUMBERS | st.booleans() | st.integers(max_value=0)
    | st.floats(allow_nan=True).filter(lambda f: f != int(f) if math.isfinite(f) else True),
    "nonnegative": NOT_NUMBERS | st.booleans() | st.integers(max_value=-1) | st.just(2.5),
    "finite": NOT_NUMBERS | st.booleans() | st.sampled_from([math.nan, math.inf, -math.inf]),
    "probability": NOT_NUMBERS | st.booleans() | st.sampled_from([math.nan, math.inf])
    | st.floats(1.0, 1e9, exclude_min=True) | st.floats(-1e9, 0.0, exclude_max=True),
    "flag": NOT_NUMBERS | st.integers() | st.floats(allow_nan=False),
    "choice": st.text(max_size=4).map("not ".__add__) | st.integers() | st.none(),
}
BAD["optional positive"] = BAD["positive"].filter(lambda value: value is not None)

# Each public constructor with valid arguments and the kind of each one.
CONSTRUCTORS = {
    ElmanRNN: dict(input_size=(3, "positive"), hidden_size=(4, "positive"),
                   nonlinearity=("tanh", "choice")),
    LSTM: dict(input_size=(3, "positive"), hidden_size=(4, "positive"),
               forget_bias=(1.0, "finite")),
    GRU: dict(input_size=(3, "positive"), hidden_size=(4, "positive")),
    MultiHeadAttention: dict(d_model=(4, "positive"), num_heads=(2, "positive"),
                             dropout=(0.1, "probability")),
    PositionalEncoding: dict(d_model=(4, "positive"), max_len=(8, "positive")),
    CausalSelfAttention: dict(features=(4, "positive"), window=(2, "optional positive")),
    EncoderLayer: dict(d_model=(4, "positive"), num_heads=(2, "positive"), d_ff=(8, "positive"),
                       dropout=(0.0, "probability"), norm_first=(True, "flag")),
    EncoderStack: dict(d_model=(4, "positive"), num_heads=(2, "positive"),
                       num_layers=(1, "positive"), d_ff=(8, "positive"), max_len=(8, "positive"),
                       dropout=(0.0, "probability"), norm_first=(False, "flag"),
                       causal=(True, "flag"), input_size=(3, "optional positive"),
                       last_only=(False, "flag")),
    TransformerEncoder: dict(vocab_size=(7, "positive"), d_model=(4, "positive"),
                             num_heads=(2, "positive"), num_layers=(1, "positive"),
                             d_ff=(8, "positive"), max_len=(8, "positive"),
                             dropout=(0.1, "probability"), norm_first=(False, "flag"),
                             causal=(False, "flag")),
    NextTokenHead: dict(d_model=(4, "positive"), vocab_size=(7, "positive")),
    CausalConvolution: dict(features=(3, "positive"), kernel_size=(2, "positive"),
                            dilation=(1, "positive")),
    BagOfTokens: dict(input_size=(3, "positive"), hidden_size=(4, "positive"),
                      last_only=(False, "flag")),
    SelectiveSSM: dict(d_model=(3, "positive"), state_size=(2, "positive"),
                       scan=("parallel", "choice"), dt_min=(1e-3, "finite"),
                       dt_max=(1e-1, "finite")),
    ScalarSSM: dict(d_model=(4, "positive"), num_heads=(2, "positive"),
                    state_size=(3, "positive"), form=("chunked", "choice"),
                    chunk_size=(4, "positive"), dt_min=(1e-3, "finite"), dt_max=(0.1, "finite")),
    DeltaNet: dict(d_model=(4, "positive"), num_heads=(2, "positive"), gated=(True, "flag"),
                   write=("delta", "choice"), form=("chunked", "choice"),
                   chunk_size=(4, "positive")),
    MinGRU: dict(input_size=(3, "positive"), hidden_size=(4, "positive"),
                 forget_bias=(0.5, "finite"), scan=("parallel", "choice")),
    DiagonalLinearRNN: dict(input_size=(3, "positive"), hidden_size=(4, "positive"),
                            transitions=("signed", "choice"), drive=(True, "flag"),
                            scan=("sequential", "choice")),
    LRU: dict(d_model=(3, "positive"), state_size=(4, "positive"), r_min=(0.5, "finite"),
              r_max=(0.9, "finite"), max_phase=(1.0, "finite"), scan=("parallel", "choice")),
    ForgettingAttention: dict(d_model=(4, "positive"), num_heads=(2, "positive"),
                              forget_bias=(0.0, "finite")),
    mixer_stack: dict(mixer=("linear", "choice"), d_model=(4, "positive"),
                      num_heads=(2, "positive"), num_layers=(1, "positive"),
                      d_ff=(8, "positive"), max_len=(8, "positive"), window=(2, "positive"),
                      state_size=(2, "positive"), input_size=(3, "optional positive")),
    key_recall_batch: dict(batch_size=(2, "positive"), distance=(3, "positive"),
                           num_keys=(4, "positive"), vocab_size=(9, "positive")),
    mqar_batch: dict(batch_size=(2, "positive"), num_pairs=(3, "positive"),
                     num_keys=(8, "positive"), num_values=(4, "positive")),
}
CASES = [(maker, name) for maker, arguments in CONSTRUCTORS.items() for name in arguments]


def named_error(call, *names: str) -> Exception:
    """Run ``call``; it must raise a ValueError or TypeError whose message names one of
    ``names`` (the bad arguments)."""
    try:
        result = call()
    except (ValueError, TypeError) as error:
        assert any(name in str(error) for name in names), (
            f"{type(error).__name__} does not name {' or '.join(names)}: {error}")
        return error
    raise AssertionError(f"a bad {' or '.join(names)} passed silently, giving "
                         f"{type(result).__name__}")


@pytest.mark.parametrize("maker, name", CASES,
                         ids=[f"{maker.__name__}-{name}" for maker, name in CASES])
@FAST
@given(data=st.data())
def test_a_random_bad_hyperparameter_is_refused_by_name(maker, name, data):
    arguments = {key: value for key, (value, _) in CONSTRUCTORS[maker].items()}
    bad = data.draw(BAD[CONSTRUCTORS[maker][name][1]], label=name)
    named_error(lambda: maker(**arguments | {name: bad}), name)


def test_the_valid_arguments_above_are_valid():
    for maker, arguments in CONSTRUCTORS.items():
        maker(**{key: value for key, (value, _) in arguments.items()})


# States and caches: exactly the batch, widths, dtype and device, or a named refusal ---------

def shapes_near(shape):
    """Shapes near ``shape``: itself, a batch of 1, one size off, a dimension more or less."""
    return st.sampled_from([shape, (1, *shape[1:]), (*shape[:-1], shape[-1] + 1), shape[1:],
                            (*shape, 1), (shape[0] + 1, *shape[1:])])


STATEFUL = {  # model, (batch 2) state shape, state argument's name, the complex dtype if any
    "ElmanRNN": (lambda: ElmanRNN(3, 4), (2, 4), "h0"),
    "GRU": (lambda: GRU(3, 4), (2, 4), "h0"),
    "MinGRU": (lambda: MinGRU(3, 4), (2, 4), "h0"),
    "DiagonalLinearRNN": (lambda: DiagonalLinearRNN(3, 4), (2, 4), "h0"),
    "ScalarSSM": (lambda: ScalarSSM(3, 1, 2), (2, 1, 2, 3), "state"),
    "DeltaNet": (lambda: DeltaNet(4, 2), (2, 2, 2, 2), "state"),
}


@pytest.mark.parametrize("name", sorted(STATEFUL))
@FAST
@given(data=st.data(), dtype=st.sampled_from([torch.float32, torch.float64, torch.int64]))
def test_a_state_fits_exactly_or_is_refused_by_name(name, data, dtype):
    make, shape, argument = STATEFUL[name]
    model = make()
    features = 4 if name == "DeltaNet" else 3
    given_shape = data.draw(shapes_near(shape))
    state = torch.zeros(given_shape, dtype=dtype)
    x = torch.randn(2, 5, features)
    if given_shape == shape and dtype == torch.float32:
        assert model(x, state)[0].shape[:2] == (2, 5)
    else:
        named_error(lambda: model(x, state), argument)


@FAST
@given(data=st.data(), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_a_kv_cache_fits_the_new_tokens_or_is_refused_by_name(data, dtype):
    new = torch.randn(2, 3, 4)
    keys = torch.zeros(data.draw(shapes_near((2, 5, 4))), dtype=dtype)
    values = torch.zeros(data.draw(shapes_near((2, 5, 4))), dtype=dtype)
    fits = (keys.shape == values.shape and keys.dim() == 3 and keys.shape[0] == 2
            and keys.shape[2] == 4 and dtype == torch.float32)
    if fits:
        assert softmax_attention_step(new, new, new, (keys, values))[1][0].shape[1] == (
            keys.shape[1] + 3)
    else:
        named_error(lambda: softmax_attention_step(new, new, new, (keys, values)), "cache")


# Good inputs: equal to torch's twins ----------------------------------------------------------

@FAST
@given(lr=st.sampled_from([0.0, 1e-3, 0.1, 1.0]), beta1=st.floats(0.0, 0.99),
       beta2=st.floats(0.0, 0.999), eps=st.sampled_from([0.0, 1e-8, 1e-3]),
       seed=st.integers(0, 99), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_the_books_adam_and_sgd_equal_torch_optim_on_any_valid_hyperparameters(
        lr, beta1, beta2, eps, seed, dtype):
    generator = torch.Generator().manual_seed(seed)
    start = torch.randn(5, dtype=dtype, generator=generator)
    grads = [torch.randn(5, dtype=dtype, generator=generator) for _ in range(3)]
    for ours, theirs in ((lambda p: Adam(p, lr, (beta1, beta2), eps),
                          lambda p: torch.optim.Adam(p, lr, (beta1, beta2), eps)),
                         (lambda p: SGD(p, lr), lambda p: torch.optim.SGD(p, lr))):
        a, b = nn.Parameter(start.clone()), nn.Parameter(start.clone())
        mine, twin = ours([a]), theirs([b])
        for g in grads:
            a.grad, b.grad = g.clone(), g.clone()
            mine.step()
            twin.step()
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@FAST
@given(scale=st.floats(1e-3, 1e3), threshold=st.floats(1e-2, 1e2), seed=st.integers(0, 99))
def test_clipping_equals_torchs_clip_grad_norm_up_to_its_1e_6(scale, threshold, seed):
    generator = torch.Generator().manual_seed(seed)
    grads = [scale * torch.randn(4, 3, dtype=torch.float64, generator=generator),
             scale * torch.randn(3, dtype=torch.float64, generator=generator)]
    ours = [nn.Parameter(torch.zeros_like(g)) for g in grads]
    theirs = [nn.Parameter(torch.zeros_like(g)) for g in grads]
    for p, q, g in zip(ours, theirs, grads):
        p.grad, q.grad = g.clone(), g.clone()
    norm = clip_gradient_norm_(ours, threshold)
    torch.testing.assert_close(norm, torch.nn.utils.clip_grad_norm_(theirs, threshold),
                               rtol=1e-12, atol=0)
    for p, q in zip(ours, theirs):  # torch divides by norm + 1e-6, Algorithm 1 by the norm
        torch.testing.assert_close(p.grad, q.grad, rtol=2e-6 / float(norm), atol=1e-15)


@FAST
@given(batch=st.integers(1, 4), time=st.integers(1, 3), classes=st.integers(2, 5),
       seed=st.integers(0, 99))
def test_cross_entropy_equals_torchs(batch, time, classes, seed):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, time, classes, dtype=torch.float64, generator=generator)
    targets = torch.randint(0, classes, (batch, time), generator=generator)
    expected = nn.functional.cross_entropy(logits.transpose(1, 2), targets)
    torch.testing.assert_close(cross_entropy(logits, targets), expected, rtol=1e-14, atol=0)


@FAST
@given(batch=st.integers(1, 3), steps=st.integers(1, 5), inputs=st.integers(1, 4),
       hidden=st.integers(1, 4), with_h0=st.booleans(), seed=st.integers(0, 99))
def test_gru_equals_torch_gru(batch, steps, inputs, hidden, with_h0, seed):
    torch.manual_seed(seed)
    theirs = nn.GRU(inputs, hidden, batch_first=True).double()
    ours = GRU.from_torch(theirs)
    x = torch.randn(batch, steps, inputs, dtype=torch.float64)
    h0 = torch.randn(batch, hidden, dtype=torch.float64) if with_h0 else None
    outputs, last = ours(x, h0)
    expected, expected_last = theirs(x, None if h0 is None else h0[None])
    torch.testing.assert_close(outputs, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(last, expected_last[0], rtol=1e-12, atol=1e-12)


@FAST
@given(cuts=st.lists(st.integers(1, 5), min_size=1, max_size=8), seed=st.integers(0, 99))
def test_decoding_in_random_blocks_equals_the_parallel_pass(cuts, seed):
    """New tokens are causal among themselves: any cut of a sequence into blocks decodes to the
    parallel forward pass."""
    generator = torch.Generator().manual_seed(seed)
    steps = sum(cuts)
    q, k, v = (torch.randn(2, steps, 4, dtype=torch.float64, generator=generator)
               for _ in range(3))
    torch.manual_seed(seed)
    layer = SelectiveSSM(4, 3).double()
    with torch.no_grad():
        expected = {"softmax": scaled_dot_product_attention(q, k, v, causal_mask(steps))[0],
                    "linear": linear_attention(q, k, v), "ssm": layer(q)}
    steps_of = {"softmax": lambda t, s: softmax_attention_step(q[:, t], k[:, t], v[:, t], s),
                "linear": lambda t, s: linear_attention_step(q[:, t], k[:, t], v[:, t], s),
                "ssm": lambda t, s: ssm_step(layer, q[:, t], s)}
    for kind, step in steps_of.items():
        state, outputs, start = None, [], 0
        for cut in cuts:
            output, state = step(slice(start, start + cut), state)
            outputs.append(output)
            start += cut
        torch.testing.assert_close(torch.cat(outputs, 1), expected[kind], rtol=0, atol=1e-12)


# Float32 overflow: no NaN from finite inputs without a word -----------------------------------

OVERFLOW_MODELS = [lambda: EncoderStack(4, 2, 2, 8, 8, norm_first=True),
                   lambda: EncoderLayer(4, 2, 8), lambda: MultiHeadAttention(4, 2),
                   lambda: BagOfTokens(4, 3), lambda: SelectiveSSM(4, 3),
                   lambda: ScalarSSM(4, 2, 3), lambda: DeltaNet(4, 2), lambda: LRU(4, 3),
                   lambda: ForgettingAttention(4, 2), lambda: mixer_stack("ssm", 4, 2, 1, 8, 8)]


@pytest.mark.parametrize("index", range(len(OVERFLOW_MODELS)))
@settings(max_examples=15, deadline=None, database=None)
@given(exponent=st.floats(0, 38.5), seed=st.integers(0, 99))
def test_finite_inputs_give_no_nan_or_a_named_refusal(index, exponent, seed):
    torch.manual_seed(seed)
    model = OVERFLOW_MODELS[index]()
    x = torch.randn(2, 5, 4) * 10.0**exponent
    if not torch.isfinite(x).all():
        return
    call = (lambda: model(x, x, x)) if type(model) is MultiHeadAttention else (
        lambda: model(x))
    try:
        output = call()
    except ValueError as error:
        assert str(error).startswith(("x is finite", "query is finite")), str(error)
        return
    output = output[0] if isinstance(output, tuple) else output
    assert not torch.isnan(output).any()


# Compositions: the two sides always meet ----------------------------------------------------

@FAST
@given(embedding=st.integers(1, 6), reads=st.integers(1, 6), gives=st.integers(1, 6),
       core_dim=st.integers(1, 6))
def test_a_head_and_its_core_meet_or_the_message_names_both(embedding, reads, gives, core_dim):
    def build():
        return LastStepClassifier(10, embedding, ElmanRNN(reads, gives), core_dim, 3)(
            torch.zeros(2, 3, dtype=torch.long))
    if embedding != reads:
        error = named_error(build, "embedding_dim")
        assert f"reads {reads} features" in str(error)
    elif gives != core_dim:
        error = named_error(build, "core_dim")
        assert f"(batch, time, {core_dim})" in str(error) and f"{gives})" in str(error)
    else:
        assert build().shape == (2, 3)
    if reads != 8 or gives != 8:
        named_error(lambda: PairRecallClassifier(ElmanRNN(reads, gives), 8, 4, 3)(
            torch.zeros(2, 4, 2, dtype=torch.long)), "width")


@FAST
@given(lr=st.floats(allow_nan=True, allow_infinity=True) | NOT_NUMBERS,
       warmup=st.integers(-3, 3) | st.floats(allow_nan=True) | NOT_NUMBERS,
       clip=st.none() | st.floats(allow_nan=True) | NOT_NUMBERS)
def test_train_takes_its_numbers_or_names_the_bad_one(lr, warmup, clip):
    def batch(generator):
        return torch.randn(4, 3, generator=generator), torch.randint(0, 2, (4,),
                                                                     generator=generator)
    # Adam's first step is lr / (1 - 0.9): it must fit in float32, as torch.optim needs too
    good_lr = isinstance(lr, float) and math.isfinite(lr) and 0 <= lr / (1 - 0.9) <= 3.4028e38
    good_warmup = isinstance(warmup, int) and not isinstance(warmup, bool) and warmup >= 0
    good_clip = clip is None or (isinstance(clip, float) and math.isfinite(clip) and clip > 0)
    call = lambda: train(nn.Linear(3, 2), batch, 1, lr=lr, warmup_steps=warmup,  # noqa: E731
                         clip_norm=clip, eval_batches=0)
    if good_lr and good_warmup and good_clip:
        assert len(call().losses) == 1
    else:
        named_error(call, *[name for name, good in (("lr", good_lr), ("warmup_steps", good_warmup),
                                                    ("clip_norm", good_clip)) if not good])

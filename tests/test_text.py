"""Chapter 7: the frozen corpus, its split and vocabulary, the language models' training, and the
measurements of context use (per-position loss, Khandelwal's ablation, repeated identifiers),
checked on toy models whose context length is known."""

import hashlib
import shutil
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from longdep.corpus import (
    CORPUS_SHA256,
    SEPARATOR,
    corpus_path,
    identifier_classes,
    load_corpus,
    load_corpus_text,
    split_text,
)
from longdep.experiments.text import (
    TEXT_BUDGET,
    CharacterModel,
    ContextUse,
    FlatLogits,
    character_model,
    context_statistics,
    context_use,
    held_out_set,
    last_position_only,
    measure_context_use,
    parameter_count,
    random_windows,
    train_and_measure,
    train_character_models,
    window_batches,
)
from longdep.measure.context import (
    ablated_windows,
    context_reach,
    context_rises,
    last_losses,
    token_losses,
)
from longdep.train import train
from torch import nn

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def text():
    return load_corpus_text()


def test_the_frozen_file_has_its_recorded_hash(text):
    assert hashlib.sha256(corpus_path().read_bytes()).hexdigest() == CORPUS_SHA256
    assert len(text) == 465_126 and len(set(text)) == 103
    assert text.startswith('The "assert" statement\n') and text.endswith("\n")
    assert text.count(SEPARATOR) >= 78  # the 79 topics, joined


def test_a_changed_file_fails_naming_the_file_and_both_hashes(tmp_path, text):
    changed = tmp_path / "pydoc_topics.txt"
    changed.write_bytes(text.replace("assert", "insert", 1).encode("utf-8"))
    found = hashlib.sha256(changed.read_bytes()).hexdigest()
    with pytest.raises(ValueError) as error:
        load_corpus_text(changed)
    message = str(error.value)
    assert str(changed) in message and found in message and CORPUS_SHA256 in message
    with pytest.raises(TypeError, match="path must be"):
        load_corpus_text(3)


def test_the_split_is_fixed_and_starts_the_held_out_text_at_a_line(text):
    train_text, held_out = split_text(text)
    assert train_text + held_out == text
    assert (len(train_text), len(held_out)) == (418_624, 46_502)
    assert train_text.endswith("\n")
    assert split_text(text) == (train_text, held_out)
    assert split_text("ab\ncd\nef", 0.5) == ("ab\ncd\n", "ef")
    assert split_text("abcdef", 0.5) == ("abc", "def")  # no newline after the cut
    for bad in (0.0, 1.0, 1, True):
        with pytest.raises(ValueError, match="held_out_fraction"):
            split_text(text, bad)


def test_the_vocabulary_encodes_and_decodes_every_character(text):
    corpus = load_corpus()
    assert corpus.vocabulary == "".join(sorted(set(text))) and corpus.vocab_size == 103
    assert corpus.decode(corpus.train) + corpus.decode(corpus.held_out) == text
    assert corpus.train.dtype == torch.int64
    with pytest.raises(ValueError, match="not in the vocabulary"):
        corpus.encode("Ω")


def test_the_corpus_is_packaged_with_longdep(tmp_path):
    """A wheel of the package holds the corpus, unchanged, where corpus_path looks for it (the
    wheel is built from a copy, so that the build leaves nothing in the repository)."""
    source = tmp_path / "source"
    shutil.copytree(ROOT / "code", source / "code",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(ROOT / "pyproject.toml", source)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(tmp_path), str(source)],
                   check=True, capture_output=True, timeout=300)
    wheel, = tmp_path.glob("longdep-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        data = archive.read("longdep/data/pydoc_topics.txt")
        names = archive.namelist()
    assert hashlib.sha256(data).hexdigest() == CORPUS_SHA256
    assert {"longdep/data/README.md", "longdep/data/LICENSE-PSF.txt"} <= set(names)


class LastCharacters(nn.Module):
    """A toy language model that reads exactly the last ``context`` characters: the logits at
    position t are a sum of one table per offset j < context, indexed by character t - j."""

    def __init__(self, vocab_size: int, context: int):
        super().__init__()
        self.tables = nn.ModuleList(nn.Embedding(vocab_size, vocab_size) for _ in range(context))

    def forward(self, tokens):
        logits = self.tables[0](tokens)
        for offset, table in enumerate(self.tables[1:], start=1):
            shifted = torch.cat([tokens[:, :1].expand(-1, offset), tokens[:, :-offset]], 1)
            logits = logits + table(shifted)
        return logits  # (batch, time, vocab)


def toy_windows(count=64, length=17, vocab_size=11, seed=0):
    return torch.randint(0, vocab_size, (count, length),
                         generator=torch.Generator().manual_seed(seed))


def test_token_losses_are_the_cross_entropy_of_each_position():
    torch.manual_seed(0)
    model, windows = LastCharacters(11, 1), toy_windows()
    losses = token_losses(model, windows, chunk=5)
    log_p = torch.log_softmax(model.tables[0].weight, dim=-1)  # row c: after character c
    expected = -log_p[windows[:, :-1], windows[:, 1:]]
    assert losses.shape == (64, 16)
    torch.testing.assert_close(losses, expected)


@pytest.mark.parametrize("context", [1, 3])
@pytest.mark.parametrize("mode", ["replace", "shuffle"])
def test_the_ablation_moves_the_loss_only_within_the_models_context(context, mode):
    """A model that reads only the last ``context`` characters: replacing or shuffling what lies
    farther back than d >= context leaves its last loss exactly as it was; nearer, it moves."""
    torch.manual_seed(1)
    model, windows = LastCharacters(11, context), toy_windows()
    generator = torch.Generator().manual_seed(2)
    ablated = ablated_windows(windows, range(1, 17), mode, torch.arange(11), generator)
    rises = context_rises(model, windows, ablated)
    assert rises.shape == (16,)
    assert (rises[context - 1:] == 0).all()
    assert (rises[:context - 1].abs() > 1e-3).all()


def test_ablated_windows_keep_the_near_context_and_the_target():
    windows = toy_windows(count=8, length=10)
    pool = torch.tensor([3, 4])
    generator = torch.Generator().manual_seed(0)
    replaced = ablated_windows(windows, (2, 4, 9), "replace", pool, generator)
    assert torch.equal(replaced[4][:, 5:], windows[:, 5:])  # 4 context characters, target
    assert set(replaced[4][:, :5].flatten().tolist()) <= {3, 4}
    assert torch.equal(replaced[2][:, :5], replaced[4][:, :5])  # one draw for all distances
    assert torch.equal(replaced[9], windows)  # nothing lies farther back than 9
    shuffled = ablated_windows(windows, (4,), "shuffle", pool, generator)[4]
    assert torch.equal(shuffled[:, 5:], windows[:, 5:])
    assert torch.equal(shuffled[:, :5].sort(1).values, windows[:, :5].sort(1).values)
    with pytest.raises(ValueError, match="mode"):
        ablated_windows(windows, (4,), "drop", pool, generator)
    for bad in (0, 10, 2.0):
        with pytest.raises(ValueError, match="distances"):
            ablated_windows(windows, (bad,), "replace", pool, generator)


def test_identifier_classes_separate_repeats_from_first_occurrences():
    window = "x(foo, bar) -> foo.bar + fo + foox;"
    repeats, firsts = identifier_classes(window)
    # the first foo and bar are first occurrences; the second ones repeat them; "fo" is too
    # short, "foox" is new, "x" at the start may be cut
    assert firsts == [3, 4, 8, 9, 31, 32, 33]
    assert repeats == [16, 17, 20, 21]
    assert identifier_classes("foo foo") == ([], [])  # both touch an end of the window
    assert identifier_classes(" ab ab ", min_length=2) == ([5], [2])


def test_random_windows_are_consecutive_characters():
    text = torch.arange(100)
    windows = random_windows(text, 5, 7, torch.Generator().manual_seed(0))
    assert windows.shape == (5, 7)
    assert ((windows[:, 1:] - windows[:, :-1]) == 1).all()


@pytest.mark.parametrize("name", ["LSTM", "Transformer (softmax attention)"])
def test_batched_training_leaves_each_model_as_train_would(name, one_thread):
    """train_character_models trains every seed at once (train_seeds) and leaves each model
    with the weights that longdep.train.train gives it alone: equal to within a tenth of one
    Adam step (a step moves a weight by about lr; where a gradient is near zero, Adam's
    normalisation magnifies round-off), and computing the same losses to round-off."""
    budget = replace(TEXT_BUDGET, window=8, batch_size=4, steps=3, warmup_steps=2)
    text = torch.randint(0, 103, (500,), generator=torch.Generator().manual_seed(0))
    seeds = (0, 1)
    batched = [character_model(name, 103, seed) for seed in seeds]
    alone = [character_model(name, 103, seed) for seed in seeds]
    before = [p.clone() for p in batched[0].parameters()]
    losses = train_character_models(batched, text, seeds, budget,
                                    vectorized=name != "LSTM")
    assert len(losses) == 2
    for model, reference, seed in zip(batched, alone, seeds):
        train(FlatLogits(reference), window_batches(text, budget), budget.steps, lr=budget.lr,
              clip_norm=budget.clip_norm, warmup_steps=budget.warmup_steps, seed=seed,
              eval_batches=1)
        for mine, theirs in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(mine, theirs, rtol=0, atol=budget.lr / 10)
        windows = random_windows(text, 6, 9, torch.Generator().manual_seed(5))
        torch.testing.assert_close(token_losses(model, windows), token_losses(reference, windows),
                                   rtol=1e-4, atol=1e-5)
    moved = max((a - b).abs().max().item() for a, b in zip(before, batched[0].parameters()))
    assert moved > budget.lr  # training moved the weights by more than the tolerance


def test_the_three_models_have_matched_parameter_counts():
    counts = [parameter_count(character_model(name, 103, 0)) for name in
              ("LSTM", "Transformer (softmax attention)", "linear attention")]
    assert max(counts) / min(counts) < 1.05
    model = character_model("LSTM", 103, 0)
    assert isinstance(model, CharacterModel)
    assert model(torch.zeros(2, 5, dtype=torch.int64)).shape == (2, 5, 103)
    with pytest.raises(ValueError, match="name must be one of"):
        character_model("GRU", 103, 0)


def test_the_last_loss_is_the_last_column_of_the_token_losses(one_thread):
    """For the Transformer also when it computes only its last position."""
    model = character_model("Transformer (softmax attention)", 103, 0)
    windows = random_windows(torch.arange(103).repeat(3), 5, 65,
                             torch.Generator().manual_seed(0))
    every = token_losses(model, windows)[:, -1]
    with last_position_only(model):
        assert model.core.last_only
        last = last_losses(model, windows, chunk=2)
    assert not model.core.last_only
    torch.testing.assert_close(last, every, rtol=1e-5, atol=1e-6)


def test_context_reach_is_the_farthest_distance_above_the_threshold():
    rises = torch.tensor([[0.5, 0.2, 0.05, 0.0], [0.5, 0.005, 0.02, 0.001], [0.0] * 4])
    assert context_reach(rises, (1, 2, 4, 8), 0.01).tolist() == [4, 4, 0]


def test_the_held_out_set_marks_the_positions_that_predict_identifier_characters():
    """Position p - 1 of a window predicts its character p: the masks are the classes of
    identifier_classes shifted by one, and the ablations are of the first windows."""
    corpus = load_corpus()
    budget = replace(TEXT_BUDGET, eval_windows=40, ablation_windows=8, distances=(1, 5))
    held_out = held_out_set(corpus, budget)
    assert held_out.windows.shape == (40, budget.window + 1)
    assert set(held_out.ablated) == {"replace", "shuffle"}
    assert held_out.ablated["replace"][5].shape == (8, budget.window + 1)
    fewer = held_out.at({"replace": (5,), "shuffle": (1,)})
    assert list(fewer.ablated["replace"]) == [5] and list(fewer.ablated["shuffle"]) == [1]
    assert torch.equal(fewer.ablated["replace"][5], held_out.ablated["replace"][5])
    for window, repeat, first in zip(held_out.windows, held_out.repeat, held_out.first):
        repeats, firsts = identifier_classes(corpus.decode(window))
        assert repeat.nonzero().flatten().tolist() == [p - 1 for p in repeats]
        assert first.nonzero().flatten().tolist() == [p - 1 for p in firsts]
    assert held_out.first.any() and not (held_out.first & held_out.repeat).any()


def test_measure_context_use_reads_a_toy_model_of_known_context(one_thread):
    """A CharacterModel whose core sees only the current character (an identity core): no
    rise beyond d = 1, and the statistics Chapter 7 compares follow from the measurements."""
    torch.manual_seed(0)
    corpus = load_corpus()
    budget = replace(TEXT_BUDGET, eval_windows=32, ablation_windows=16, distances=(1, 2, 4))
    held_out = held_out_set(corpus, budget)
    models = [CharacterModel(103, 8, nn.Identity(), 8) for _ in range(2)]
    use = measure_context_use("toy", models, held_out, 5, [1.0, 2.0])
    assert use.position_losses.shape == (2, budget.window) and use.steps == 5
    for mode in ("replace", "shuffle"):
        assert (use.rises[mode] == 0).all()
    losses = token_losses(models[1], held_out.windows)
    torch.testing.assert_close(use.repeat_losses[1], losses[held_out.repeat].mean())
    torch.testing.assert_close(use.first_losses[1], losses[held_out.first].mean())


def test_context_statistics_are_the_ratios_the_chapter_compares():
    rises = {"replace": torch.tensor([[1.0, 0.5, 0.2], [2.0, 0.2, 0.0]]),
             "shuffle": torch.tensor([[0.5, 0.1, 0.0], [1.5, 0.0, 0.0]])}
    use = ContextUse("toy", 10, 1, torch.zeros(2), torch.tensor([[3.0, 1.0], [2.0, 2.0]]),
                     rises, {"replace": (1, 2, 4), "shuffle": (1, 2, 4)},
                     torch.tensor([1.0, 1.5]), torch.tensor([1.25, 2.0]))
    statistics = context_statistics(use, keep=2, threshold=0.1)
    torch.testing.assert_close(statistics["loss"], torch.tensor([2.0, 2.0]))
    torch.testing.assert_close(statistics["beyond_keep"], torch.tensor([0.5, 0.1]))
    torch.testing.assert_close(statistics["order"], torch.tensor([0.5, 0.75]))
    torch.testing.assert_close(statistics["repeat_gain"], torch.tensor([0.25, 0.5]))
    assert statistics["reach"].tolist() == [4, 2]
    with pytest.raises(ValueError, match="d = 1"):
        context_statistics(use, keep=3)


def test_context_use_runs_the_calls_beside_it_in_the_same_pool(one_thread):
    """A call passed beside the trainings returns what it returns alone, and the trainings
    return what train_and_measure returns alone (each seeds itself)."""
    corpus = load_corpus()
    budget = replace(TEXT_BUDGET, steps=2, batch_size=2, warmup_steps=1, eval_windows=8,
                     ablation_windows=4, distances=(1, 4, 32), seeds=(0, 1))
    runs, beside = context_use(corpus, budget, ("linear attention",),
                               beside={"digits": (sorted, ([3, 1, 2],))})
    assert beside == {"digits": [1, 2, 3]} and list(runs) == ["linear attention"]
    alone = train_and_measure("linear attention", corpus, held_out_set(corpus, budget), budget)
    for mine, theirs in zip(runs["linear attention"], alone):
        torch.testing.assert_close(mine.position_losses, theirs.position_losses, rtol=0, atol=0)
    with pytest.raises(ValueError, match="beside must not use a model's name as a key"):
        context_use(corpus, budget, ("LSTM",), beside={"LSTM": (sorted, ([1],))})

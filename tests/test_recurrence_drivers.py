"""Chapter 6's drivers of the one recurrence S_t = A_t S_{t-1} + B_t (longdep.experiments.
recurrences and state_writes): the MQAR task with reassigned keys, the forms' agreement and the
table, the gradient over distance against the product of minGRU's keep gates (autograd's state
gradients), the delta rule against the additive write, untrained and trained, and the new
mixers."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from longdep.experiments import recurrences, state_writes
from longdep.experiments.mqar import MQARRun, MQARSetting, mqar_runs, mqar_training
from longdep.experiments.registry import KIND, ModelShape
from longdep.models.mixers import StateSelfMixer, mixer_stack
from longdep.plots import recurrences as recurrence_plots
from longdep.plots import style
from longdep.seeds import manual_seed, seeded_generator
from longdep.tasks import IGNORED, mqar_reassigned_batch

F64 = torch.float64


# ---- the task: every key written twice, the later value asked for --------------------------

def test_every_key_is_written_twice_and_the_later_value_is_the_target():
    tokens, targets = mqar_reassigned_batch(40, 5, num_keys=9, num_values=6,
                                            generator=torch.Generator().manual_seed(0))
    assert tokens.shape == (40, 20, 2) and targets.shape == (40, 20)
    assert tokens.dtype == targets.dtype == torch.int64
    assert (targets[:, :10] == IGNORED).all(), "a write step has no target"
    targets = targets[:, 10:]
    writes, queries = tokens[:, :10], tokens[:, 10:]
    assert (queries[..., 1] == 6).all() and (writes[..., 1] < 6).all()
    for row in range(40):
        latest, first = {}, {}
        for key, value in writes[row].tolist():
            first.setdefault(key, value)
            latest[key] = value
        keys = writes[row, :, 0].tolist()
        assert len(latest) == 5 and all(keys.count(k) == 2 for k in latest)
        assert all(first[k] != latest[k] for k in latest)  # the old value is always wrong
        asked = queries[row, :, 0].tolist()
        assert all(asked.count(k) == 2 for k in latest)
        assert targets[row].tolist() == [latest[k] for k in asked]
    firsts = {tuple(row) for row in writes[..., 0].tolist()}
    assert len(firsts) > 30  # the two writes of a key fall at random places


def test_the_reassigned_task_is_reproducible_and_checks_its_arguments():
    first = mqar_reassigned_batch(4, 3, generator=torch.Generator().manual_seed(2))
    again = mqar_reassigned_batch(4, 3, generator=torch.Generator().manual_seed(2))
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    with pytest.raises(ValueError, match="num_pairs must be at most num_keys = 4"):
        mqar_reassigned_batch(2, 5, num_keys=4)
    with pytest.raises(ValueError, match="num_values must be at least 2"):
        mqar_reassigned_batch(2, 2, num_values=1)
    with pytest.raises(TypeError, match="generator must be None or a torch.Generator"):
        mqar_reassigned_batch(2, 2, generator=3)


# ---- forms and table ------------------------------------------------------------------------

def test_every_built_row_has_its_forms_checked_and_they_agree():
    built = {row.name[0] for row in recurrences.RECURRENCES if row.built}
    assert built == set(recurrences.FORM_CHECKS)
    differences = recurrences.form_differences(steps=40)
    assert set(differences) == built
    assert all(0 <= d < recurrences.ROUND_OFF for d in differences.values())


def test_the_check_sees_two_forms_that_differ(monkeypatch):
    """The harness compares two different computations: one form scaled by 1 + 1e-9 is
    caught."""
    maker = recurrences.FORM_CHECKS["minGRU"]

    def different(features):
        forms = maker(features)

        def both(x):
            parallel, recurrent = forms(x)
            return parallel, recurrent * (1 + 1e-9)
        return both

    monkeypatch.setitem(recurrences.FORM_CHECKS, "minGRU", different)
    differences = recurrences.form_differences(steps=8)
    assert differences["minGRU"] > recurrences.ROUND_OFF / 1e4
    assert differences["DeltaNet"] < recurrences.ROUND_OFF


def test_the_table_shows_the_threshold_and_the_rows_not_built():
    table = recurrences.recurrence_table({name: 0.0 for name in recurrences.FORM_CHECKS})
    text = table.text("en")
    assert text.count("< 1e-12") == len(recurrences.FORM_CHECKS)
    assert text.count("not built here") == sum(not r.built for r in recurrences.RECURRENCES)
    assert "α_t (I − β_t k_t k_tᵀ)" in text and "本书未实现" in table.text("zh")
    shown = repr(recurrences.recurrence_table(
        {name: 3e-9 for name in recurrences.FORM_CHECKS}))
    assert "3.0e-09" in shown  # a difference above the threshold is printed, not hidden
    assert len(repr(recurrences.recurrence_table()).splitlines()[0].split()) > 4


# ---- gradients over distance ----------------------------------------------------------------

def state_gradient_ratios(name, steps, draw, shape, batch):
    """|dL/dh_{T-d}| / |dL/dh_T| by autograd through minGRU's steps, L = u . h_T, on the input
    and the u of draw ``draw`` (as distance_profile draws them)."""
    manual_seed(draw)
    model = KIND[name].build(shape, shape.width).double()
    generator = seeded_generator(draw)
    u = torch.randn(shape.width, dtype=F64, generator=generator)
    x = torch.randn(steps, batch, shape.width, dtype=F64, generator=generator)
    x = x.flip(0).transpose(0, 1)
    h, states = torch.zeros(batch, shape.width, dtype=F64), []
    for t in range(steps):  # h_t, each a tensor of the graph of its own
        h = model.step(x[:, t], h)[0]
        states.append(h)
    grads = torch.autograd.grad((h * u).sum(), states)
    norms = torch.stack([g.norm() for g in grads])
    return norms.flip(0) / norms[-1]


@pytest.mark.parametrize("name", ["minGRU", "minGRU, keep bias"])
def test_the_keep_gate_products_are_autograds_state_gradients(name):
    shape = ModelShape()
    products = recurrences.keep_product_ratios(name, steps=30, draws=2, batch=3)
    for draw in range(2):
        expected = state_gradient_ratios(name, 30, draw, shape, 3)
        torch.testing.assert_close(products[draw], expected, rtol=1e-12, atol=0)


def test_mingrus_input_gradient_follows_the_product_of_its_keep_gates():
    """Within a factor of 10 at every distance, while both fall by more than 10 orders of
    magnitude over 60 steps (the claim Chapter 6 asserts at 200)."""
    ratios = recurrences.gradient_ratio_draws(["minGRU"], steps=61, draws=3)["minGRU"]
    products = recurrences.keep_product_ratios("minGRU", steps=61, draws=3)
    assert ratios.shape == products.shape == (3, 61)
    assert (ratios[:, 0] == 1).all() and (products[:, 0] == 1).all()
    assert (ratios[:, 1:] / products[:, 1:]).log10().abs().max() < 1
    assert products[:, -1].max() < 1e-10


def test_the_per_step_factor_of_a_geometric_decay_is_its_ratio():
    d = torch.arange(60, dtype=F64)
    curves = torch.stack([0.5**d, 3 * 0.95**d, 0.9**d * (1 + 0.1 * torch.cos(d))])
    factors = recurrences.per_step_factors(curves, fit=(10, 59))
    torch.testing.assert_close(factors[:2], torch.tensor([0.5, 0.95], dtype=F64), rtol=1e-12,
                               atol=0)
    assert abs(factors[2] - 0.9) < 0.005  # a wobble around the decay barely moves the fit


def test_a_keep_bias_slows_the_decay():
    plain = recurrences.keep_product_ratios("minGRU", steps=41, draws=3)
    kept = recurrences.keep_product_ratios("minGRU, keep bias", steps=41, draws=3)
    assert kept[:, 40].min() > 1e3 * plain[:, 40].max()


def test_draws_differ_and_are_reproducible():
    first = recurrences.gradient_ratio_draws(["Gated DeltaNet"], steps=12, draws=2)
    again = recurrences.gradient_ratio_draws(["Gated DeltaNet"], steps=12, draws=2)
    assert torch.equal(first["Gated DeltaNet"], again["Gated DeltaNet"])
    assert not torch.equal(first["Gated DeltaNet"][0], first["Gated DeltaNet"][1])


# ---- how a state is written -----------------------------------------------------------------

@pytest.mark.parametrize("num_keys", [3, 40])
def test_the_delta_rule_always_reads_a_reassigned_keys_new_value(num_keys):
    """With beta = 1 and a unit key, S^T k is the new value exactly, however full the state."""
    recall = state_writes.write_recall("delta", num_keys, True, draws=3, sequences=8,
                                      key_size=16)
    assert torch.equal(recall, torch.ones(3, dtype=F64))


def test_the_additive_write_reads_old_plus_new_a_coin_flip():
    recall = state_writes.write_recall("additive", 4, True, draws=10, sequences=64)
    assert 0.3 < recall.mean() < 0.7


def test_distinct_keys_few_are_read_by_both_rules_many_better_additively():
    for write in ("delta", "additive"):
        assert state_writes.write_recall(write, 2, False, draws=3).min() == 1
    delta = state_writes.write_recall("delta", 32, False, key_size=16, draws=5)
    additive = state_writes.write_recall("additive", 32, False, key_size=16, draws=5)
    assert additive.min() > delta.max()


# ---- the new mixers -------------------------------------------------------------------------

@pytest.mark.parametrize("mixer", ["ssd", "delta", "gated delta", "additive"])
def test_the_new_mixers_are_causal_stacks(mixer):
    torch.manual_seed(0)
    stack = mixer_stack(mixer, 8, 2, 1, 16, 32, state_size=2).double()
    x = torch.randn(2, 12, 8, dtype=F64)
    changed = x.clone()
    changed[:, 7] += 1
    with torch.no_grad():
        before, after = stack(x), stack(changed)
    assert torch.equal(before[:, :7], after[:, :7]) and not torch.equal(before[:, 7],
                                                                         after[:, 7])


def test_the_state_mixer_refuses_what_it_cannot_do():
    mixer = KIND["DeltaNet"].build(ModelShape()).layers[0].self_attn
    assert isinstance(mixer, StateSelfMixer)
    x = torch.randn(1, 3, 32)
    with pytest.raises(ValueError, match="takes no mask"):
        mixer(x, x, x, torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="only does self-attention"):
        mixer(x, x.clone(), x)
    with pytest.raises(TypeError, match="layer must be a torch.nn.Module"):
        StateSelfMixer("DeltaNet")


# ---- trained: MQAR with distinct and with reassigned keys ----------------------------------

TINY = MQARSetting(steps=3, longer=2, batch_size=4, eval_size=8, seeds=(0, 1))


def test_the_reassigned_task_trains_as_chapter_6s_mqar_does():
    """One training for both tasks: a setting with task "reassigned" trains on sequences in
    which every key is written twice (twice as long), measured at both budgets."""
    reassigned = replace(TINY, pair_counts=(2,), task="reassigned")
    assert reassigned.shape().max_len == 8 and TINY.shape().max_len == 2 * 16
    tokens, targets = reassigned.batch(4, (2,), torch.Generator().manual_seed(0))
    assert tokens.shape == (4, 8, 2) and targets.shape == (32,)
    assert ((targets != IGNORED).view(4, 8).sum(1) == 4).all(), "two queries per key"
    run = mqar_training("DeltaNet", reassigned)
    assert run.accuracies.shape == (2, 2, 1) and run.losses.shape == (2, 6)
    assert ((run.accuracies >= 0) & (run.accuracies <= 1)).all()
    grid = mqar_runs([("DeltaNet", reassigned), ("additive write", reassigned)])
    assert torch.equal(grid["DeltaNet", reassigned].losses, run.losses), "as alone"
    assert not torch.equal(grid["additive write", reassigned].losses, run.losses)
    with pytest.raises(ValueError, match="pair_counts must hold one count for the reassigned"):
        MQARSetting(pair_counts=(2, 4), task="reassigned")
    with pytest.raises(ValueError, match="task must be one of"):
        MQARSetting(task="shuffled")
    with pytest.raises(ValueError, match="name must be a mixer model of the registry"):
        mqar_training("LSTM", TINY)


def test_the_table_counts_seeds_with_their_interval_and_word():
    setting = MQARSetting(pair_counts=(4,), steps=300, task="reassigned")
    distinct = MQARSetting(pair_counts=(4,), steps=300)
    runs = {("DeltaNet", setting): MQARRun(
                torch.tensor([[0.95] * 10, [0.97] * 10], dtype=F64)[..., None],
                torch.ones(10, 2)),
            ("additive write", distinct): MQARRun(
                torch.tensor([[0.5] * 9 + [0.9], [0.5] * 10], dtype=F64)[..., None],
                torch.ones(10, 2))}
    table = state_writes.pair_recall_table(runs, 0.85)
    english, chinese = table.text("en"), table.text("zh")
    assert "10/10 (0.72-1.00) almost always" in english and "0.95 (0.95–0.95)" in english
    assert "1/10 (0.02-0.40) rarely" in english and "0.50 (0.50–0.90)" in english
    assert " 300 " in english and " 1200 " in english and "0.97 (0.97–0.97)" in english
    assert "几乎总是" in chinese and "门控" not in chinese and "加性写入" in chinese
    with pytest.raises(TypeError, match="runs must be a non-empty dict"):
        state_writes.pair_recall_table({("DeltaNet", TINY): runs["DeltaNet", setting]}, 0.85)


# ---- figures: what the alt texts say comes from the data drawn ------------------------------

def test_the_gradient_figure_reads_the_medians_it_draws():
    d = np.arange(11.0)
    ratios = {"a": np.stack([0.5**d, 0.3**d, 0.6**d]), "b": np.stack([0.9**d] * 3)}
    fig = recurrence_plots.plot_recurrence_gradients(ratios, {"a": ratios["a"]}, 4)
    alt = style.alt_text(fig)
    assert f"a {0.5**4:.1e}, {0.5**10:.1e}" in alt and f"b {0.9**4:.1e}" in alt
    assert "dashed, for a," in alt
    with style.in_language("zh"):
        fig = recurrence_plots.plot_recurrence_gradients(ratios, {}, 4)
    assert "虚线" not in style.alt_text(fig) and "中位数" in style.alt_text(fig)


def test_the_write_figure_reads_each_rules_medians():
    recalls = {(True, "delta"): np.ones((3, 2)), (True, "additive"): np.full((3, 2), 0.5),
               (False, "delta"): np.array([[1.0, 0.4]] * 3),
               (False, "additive"): np.array([[1.0, 0.8]] * 3)}
    alt = style.alt_text(recurrence_plots.plot_write_rules([8, 64], recalls, 32))
    assert "delta rule from 1.00 to 1.00, additive write from 0.50 to 0.50" in alt
    assert "delta rule from 1.00 to 0.40, additive write from 1.00 to 0.80" in alt

"""The cells whose output nbval does not compare, each with its reason (DESIGN.md, "True on
every machine").

A cell tagged ``nbval-ignore-output`` escapes the check that its stored output equals a fresh
run, so such cells must be few and each must be justified here: timings (never stable), or a
chaotic measurement with no statistic stable to the digit the reader needs, whose claim is
asserted with a margin in a ``remove-cell`` cell. A cell is named by its id or by the first line
of its source. The test fails when a notebook tags a cell that is not listed, or when a listed
cell is no longer tagged.
"""

import json
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"
TAG = "nbval-ignore-output"

IGNORED = {
    "01_rnn_bptt.ipynb": {},
    "02_vanishing_exploding.ipynb": {
        "s3 = at_probe[3.0]  # chaotic: these digits move with the last bits of the arithmetic":
            "the tanh RNN with W_hh = 3Q is chaotic: its gradient ratio 100 steps back, and so "
            "the range over the 10 draws, moves with the last bits of the arithmetic; the next "
            "(remove-cell) cell asserts that it grows and stays far below its bound",
        "plain_learned = count(plain_final < learned)":
            "SGD on the gain-3 RNN at lr 0.5 without clipping is chaotic: how many of its 32 "
            "seeds learn, the clipped runs' last clipped step and the unclipped runs' spikes "
            "move with the last bits of the arithmetic; the next (remove-cell) cell asserts "
            "the claims (the count's word, clipping in the opening phase of most runs)",
    },
    "03_lstm.ipynb": {
        "big, middle, explosion_floor = 10, 3, 1e6":
            "the gradient of the LSTM with W_hh x 3 and x 10 over 300 steps is chaotic: how "
            "many of the 10 draws exceed 1e6 and the ratios' median and range move with the "
            "last bits of the arithmetic; the next (remove-cell) cell asserts the claims",
        "# the IRNN at d = 20 once more, its weights changed in their last bits (\"Runs "
        "differ\")":
            "key recall after 150 training steps: a seed at the boundary can cross 0.95 or the "
            "order-blind bound with the last bits, so a count of the tables (and the glued "
            "counts) can move by one; the claims are asserted with margins in the next cells",
        "moved = (perturbed[retrained] - boundary).abs()  # (seeds,)":
            "how far the IRNN's seeds at d = 20 move when its weights change in their last "
            "bits: chaotic by construction (the chapter measures exactly that); the claims "
            "read from it, most of the spread comes from the seed and a single run can move "
            "by more than 0.05, are asserted in the next (remove-cell) cell",
        "title = Bilingual(f\"Key recall, one fixed budget ({budget.steps} steps)\",":
            "the key-recall figure's alt text counts the seeds that reach 0.95, chaotic as "
            "the tables are",
        "8448dd8b": "forward times of the LSTM against the sequence length (timing)",
        "1755a00e": "time ratios and microseconds per step derived from those times (timing)",
    },
    "04_transformer.ipynb": {},
    "05_mini_transformer.ipynb": {
        "runs = ind.induction_runs()  # {label: InductionRun}, side by side on the cores":
            "the induction runs train 200 to 800 steps: their median copy losses, accuracies "
            "and attention scores move in the second digit with the last bits of the "
            "arithmetic (the counts of seeds that copy have wide margins); the next "
            "(remove-cell) cell asserts the claims",
        'plateau, fall = ind.plateau_and_drop(runs["2 layers"], high=2.3, low=1.8)':
            "the steps each two-layer seed spends on its plateau and in its drop, and the "
            "glued ranges of the induction runs, are chaotic by a few steps; the next cell "
            "asserts the claim (the drop is quicker than the plateau in every seed)",
        "mean_label = \"Post-LN, constant mean rate\"  # the control, at the largest depth only":
            "the depth sweep's counts of seeds that train: at the depth where some Post-LN "
            "seeds train and others do not, a seed can flip with the last bits; the claims "
            "(at the counts far from the edge) are asserted in the next cell",
        "deepest = post[sweep_depths[-1]]":
            "glues the depth sweep's counts and their words, chaotic as the table is",
        "series = {Bilingual(*settings[label]): wu.count_series(row)":
            "the depth sweep's figure: its alt text gives every count, chaotic at the "
            "middle depth as the table is",
    },
    "06_beyond_quadratic.ipynb": {
        "seconds = attention_costs.attention_seconds(lengths, features, window_keys, "
        "repeats=5)":
            "wall-clock times of the four attentions (median of interleaved rounds), their "
            "fitted slopes and where they cross (timing); they only illustrate the counted "
            "FLOPs and bytes of the cell before, whose claims the remove-cells after it "
            "assert",
        "from dataclasses import replace":
            "multi-query associative recall trained 400 steps: a seed near the 0.9 threshold "
            "can cross it with the last bits of the arithmetic (measured: a count moves from "
            "10/10 to 9/10 with ATEN_CPU_CAPABILITY=default), so a count of the table can "
            "move by one; the next (remove-cell) cell asserts the claims with margins",
        "BilingualFigure(both_languages(":
            "the MQAR figure's alt text names the pairs that most seeds recall, counted from "
            "the same chaotic trainings as the table before",
        "glue_all(mqar_width=setting.width, mqar_heads=setting.num_heads,":
            "the glued verdicts of multi-query associative recall (counts of seeds with their "
            "words) come from the same chaotic trainings; the claims are asserted before",
        "solves = {name: Bilingual(count_phrase(c[0]), count_phrase(c[0], \"zh\"))":
            "the learning table's last column holds the MQAR verdicts (chaotic counts, see "
            "above); its other columns are compared where they are measured",
        "heads = {setting.num_heads: setting, 1: one_head}":
            "the exercise's mean MQAR accuracies over ten seeds, in the second digit, move "
            "with the last bits of the arithmetic (measured: 0.95 vs 0.96); the next "
            "(remove-cell) cell asserts the comparison with a margin",
        "# nbval-ignore-output: training is chaotic (another processor's last bits change every":
            "the delta rule against the additive write on MQAR with reassigned keys, trained 200 "
            "steps over ten seeds: a seed near the 0.85 threshold can cross it and the medians "
            "and ranges move in their second digit with the last bits of the arithmetic; the "
            "next (remove-cell) cell asserts the claims with margins",
    },
    "07_real_text.ipynb": {
        "def seeds(values, digits=2):  # the range over seeds":
            "the ranges over seeds of the language models' held-out loss, context worth, "
            "shares and reaches: each trained model is chaotic (other last bits of the "
            "arithmetic give other weights, moving these numbers in their second digit and a "
            "reach by a grid step); the claims read from them are comparisons asserted with "
            "margins in the chapter's remove-cells",
        "counted = {name: counts[\"counted\", name] for name in LANGUAGE_MODELS}  # at our "
        "sizes":
            "the joined summary table: its counted columns are exact, but its last column, "
            "each model's range over the seeds of how far back its loss depends, is a "
            "threshold crossing of a chaotic training (a reach moves by a grid step with the "
            "last bits); the next (remove-cell) cell asserts the counted columns and the "
            "claim read from the ranges, the LSTM's reach below 32 in every seed",
    },
}


def tagged_cells(notebook: Path) -> list[tuple[str, str]]:
    """(id, first source line) of every cell of ``notebook`` tagged ``nbval-ignore-output``."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [(cell.get("id", ""), "".join(cell["source"]).split("\n", 1)[0])
            for cell in cells if TAG in cell.get("metadata", {}).get("tags", [])]


def test_every_chapter_is_listed():
    chapters = sorted(path.name for path in BOOK.glob("[0-9][0-9]_*.ipynb"))
    assert sorted(IGNORED) == chapters


@pytest.mark.parametrize("name", sorted(IGNORED))
def test_ignored_cells_are_exactly_the_listed_ones(name):
    listed = IGNORED[name]
    assert all(reason.strip() for reason in listed.values()), f"{name}: a reason is empty"
    tagged = tagged_cells(BOOK / name)
    unlisted = [first for cell_id, first in tagged
                if cell_id not in listed and first not in listed]
    assert not unlisted, f"{name}: tagged {TAG} but not listed here with a reason: {unlisted}"
    names = {key for cell in tagged for key in cell}
    stale = [key for key in listed if key not in names]
    assert not stale, f"{name}: listed here but no longer tagged {TAG}: {stale}"

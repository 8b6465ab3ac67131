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
        "d22e8a27": "SGD on the gain-3 RNN at lr 0.5 without clipping is chaotic: how many of "
                    "its 32 seeds learn (shown in the table of counts), their median "
                    "accuracy, their largest gradients and the length of the "
                    "clipped runs' opening phase move with the last bits of the arithmetic; "
                    "the claims are asserted in the next (remove-cell) cell",
    },
    "03_lstm.ipynb": {
        "big, middle, explosion_floor = 10, 3, 1e6":
            "the gradient of the LSTM with W_hh x 3 and x 10 over 300 steps is chaotic: how "
            "many of the 10 draws exceed 1e6 and the ratios' median and range move with the "
            "last bits of the arithmetic; the next (remove-cell) cell asserts the claims",
        "grids = rg.key_recall_grid(budget=budget)  # {row: (seeds, distances)}, rows side by "
        "side":
            "key recall after 150 training steps: a seed at the boundary can cross 0.95 or the "
            "order-blind bound with the last bits, so a count of the tables (and the glued "
            "counts) can move by one; the claims are asserted with margins in the next cells",
        "title = Bilingual(f\"Key recall, one fixed budget ({budget.steps} steps)\",":
            "the key-recall figure's alt text counts the seeds that reach 0.95, chaotic as "
            "the tables are",
        "8448dd8b": "forward times of the LSTM against the sequence length (timing)",
        "1755a00e": "time ratios and microseconds per step derived from those times (timing)",
    },
    "04_transformer.ipynb": {},
    "05_mini_transformer.ipynb": {},
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
    },
    "07_real_text.ipynb": {
        "def seeds(values, digits=2):  # the range over seeds":
            "the ranges over seeds of the language models' held-out loss, context worth, "
            "shares and reaches: each trained model is chaotic (other last bits of the "
            "arithmetic give other weights, moving these numbers in their second digit and a "
            "reach by a grid step); the claims read from them are comparisons asserted with "
            "margins in the chapter's remove-cells",
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

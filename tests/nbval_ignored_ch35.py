"""Cells of Chapters 3 and 5 whose outputs nbval does not compare, with the reason.

Read by tests/test_nbval_ignored.py. Only timings are ignored: every trained statistic of the
two chapters is printed in a form that is stable under perturbation ("solved", "chance",
counts at a threshold far from the observed values, means to one decimal), and every claim is
asserted in a remove-cell cell.
"""

IGNORED = {
    "book/03_lstm.ipynb": {
        "8448dd8b": "wall-clock forward times of the LSTM loops (Figure fig-sequential-cost); "
                    "timing never decides text",
        "1755a00e": "ratios of those wall-clock times, printed and glued as illustration",
    },
    "book/05_mini_transformer.ipynb": {},
}

"""Chapter 6's cells whose stored output nbval does not compare, each with the reason.

A test elsewhere reads ``IGNORED`` and checks that these, and only these, cells of the chapter are
tagged ``nbval-ignore-output``, and that each one's claim is asserted in a ``remove-cell``.
"""

IGNORED = {
    "book/06_beyond_quadratic.ipynb": {
        "56373fac": "wall-clock times of the three attentions (median of interleaved rounds), "
                    "their fitted slopes and where they cross: no statistic of a time is the "
                    "same on two machines or two runs. They only illustrate the counted FLOPs "
                    "and bytes of cell 37a8604b, whose claims cell 84dfb7ed asserts.",
    },
}

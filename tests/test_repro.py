"""The reproducibility helpers."""

import pytest
import torch
from longdep.book import power_of_ten_above, reproducible


def test_reproducible_repeats_random_draws_and_sets_threads():
    reproducible(seed=5, threads=2)
    first = torch.randn(3)
    reproducible(seed=5, threads=2)
    assert torch.equal(first, torch.randn(3))
    assert torch.get_num_threads() == 2
    reproducible()
    assert torch.get_num_threads() == 1
    # deterministic algorithms, without the NaN filling of fresh memory (a cost, no result)
    assert torch.are_deterministic_algorithms_enabled()
    assert not torch.utils.deterministic.fill_uninitialized_memory


def test_bad_thread_count_raises():
    with pytest.raises(ValueError, match="threads"):
        reproducible(threads=0)


@pytest.mark.parametrize(
    "value, expected", [(3.2e-16, 1e-15), (1e-15, 1e-15), (-0.02, 0.1), (0.0, 0.0), (7.0, 10.0)]
)
def test_power_of_ten_above(value, expected):
    assert power_of_ten_above(value) == pytest.approx(expected)

"""The reproducibility helpers."""

import os
import subprocess
import sys
from pathlib import Path

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


def test_a_chapters_set_up_and_training_leave_the_compiler_unimported():
    # torch.use_deterministic_algorithms and torch.optim import torch._inductor and
    # torch._dynamo (1.6 s per chapter); reproducible() and longdep.train do without them
    script = """
import sys
from longdep.book import reproducible, use_deterministic_algorithms
from longdep.experiments.key_recall import KEY_RECALL_BUDGET, bag_of_tokens, train_key_recall
import dataclasses, torch
reproducible()
assert torch.are_deterministic_algorithms_enabled()
budget = dataclasses.replace(KEY_RECALL_BUDGET, steps=3, batch_size=4)
train_key_recall(bag_of_tokens(budget), budget.model_dim, distance=3, budget=budget)
use_deterministic_algorithms(False)
assert not torch.are_deterministic_algorithms_enabled()
print(sorted(m for m in sys.modules if m.startswith(("torch._dynamo", "torch._inductor"))))
"""
    assert run_fresh(script) == "[]"


def test_counting_flops_and_bytes_leaves_the_compiler_unimported():
    # a dispatch mode's first call imports torch._dynamo (1.6 s in Chapters 4 and 6) unless
    # longdep.measure.cost lets it run without; the counts are the ones torch's counter gives
    script = """
import sys, torch
from longdep.measure.cost import attention_flops, matmul_flops, peak_tensor_bytes
from longdep.experiments.attention import layer_flops
a, b = torch.ones(4, 3), torch.ones(3, 5)
assert matmul_flops(lambda: a @ b) == 2 * 4 * 3 * 5
assert peak_tensor_bytes(lambda: a @ b) == 4 * 5 * 4
q = torch.ones(1, 1, 6, 8)
fused = lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q)
assert attention_flops(fused) == 4 * 6 * 6 * 8  # two products of 2 T S d
assert layer_flops("self-attention", 6, 8) == 8 * 6 * 8**2 + 4 * 6**2 * 8
print(sorted(m for m in sys.modules if m.startswith(("torch._dynamo", "torch._inductor"))))
"""
    assert run_fresh(script) == "[]"


def run_fresh(script: str) -> str:
    """What ``script`` prints, run in a new Python process that imports longdep from code/."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "code")}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, check=True)
    return result.stdout.strip()

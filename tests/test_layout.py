"""The package's layout: the import contracts hold, a forbidden import breaks them, ruff finds
nothing in the code, the tests, the benchmarks and the chapters' cells, and every model file runs
when copied, with only its sibling model files, into an empty folder."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "code" / "longdep"
MODELS = PACKAGE / "models"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
RUFF = Path(sys.executable).with_name("ruff")
# What ruff checks (configured in pyproject.toml): the chapters are notebooks, whose cells a
# reader copies, so they are held to the package's rules.
LINTED = ["code", "tests", "benchmarks", "book"]

# One call of each model file's main entry point, run on the copy with torch alone.
SMOKE = {
    "rnn": "rnn.ElmanRNN(3, 4)(torch.randn(2, 5, 3))",
    "lstm": "lstm.LSTM(3, 4)(torch.randn(2, 5, 3))",
    "gru": "gru.GRU(3, 4)(torch.randn(2, 5, 3))",
    "attention": "x = torch.randn(2, 5, 8); attention.MultiHeadAttention(8, 2)(x, x, x)",
    "bag": "bag.BagOfTokens(3, 4)(torch.randn(2, 5, 3))",
    "conv": "conv.CausalConvolution(3, 3)(torch.randn(2, 5, 3))",
    "transformer": "transformer.TransformerEncoder(20, 8, 2, 1, 16, 10)"
                   "(torch.randint(0, 20, (2, 5)))",
    "sparse": "q = torch.randn(2, 5, 4); sparse.sliding_window_attention(q, q, q, 2)",
    "linear": "q = torch.randn(2, 5, 4); linear.linear_attention(q, q, q)",
    "ssm": "ssm.SelectiveSSM(3, 2)(torch.randn(2, 5, 3))",
    "mixers": "mixers.mixer_stack('ssm', 8, 2, 1, 16, 10)(torch.randn(2, 5, 8))",
    "heads": "heads.LastStepClassifier(10, 3, torch.nn.Identity(), 3, 4)"
             "(torch.randint(0, 10, (2, 5)))",
    "decode": "q = torch.randn(2, 1, 4); decode.linear_attention_step(q, q, q)",
    "mingru": "mingru.MinGRU(3, 4)(torch.randn(2, 5, 3))",
    "ssd": "ssd.ScalarSSM(4, 2, 3)(torch.randn(2, 5, 4))",
    "delta": "delta.DeltaNet(4, 2, gated=True)(torch.randn(2, 5, 4))",
    "diagonal": "diagonal.DiagonalLinearRNN(3, 4)(torch.randn(2, 5, 3))",
    "lru": "lru.LRU(3, 4)(torch.randn(2, 5, 3))",
    "forgetting": "forgetting.ForgettingAttention(4, 2)(torch.randn(2, 5, 4))",
    "gla": "q = torch.randn(2, 5, 4); gla.gla_attention(q, q, q, -torch.rand(2, 5, 4))",
}


def lint_imports(cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_import_contracts_hold():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_planted_forbidden_import_breaks_a_contract(tmp_path):
    shutil.copytree(PACKAGE, tmp_path / "code" / "longdep",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    planted = tmp_path / "code" / "longdep" / "models" / "rnn.py"
    planted.write_text(planted.read_text() + "\nimport longdep.plots.style  # planted\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "code")}
    result = lint_imports(tmp_path, env)
    assert result.returncode != 0
    assert "models import only models" in result.stdout and "BROKEN" in result.stdout
    assert "longdep.models.rnn -> longdep.plots.style" in result.stdout


def ruff(cwd: Path, *paths: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUFF), "check", "--no-cache", *paths], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_ruff_finds_nothing():
    result = ruff(ROOT, *LINTED)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_finds_an_unused_import_in_a_chapter_cell(tmp_path):
    chapter = next((ROOT / "book").glob("01_*.ipynb"))
    text = chapter.read_text(encoding="utf-8")
    unused = '"import this_module_is_unused  # planted\\n",\n    '
    planted = text.replace('"import ', unused + '"import ', 1)
    assert planted != text
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / chapter.name).write_text(planted, encoding="utf-8")
    result = ruff(tmp_path, chapter.name)
    assert result.returncode != 0 and "F401" in result.stdout, result.stdout + result.stderr


def sibling_imports(path: Path) -> set[str]:
    """The model files that ``path`` imports (its ``from .name import`` lines)."""
    return set(re.findall(r"^\s*from \.(?: import )?(\w+)", path.read_text(), re.M))


def copy_closure(name: str) -> set[str]:
    """The model files a reader must copy to run ``name``: itself, _checks and what they import."""
    needed, pending = set(), [name, "_checks"]
    while pending:
        module = pending.pop()
        if module not in needed:
            needed.add(module)
            pending.extend(sibling_imports(MODELS / f"{module}.py"))
    return needed


def test_every_model_file_has_a_smoke_call():
    files = {p.stem for p in MODELS.glob("*.py")} - {"__init__", "_checks", "_twins"}
    assert files == set(SMOKE)


# Each model file in a folder of its own with its closure, imported from there and called, all in
# one fresh interpreter (one per file would import torch twenty times): a file finds only the
# modules of its own folder, and they are forgotten before the next file's turn.
RUN_COPIES = """
import importlib, json, sys, traceback, torch
errors = {}
for name, (folder, smoke) in json.loads(sys.argv[1]).items():
    sys.path.insert(0, folder)
    try:
        exec(smoke, {"torch": torch, name: importlib.import_module(name)})
        errors[name] = None
    except Exception:
        errors[name] = traceback.format_exc()
    sys.path.remove(folder)
    for key in [key for key, module in sys.modules.items()
                if (getattr(module, "__file__", None) or "").startswith(folder)]:
        del sys.modules[key]
errors["foreign modules"] = sorted({"longdep", "matplotlib", "myst_nb"} & set(sys.modules))
print(json.dumps(errors))
"""


@pytest.fixture(scope="module")
def copies_run(tmp_path_factory) -> dict[str, str | None]:
    """{model file: the traceback of its copy's import and call, or None}, and the modules of
    the book's other packages that any copy imported ("foreign modules")."""
    folders = {}
    for name in SMOKE:
        folder = tmp_path_factory.mktemp(name)
        for module in copy_closure(name):
            shutil.copy(MODELS / f"{module}.py", folder)
        folders[name] = (f"{folder}{os.sep}", SMOKE[name])
    # -E -s: no PYTHONPATH and no user site; the installed longdep must not be imported either.
    result = subprocess.run([sys.executable, "-E", "-s", "-c", RUN_COPIES, json.dumps(folders)],
                            cwd=tmp_path_factory.mktemp("elsewhere"), capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_no_model_file_copy_imports_the_books_other_packages(copies_run):
    assert copies_run["foreign modules"] == []


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_model_file_copies_alone(name, copies_run):
    assert copies_run[name] is None, copies_run[name]

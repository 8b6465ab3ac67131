"""The book's build executes every chapter once: its outputs must be the ones stored in the chapter.

This is nbval's strict check (``pytest --nbval``) without a second execution: `make book`
(jupyter-cache, in ``_build/jupyter_execute``) has just run every chapter in a fresh kernel, so
its outputs are compared with the stored ones by nbval's own rules and code: the same cell
markers and tags (``nbval-ignore-output`` cells are not compared, tests/test_nbval_ignored.py),
the same sanitizers (tests/sanitize.cfg), streams coalesced, images not compared. The one
difference is myst-nb's: it moves each ``glue`` output out of the executed notebook into
``<chapter>.glue.json``, so a stored glue output is compared with the entry of its name there.
`make notebooks` stores the outputs on another floating-point path (ATEN_CPU_CAPABILITY=default
MKL_CBWR=COMPATIBLE) than the build's, the machine's own kernels, so the comparison is across
paths. `make test` runs nbval itself only with shifted seeds (lax). Run `make book` first
(`make test` does).
"""

import json
from collections import defaultdict
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import (
    IPyNbCell,
    _trim_base64,
    coalesce_streams,
    find_comment_markers,
    find_metadata_tags,
    get_sanitize_patterns,
    nocolors,
)

REPO = Path(__file__).resolve().parents[1]
EXECUTED = REPO / "_build" / "jupyter_execute" / "book"
CHAPTERS = sorted((REPO / "book").glob("[0-9][0-9]_*.ipynb"))
SANITIZE = dict(get_sanitize_patterns((REPO / "tests" / "sanitize.cfg").read_text()))
# nbval's default list of what it leaves uncompared (IPyNbFile.skip_compare, without --nbdime)
SKIP_COMPARE = ("metadata", "traceback", "prompt_number", "output_type", "name",
                "execution_count", "application/vnd.jupyter.widget-view+json", "image/png",
                "image/jpeg")


class Comparison:
    """The part of nbval's IPyNbCell that compares a cell's outputs, on its own: its comparison
    and sanitizing are nbval's methods, so the rules are nbval's."""

    compare_outputs = IPyNbCell.compare_outputs
    sanitize = IPyNbCell.sanitize
    colors = nocolors

    def __init__(self):
        self.parent = type("Patterns", (), {"sanitize_patterns": SANITIZE,
                                            "skip_compare": SKIP_COMPARE})()

    def format_output_compare(self, key, stored, built):
        """nbval's report of a mismatch, without its pytest hook."""
        self.comparison_traceback += [f"mismatch {key!r}: stored", _trim_base64(str(stored)),
                                      "built", _trim_base64(str(built))]

    def report(self, built: list, stored: list) -> str | None:
        """None if the outputs agree, else nbval's account of the first difference."""
        if self.compare_outputs(coalesce_streams(built), coalesce_streams(stored)):
            return None
        return "\n".join(self.comparison_traceback)


def glue_name(output) -> str | None:
    return output.get("metadata", {}).get("scrapbook", {}).get("name")


def compared(cell) -> bool:
    """nbval's choice for a cell of a strict run: compared unless a marker or tag says not, or
    the stored cell never ran."""
    options = defaultdict(bool, find_metadata_tags(cell.metadata))
    options.update(find_comment_markers(cell.source))
    options.setdefault("check", True)
    return options["check"] and not options["skip"] and cell.execution_count is not None


def as_glued(output, prefix: str):
    """A glue output as the stored notebook holds it: its mime types under the record prefix."""
    return nbformat.from_dict({**output, "data": {prefix + key: value
                                                  for key, value in output["data"].items()}})


def differences(chapter: Path, executed: Path) -> list[str]:
    """Where the build's execution of ``chapter`` (in the folder ``executed``) shows other
    outputs than the stored ones, one text per cell, as nbval words it."""
    stored_cells = [c for c in nbformat.read(chapter, 4).cells if c.cell_type == "code"]
    built_cells = [c for c in nbformat.read(executed / chapter.name, 4).cells
                   if c.cell_type == "code"]
    assert [c.source for c in built_cells] == [c.source for c in stored_cells], \
        f"the build executed another version of {chapter.name}"
    glue = json.loads((executed / f"{chapter.stem}.glue.json").read_text())
    stored_glue = [glue_name(o) for c in stored_cells for o in c.outputs if glue_name(o)]
    found = [] if sorted(stored_glue) == sorted(glue) else [
        f"glued names differ: {sorted(set(stored_glue) ^ set(glue))}"]
    for number, (stored, built) in enumerate(zip(stored_cells, built_cells)):
        if not compared(stored):
            continue
        outputs = list(built.outputs)
        for output in stored.outputs:
            if (name := glue_name(output)) in glue:
                outputs.append(as_glued(glue[name], output.metadata.scrapbook.mime_prefix))
        if difference := Comparison().report(outputs, list(stored.outputs)):
            found.append(f"{chapter.name}, code cell {number}:\n{difference}")
    return found


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_the_build_shows_the_stored_outputs(chapter):
    if not (EXECUTED / chapter.name).exists():
        pytest.fail(f"no executed {chapter.name} in {EXECUTED}: run `make book` first")
    found = differences(chapter, EXECUTED)
    assert not found, "the build's outputs differ from the stored ones (`make notebooks` " \
        "stores fresh ones):\n\n" + "\n\n".join(found)


def test_the_comparison_finds_a_changed_number_and_forgives_what_is_sanitized(tmp_path):
    """A glued number and a printed text that differ are found; a memory address is not."""
    chapter = CHAPTERS[0]
    if not (EXECUTED / chapter.name).exists():
        pytest.fail(f"no executed {chapter.name} in {EXECUTED}: run `make book` first")
    notebook = nbformat.read(EXECUTED / chapter.name, 4)
    glue = json.loads((EXECUTED / f"{chapter.stem}.glue.json").read_text())
    printed = next(o for c in notebook.cells if c.cell_type == "code" and compared(c)
                   for o in c.outputs if "text/plain" in o.get("data", {}))
    address = nbformat.from_dict({"output_type": "stream", "name": "stdout",
                                  "text": "at 0x7f00deadbeef\n"})
    code = [c for c in notebook.cells if c.cell_type == "code"]
    code[-1].outputs.append(address)
    stored = nbformat.read(chapter, 4)
    [c for c in stored.cells if c.cell_type == "code"][-1].outputs.append(
        nbformat.from_dict({**address, "text": "at 0x55aa00001234\n"}))
    nbformat.write(stored, tmp_path / "stored.ipynb")
    (tmp_path / "built").mkdir()
    nbformat.write(notebook, tmp_path / "built" / "stored.ipynb")
    (tmp_path / "built" / "stored.glue.json").write_text(json.dumps(glue))
    assert differences(tmp_path / "stored.ipynb", tmp_path / "built") == []

    name = next(iter(glue))
    glued, glue[name]["data"]["text/plain"] = glue[name]["data"]["text/plain"], "-1"
    (tmp_path / "built" / "stored.glue.json").write_text(json.dumps(glue))
    found = "\n".join(differences(tmp_path / "stored.ipynb", tmp_path / "built"))
    assert f"stored\n{glued}\nbuilt\n-1" in found, found

    glue[name]["data"]["text/plain"] = glued
    (tmp_path / "built" / "stored.glue.json").write_text(json.dumps(glue))
    printed.data["text/plain"] += " changed"
    nbformat.write(notebook, tmp_path / "built" / "stored.ipynb")
    found = "\n".join(differences(tmp_path / "stored.ipynb", tmp_path / "built"))
    assert " changed" in found, found

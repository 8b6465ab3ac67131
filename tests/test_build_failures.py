"""The book build fails loudly: a raising cell or a broken reference makes `make book` exit
non-zero.

Each test builds a one-chapter book with the repository's own _config.yml and the Makefile's own
build command (`make build-only BOOK=...`), so what is tested is what `make book` runs.
"""

import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]

GOOD_CELL = "value = 6 * 7\nprint(value)"


def make_book(root: Path, chapter_cells: list[nbformat.NotebookNode]) -> None:
    """A book with the repository's configuration and one chapter made of the given cells."""
    shutil.copy(REPO / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/index\nchapters:\n  - file: book/chapter\n")
    book = root / "book"
    book.mkdir()
    for name in ("references.bib", "favicon.svg"):
        shutil.copy(REPO / "book" / name, book / name)
    shutil.copytree(REPO / "book" / "_ext", book / "_ext")
    (book / "index.md").write_text("# A test book\n\nOne chapter.\n")
    notebook = nbformat.v4.new_notebook(cells=chapter_cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, book / "chapter.ipynb")


def build(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), "build-only", f"BOOK={root}"],
        capture_output=True, text=True, timeout=600,
    )


def chapter(*extra_cells):
    return [nbformat.v4.new_markdown_cell("# Chapter\n\nSee {eq}`eq-good`.\n\n"
                                          "```{math}\n:label: eq-good\na = b\n```"),
            nbformat.v4.new_code_cell(GOOD_CELL), *extra_cells]


@pytest.fixture(scope="module")
def control_build(tmp_path_factory):
    root = tmp_path_factory.mktemp("good_book")
    make_book(root, chapter())
    return root, build(root)


def test_a_correct_chapter_builds(control_build):
    # Without this control, the failure tests below could pass for an unrelated reason.
    root, result = control_build
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (root / "_build" / "html" / "book" / "chapter.html").exists()


def test_a_raising_cell_fails_the_build_and_names_the_chapter(tmp_path):
    make_book(tmp_path, chapter(nbformat.v4.new_code_cell("1 / 0")))
    result = build(tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "chapter.ipynb" in output
    assert "ZeroDivisionError" in output


def test_a_broken_equation_reference_fails_the_build(tmp_path):
    broken = nbformat.v4.new_markdown_cell("As {eq}`eq-does-not-exist` shows.")
    make_book(tmp_path, chapter(broken))
    result = build(tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "eq-does-not-exist" in output
    assert "chapter" in output

"""The 简体中文 edition (issue 14): built from the same notebooks, with the same glued numbers.

The first tests build a two-page book with the Makefile's own commands (`make build-only` for the
English edition, then `make build-zh`): a notebook glues a number, and a Chinese catalog
translates the paragraph that pastes it, on the notebook's page (`{glue:text}` key) and on a
Markdown page (`path::key`). Unaided, myst-nb 1.4 pastes nothing into a translated paragraph;
book/_ext/translated_glue.py makes it paste the number.

The real built book's two editions are checked in tests/test_browser.py, which `make test` runs
after `make book`.
"""

import json
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup

REPO = Path(__file__).resolve().parents[1]

CHAPTER_MD = ("# Chapter\n\nThe answer is {glue:text}`answer:d`, and its square root is "
              "about {glue:text}`root:.3f`; see {eq}`eq-a`.\n\n```{math}\n:label: eq-a\na = b\n```")
CHAPTER_CODE = ("import math\nfrom myst_nb import glue\nglue('answer', 6 * 7, display=False)\n"
                "glue('root', math.sqrt(42), display=False)")
INDEX_MD = "# A test book\n\nThe chapter glues {glue:text}`chapter.ipynb::answer:d`.\n"
CATALOGS = {
    "chapter": {
        "Chapter": "章",
        "The answer is {glue:text}`answer:d`, and its square root is about "
        "{glue:text}`root:.3f`; see {eq}`eq-a`.":
            "答案是 {glue:text}`answer:d`，它的平方根约为 {glue:text}`root:.3f`；见 {eq}`eq-a`。",
    },
    "index": {
        "A test book": "一本测试书",
        "Chapters": "章节",
        "The chapter glues {glue:text}`chapter.ipynb::answer:d`.":
            "本章粘贴的数是 {glue:text}`chapter.ipynb::answer:d`。",
    },
}


def po_file(messages: dict[str, str]) -> str:
    header = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
    return header + "".join(f"msgid {json.dumps(k, ensure_ascii=False)}\n"
                            f"msgstr {json.dumps(v, ensure_ascii=False)}\n\n"
                            for k, v in messages.items())


def make_two_page_book(root: Path) -> None:
    """The repository's configuration and extensions, a notebook that glues, a Markdown page."""
    shutil.copy(REPO / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/index\nparts:\n"
                                   "  - caption: Chapters\n    chapters:\n"
                                   "      - file: book/chapter\n")
    book = root / "book"
    book.mkdir()
    for name in ("references.bib", "favicon.svg"):
        shutil.copy(REPO / "book" / name, book / name)
    shutil.copytree(REPO / "book" / "_ext", book / "_ext",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "_mathjax").symlink_to(REPO / "_mathjax")
    (book / "index.md").write_text(INDEX_MD)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(CHAPTER_MD),
                                               nbformat.v4.new_code_cell(CHAPTER_CODE)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, book / "chapter.ipynb")
    catalogs = book / "locale" / "zh_CN" / "LC_MESSAGES" / "book"
    catalogs.mkdir(parents=True)
    for page, messages in CATALOGS.items():
        (catalogs / f"{page}.po").write_text(po_file(messages), encoding="utf-8")


def make(target: str, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), target, f"BOOK={root}"],
                          check=False, capture_output=True, text=True, timeout=600)


def pasted(page: Path) -> list[str]:
    """The glued values of a built page, in order."""
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    article = soup.find("article") or soup
    return [span.get_text() for span in article.select("span.pasted-text")]


@pytest.fixture(scope="module")
def two_page_book(tmp_path_factory):
    root = tmp_path_factory.mktemp("zh_book")
    make_two_page_book(root)
    english = make("build-only", root)
    assert english.returncode == 0, english.stdout[-3000:] + english.stderr[-3000:]
    chinese = make("build-zh", root)
    assert chinese.returncode == 0, chinese.stdout[-3000:] + chinese.stderr[-3000:]
    return root, chinese.stdout + chinese.stderr


def test_a_glued_number_in_a_translated_paragraph_is_the_english_number(two_page_book):
    root, _ = two_page_book
    site = root / "_build" / "html"
    for page in ("book/chapter.html", "book/index.html"):
        english, chinese = pasted(site / page), pasted(site / "zh_CN" / page)
        assert english and chinese == english, (page, english, chinese)
    assert pasted(site / "book/chapter.html") == ["42", "6.481"]
    text = (site / "zh_CN/book/chapter.html").read_text(encoding="utf-8")
    assert '答案是 <span class="pasted-text">42</span>，' in text
    assert "本章粘贴的数是" in (site / "zh_CN/book/index.html").read_text(encoding="utf-8")


def test_the_chinese_build_reuses_the_execution_and_warns_of_nothing(two_page_book):
    _, log = two_page_book
    assert "Using cached notebook" in log
    assert "Executed notebook" not in log
    assert "WARNING" not in log


def test_the_chinese_edition_translates_sphinx_and_the_toc(two_page_book):
    root, _ = two_page_book
    page = (root / "_build/html/zh_CN/book/chapter.html").read_text(encoding="utf-8")
    assert '<html lang="zh-CN"' in page
    assert "章节" in page  # the toc's caption, from the catalog
    assert "上一页" in page  # Sphinx's own strings, from its zh_CN catalog
    assert "Transformer 从 0 到 1" in page  # the book's title
    assert "点击显示" in page and "Click to show" not in page  # sphinx-togglebutton's hint
    assert "Exercise" not in page and "Show code cell" not in page

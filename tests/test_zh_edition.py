"""The 简体中文 edition (issue 14): built from the same notebooks, with the same glued numbers.

The first tests read a two-page book built with the Makefile's own commands (`make build-only`
for the English edition, then `make build-zh`, and the PDFs: conftest.py's `two_page_build`, which
the build stamp's tests read too): a notebook glues a number, and a Chinese catalog
translates the paragraph that pastes it, on the notebook's page (`{glue:text}` key) and on a
Markdown page (`path::key`). Unaided, myst-nb 1.4 pastes nothing into a translated paragraph;
book/_ext/translated_glue.py makes it paste the number.

The real built book's two editions are checked in tests/test_browser.py, which `make test` runs
after `make book`.
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup

REPO = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u4e00-\u9fff]")

CHAPTER_MD = ("# Chapter\n\nThe answer is {glue:text}`answer:d`, and its square root is "
              "about {glue:text}`root:.3f`; see {eq}`eq-a`.\n\n```{math}\n:label: eq-a\na = b\n```"
              "\n\nThe outcome is {glue:text}`t_outcome`, as {numref}`fig-test` shows.")
CHAPTER_CODE = ("import math\nfrom myst_nb import glue\nglue('answer', 6 * 7, display=False)\n"
                "glue('root', math.sqrt(42), display=False)")
# What a cell shows, in both languages (longdep.book, longdep.plots.style): a glued word, a
# printed text, a table and a figure (the chapter 1 figure, on small data).
BILINGUAL_CODE = """\
import numpy as np
from longdep.book import Bilingual, BilingualFigure, Table, chapter_glue, show
from longdep.plots.rnn import plot_bptt_contributions
from longdep.plots.style import both_languages, use_book_style
use_book_style()
chapter_glue("t")(outcome=Bilingual("solved", "已解决"))
show(Bilingual("seeds: 8", "种子数：8"), "||dL/dh|| = 1.5e-04")
Table([("model", "模型"), "n"], [[("bag of tokens", "词元袋"), 3]])"""
FIGURE_CODE = ("BilingualFigure(both_languages(plot_bptt_contributions, np.tril(np.ones((4, 4))), "
               "np.ones(4)))")
FIGURE = {"figure": {"caption": "A test figure.", "name": "fig-test"}}
INDEX_MD = "# A test book\n\nThe chapter glues {glue:text}`chapter.ipynb::answer:d`.\n"
CATALOGS = {
    "chapter": {
        "Chapter": "章",
        "The answer is {glue:text}`answer:d`, and its square root is about "
        "{glue:text}`root:.3f`; see {eq}`eq-a`.":
            "答案是 {glue:text}`answer:d`，它的平方根约为 {glue:text}`root:.3f`；见 {eq}`eq-a`。",
        "The outcome is {glue:text}`t_outcome`, as {numref}`fig-test` shows.":
            "结果是“{glue:text}`t_outcome_zh`”，如 {numref}`fig-test` 所示。",
        "A test figure.": "一幅测试图。",
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
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(CHAPTER_MD),
        nbformat.v4.new_code_cell(CHAPTER_CODE, metadata={"tags": ["hide-cell"]}),
        nbformat.v4.new_code_cell(BILINGUAL_CODE),
        nbformat.v4.new_code_cell(FIGURE_CODE, metadata={"mystnb": FIGURE})])
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
def two_page_book(two_page_build):
    """The two-page book built in both editions (conftest.py), and the Chinese build's output."""
    root, _, logs = two_page_build
    return root, logs["build-zh"]


def test_a_glued_number_in_a_translated_paragraph_is_the_english_number(two_page_book):
    root, _ = two_page_book
    site = root / "_build" / "html"
    for page in ("book/chapter.html", "book/index.html"):
        english, chinese = pasted(site / page), pasted(site / "zh_CN" / page)
        assert english and chinese[:2] == english[:2], (page, english, chinese)
    assert pasted(site / "book/chapter.html") == ["42", "6.481", "solved"]
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
    assert "显示代码单元" in page and "隐藏代码单元" in page  # a hide-cell cell's toggle
    english = (root / "_build/html/book/chapter.html").read_text(encoding="utf-8")
    assert "Show code cell content" in english


def test_a_bilingual_glued_word_reads_chinese_in_the_chinese_sentence(two_page_book):
    """The Chinese catalog pastes the `_zh` key that chapter_glue glues beside the English one;
    translated_glue resolves it on the Chinese page like any key of the page."""
    root, _ = two_page_book
    site = root / "_build" / "html"
    assert pasted(site / "zh_CN/book/chapter.html")[2] == "已解决"
    text = (site / "zh_CN/book/chapter.html").read_text(encoding="utf-8")
    assert '结果是“<span class="pasted-text">已解决</span>”' in text


def outputs(page: Path):
    """The cell outputs of a built page: (their text, their images)."""
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    cells = soup.select("div.cell_output")
    return " ".join(cell.get_text(" ") for cell in cells), [img for c in cells
                                                            for img in c.select("img")]


def test_each_edition_keeps_the_outputs_of_its_own_language(two_page_book):
    root, _ = two_page_book
    site = root / "_build" / "html"
    english, english_images = outputs(site / "book/chapter.html")
    chinese, chinese_images = outputs(site / "zh_CN/book/chapter.html")
    assert "seeds: 8" in english and "bag of tokens" in english and "model" in english
    assert "种子数：8" in chinese and "词元袋" in chinese and "模型" in chinese
    assert "||dL/dh|| = 1.5e-04" in english and "||dL/dh|| = 1.5e-04" in chinese
    assert not CJK.search(english) and not re.search("seeds|bag of tokens|model", chinese)
    for site_root, page, images, alt in ((site, "book/chapter.html", english_images, "Two panels"),
                                         (site / "zh_CN", "book/chapter.html", chinese_images,
                                          "两幅图")):
        html = (site_root / page).read_text(encoding="utf-8")
        assert "longdep-lang" not in html and "data:image/png" not in html
        (image,) = images
        assert image["alt"].startswith(alt)
        assert (site_root / "book" / image["src"]).read_bytes().startswith(b"\x89PNG")
    assert english_images[0]["src"] != chinese_images[0]["src"], "two figures, one per language"


def test_a_bilingual_figure_keeps_its_number_caption_and_reference(two_page_book):
    root, _ = two_page_book
    for page, number, caption in (("book/chapter.html", "Fig. 1", "A test figure."),
                                  ("zh_CN/book/chapter.html", "图 1", "一幅测试图。")):
        soup = BeautifulSoup((root / "_build/html" / page).read_text(encoding="utf-8"),
                             "html.parser")
        figure = soup.select_one("figure#fig-test")
        assert figure.select_one("img") is not None
        assert figure.select_one(".caption-number").get_text().strip() == number
        assert caption in figure.select_one("figcaption").get_text()
        reference = soup.select_one('a[href="#fig-test"]')
        assert reference.get_text().strip() == number, page

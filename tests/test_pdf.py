"""The book's PDF, as `make book` writes it: checked with poppler's command-line tools.

For each edition (English, 简体中文): the PDF opens and has a book's length, A4 pages with page
numbers; its title page names the edition's title; its text holds every page's title as that
edition's HTML has it and the same glued numbers as that HTML, and no raw TeX; every figure of
the site is in it; every font is embedded, CJK ones in the Chinese PDF; the contents link inside
the PDF; its pages are light; and every page of the edition links to the edition's own PDF. Its
title page carries the build stamp of the edition's pages (commit and date); it is tagged, and
its outline (bookmarks) lists every page of the book with its numbered sections, in the
edition's own words. Run `make book` first (`make test` does).

The tools are Debian's `poppler-utils` (pdfinfo, pdftotext, pdfimages, pdffonts, pdftoppm,
pdftohtml).
Without them, or without a built PDF, the tests skip, saying why; with CI=true or
LONGDEP_REQUIRE_BROWSER=1 they fail instead, as the browser tests do.
"""

import html
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from functools import cache
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml
from bs4 import BeautifulSoup
from edition_config import edition_config
from print_pdf import LABELS

REPO = Path(__file__).resolve().parents[1]

PDF_NAME = "transformer-0-to-1.pdf"
# An edition: its language and its HTML root; its PDF is <root>/_downloads/PDF_NAME.
EDITIONS = {
    "en": REPO / "_build" / "html",
    "zh_CN": REPO / "_build" / "html" / "zh_CN",
}
# The chapters as the build executed them (myst-nb's copies; the Chinese edition's build reuses
# this execution through the jupyter-cache).
EXECUTED = REPO / "_build" / "jupyter_execute"
# The font families a Chinese PDF may draw its Chinese text in (print.css asks for the first).
CJK_FONT = re.compile(r"CJK|SourceHan|PingFang|HiraginoSans|YaHei", re.IGNORECASE)
POPPLER = ("pdfinfo", "pdftotext", "pdfimages", "pdffonts", "pdftoppm", "pdftohtml")
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\begin\{|\\frac|\\partial|\\operatorname"
                     r"|\\sqrt|\\text\{|\\math[a-z]+\{")
MIN_PAGES = 60


def tools_required() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("LONGDEP_REQUIRE_BROWSER") == "1"


def skip_or_fail(message: str):
    if tools_required():
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session", autouse=True)
def poppler():
    missing = [tool for tool in POPPLER if shutil.which(tool) is None]
    if missing:
        skip_or_fail(f"{', '.join(missing)} not found: install Debian's poppler-utils "
                     "(`apt-get install -y poppler-utils`)")


class Edition(NamedTuple):
    language: str
    site: Path
    pdf: Path
    config: dict  # the edition's _config.yml, as the build used it


def edition_settings(language: str) -> dict:
    english = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    return english if language == "en" else edition_config(english, language, REPO)


@pytest.fixture(params=sorted(EDITIONS), scope="session")
def edition(request):
    site = EDITIONS[request.param]
    pdf = site / "_downloads" / PDF_NAME
    if not pdf.exists():
        skip_or_fail(f"no PDF at {pdf}: run `make book` first")
    return Edition(request.param, site, pdf, edition_settings(request.param))


def run(*command) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


@cache
def pdf_text(pdf: Path) -> str:
    # -raw: the text in drawing order, with no joining of words broken at a hyphen (which
    # would turn a "3.8e-" at the end of a line and "03" on the next into "3.8e03").
    return run("pdftotext", "-raw", "-enc", "UTF-8", str(pdf), "-")


def squeezed(text: str) -> str:
    # Line breaks (and the spaces around them) fall anywhere in the PDF's text, even inside a
    # number such as 1e-14; compare with no whitespace at all.
    return re.sub(r"\s+", "", text)


def book_pages() -> list[str]:
    """Every page of the book, in the order of _toc.yml, as paths like book/01_rnn_bptt."""
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]
    for part in toc.get("parts", [toc]):
        files += [chapter["file"] for chapter in part.get("chapters", [])]
    return files


def page_html(site: Path, page: str) -> str:
    return (site / f"{page}.html").read_text(encoding="utf-8")


def article(page: str) -> str:
    return page.split('<article class="bd-article">', 1)[1].split("</article>", 1)[0]


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def title_of(site: Path, page: str) -> str:
    heading = re.search(r"<h1>(.*?)</h1>", article(page_html(site, page)), re.DOTALL).group(1)
    heading = re.sub(r'<a class="headerlink".*?</a>', "", heading)
    return text_of(heading).strip()


def test_the_pdf_opens_as_a_book(edition):
    pdf = edition.pdf
    info = run("pdfinfo", str(pdf))
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1))
    assert pages >= MIN_PAGES, f"only {pages} pages"
    title = edition.config["title"]
    assert re.search(rf"^Title:\s+{re.escape(title)}$", info, re.MULTILINE), info
    # A4 (595 x 842 points), every page.
    sizes = run("pdfinfo", "-f", "1", "-l", str(pages), str(pdf))
    assert set(re.findall(r"size:\s+([\d.]+ x [\d.]+) pts", sizes)) == {"595.92 x 842.88"}


def test_the_title_page_names_title_author_and_date(edition):
    # The edition's own title (the Chinese one from the configuration edition_config.py writes).
    pdf, config = edition.pdf, edition.config
    first = run("pdftotext", "-enc", "UTF-8", "-f", "1", "-l", "1", str(pdf), "-")
    assert squeezed(config["title"]) in squeezed(first), f"no title on the title page: {first!r}"
    assert config["author"] in first, f"no author on the title page: {first!r}"
    assert re.search(r"20\d\d", first), f"no date on the title page: {first!r}"


def test_the_contents_page_is_in_the_editions_language(edition):
    second = run("pdftotext", "-enc", "UTF-8", "-f", "2", "-l", "2", str(edition.pdf), "-")
    heading = LABELS[edition.language]["contents"]
    assert second.lstrip().startswith(heading), f"page 2 is not the contents: {second[:200]!r}"


def test_every_page_is_numbered(edition):
    pdf = edition.pdf
    info = run("pdfinfo", str(pdf))
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1))
    for number in (2, pages // 2, pages):
        # The bottom margin of the page (A4: 842 points high) holds its number and nothing else.
        footer = run("pdftotext", "-enc", "UTF-8", "-f", str(number), "-l", str(number),
                     "-x", "0", "-y", "790", "-W", "596", "-H", "53", str(pdf), "-")
        assert footer.split() == [str(number)], f"page {number}'s footer says {footer!r}"


def test_every_page_title_is_in_the_pdf(edition):
    site, pdf = edition.site, edition.pdf
    text = squeezed(pdf_text(pdf))
    for page in book_pages():
        title = title_of(site, page)
        assert squeezed(title) in text, f"{page}: title {title!r} not in the PDF"


def test_the_contents_link_inside_the_pdf(edition):
    site, pdf = edition.site, edition.pdf
    destinations = run("pdfinfo", "-dests", str(pdf))
    for page in book_pages()[1:]:
        section_id = re.search(r'<section[^>]* id="([^"]+)"', article(page_html(site, page)))
        assert f'"{section_id.group(1)}"' in destinations, f"no link target for {page}"


def test_glued_numbers_equal_the_sites(edition):
    site, pdf = edition.site, edition.pdf
    text = squeezed(pdf_text(pdf))
    glued = set()
    for page in book_pages():
        for value in re.findall(r'<span class="pasted-text">(.*?)</span>', page_html(site, page)):
            glued.add(text_of(value))
    numbers = sorted(v for v in glued if re.search(r"\d", v))
    assert len(numbers) >= 20, f"only {len(numbers)} glued numbers found in the site"
    missing = [v for v in numbers if squeezed(v) not in text]
    assert not missing, f"glued values of the site missing from the PDF: {missing[:10]}"


def test_no_raw_tex_in_the_pdf(edition):
    pdf = edition.pdf
    raw = RAW_TEX.findall(pdf_text(pdf))
    assert not raw, f"raw TeX in the PDF: {raw[:5]}"


def test_every_figure_is_in_the_pdf(edition):
    # MathJax draws math with fonts, not images, and print.css removes shadows (which Chromium
    # would print as images): the PDF's images are the site's figures, one for one.
    site, pdf = edition.site, edition.pdf
    figures = sum(len(re.findall(r"<img\b", article(page_html(site, page))))
                  for page in book_pages())
    assert figures >= 10
    listing = run("pdfimages", "-list", str(pdf)).splitlines()[2:]
    images = [row for row in listing if row.split()[2] == "image"]
    assert len(images) == figures, f"{len(images)} images in the PDF, {figures} on the site"


def test_every_font_is_embedded(edition):
    pdf = edition.pdf
    header, dashes, *rows = run("pdffonts", str(pdf)).splitlines()
    # Columns are fixed-width, as wide as the runs of dashes under the header.
    spans = [m.span() for m in re.finditer(r"-+", dashes)]
    names = [header[a:b].strip() for a, b in spans]
    emb = names.index("emb")
    assert rows, "no fonts in the PDF"
    not_embedded = [row for row in rows if row[slice(*spans[emb])].strip() != "yes"]
    assert not not_embedded, "fonts not embedded:\n" + "\n".join(not_embedded)
    if edition.language.startswith("zh"):
        # The Chinese text is drawn in an embedded CJK face (fonts-noto-cjk), not a fallback.
        name = names.index("name")
        cjk = [row for row in rows if CJK_FONT.search(row[slice(*spans[name])])]
        assert cjk, "no CJK font in the Chinese PDF:\n" + "\n".join(rows)


def test_pages_are_light_even_for_a_dark_mode_reader(edition, tmp_path):
    pdf = edition.pdf
    # A chapter's first page, rendered small in grey: a light page averages close to white.
    text = pdf_text(pdf).split("\f")
    chapter_page = next(i for i, page in enumerate(text, 1) if page.lstrip().startswith("1. "))
    run("pdftoppm", "-gray", "-r", "20", "-f", str(chapter_page), "-l", str(chapter_page),
        str(pdf), str(tmp_path / "page"))
    pgm = next(tmp_path.glob("page*.pgm")).read_bytes()
    pixels = pgm.split(b"\n", 3)[3]
    assert sum(pixels) / len(pixels) > 200, "the page is dark"


def test_every_page_links_to_the_pdf(edition):
    site, pdf = edition.site, edition.pdf
    for page in book_pages():
        links = re.findall(r'href="([^"]*_downloads/[^"]*\.pdf)"', page_html(site, page))
        assert links, f"{page} has no link to the book's PDF"
        assert all((site / page).parent.joinpath(link).resolve() == pdf.resolve()
                   for link in links), f"{page} links to {links}, not to {pdf}"


def test_every_chinese_page_links_to_a_pdf_that_exists():
    """A link to a PDF that was never printed would be a dead link on every Chinese page (the
    test above, for the zh_CN edition, checks that the link is to the Chinese PDF)."""
    site = REPO / "_build" / "html" / "zh_CN"
    if not site.exists():
        skip_or_fail("no Chinese edition in _build/html/zh_CN: run make book first")
    for page in book_pages():
        links = re.findall(r'href="([^"]*_downloads/[^"]*\.pdf)"', page_html(site, page))
        assert links, f"zh_CN/{page} has no link to a PDF"
        missing = [link for link in links if not (site / page).parent.joinpath(link).exists()]
        assert not missing, f"zh_CN/{page} links to PDFs that do not exist: {missing}"


def footer_stamp(site: Path) -> dict:
    """The build stamp of the edition's landing page (every page has the same one: see
    tests/test_browser.py), its text and the commit and date it names."""
    stamp = re.search(r'<p class="build-stamp" data-commit="([^"]*)" data-date="([^"]*)"\s+'
                      r'data-dirty="([^"]*)">([^<]*)</p>', page_html(site, book_pages()[0]))
    assert stamp, "no build stamp in the page's footer"
    return dict(zip(("commit", "date", "dirty", "text"), stamp.groups(), strict=True))


def test_the_title_page_carries_the_build_stamp(edition):
    """As the edition's pages show it, and from the same build as the other edition's PDF."""
    stamp = footer_stamp(edition.site)
    first = run("pdftotext", "-enc", "UTF-8", "-f", "1", "-l", "1", str(edition.pdf), "-")
    assert html.unescape(stamp["text"]) in first, f"no {stamp['text']!r} on the title page"
    english = footer_stamp(EDITIONS["en"])
    assert [stamp[k] for k in ("commit", "date", "dirty")] == [
        english[k] for k in ("commit", "date", "dirty")]


def test_the_pdf_is_tagged(edition):
    info = run("pdfinfo", str(edition.pdf))
    assert re.search(r"^Tagged:\s+yes$", info, re.MULTILINE), info


def outline_xml(pdf: Path) -> ElementTree.Element:
    """The PDF's outline (its bookmarks), read from poppler's XML rendering."""
    xml = run("pdftohtml", "-xml", "-i", "-q", "-stdout", "-f", "1", "-l", "1", str(pdf))
    start, end = xml.find("<outline>"), xml.rfind("</outline>")
    assert start >= 0, "the PDF has no outline"
    return ElementTree.fromstring(xml[start:end + len("</outline>")])


def outline(pdf: Path) -> list[tuple[str, list]]:
    """The PDF's outline as (title, children) pairs."""

    def entries(element) -> list[tuple[str, list]]:
        found = []
        for child in element:
            if child.tag == "item":
                found.append(("".join(child.itertext()), []))
            elif child.tag == "outline":
                found[-1][1].extend(entries(child))
        return found

    return entries(outline_xml(pdf))


def plain_heading(fragment: str) -> str:
    """A heading's text as a bookmark holds it: no permalink, no math (MathJax draws formulas
    with glyphs of its own, which carry no text), whitespace collapsed."""
    fragment = re.sub(r'<a class="headerlink".*?</a>', "", fragment)
    fragment = re.sub(r'<span class="math[^"]*">.*?</span>', "", fragment)
    return " ".join(text_of(fragment).split())


def test_the_outline_lists_every_page_and_its_sections_in_the_editions_words(edition):
    entries = outline(edition.pdf)
    titles = [" ".join(title.split()) for title, _ in entries]
    # The contents page, then every page of the book in the order of the contents.
    pages = [plain_heading(re.search(r"<h1>(.*?)</h1>", article(page_html(edition.site, page)),
                                     re.DOTALL).group(1)) for page in book_pages()]
    assert titles == [LABELS[edition.language]["contents"], *pages], titles
    for page, (title, sections) in zip(book_pages(), entries[1:], strict=True):
        expected = [plain_heading(h) for h in re.findall(
            r"<h2>(.*?)</h2>", article(page_html(edition.site, page)), re.DOTALL)]
        found = [" ".join(section.split()) for section, _ in sections]
        assert found == expected, f"{page}: the bookmarks under {title!r} are {found}"


# The chapters whose cell outputs are bilingual (CONTRIBUTING.md, "Both editions").
BILINGUAL_CHAPTERS = [
    "book/01_rnn_bptt",
    "book/02_vanishing_exploding",
    "book/03_lstm",
    "book/04_transformer",
    "book/05_mini_transformer",
    "book/06_beyond_quadratic",
    "book/07_real_text",
]
# A bilingual output's HTML, as longdep.book writes it: one div per language.
LANGUAGE_PART = re.compile(r'<div class="longdep-lang" lang="([\w-]+)">(.*?)</div>'
                           r'(?=<div class="longdep-lang"|$)', re.DOTALL)


def bilingual_lines(notebook: Path) -> dict[str, set[str]]:
    """The lines of text of a notebook's bilingual outputs (printed texts, table cells), by
    language tag ("en", "zh-CN")."""
    lines = {}
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        for output in cell.get("outputs", []):
            for language, part in LANGUAGE_PART.findall("".join(
                    output.get("data", {}).get("text/html", ""))):
                if part.startswith("<img"):
                    continue  # a figure: its words are pixels
                cells = re.split(r"</t[hd]>|\n", part) if part.startswith("<table") else \
                    part.split("\n")
                lines.setdefault(language, set()).update(
                    text for text in (text_of(cell).strip() for cell in cells) if text)
    return lines


def chapter_pages(edition: Edition, page: str) -> str:
    """The text of the PDF pages of one chapter: from the page its bookmark points to up to the
    page before the next top-level bookmark's (the first bookmark is the contents page's, then
    one for every page of the book in the order of _toc.yml)."""
    starts = [int(item.get("page")) for item in outline_xml(edition.pdf) if item.tag == "item"]
    number = book_pages().index(page) + 1
    text = pdf_text(edition.pdf).split("\f")
    return "".join(text[starts[number] - 1:starts[number + 1] - 1])


@pytest.mark.parametrize("page", BILINGUAL_CHAPTERS)
def test_a_chapter_of_the_pdf_shows_the_outputs_of_its_own_language(edition, page):
    """The PDF of each edition prints its own language's outputs of a chapter whose outputs are
    bilingual, and none of the other language's (the lines the two languages do not share; a
    line that the page holds outside its outputs, such as a table's header in the code or a
    Chinese term beside the English one in the text, is printed with them)."""
    # The notebook as the build executed it, whose outputs the PDF prints (a timing prints other
    # digits on every run than the committed notebook holds).
    notebook = EXECUTED / f"{page}.ipynb"
    if not notebook.exists():
        skip_or_fail(f"no executed notebook at {notebook}: run `make book` first")
    lines = bilingual_lines(notebook)
    own = lines["zh-CN" if edition.language.startswith("zh") else "en"]
    page_text = BeautifulSoup(article(page_html(edition.site, page)), "html.parser")
    for output in page_text.select("div.cell_output"):
        output.decompose()
    held = squeezed(page_text.get_text())
    other = {line for line in lines["en" if edition.language.startswith("zh") else "zh-CN"]
             if line not in own and squeezed(line) not in held}
    assert len(own) > 20 and len(other) > 5, "the chapter prints texts and tables"
    text = squeezed(chapter_pages(edition, page))
    missing = [line for line in own if squeezed(line) not in text]
    assert not missing, f"outputs missing from the {edition.language} PDF: {missing[:5]}"
    foreign = [line for line in other if squeezed(line) in text]
    assert not foreign, f"the other language's outputs in the {edition.language} PDF: {foreign}"

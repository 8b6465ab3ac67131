"""The built book in a real browser: headless Chromium (Debian's package) driven by Playwright.

Every page of both editions (English in _build/html, 简体中文 in _build/html/zh_CN), in the
theme's light and dark mode, as one visit of tests/page_visit.py finds it (opened from file://,
as a reader opens _build/html/index.html): no JavaScript error, no failed request and none for
anything outside the site, every image loaded, all math typeset by MathJax with no error and no
raw TeX left, and Chinese text drawn in a CJK font (the fonts Chromium actually used, asked
through the DevTools protocol), not as missing-glyph boxes; every cell output of a Chinese page
in Chinese. Other tests follow a link, a redirect or the footer over HTTP, as a reader's server
serves the site, or read the built pages as files. Run `make book` first (`make test` does).
Screenshots land in _build/screenshots/ for a person to look at.

Without Chromium the tests skip, saying how to install it; with CI=true or
LONGDEP_REQUIRE_BROWSER=1 a missing browser is a failure instead.
"""

import json
import os
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from build_stamp import read_stamp, stamp_text
from chromium import (
    CHROMIUM_FLAGS,
    RAW_TEX,
    browser_required,
    chromium_path,
    site_pages,
)
from page_visit import SCHEMES, SCREENSHOTS, chinese_font_problems

REPO = Path(__file__).resolve().parents[1]

SITE = REPO / "_build" / "html"
ZH = SITE / "zh_CN"
CJK = re.compile(r"[\u4e00-\u9fff]")


def pages() -> list[str]:
    return site_pages(SITE)


def test_the_book_has_pages():
    if not pages() and not browser_required():
        pytest.skip("no built book: run `make book` first")
    assert "book/intro.html" in pages()
    assert "book/01_rnn_bptt.html" in pages()


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("page_path", pages() or ["book/intro.html"])
def test_page_renders_cleanly(visit, page_path, scheme):
    found = visit(page_path)
    seen = found.seen[scheme]
    assert not found.problems, "\n".join(found.problems)
    assert seen["theme"] == scheme
    assert not seen["brokenImages"], f"images that did not load: {seen['brokenImages']}"
    if seen["mathCount"]:
        assert found.has_mathjax, "the page has math but MathJax did not load"
    assert seen["untypesetMath"] == 0, f"{seen['untypesetMath']} math elements left untypeset"
    assert not seen["mathErrors"], f"MathJax errors: {seen['mathErrors']}"
    raw = RAW_TEX.findall(seen["text"])
    assert not raw, f"raw TeX left in the page: {raw[:5]}"
    assert not found.tofu, ("Chinese text drawn without a CJK font (install Debian's "
                            "fonts-noto-cjk):\n" + "\n".join(found.tofu[:5]))
    if page_path.startswith("zh_CN/book/"):
        assert found.chinese_runs, "a page of the Chinese edition with no Chinese text"


def test_the_front_door_redirects_to_the_landing_page(browser, server):
    page = browser.new_page()
    page.goto(f"{server}/index.html")
    page.wait_for_url("**/book/intro.html")
    assert "Transformer from 0 to 1" in page.title()
    page.close()


def test_the_chinese_front_door_redirects_to_the_chinese_landing_page(browser, server):
    page = browser.new_page()
    page.goto(f"{server}/zh_CN/index.html")
    page.wait_for_url("**/zh_CN/book/intro.html")
    assert page.evaluate("() => document.documentElement.lang") == "zh-CN"
    page.close()


@pytest.mark.parametrize("start", ["book/intro.html", "book/02_vanishing_exploding.html"])
def test_the_language_link_leads_to_the_same_page_and_back(browser, server, start):
    page = browser.new_page()
    page.goto(f"{server}/{start}", wait_until="load")
    page.click("a.language-switcher[hreflang='zh-CN']")
    page.wait_for_url(f"**/zh_CN/{start}")
    assert page.evaluate("() => document.documentElement.lang") == "zh-CN"
    page.click("a.language-switcher[hreflang='en']")
    page.wait_for_url(f"{server}/{start}")
    assert page.evaluate("() => document.documentElement.lang") == "en"
    page.close()


def test_missing_chinese_fonts_are_caught(tmp_path, browser, server):
    """The font check itself: a Chromium that sees no CJK font (fontconfig limited to the
    Latin fonts) draws the glossary's Chinese terms as boxes, and the check says so."""
    latin = Path("/usr/share/fonts/truetype")
    if not latin.exists():
        pytest.skip("needs Latin fonts in /usr/share/fonts/truetype")
    (tmp_path / "fonts.conf").write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>'
        f"<dir>{latin}</dir><cachedir>{tmp_path / 'cache'}</cachedir></fontconfig>\n")
    env = {**os.environ, "FONTCONFIG_FILE": str(tmp_path / "fonts.conf")}
    # a second Chromium from the session's Playwright (a second Playwright cannot start)
    without_cjk = browser.browser_type.launch(executable_path=chromium_path(),
                                              args=CHROMIUM_FLAGS, env=env)
    context = without_cjk.new_context()
    page = context.new_page()
    page.goto(f"{server}/book/glossary.html", wait_until="load")
    count, problems = chinese_font_problems(context, page)
    without_cjk.close()
    assert count > 10
    assert len(problems) == count, problems[:3]


def test_chapter_pages_have_typeset_math_and_figures(visit):
    found = visit("book/01_rnn_bptt.html").seen["light"]
    assert found["typesetCount"] > 20
    assert found["imageCount"] >= 1


def test_sitemap_lists_every_page():
    if not SITE.exists() and not browser_required():
        pytest.skip("no built book: run `make book` first")
    for edition in ("", "zh_CN/"):
        sitemap = (SITE / edition / "sitemap.xml").read_text()
        for page in pages():
            if page.startswith(f"{edition}book/"):
                assert f"/{page}</loc>" in sitemap, page


# ---- the two editions, read as files -------------------------------------------------------

def english_pages() -> list[str]:
    if not ZH.exists():
        return []
    return sorted(str(p.relative_to(SITE)) for p in (SITE / "book").glob("*.html"))


def built():
    if not (ZH / "book" / "intro.html").exists():
        message = "no Chinese edition in _build/html/zh_CN: run `make book` first"
        if browser_required():
            pytest.fail(message)
        pytest.skip(message)


def pasted(page: Path) -> list[str]:
    """The glued values of a built page, in order."""
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    article = soup.find("article") or soup
    return [span.get_text() for span in article.select("span.pasted-text")]


NUMBER = re.compile(r"[-+]?\d[\d.,]*(?:e[-+]?\d+)?")


@pytest.mark.parametrize("page", english_pages() or ["book/intro.html"])
def test_every_glued_number_of_a_chinese_page_is_the_english_number(page):
    built()
    english, chinese = pasted(SITE / page), pasted(ZH / page)
    # A translated paragraph may order its numbers differently: compare them as multisets. A
    # glued word or phrase has its Chinese (the _zh key of longdep.book.chapter_glue) on the
    # Chinese page: the numbers inside the pasted values are the same.
    assert len(chinese) == len(english), page
    assert sorted(n for v in chinese for n in NUMBER.findall(v)) == \
        sorted(n for v in english for n in NUMBER.findall(v)), page
    assert all(value.strip() for value in chinese), "an empty pasted number"


@pytest.mark.parametrize("page", english_pages() or ["book/intro.html"])
def test_every_page_has_one_search_box(page):
    """The sidebar's, in both editions: pydata-sphinx-theme 0.17 adds a second, in a top bar of
    its own, unless told not to (book/_ext/chinese_search.py)."""
    built()
    for here in (SITE / page, ZH / page):
        soup = BeautifulSoup(here.read_text(encoding="utf-8"), "html.parser")
        boxes = soup.select("button.search-button-field")
        assert len(boxes) == 1 and boxes[0].find_parent(class_="bd-sidebar-primary"), here
        assert not soup.select(".navbar-persistent--container, .navbar-persistent--mobile")


@pytest.mark.parametrize("page", english_pages() or ["book/intro.html"])
def test_every_page_links_to_the_same_page_in_the_other_edition(page):
    built()
    for here, there, language in ((SITE / page, ZH / page, "zh-CN"),
                                  (ZH / page, SITE / page, "en")):
        soup = BeautifulSoup(here.read_text(encoding="utf-8"), "html.parser")
        link = soup.select_one(f"a.language-switcher[hreflang='{language}']")
        assert link is not None, f"{here}: no link to the {language} edition"
        assert (here.parent / link["href"]).resolve() == there.resolve()
        alternates = {a["hreflang"]: a["href"]
                      for a in soup.select("link[rel=alternate][hreflang]")}
        assert alternates["en"].endswith(f"/{page}") and "/zh_CN/" not in alternates["en"]
        assert alternates["zh-CN"].endswith(f"/zh_CN/{page}")


def test_the_chinese_search_index_splits_chinese_words():
    built()
    index = (ZH / "searchindex.js").read_text(encoding="utf-8")
    terms = json.loads(index[index.index("(") + 1: index.rindex(")")])["terms"]
    chinese = [t for t in terms if CJK.search(t)]
    # jieba splits words: a term is a word of a few characters, not a whole sentence
    assert len(chinese) > 100
    assert "梯度" in terms
    assert sorted(len(t) for t in chinese)[len(chinese) // 2] <= 4


def test_the_chinese_edition_speaks_chinese_around_untranslated_chapters():
    """Sphinx's, the theme's and the extensions' own words come from their zh_CN catalogs (or
    the Chinese edition's settings), even on a chapter whose prose awaits its translation."""
    built()
    chapter = (ZH / "book" / "02_vanishing_exploding.html").read_text(encoding="utf-8")
    for words in ("练习 2.1", "解答", "上一页", "下一页", "搜索", "点击显示"):
        assert words in chapter, words
    statistics = (ZH / "book" / "execution_statistics.html").read_text(encoding="utf-8")
    assert "运行时间（秒）" in statistics and "Run Time" not in statistics
    assert "缓存" in statistics and ">cache<" not in statistics


def glossary_terms(page: Path) -> list[str]:
    """The terms of a built glossary page, in the order the reader sees them."""
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    terms = soup.select("article dl.glossary > dt")
    for link in soup.select("article dl.glossary > dt a.headerlink"):
        link.decompose()
    return [term.get_text(" ", strip=True) for term in terms]


def test_the_glossary_is_alphabetical_in_english_and_in_pinyin_order_in_chinese():
    """English in the order of the source; Chinese re-sorted by book/_ext/glossary_order.py."""
    built()
    from glossary_order import pinyin_key

    english = glossary_terms(SITE / "book" / "glossary.html")
    chinese = glossary_terms(ZH / "book" / "glossary.html")
    assert len(english) == len(chinese) >= 40
    assert english == sorted(english, key=str.lower)
    assert chinese == sorted(chinese, key=pinyin_key)
    # by hand: bǎo first; 长 read cháng, so 长程依赖 before 词元袋 (cí); Latin initials last
    assert chinese[0].startswith("饱和")
    position = {term.split("（")[0]: i for i, term in enumerate(chinese)}
    assert position["长程依赖"] < position["词元袋"]
    assert [t[:7] for t in chinese[-3:]] == ["Post-LN", "Pre-LN（", "softmax"]


def test_the_execution_table_marks_status_in_a_font_every_machine_has():
    """myst-nb's emoji marks (drawn as boxes without an emoji font) become DejaVu's check marks;
    every chapter of the build you read executed, so every row has one."""
    built()
    for site in (SITE, ZH):
        statistics = (site / "book" / "execution_statistics.html").read_text(encoding="utf-8")
        assert "✅" not in statistics and "❌" not in statistics
        chapters = len(list((REPO / "book").glob("[0-9][0-9]_*.ipynb")))
        assert statistics.count("✓") > chapters, site  # a mark per chapter, one in the prose


# ---- the build stamp ------------------------------------------------------------------------

def stamps_of(site: Path, folder: str) -> dict[str, dict]:
    """The build stamp of every page of an edition: its text and the data it shows."""
    found = {}
    for page in pages():
        if page.startswith("zh_CN/") != (folder == "zh_CN/"):
            continue
        soup = BeautifulSoup((SITE / page).read_text(encoding="utf-8"), "html.parser")
        stamps = soup.select("footer .build-stamp")
        assert len(stamps) == 1, f"{page}: {len(stamps)} build stamps in the footer"
        found[page] = {"text": stamps[0].get_text(strip=True), "commit": stamps[0]["data-commit"],
                       "date": stamps[0]["data-date"], "dirty": stamps[0]["data-dirty"] == "true"}
    return found


def test_every_page_of_both_editions_is_stamped_with_the_commit_built():
    """Every page's footer names the commit that `make book` built (HEAD, unless it moved since:
    then rebuild), its date, and uncommitted changes if there were any; the same on every page
    of both editions, each in its own words (book/_ext/build_stamp.py)."""
    built()
    head = read_stamp(REPO)
    states = set()
    for folder, language in (("", "en"), ("zh_CN/", "zh_CN")):
        stamps = stamps_of(SITE, folder)
        assert len(stamps) >= 10, folder
        for page, stamp in stamps.items():
            assert (stamp["commit"], stamp["date"]) == (head["commit"], head["date"]), (
                f"{page} is stamped {stamp['commit']} of {stamp['date']}, HEAD is "
                f"{head['commit']} of {head['date']}: run `make book` again")
            assert stamp["text"] == stamp_text(stamp, language), page
            states.add(stamp["dirty"])
    assert len(states) == 1, "pages of one build disagree on uncommitted changes"


# The stamp as a reader sees it: its box, its text, and the contrast of its colour with the
# background behind it (WCAG's ratio of relative luminances).
READ_STAMP = """() => {
  const stamp = document.querySelector('footer .build-stamp');
  if (!stamp) return null;
  stamp.scrollIntoView();
  const rgb = c => c.match(/[\\d.]+/g).map(Number);
  const luminance = ([r, g, b]) => [r, g, b].map(v => v / 255)
    .map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  let back = stamp;
  while (back && rgb(getComputedStyle(back).backgroundColor)[3] === 0) back = back.parentElement;
  const [fore, behind] = [getComputedStyle(stamp).color,
                          back ? getComputedStyle(back).backgroundColor : 'rgb(255, 255, 255)'];
  const [a, b] = [luminance(rgb(fore)), luminance(rgb(behind))];
  const box = stamp.getBoundingClientRect();
  return {text: stamp.innerText.trim(), width: box.width, height: box.height,
          contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)};
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("folder", ["", "zh_CN/"])
def test_the_build_stamp_is_readable_in_the_footer(browser, server, folder, scheme):
    """Shown in the footer of a chapter, legible in light and dark mode (contrast at least 4.5,
    WCAG AA); the footer's screenshot is _build/screenshots/footer-<edition>-<scheme>.png."""
    context = browser.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{server}/{folder}book/03_lstm.html", wait_until="load")
    found = page.evaluate(READ_STAMP)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    edition = folder.strip("/") or "en"
    page.locator("footer.bd-footer-content").screenshot(
        path=SCREENSHOTS / f"footer-{edition}-{scheme}.png")
    context.close()
    assert found, "no build stamp in the footer"
    assert found["width"] > 0 and found["height"] > 0, "the stamp is not displayed"
    assert re.fullmatch(r"(Build|构建) [0-9a-f]{7,}(, |，)\d{4}-\d\d-\d\d.*", found["text"]), found
    assert found["contrast"] >= 4.5, found


# ---- the Chinese edition's interface --------------------------------------------------------

# What the Chinese pages' interface says, as a reader's browser shows it (after the scripts ran):
# every title, aria-label, alt, data-bs-title, data-bs-original-title (Bootstrap's tooltips) and
# data-tooltip attribute, and the text of the
# header's buttons, both sidebars (not their links, which are the pages' own titles), the footer,
# the previous/next links, the solutions' titles, and the execution-statistics table's headers and
# method words (its other cells are file names, dates, times and marks). Not checked
# here: the search box (its own test), figures' alt texts and the citations' tooltips (the
# cited works' titles), and the language link, which names English in English.
INTERFACE_TEXTS = """() => {
  const skip = 'form.bd-search, #pst-search-dialog, .search-button-field, a.language-switcher, '
    + 'article img, .bibtex-citation a, a.reference.external[title], nav a.reference';
  const attributes = ['title', 'aria-label', 'alt', 'data-bs-title', 'data-bs-original-title',
                      'data-tooltip'];
  const found = [];
  document.querySelectorAll('*').forEach(e => {
    if (e.closest(skip)) return;
    attributes.forEach(a => e.hasAttribute(a)
                       && found.push([`${e.tagName} @${a}`, e.getAttribute(a)]));
  });
  const chrome = ['.bd-header-article', '.bd-sidebar-primary', '.bd-sidebar-secondary',
                  '.bd-footer-content', '.prev-next-area',
                  '.admonition.solution > .admonition-title'];
  document.querySelectorAll(chrome.join(', ')).forEach(block => {
    const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
    for (let node; (node = walker.nextNode());) {
      if (node.parentElement.closest(skip) || !node.data.trim()) continue;
      found.push([`text in ${block.className}`, node.data.trim()]);
    }
  });
  document.querySelectorAll('table').forEach(table => {
    if (!/运行时间|Run Time/.test(table.innerText)) return;
    table.querySelectorAll('th, td').forEach(cell => {
      const text = cell.innerText.trim();
      // not the file names, dates, times and marks
      if (cell.tagName === 'TH' || !/[\\d/✓✗]/.test(text)) found.push(['execution table', text]);
    });
  });
  return found;
}"""
# Latin words a Chinese page's interface may show: names, file types, keys, the book's title.
NOT_ENGLISH = {"Binder", "Colab", "PDF", "pdf", "ipynb", "md", "Ctrl", "longdep", "Transformer"}


@pytest.mark.parametrize("page_path", ["book/03_lstm.html", "book/intro.html",
                                       "book/execution_statistics.html"])
def test_a_chinese_page_has_no_english_interface(browser, server, page_path):
    """Chapter 3 (solutions, code cells, figures, launch buttons), the landing page and the
    execution statistics, in the Chinese edition: no English word in their interface
    (INTERFACE_TEXTS lists what is read), and the words issue 25 named: 打印为 PDF for the print
    button (never the Taiwan usage 列印), solutions titled "练习 3.1 解答", 缓存 in the table."""
    page = browser.new_page()
    page.goto(f"{server}/zh_CN/{page_path}", wait_until="load")
    page.wait_for_load_state("networkidle")
    texts = page.evaluate(INTERFACE_TEXTS)
    solutions = page.eval_on_selector_all(".admonition.solution > .admonition-title",
                                          "titles => titles.map(t => t.innerText.trim())")
    # (Bootstrap moves a tooltip's title into data-bs-original-title)
    print_button = page.eval_on_selector(".btn-download-pdf-button", "b => b.getAttribute("
                                         "'data-bs-original-title') || b.title")
    page.close()
    english = [(where, text) for where, text in texts
               if set(re.findall(r"\b[A-Za-z]{2,}\b", text)) - NOT_ENGLISH]
    assert not english, "English in the interface:\n" + "\n".join(map(str, english[:20]))
    assert print_button == "打印为 PDF"
    assert not [text for _, text in texts if "列印" in text]
    if page_path == "book/03_lstm.html":
        assert len(solutions) >= 3, solutions
        assert all(re.fullmatch(r"练习 3\.\d+ 解答", title) for title in solutions), solutions
    if page_path == "book/execution_statistics.html":
        assert "缓存" in {text for _, text in texts}


# ---- what a cell shows, in the page's language (one execution, book/_ext/bilingual_outputs.py)

# The chapters whose cell outputs are bilingual (CONTRIBUTING.md, "Both editions"): on the
# Chinese page they are Chinese, on the English page English.
BILINGUAL_CHAPTERS = [
    "book/01_rnn_bptt.html",
    "book/02_vanishing_exploding.html",
    "book/03_lstm.html",
    "book/04_transformer.html",
    "book/05_mini_transformer.html",
    "book/06_beyond_quadratic.html",
    "book/07_real_text.html",
]
# Latin words a Chinese output may keep: names of code and of libraries, as the prose keeps them.
CODE_NAMES = {
    "autograd", "PyTorch", "torch", "tanh", "softmax", "BPTT", "RNN", "LSTM", "GRU",
    # chapter 3
    "IRNN", "relu", "Python", "Adam", "Wilson",
    # chapter 4: models, authors and symbols its Chinese prose keeps as they are
    "Transformer", "Post", "Pre", "LN", "Glorot", "RoPE", "FoX", "ALiBi", "Vaswani", "FLOPs",
    "PE", "pos",
    # chapter 2
    "sigmoid", "diag", "inf", "NaN", "SGD", "LRU",
    # chapter 5
    "LayerNorm", "longdep", "AttributeError", "RuntimeError", "nan",
    # chapter 6
    "SSM", "BigBird", "Performer", "FAVOR", "ValueError", "MFLOP", "MiB", "KiB", "GiB",
    "log", "minGRU", "Mamba", "DeltaNet", "GLA", "mLSTM", "xLSTM", "WY", "exp",
    # chapter 7
    "SHA",
}
# Chapter 7 shows an excerpt of its corpus, English technical text, in both editions: a line of
# output that the corpus holds verbatim is a quotation, not an untranslated output.
CORPUS = (REPO / "code" / "longdep" / "data" / "pydoc_topics.txt").read_text(encoding="utf-8")


def unquoted(text: str) -> str:
    """``text`` without its lines that quote the corpus (lines of 20 characters or more that
    the corpus holds verbatim)."""
    return "\n".join(line for line in text.split("\n")
                     if len(line.strip()) < 20 or line.strip() not in CORPUS)


def english_words(text: str) -> list[str]:
    """The English words of a text: runs of two or more Latin letters, but not code names
    (weight_hh, float32: a word with a digit or an underscore) or CODE_NAMES."""
    return [word for word in re.findall(r"\w+", text)
            if re.fullmatch(r"[A-Za-z]{2,}", word) and word not in CODE_NAMES]


def output_count(page: Path) -> int:
    """How many outputs the built page's cells show (OUTPUTS counts the same in the browser)."""
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    return len(soup.select("article div.cell_output .output"))


# Each edition's page is visited by the test of its own edition (`make test` runs the Chinese
# pages' tests in a process of their own, tests/page_visit.py), so each test reads one visit.
@pytest.mark.parametrize("page_path", [f"zh_CN/{page}" for page in BILINGUAL_CHAPTERS])
def test_every_output_of_a_chinese_chapter_page_is_chinese(visit, page_path):
    """Every cell output of the page, shown or in a closed dropdown, and every figure's alt
    text: no English word left (code names and numbers aside), as many outputs as on the
    English page."""
    chinese = visit(page_path).outputs
    assert chinese["texts"] and chinese["alts"], "the chapter shows outputs and figures"
    left = [word for text in chinese["texts"] + chinese["alts"]
            for word in english_words(unquoted(text))]
    assert not left, f"{len(left)} English words in the Chinese page's outputs: {left}"
    assert all(len(CJK.findall(alt)) > 20 for alt in chinese["alts"]), chinese["alts"]
    english_page = SITE / page_path.removeprefix("zh_CN/")
    assert len(chinese["texts"]) == output_count(english_page), "the same outputs in both editions"


@pytest.mark.parametrize("page_path", BILINGUAL_CHAPTERS)
def test_no_output_of_an_english_chapter_page_is_chinese(visit, page_path):
    """Every cell output and every figure's alt text of the English page: no Chinese character,
    and alt texts in English."""
    english = visit(page_path).outputs
    assert english["texts"] and english["alts"], "the chapter shows outputs and figures"
    assert not [text for text in english["texts"] + english["alts"] if CJK.search(text)]
    assert all(len(english_words(alt)) > 20 for alt in english["alts"]), english["alts"]
    assert len(english["texts"]) == output_count(SITE / page_path)

"""Search in both editions, in headless Chromium: what a reader types finds the pages holding it.

A query is typed as a reader types it: the edition's search page is opened with it
(`search.html?q=...`, what the search box submits), served over HTTP as in tests/test_browser.py,
and its results are read once Sphinx has listed them with their snippets (the `server` and
`browser` fixtures are in conftest.py).

- Every glossary term finds its entry in the glossary first: in the English edition the terms of
  book/glossary.md, in the Chinese edition their Chinese (the glossary's catalog). In the Chinese
  edition a term also finds every page whose text holds it, and lists those pages first.
- Each query of QUERIES (phrases, and Chinese mixed with Latin) finds exactly the pages whose text
  holds each of its words; in the Chinese edition the pages that hold the whole phrase come first,
  and their snippets show it.
- A query that no page matches says so, in the edition's language.
- The Chinese edition's search box says 搜索本书…; the English edition keeps Sphinx's search.

Run `make book` first (`make test` does). Without Chromium or a built book the tests skip,
saying why; with CI=true or LONGDEP_REQUIRE_BROWSER=1 they fail instead.
"""

import functools
import json
import re
from dataclasses import dataclass
from urllib.parse import quote

import pytest
import snowballstemmer
from babel.messages.pofile import read_po
from bs4 import BeautifulSoup
from test_browser import REPO, SITE, built

EDITIONS = {"en": "", "zh_CN": "zh_CN/"}
GLOSSARY = "book/glossary.html"
# (edition, query, the words a page must hold to be found: as text in Chinese, lower case)
QUERIES = [
    ("zh_CN", "梯度消失的条件", ["梯度", "消失", "条件"]),
    ("zh_CN", "LSTM 遗忘门偏置", ["lstm", "遗忘门", "偏置"]),
    ("zh_CN", "LSTM遗忘门偏置", ["lstm", "遗忘门", "偏置"]),
    ("zh_CN", "长程依赖与注意力", ["长程", "依赖", "注意力"]),
    ("zh_CN", "残差连接和层归一化", ["残差", "连接", "层归一化"]),
    ("zh_CN", "Transformer 位置编码", ["transformer", "位置", "编码"]),
    ("zh_CN", "梯度裁剪的阈值", ["梯度", "裁剪", "阈值"]),
    ("zh_CN", "谱半径大于 1", ["谱半径", "大于"]),
    ("zh_CN", "softmax 饱和", ["softmax", "饱和"]),
    ("en", "vanishing gradient", ["vanish", "gradient"]),
    ("en", "forget gate bias", ["forget", "gate", "bias"]),
    ("en", "spectral radius", ["spectral", "radius"]),
]
NO_MATCH = {"en": "quantum entanglement", "zh_CN": "量子纠缠"}
PORTER = snowballstemmer.stemmer("porter")  # the stemmer of Sphinx's English index


def glossary_terms(edition: str) -> list[str]:
    """The glossary's terms as a reader of the edition types them."""
    source = (REPO / "book" / "glossary.md").read_text(encoding="utf-8")
    block = source.split("```{glossary}")[1].split("```")[0]
    english = [line.strip() for line in block.splitlines() if line and not line[0].isspace()]
    if edition == "en":
        return english
    with (REPO / "book/locale/zh_CN/LC_MESSAGES/book/glossary.po").open("rb") as f:
        catalog = read_po(f)
    # "梯度消失（vanishing gradient）": the Chinese term, then the English in brackets
    return [catalog[term].string.split("（")[0].strip() for term in english]


def plain(text: str) -> str:
    """Text as a query is compared with it: lower case, without white space."""
    return re.sub(r"\s+", "", text).lower()


@functools.cache
def page_articles(edition: str) -> dict[str, str]:
    """Each page's own text: its article, as the search reads it."""
    texts = {}
    for path in sorted((SITE / EDITIONS[edition] / "book").glob("*.html")):
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        article = soup.select_one("[role=main] article")
        for removed in article.select("script, style, .headerlink"):
            removed.decompose()
        texts[f"book/{path.name}"] = article.get_text()
    return texts


@functools.cache
def page_texts(edition: str) -> dict[str, str]:
    return {page: plain(text) for page, text in page_articles(edition).items()}


@functools.cache
def page_stems(edition: str) -> dict[str, set[str]]:
    """Each page's words as Sphinx's English index holds them: Porter stems."""
    return {page: {PORTER.stemWord(word) for word in re.findall(r"\w+", text.lower())}
            for page, text in page_articles(edition).items()}


def pages_holding(edition: str, *words: str) -> set[str]:
    """The pages that hold every word: as text in Chinese, as a stem in English (where "biases"
    does not hold "bias")."""
    if edition == "en":
        return {page for page, stems in page_stems(edition).items()
                if all(PORTER.stemWord(word.lower()) in stems for word in words)}
    return {page for page, text in page_texts(edition).items()
            if all(plain(word) in text for word in words)}


@dataclass
class Results:
    status: str
    entries: list[dict]  # in the order shown: page, href, snippet

    @property
    def pages(self) -> list[str]:
        """The pages found, in the order in which each is first listed."""
        return list(dict.fromkeys(entry["page"] for entry in self.entries))


READ_RESULTS = """() => [...document.querySelectorAll('#search-results ul.search > li')].map(li => {
  const href = li.querySelector('a').getAttribute('href');
  const snippet = li.querySelector('p.context');
  return {href, page: href.split('#')[0], snippet: snippet && snippet.textContent};
})"""


def search(page, server, edition: str, query: str) -> Results:
    return read_results(page, f"{server}/{EDITIONS[edition]}search.html?q={quote(query)}")


def read_results(page, url: str, snippets: bool = True) -> Results:
    page.goto(url, wait_until="load")
    return shown_results(page, snippets)


def search_each(page, server, edition: str, queries: list[str]) -> dict[str, Results]:
    """Each query run in turn on one search page of the edition, loaded once with its index, by
    the call that a query in the page's address makes (Search.performSearch): the same search,
    without loading the page and its index again for every query (a load costs about a second
    of CPU). Without their snippets: each would fetch and parse a whole page, which is what a
    query costs (test_a_query_finds_the_pages_that_hold_its_words reads them)."""
    page.goto(f"{server}/{EDITIONS[edition]}search.html", wait_until="load")
    page.wait_for_function("() => Search.hasIndex()")
    page.evaluate("() => { DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false; }")
    found = {}
    for query in queries:
        page.evaluate("""(query) => {
          document.getElementById('search-results').replaceChildren();
          Search.performSearch(query);
        }""", query)
        found[query] = shown_results(page, snippets=False)
    return found


def shown_results(page, snippets: bool) -> Results:
    page.wait_for_function("() => document.querySelector('#search-results .search-summary')"
                           "?.innerText")
    if snippets:  # each is fetched after its entry is listed
        page.wait_for_function("() => [...document.querySelectorAll('#search-results ul.search"
                               " > li')].every(li => li.querySelector('p.context'))")
    status = page.inner_text("#search-results .search-summary")
    return Results(status, page.evaluate(READ_RESULTS))


@pytest.fixture
def reader(browser, server):
    """A search page, and the errors it raises."""
    built()
    page = browser.new_page()
    problems = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
    yield page, problems
    page.close()
    assert not problems, "\n".join(problems)


def phrase_pages_first(results: Results, pages_with_phrase: set[str]) -> bool:
    held = [page in pages_with_phrase for page in results.pages]
    return held == sorted(held, reverse=True)


def glossary_term_problems(results: Results, edition: str, term: str) -> list[str]:
    """What the results of a glossary term lack: the term's glossary entry first and, in the
    Chinese edition, every page that holds the term, those pages before the others."""
    problems = []
    if not results.entries or not results.entries[0]["href"].startswith(f"{GLOSSARY}#term-"):
        problems.append("its glossary entry is not the first result")
    if edition == "zh_CN":
        holding = pages_holding(edition, term)
        if missed := holding - set(results.pages):
            problems.append(f"pages that hold it are not found: {sorted(missed)}")
        if not phrase_pages_first(results, holding):
            problems.append(f"pages without it come first: {results.pages}")
    return problems


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_glossary_term_finds_its_entry_and_its_pages(reader, server, edition):
    page, _ = reader
    terms = glossary_terms(edition)
    assert len(terms) > 30
    problems = {term: glossary_term_problems(results, edition, term)
                for term, results in search_each(page, server, edition, terms).items()}
    failed = {term: found for term, found in problems.items() if found}
    assert not failed, (f"{edition}: {len(terms) - len(failed)} of {len(terms)} glossary terms "
                        f"found as they should be; not: {failed}")


@pytest.mark.parametrize(("edition", "query", "words"), QUERIES)
def test_a_query_finds_the_pages_that_hold_its_words(reader, server, edition, query, words):
    page, _ = reader
    results = search(page, server, edition, query)
    expected = pages_holding(edition, *words)
    assert expected, "a query written for the test must find something"
    assert set(results.pages) == expected
    assert all(entry["snippet"] for entry in results.entries)
    if edition == "zh_CN":
        whole = pages_holding(edition, query)
        assert phrase_pages_first(results, whole), results.pages
        for entry in results.entries:
            snippet = plain(entry["snippet"])
            assert any(word in snippet for word in words), entry
            if entry["page"] in whole and "#" not in entry["href"]:
                assert plain(query) in snippet, entry


@pytest.mark.parametrize("edition", EDITIONS)
def test_a_query_that_matches_nothing_says_so(reader, server, edition):
    page, _ = reader
    query = NO_MATCH[edition]
    assert not pages_holding(edition, *query.split()[:1]), "the query must match nothing"
    results = search(page, server, edition, query)
    said = page.evaluate("() => Documentation.gettext('Your search did not match any documents."
                         " Please make sure that all words are spelled correctly and that"
                         " you\\'ve selected enough categories.')")
    assert results.entries == []
    assert results.status == said
    assert (re.search(r"[\u4e00-\u9fff]", said) is not None) == (edition == "zh_CN")


def test_the_chinese_query_is_cut_into_the_index_words(reader, server):
    """The cut itself: the finest cut into the index's words; single characters the index does not
    hold are dropped; an unknown word stays whole."""
    page, _ = reader
    search(page, server, "zh_CN", "梯度")
    cut = page.evaluate("(queries) => queries.map(q => splitQuery(q))",
                        ["梯度消失的条件", "LSTM遗忘门偏置", "层归一化", "量子纠缠"])
    assert cut == [["梯度", "消失", "条件"], ["LSTM", "遗忘门", "偏置"], ["层归一化"], ["量子纠缠"]]


def test_the_search_box_speaks_the_edition_language():
    built()
    for edition, placeholder in (("en", "Search this book..."), ("zh_CN", "搜索本书…")):
        for path in (SITE / EDITIONS[edition]).glob("book/*.html"):
            soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
            boxes = soup.select("input[name=q]")
            assert boxes and {box["placeholder"] for box in boxes} == {placeholder}, path


def test_only_the_chinese_edition_cuts_its_queries():
    built()
    english = (SITE / "_static" / "language_data.js").read_text(encoding="utf-8")
    chinese = (SITE / "zh_CN" / "_static" / "language_data.js").read_text(encoding="utf-8")
    assert "ChineseSearch" not in english and "splitQuery" not in english
    assert "ChineseSearch" in chinese


def test_the_index_holds_the_glossary_terms_as_words():
    built()
    index = (SITE / "zh_CN" / "searchindex.js").read_text(encoding="utf-8")
    data = json.loads(index[index.index("(") + 1: index.rindex(")")])
    words = set(data["terms"]) | set(data["titleterms"])
    chinese = [w for t in glossary_terms("zh_CN") for w in re.findall(r"[\u4e00-\u9fff]{2,}", t)]
    assert [w for w in chinese if w not in words] == []


def test_from_file_the_chinese_search_still_finds_every_page(browser):
    """Opened from file:// (the README's "any browser"), where Chromium fetches no page: the index
    alone still finds the glossary entry first and every page that holds the term. Snippets,
    which Sphinx fetches, are missing in both editions, and the order is Sphinx's."""
    built()
    page = browser.new_page()
    term = "梯度消失"
    results = read_results(page, f"{(SITE / 'zh_CN' / 'search.html').as_uri()}?q={quote(term)}",
                           snippets=False)
    page.close()
    assert results.entries[0]["href"].startswith(f"{GLOSSARY}#term-")
    assert set(results.pages) >= pages_holding("zh_CN", term)

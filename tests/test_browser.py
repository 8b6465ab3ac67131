"""The built book in a real browser: headless Chromium (Debian's package) driven by Playwright.

On every page, in the theme's light and dark mode: no JavaScript error, no failed request, every
image loaded, all math typeset by MathJax with no error and no raw TeX left. Run `make book` first
(`make test` does). Screenshots land in _build/screenshots/ for a person to look at.

Without Chromium the tests skip, saying how to install it; with CI=true or
LONGDEP_REQUIRE_BROWSER=1 a missing browser is a failure instead (tests/chromium.py).
"""

import functools
import http.server
import threading
from pathlib import Path

import pytest
from chromium import INSPECT_PAGE, RAW_TEX, browser_required

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "_build" / "html"
SCREENSHOTS = REPO / "_build" / "screenshots"


def pages() -> list[str]:
    if not SITE.exists():
        return []
    return sorted(
        str(p.relative_to(SITE)) for p in SITE.rglob("*.html")
        if not p.relative_to(SITE).parts[0].startswith("_") and not is_redirect(p)
    )


def is_redirect(page: Path) -> bool:
    return 'http-equiv="Refresh"' in page.read_text(encoding="utf-8")[:500]


@pytest.fixture(scope="session")
def server():
    if not (SITE / "index.html").exists():
        message = f"no built book at {SITE}: run `make book` first"
        if browser_required():
            pytest.fail(message)
        pytest.skip(message)
    handler = functools.partial(QuietHandler, directory=str(SITE))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_the_book_has_pages():
    if not pages() and not browser_required():
        pytest.skip("no built book: run `make book` first")
    assert "book/intro.html" in pages()
    assert "book/01_rnn_bptt.html" in pages()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("page_path", pages() or ["book/intro.html"])
def test_page_renders_cleanly(browser, server, page_path, scheme):
    context = browser.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} {r.failure}"))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"HTTP {r.status}: {r.url}"))
    page.goto(f"{server}/{page_path}", wait_until="load")
    has_mathjax = page.evaluate("() => Boolean(window.MathJax && window.MathJax.startup)")
    if has_mathjax:
        page.evaluate("() => MathJax.startup.promise")
    page.wait_for_load_state("networkidle")
    found = page.evaluate(INSPECT_PAGE)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"{page_path.replace('/', '_')}-{scheme}.png")
    context.close()

    assert not problems, "\n".join(problems)
    assert found["theme"] == scheme
    assert not found["brokenImages"], f"images that did not load: {found['brokenImages']}"
    if found["mathCount"]:
        assert has_mathjax, "the page has math but MathJax did not load"
    assert found["untypesetMath"] == 0, f"{found['untypesetMath']} math elements left untypeset"
    assert not found["mathErrors"], f"MathJax errors: {found['mathErrors']}"
    raw = RAW_TEX.findall(found["text"])
    assert not raw, f"raw TeX left in the page: {raw[:5]}"


def test_the_front_door_redirects_to_the_landing_page(browser, server):
    page = browser.new_page()
    page.goto(f"{server}/index.html")
    page.wait_for_url("**/book/intro.html")
    assert "Transformer from 0 to 1" in page.title()
    page.close()


def test_chapter_pages_have_typeset_math_and_figures(browser, server):
    page = browser.new_page()
    page.goto(f"{server}/book/01_rnn_bptt.html", wait_until="load")
    page.evaluate("() => MathJax.startup.promise")
    found = page.evaluate(INSPECT_PAGE)
    page.close()
    assert found["typesetCount"] > 20
    assert found["imageCount"] >= 1


def test_sitemap_lists_every_page():
    if not SITE.exists() and not browser_required():
        pytest.skip("no built book: run `make book` first")
    sitemap = (SITE / "sitemap.xml").read_text()
    for page in pages():
        if page.startswith("book/"):
            assert f"/{page}</loc>" in sitemap, page

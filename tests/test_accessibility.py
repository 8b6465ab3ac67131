"""Accessibility of the built book: axe-core's rules on every page, in a real browser.

Every page of both editions (English in _build/html, 简体中文 in _build/html/zh_CN, as
tests/test_browser.py lists them), in the theme's light and dark mode, opened from file:// as a
reader opens _build/html/index.html, with every other request blocked: once its math is typeset
and its dropdowns (the solutions) are open, so that what a click shows is checked too, axe-core
runs all its rules on the page. No violation of impact "serious" or "critical" may remain; each one
is reported with its rule, impact, page, mode and the first few elements it concerns (their CSS
selectors), and axe's summary of what to fix. Rules of impact "moderate" or "minor" (such as
"region": the sidebar's title outside a landmark) are not enforced.

axe-core is the npm package, at the version the Makefile pins (AXE_VERSION), fetched into _tools/
by `make test`'s set-up; this test injects its axe.min.js into each page. One browser, one tab, the
pages in sequence, each loaded once for both modes. Run `make book` first (`make test` does).
Without Chromium, the built book or the fetched axe-core the tests skip, saying why; with CI=true or
LONGDEP_REQUIRE_BROWSER=1 they fail instead.
"""

import functools
import re
from pathlib import Path

import pytest
from chromium import site_pages, skip_or_fail

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "_build" / "html"
AXE_VERSION = re.search(r"^AXE_VERSION := (\S+)$", (REPO / "Makefile").read_text(),
                        re.MULTILINE).group(1)
AXE = REPO / "_tools" / f"axe-core-{AXE_VERSION}" / "node_modules" / "axe-core" / "axe.min.js"
ENFORCED = ("serious", "critical")
SCHEMES = ("light", "dark")
SHOWN_TARGETS = 3

# Open what a reader opens by a click: sphinx-togglebutton's dropdowns (the solutions) and any
# <details>. A <details> fires "toggle" in a later task: wait one, so its listeners have run.
OPEN_DROPDOWNS = """async () => {
  const titles = document.querySelectorAll('.toggle.toggle-hidden > .admonition-title');
  const summaries = document.querySelectorAll('details:not([open]) > summary');
  [...titles, ...summaries].forEach(element => element.click());
  await new Promise(resolve => setTimeout(resolve));
  return titles.length + summaries.length;
}"""
# The theme follows the colour scheme in a listener, and its colours may ease into the new ones
# (CSS transitions): wait (at most a second of frames) for the mode, then for every transition.
SETTLE = """async (scheme) => {
  for (let frame = 0; frame < 60 && document.documentElement.dataset.theme !== scheme; frame++) {
    await new Promise(resolve => requestAnimationFrame(resolve));
  }
  const transitions = document.getAnimations().filter(a => a instanceof CSSTransition);
  await Promise.allSettled(transitions.map(transition => transition.finished));
  return document.documentElement.dataset.theme;
}"""
RUN_AXE = """async () => {
  const results = await axe.run(document, {resultTypes: ['violations']});
  return results.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.flat().join(' >>> '), summary: n.failureSummary})),
  }));
}"""


def pages() -> list[str]:
    return site_pages(SITE)


def only_files(route):
    if route.request.url.startswith("file://"):
        route.continue_()
    else:
        route.abort()


@pytest.fixture(scope="module")
def audit(browser):
    """audit(page): axe-core's violations on a built page, {"light": [...], "dark": [...]}.

    One context and one tab for every page. A page is loaded, typeset and opened once, then
    audited in light mode and, with the browser switched to a dark colour scheme (which the theme
    follows at once, as it does when a reader's system turns dark), in dark mode."""
    if not (SITE / "index.html").exists():
        skip_or_fail(f"no built book at {SITE}: run `make book` first")
    if not AXE.exists():
        skip_or_fail(f"axe-core {AXE_VERSION} not found at {AXE.relative_to(REPO)}: run "
                     f"`make {AXE.relative_to(REPO)}` (part of `make test`'s set-up; needs npm)")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.route("**/*", only_files)
    tab = context.new_page()
    yield functools.cache(lambda page_path, prepare=None: audit_page(tab, page_path, prepare))
    context.close()


def audit_page(tab, page_path: str, prepare: str | None) -> dict[str, list[dict]]:
    """Load the page in light mode, typeset it, open its dropdowns, run `prepare` (JavaScript)
    if given, and run axe-core in each colour scheme."""
    tab.emulate_media(color_scheme=SCHEMES[0])
    tab.goto((SITE / page_path).as_uri(), wait_until="load")
    if tab.evaluate("() => Boolean(window.MathJax && window.MathJax.startup)"):
        tab.evaluate("() => MathJax.startup.promise")
    tab.evaluate(OPEN_DROPDOWNS)
    if prepare:
        tab.evaluate(prepare)
    tab.add_script_tag(path=str(AXE))
    found = {}
    for scheme in SCHEMES:
        tab.emulate_media(color_scheme=scheme)
        shown = tab.evaluate(SETTLE, scheme)
        assert shown == scheme, f"{page_path}: the theme shows {shown} mode, not {scheme}"
        found[scheme] = tab.evaluate(RUN_AXE)
    return found


def describe(violation: dict, page_path: str, scheme: str) -> str:
    """One violation, as a reader of the failure needs it to find and fix the element."""
    nodes = violation["nodes"]
    targets = ", ".join(node["target"] for node in nodes[:SHOWN_TARGETS])
    more = f" and {len(nodes) - SHOWN_TARGETS} more" if len(nodes) > SHOWN_TARGETS else ""
    summary = " ".join(nodes[0]["summary"].split())
    return (f"{violation['id']} ({violation['impact']}) on {page_path}, {scheme} mode: "
            f"{violation['help']}.\n    {len(nodes)} element(s): {targets}{more}\n"
            f"    first: {summary}")


def enforced(violations: list[dict]) -> list[dict]:
    return [v for v in violations if v["impact"] in ENFORCED]


@pytest.mark.parametrize("page_path", pages() or ["book/intro.html"])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_no_serious_or_critical_violation(audit, page_path, scheme):
    found = enforced(audit(page_path)[scheme])
    assert not found, "\n".join(describe(v, page_path, scheme) for v in found)


# Two faults a page must never have, put into a built page: a button with no name, and grey text
# that reads on the light page (9.7:1 on white) but not on the dark one (2.1:1 on #121212).
FAULTS = """() => {
  const article = document.querySelector('article');
  article.insertAdjacentHTML('afterbegin',
    '<button id="fault-unnamed" type="button"></button>' +
    '<p id="fault-faint" style="color: #444">Text in dark grey</p>');
}"""


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_check_finds_and_names_what_breaks_a_page(audit, scheme):
    violations = {v["id"]: v for v in enforced(audit("book/intro.html", FAULTS)[scheme])}
    assert violations["button-name"]["impact"] == "critical"
    assert "#fault-unnamed" in describe(violations["button-name"], "book/intro.html", scheme)
    faint = [n["target"] for n in violations.get("color-contrast", {"nodes": []})["nodes"]]
    assert ("#fault-faint" in faint) == (scheme == "dark"), faint


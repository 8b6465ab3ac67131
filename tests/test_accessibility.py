"""Accessibility of the built book: axe-core's rules on every page, in a real browser.

Every page of both editions (English in _build/html, 简体中文 in _build/html/zh_CN, as
tests/test_browser.py lists them), in the theme's light and dark mode, as one visit of
tests/page_visit.py finds it: opened from file:// as a reader opens _build/html/index.html, with
every other request refused, once its math is typeset and its dropdowns (the solutions) are open,
so that what a click shows is checked too, axe-core runs all its rules on the page in light mode,
and those that read colours in dark mode (the others read the page's structure, the same in
both modes: tests/page_visit.py, which runs them all where what shows differs). No violation
of impact "serious" or "critical" may remain; each one is reported with its rule, impact, page,
mode and the first few elements it concerns (their CSS selectors), and axe's summary of what to
fix. Rules of impact "moderate" or "minor" (such as "region": the sidebar's title outside a
landmark) are not enforced.

axe-core is the npm package, at the version the Makefile pins (AXE_VERSION), fetched into _tools/
by `make test`'s set-up; the visit injects its axe.min.js into each page. Run `make book` first
(`make test` does). Without Chromium, the built book or the fetched axe-core the tests skip,
saying why; with CI=true or LONGDEP_REQUIRE_BROWSER=1 they fail instead.
"""

from pathlib import Path

import pytest
from chromium import site_pages
from page_visit import COLOUR_RULES, SCHEMES

SITE = Path(__file__).resolve().parents[1] / "_build" / "html"
ENFORCED = ("serious", "critical")
SHOWN_TARGETS = 3


def pages() -> list[str]:
    return site_pages(SITE)


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
def test_no_serious_or_critical_violation(visit, page_path, scheme):
    found = enforced(visit(page_path).violations[scheme])
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
def test_the_check_finds_and_names_what_breaks_a_page(visit, scheme):
    violations = {v["id"]: v for v in enforced(visit("book/intro.html", FAULTS).violations[scheme])}
    if scheme == "light":  # a rule of structure: run in light mode (COLOUR_RULES in dark)
        assert violations["button-name"]["impact"] == "critical"
        assert "#fault-unnamed" in describe(violations["button-name"], "book/intro.html", scheme)
    else:
        assert set(violations) <= set(COLOUR_RULES), violations
    faint = [n["target"] for n in violations.get("color-contrast", {"nodes": []})["nodes"]]
    assert ("#fault-faint" in faint) == (scheme == "dark"), faint


# An unnamed button that the theme shows in dark mode only: what shows differs between the modes,
# so every rule runs in dark mode too, and finds it.
DARK_ONLY_FAULT = """() => {
  document.head.insertAdjacentHTML('beforeend',
    '<style>html[data-theme="light"] #fault-dark-only { display: none; }</style>');
  document.querySelector('article').insertAdjacentHTML('afterbegin',
    '<button id="fault-dark-only" type="button"></button>');
}"""


def test_what_dark_mode_alone_shows_meets_every_rule(visit):
    found = visit("book/intro.html", DARK_ONLY_FAULT).violations
    assert not any(v["id"] == "button-name" for v in enforced(found["light"]))
    dark = {v["id"]: v for v in enforced(found["dark"])}
    assert "#fault-dark-only" in describe(dark["button-name"], "book/intro.html", "dark")

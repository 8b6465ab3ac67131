"""Headless Chromium for the browser tests: where it is, how it starts, what a page must show.

Debian's `chromium` (or the binary LONGDEP_CHROMIUM names), driven by Playwright for Python through
`executable_path`: no browser is downloaded. Without Chromium the browser tests skip, saying how to
install it; with CI=true or LONGDEP_REQUIRE_BROWSER=1 a missing browser is a failure instead. The
`browser` fixture itself is in conftest.py: one Playwright per test session, since a second
synchronous Playwright in the same thread fails.
"""

import os
import re
import shutil
from pathlib import Path

import pytest

CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
]
# Text a reader must never see: TeX delimiters or commands that MathJax left untypeset.
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\begin\{|\\frac|\\partial|\\operatorname"
                     r"|\\sqrt|\\text\{|\\math[a-z]+\{")

INSPECT_PAGE = """() => {
  const images = [...document.querySelectorAll('img')];
  const mathNodes = [...document.querySelectorAll('.math')];
  const article = document.querySelector('article') || document.body;
  const clone = article.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, mjx-container, .highlight')
       .forEach(n => n.remove());
  return {
    brokenImages: images.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src),
    imageCount: images.length,
    mathCount: mathNodes.length,
    untypesetMath: mathNodes.filter(n => !n.querySelector('mjx-container')).length,
    typesetCount: document.querySelectorAll('mjx-container').length,
    mathErrors: [...document.querySelectorAll('mjx-merror')].map(n => n.textContent),
    text: clone.innerText,
    theme: document.documentElement.dataset.theme,
  };
}"""


def browser_required() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("LONGDEP_REQUIRE_BROWSER") == "1"


def chromium_path() -> str | None:
    for candidate in (os.environ.get("LONGDEP_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and (path := shutil.which(candidate)):
            return path
    return None


def skip_or_fail(message: str):
    """A browser test that cannot run skips, saying why; where it is required, it fails."""
    if browser_required():
        pytest.fail(message)
    pytest.skip(message)


def site_pages(site: Path) -> list[str]:
    """The built site's pages, relative to `site`: every HTML page but Sphinx's own folders
    (_static, _sources, ...) and the pages that only redirect."""
    if not site.exists():
        return []
    return sorted(
        str(p.relative_to(site)) for p in site.rglob("*.html")
        if not any(part.startswith("_") for part in p.relative_to(site).parts)
        and not is_redirect(p)
    )


def is_redirect(page: Path) -> bool:
    return 'http-equiv="Refresh"' in page.read_text(encoding="utf-8")[:500]

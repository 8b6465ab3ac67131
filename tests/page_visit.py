"""One visit of a built page, read by every browser test that needs the page as loaded.

Loading a page of this book costs a second or two of a core (a chapter's 30,000 nodes of
typeset math and highlighted code are laid out and styled), and axe-core's rules cost more: so
each page is loaded once, in one tab, and what the tests assert is read off that visit —
rendering in both colour modes (tests/test_browser.py), each cell output and figure text
(tests/test_browser.py), and axe-core's violations in both modes (tests/test_accessibility.py):
all its rules in light mode and, in dark mode, the rules that read colours (COLOUR_RULES), since
the others read the page's structure, which is the same in both modes when the same elements
show (the visit counts the elements shown in each mode, and runs every rule in dark mode too
where the counts differ).

The page is opened from file://, as a reader opens _build/html/index.html, with every request
that is not for a file of the site refused (and reported: a page of the book needs no network).
It is loaded in light mode, typeset and its dropdowns (the solutions) opened, then read; then,
with the browser switched to a dark colour scheme (which the theme follows at once, as it does
when a reader's system turns dark), read again.
Screenshots land in _build/screenshots/<page>-<mode>.png for a person to look at.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from chromium import INSPECT_PAGE

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "_build" / "html"
SCREENSHOTS = REPO / "_build" / "screenshots"
AXE_VERSION = re.search(r"^AXE_VERSION := (\S+)$", (REPO / "Makefile").read_text(),
                        re.MULTILINE).group(1)
AXE = REPO / "_tools" / f"axe-core-{AXE_VERSION}" / "node_modules" / "axe-core" / "axe.min.js"
SCHEMES = ("light", "dark")
# Font families that hold Chinese glyphs (Debian's fonts-noto-cjk, and the usual system faces).
CJK_FONT = re.compile(r"CJK|Source Han|PingFang|Hiragino|YaHei|SimSun|SimHei|WenQuanYi|"
                      r"Droid Sans Fallback|AR PL|Noto Sans SC|Noto Serif SC", re.IGNORECASE)

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
# axe-core's rules whose outcome depends on the page's colours.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
SHOWN = "() => [...document.body.querySelectorAll('*')].filter(e => e.checkVisibility()).length"
RUN_AXE = """async (rules) => {
  const options = {resultTypes: ['violations']};
  if (rules) options.runOnly = {type: 'rule', values: rules};
  const results = await axe.run(document, options);
  return results.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.flat().join(' >>> '), summary: n.failureSummary})),
  }));
}"""
# Every cell output's text, shown or in a closed dropdown, and every figure's alt text. A
# table's cells are joined with a space (textContent alone would glue "LSTM" to "O(T)").
OUTPUTS = """() => {
  const outputs = [...document.querySelectorAll('article div.cell_output')];
  const text = n => {
    const copy = n.cloneNode(true);
    copy.querySelectorAll('td, th').forEach(cell => cell.append(' '));
    return copy.textContent;
  };
  return {
    texts: outputs.flatMap(o => [...o.querySelectorAll('.output')].map(text)),
    alts: outputs.flatMap(o => [...o.querySelectorAll('img')].map(i => i.alt)),
  };
}"""
# Wrap each run of Chinese characters of the page (in the text nodes of at most `limit` elements:
# header, navigation, article) in a probe span, so that the fonts used for exactly those
# characters can be asked for.
MARK_CJK_RUNS = """(limit) => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const runs = /[\\u3000-\\u30ff\\u4e00-\\u9fff\\uff00-\\uffef]+/g;
  const found = [];
  let node;
  while ((node = walker.nextNode()) && found.length < limit) {
    if (!runs.test(node.data) || node.parentElement.closest('script, style, mjx-container')) {
      runs.lastIndex = 0;
      continue;
    }
    runs.lastIndex = 0;
    found.push(node);
  }
  let count = 0;
  for (const text of found) {
    const fragment = document.createDocumentFragment();
    let last = 0;
    for (const match of text.data.matchAll(runs)) {
      fragment.append(text.data.slice(last, match.index));
      const span = document.createElement('span');
      span.dataset.cjkProbe = String(count++);
      span.textContent = match[0];
      fragment.append(span);
      last = match.index + match[0].length;
    }
    fragment.append(text.data.slice(last));
    text.replaceWith(fragment);
  }
  return count;
}"""


def chinese_font_problems(context, page, limit: int = 60) -> tuple[int, list[str]]:
    """How many runs of Chinese text Chromium drew on the page (of the first `limit`), and those
    it drew in a font without Chinese glyphs (as missing-glyph boxes), with the fonts it used.
    It wraps those runs in spans: ask it last."""
    count = page.evaluate(MARK_CJK_RUNS, limit)
    if not count:
        return 0, []
    cdp = context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
    probes = cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": "[data-cjk-probe]"})
    drawn, problems = 0, []
    for node_id in probes["nodeIds"]:
        fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node_id})["fonts"]
        used = [f["familyName"] for f in fonts if f["glyphCount"]]
        if not used:
            continue  # not drawn at all: hidden (a collapsed menu, a tooltip)
        drawn += 1
        if not all(CJK_FONT.search(name) for name in used):
            text = cdp.send("DOM.getOuterHTML", {"nodeId": node_id})["outerHTML"]
            problems.append(f"{text}: drawn in {used}")
    cdp.detach()
    return drawn, problems


@dataclass
class Visit:
    """What one visit of a page found."""
    problems: list[str]  # page errors, console errors, failed or refused requests
    has_mathjax: bool
    seen: dict[str, dict]  # {mode: INSPECT_PAGE's findings}
    outputs: dict[str, list[str]]  # {"texts": [...], "alts": [...]}: OUTPUTS
    violations: dict[str, list[dict]]  # {mode: axe-core's violations}
    chinese_runs: int  # runs of Chinese text drawn
    tofu: list[str]  # those drawn without a CJK font


class Visitor:
    """visit(page_path, prepare=None): one tab, in a context of its own, that visits built
    pages one after another; `prepare` (JavaScript) runs on the page once it is typeset, before
    it is read in either mode, to plant a fault (the check of the check; no screenshot then)."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.route("**/*", self.only_files)
        self.tab = self.context.new_page()
        self.problems: list[str] = []
        tab = self.tab
        tab.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        tab.on("console", lambda m: m.type == "error"
               and self.problems.append(f"console: {m.text}"))
        tab.on("requestfailed", lambda r: self.problems.append(
            f"request failed: {r.url} {r.failure}"))

    @staticmethod
    def only_files(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    def show(self, page_path: str, scheme: str) -> None:
        """Switch the browser to a colour scheme and wait until the theme shows it."""
        self.tab.emulate_media(color_scheme=scheme)
        shown = self.tab.evaluate(SETTLE, scheme)
        assert shown == scheme, f"{page_path}: the theme shows {shown} mode, not {scheme}"

    def visit(self, page_path: str, prepare: str | None = None) -> Visit:
        tab, self.problems = self.tab, []
        tab.emulate_media(color_scheme=SCHEMES[0])
        tab.goto((SITE / page_path).as_uri(), wait_until="load")
        has_mathjax = tab.evaluate("() => Boolean(window.MathJax && window.MathJax.startup)")
        if has_mathjax:
            tab.evaluate("() => MathJax.startup.promise")
        outputs = tab.evaluate(OUTPUTS)
        tab.evaluate(OPEN_DROPDOWNS)
        if prepare:
            tab.evaluate(prepare)
        seen, shown = {}, {}
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        for scheme in SCHEMES:
            self.show(page_path, scheme)
            seen[scheme] = tab.evaluate(INSPECT_PAGE)
            shown[scheme] = tab.evaluate(SHOWN)
            if not prepare:  # the page as built, for a person to look at
                tab.screenshot(path=SCREENSHOTS / f"{page_path.replace('/', '_')}-{scheme}.png")
        problems = self.problems  # the page's own, not axe-core's (its requests for the
        self.problems = []        # stylesheets, which a file:// page refuses)
        tab.add_script_tag(path=str(AXE))
        violations = {}
        for scheme in reversed(SCHEMES):
            self.show(page_path, scheme)
            same = scheme != "light" and len(set(shown.values())) == 1
            violations[scheme] = tab.evaluate(RUN_AXE, COLOUR_RULES if same else None)
        chinese_runs, tofu = chinese_font_problems(self.context, tab)
        return Visit(problems, has_mathjax, seen, outputs, violations, chinese_runs, tofu)

    def close(self):
        self.context.close()

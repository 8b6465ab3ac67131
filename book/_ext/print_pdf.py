"""Print one edition of the book to PDF with headless Chromium, from its single-page build.

    python book/_ext/print_pdf.py --site _build/singlehtml --language en \
        --out _build/html/_downloads/transformer-0-to-1.pdf
    python book/_ext/print_pdf.py --site _build/zh_CN/_build/singlehtml --language zh_CN \
        --config _build/_config.zh_CN.yml --out _build/html/zh_CN/_downloads/transformer-0-to-1.pdf

An edition is a language (the title page's and contents' words, LABELS below; print.css sets
the Chinese edition in a CJK face) and a configuration (its title, author and web address).

The approach of jupyter-book's ``pdfhtml`` builder, which cannot find Debian's Chromium by
itself: Playwright for Python drives the system's Chromium (``executable_path``; set
LONGDEP_CHROMIUM to use another binary). The page is printed once MathJax has typeset every
formula (``MathJax.startup.promise``) and its fonts have loaded, in the light theme whatever the
reader's system prefers. Before printing, the page gets a title page (title and author from
_config.yml, the build stamp of the page's footer: commit and date, see build_stamp.py), a table
of contents whose entries link inside the PDF, every collapsed block opened, and print.css
(beside this file: no site navigation, code wrapped, no figure split across pages). Chromium
adds the page numbers (a footer) and prints a tagged PDF (its structure, for screen readers and
reflowing) with an outline: bookmarks of the chapters and sections, from the headings.

Chinese text is set in Noto Sans CJK SC (Debian's fonts-noto-cjk), all of the Chinese edition's
text and the English edition's Chinese terms. Chromium's PDF backend (Skia) embeds TrueType
outlines as named CID fonts but draws CFF ones, which every Noto CJK font is, as anonymous Type 3
glyph procedures, so the page gets a TrueType copy of the face, subset to the characters it
uses (fontTools, pinned in requirements.txt): `cjk_faces` below.

Any JavaScript error, failed request, MathJax error, or code, figure, table or equation wider
than the page fails the print: a PDF with broken math or cut lines is never written silently.
Without Chromium it writes no PDF and says so, and without Noto Sans CJK SC it prints the Chinese
text in a fallback face and says so; with CI=true or LONGDEP_REQUIRE_BROWSER=1 (where the PDF is
required: the tests, publishing) each is a failure that names the package to install.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from html import unescape
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
]

# What the title page and the contents say, per edition language.
LABELS = {
    "en": {"contents": "Contents", "online": "Read online at"},
    "zh_CN": {"contents": "目录", "online": "在线阅读："},
}


def pdf_required() -> bool:
    """CI and publishing require the PDF (as the browser tests require the browser)."""
    return os.environ.get("CI") == "true" or os.environ.get("LONGDEP_REQUIRE_BROWSER") == "1"


def missing(what: str, consequence: str) -> None:
    """A tool or font the PDF needs is missing: a failure where the PDF is required, else a
    note (a reader's `make book` still gives the website, or a PDF in a fallback face)."""
    if pdf_required():
        sys.exit(f"print_pdf: {what}")
    print(f"print_pdf: {consequence}. {what}")


def chromium_path() -> str | None:
    for candidate in (os.environ.get("LONGDEP_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and (path := shutil.which(candidate)):
            return path
    return None


# The CJK face, looked up with fontconfig; print.css asks for it under PRINT_CJK_FAMILY.
CJK_FACE = "Noto Sans CJK SC"
PRINT_CJK_FAMILY = "Print CJK"
CJK_TEXT = re.compile(r"[\u2e80-\u2fff\u3000-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")


def text_of_page(html: str) -> str:
    body = html.split("<body", 1)[-1]
    body = re.sub(r"<(script|style)\b.*?</\1>", "", body, flags=re.DOTALL | re.IGNORECASE)
    return unescape(re.sub(r"<[^>]+>", " ", body))


def truetype_copy(source: str, index: int, characters: str, out: Path) -> None:
    """`source`'s face number `index`, subset to `characters`, its CFF outlines as TrueType's."""
    from fontTools import subset
    from fontTools.pens.cu2quPen import Cu2QuPen
    from fontTools.pens.ttGlyphPen import TTGlyphPen
    from fontTools.ttLib import TTFont, newTable

    font = TTFont(source, fontNumber=index, lazy=True)
    options = subset.Options()
    options.name_IDs = ["*"]
    options.notdef_outline = True
    # Kerning (of the Latin letters) only: vertical, traditional and other forms of the Chinese
    # ones would double the glyphs to convert, for a horizontal, simplified text.
    options.layout_features = ["kern"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=characters)
    subsetter.subset(font)
    if "CFF " in font:
        order = font.getGlyphOrder()
        glyphs = font.getGlyphSet()
        glyf = newTable("glyf")
        glyf.glyphOrder, glyf.glyphs = order, {}
        for name in order:
            pen = TTGlyphPen(glyphs)
            # Cubic to quadratic curves within 1 unit of 1000; CFF contours run the other way.
            glyphs[name].draw(Cu2QuPen(pen, 1.0, reverse_direction=True))
            glyf.glyphs[name] = pen.glyph()
        font["glyf"], font["loca"] = glyf, newTable("loca")
        del font["CFF "]
        if "VORG" in font:
            del font["VORG"]
        maxp = font["maxp"]
        maxp.tableVersion = 0x00010000
        for field in ("maxZones", "maxTwilightPoints", "maxStorage", "maxFunctionDefs",
                      "maxInstructionDefs", "maxStackElements", "maxSizeOfInstructions",
                      "maxComponentElements"):
            setattr(maxp, field, 0)
        maxp.maxZones = 1
        font["head"].glyphDataFormat = 0
        font["post"].formatType = 3.0
        font.sfntVersion = "\x00\x01\x00\x00"
    out.parent.mkdir(parents=True, exist_ok=True)
    font.save(str(out))


def cjk_face(weight: str) -> tuple[str, int] | None:
    """The file and face index of CJK_FACE at `weight` (regular, bold), asked of fontconfig's
    fc-match; None when that face is not installed (fc-match then names another family)."""
    if shutil.which("fc-match") is None:
        return None
    found = subprocess.run(
        ["fc-match", "--format", "%{family}\n%{file}\n%{index}", f"{CJK_FACE}:{weight}"],
        capture_output=True, text=True, check=False)
    lines = found.stdout.splitlines() if found.returncode == 0 else []
    if len(lines) != 3 or CJK_FACE not in lines[0].split(","):
        return None
    return lines[1], int(lines[2])


def cjk_faces(text: str, folder: Path, language: str) -> str:
    """@font-face rules for CJK_FACE as TrueType, regular and bold, subset to `text`.

    The Chinese edition is set in the face throughout (its Latin letters too, which match its
    Chinese), so the subset holds every character of the page; the English edition uses it for
    its Chinese characters alone. No Chinese text: no rules. No such face installed: an error
    where the PDF is required (pdf_required), else a note and no rules.
    """
    characters = "".join(sorted(set(
        re.sub(r"\s", "", text) if language.startswith("zh") else CJK_TEXT.findall(text))))
    if not CJK_TEXT.search(characters):
        return ""
    # The CJK face's single quotation marks are full-width: an English "PyTorch’s" (there is
    # English text in the Chinese edition) would read "PyTorch’ s". They stay in the Latin face.
    characters = characters.replace("\u2018", "").replace("\u2019", "")
    rules = []
    for weight, style, weights in (("regular", "Regular", "100 549"), ("bold", "Bold", "550 900")):
        face = cjk_face(weight)
        if face is None:
            missing(f"{CJK_FACE} {style} not found: `apt-get install -y fonts-noto-cjk` "
                    "(Debian's package)",
                    "Chinese text is printed in whatever face the system falls back to")
            return ""
        copy = folder / "_print_fonts" / f"{CJK_FACE.replace(' ', '')}-{style}.ttf"
        truetype_copy(*face, characters, copy)
        rules.append(f'@font-face {{ font-family: "{PRINT_CJK_FAMILY}"; font-weight: {weights}; '
                     f'src: url("{copy.relative_to(folder).as_posix()}") format("truetype"); }}')
    return "\n".join(rules) + "\n"


def single_page(site: Path, language: str, added_text: str) -> tuple[Path, str]:
    """The page to print, at the build's root, and the single page's own path in the build.

    With the root document in a folder (book/intro), Sphinx's singlehtml builder writes the page
    to book/intro.html but computes its links (_static/, _images/, book/intro.html#label) from
    the build's root, where index.html only redirects to it. A copy at the root loads them. The
    copy carries print.css and the light theme from the start, so the page is laid out once.
    `added_text` is what PREPARE_PAGE will add (title page, contents heading), for the CJK face.
    """
    index = site / "index.html"
    text = index.read_text(encoding="utf-8")
    redirect = re.search(r'http-equiv="Refresh"\s+content="0;\s*url=([^"]+)"', text, re.IGNORECASE)
    own = redirect.group(1) if redirect else "index.html"
    html = (site / own).read_text(encoding="utf-8")
    css = (cjk_faces(text_of_page(html) + added_text, site, language)
           + (HERE / "print.css").read_text(encoding="utf-8"))
    html = re.sub(r"<html([^>]*)>", r'<html\1 data-theme="light" data-mode="light">', html, count=1)
    html = html.replace("</head>", f"<style>\n{css}</style>\n</head>", 1)
    copy = site / "_print.html"
    copy.write_text(html, encoding="utf-8")
    return copy.resolve(), own


# Runs in the page: title page, contents, every collapsed block open, the light theme.
PREPARE_PAGE = """({title, author, online, baseurl, contents, language, ownPath}) => {
  const html = document.documentElement;

  // Links to the page's own path (book/intro.html#label) become same-page anchors, which
  // Chromium turns into links inside the PDF.
  const own = new URL(ownPath, document.baseURI).href;
  document.querySelectorAll('a[href]').forEach(a => {
    const url = new URL(a.href, document.baseURI);
    const hash = url.hash;
    url.hash = '';
    if (url.href === own) a.setAttribute('href', hash || '#');
  });
  html.dataset.theme = 'light';
  html.dataset.mode = 'light';
  html.lang = language.replace('_', '-');

  // The execution table's status emoji have no glyph in the text fonts (and a colour-emoji
  // font would print them as images): print the plain check and cross marks instead.
  const marks = {'\u2705': '\u2714', '\u274c': '\u2718'};
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node; (node = walker.nextNode());) {
    if (/[\u2705\u274c]/.test(node.data)) {
      node.data = node.data.replace(/[\u2705\u274c]/g, m => marks[m]);
    }
  }

  // Collapsed content (solutions, hidden cells) is printed open.
  document.querySelectorAll('details').forEach(d => d.open = true);
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));

  const article = document.querySelector('article.bd-article');
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  };

  // The build stamp of the page's footer (build_stamp.py): commit and date, as on the site.
  const stamp = document.querySelector('.build-stamp');
  // The title is no heading: the outline (bookmarks) starts with the contents, not with a
  // second entry of the book's title beside the landing page's.
  const titlePage = el('section', 'pdf-title-page');
  titlePage.append(el('p', 'pdf-title', title), el('p', 'pdf-author', author),
                   el('p', 'pdf-build', stamp ? stamp.textContent.trim() : ''));
  if (baseurl) {
    const p = el('p', 'pdf-online', online + ' ');
    const a = el('a', '', baseurl);
    a.href = baseurl;
    p.append(a);
    titlePage.append(p);
  }

  // The contents: every page of the book (a section right after a document anchor), with its
  // numbered sections one level down. Links are same-page anchors: internal links in the PDF.
  const toc = el('nav', 'pdf-contents');
  toc.append(el('h1', 'pdf-contents-title', contents));
  const list = el('ol', 'pdf-toc');
  const entry = (section, cls) => {
    const heading = section.querySelector(':scope > h1, :scope > h2, :scope > h3');
    if (!heading) return null;
    const clone = heading.cloneNode(true);
    clone.querySelectorAll('a.headerlink').forEach(a => a.remove());
    const li = el('li', cls);
    const a = el('a');
    a.href = '#' + section.id;
    a.innerHTML = clone.innerHTML;
    li.append(a);
    return li;
  };
  article.querySelectorAll('span[id^="document-"] + section').forEach(chapter => {
    // The page's anchor moves into its section, onto the new page where the section starts.
    chapter.prepend(chapter.previousElementSibling);
    chapter.classList.add('pdf-chapter');
    // The single page nests every page of the book in the landing page's section, a level
    // down; Chromium's outline follows the headings' levels (aria-level over the tag's), so
    // each page's title is put at the top level, its sections below it.
    const li = entry(chapter, 'pdf-toc-chapter');
    if (!li) return;
    const top = Number(chapter.querySelector(':scope > h1, :scope > h2, :scope > h3').tagName[1]);
    chapter.querySelectorAll('h1, h2, h3, h4, h5, h6').forEach(h =>
      h.setAttribute('aria-level', String(Number(h.tagName[1]) - top + 1)));
    const sections = [...chapter.querySelectorAll(':scope > section')]
      .filter(s => s.querySelector(':scope > h3 > .section-number'));
    if (sections.length) {
      const sub = el('ol', 'pdf-toc-sections');
      sections.forEach(s => {
        const item = entry(s, 'pdf-toc-section');
        if (item) sub.append(item);
      });
      li.append(sub);
    }
    list.append(li);
  });
  toc.append(list);
  article.prepend(titlePage, toc);
  return {chapters: list.querySelectorAll('li.pdf-toc-chapter').length,
          stamp: stamp ? stamp.textContent.trim() : null};
}"""

WAIT_FOR_TYPESETTING = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  await document.fonts.ready;
  await Promise.all([...document.images].map(i => i.complete ? null :
    new Promise(done => { i.addEventListener('load', done); i.addEventListener('error', done); })));
  return {
    math: document.querySelectorAll('.math').length,
    typeset: document.querySelectorAll('mjx-container').length,
    untypeset: [...document.querySelectorAll('.math')]
      .filter(n => !n.querySelector('mjx-container')).length,
    errors: [...document.querySelectorAll('mjx-merror')].map(n => n.textContent),
    brokenImages: [...document.images].filter(i => i.naturalWidth === 0).map(i => i.src),
  };
}"""

# Anything wider than the page would be cut at the margin: code, figures, display math, tables.
CUT_AT_THE_MARGIN = """() => {
  const page = document.querySelector('article.bd-article').getBoundingClientRect();
  return [...document.querySelectorAll('article pre, article img, article table, '
                                       + 'article mjx-container[display="true"]')]
    .filter(e => e.getBoundingClientRect().right > page.right + 2)
    .map(e => `${e.tagName.toLowerCase()} ${(e.textContent || e.src || '').trim().slice(0, 60)}`);
}"""

# A4 (210 mm) less the left and right margins below, in CSS pixels: the page is laid out at
# the width it is printed at, so the check above sees what the paper will.
PRINT_WIDTH = round((210 - 2 * 16) / 25.4 * 96)

FOOTER = """<div style="width: 100%; font-size: 8pt; color: #555; text-align: center;
  font-family: sans-serif;"><span class="pageNumber"></span></div>"""


def print_pdf(site: Path, out: Path, language: str, config_path: Path) -> dict | None:
    from playwright.sync_api import sync_playwright

    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    labels = LABELS.get(language, LABELS["en"])
    page_path, own_path = single_page(site, language, " ".join(
        [config.get("title", ""), config.get("author", ""), *labels.values()]))
    chromium = chromium_path()
    if chromium is None:
        missing("Chromium not found: `apt-get install -y chromium` (Debian's package), or "
                "point LONGDEP_CHROMIUM at a Chromium binary", "no PDF written")
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    problems = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        context = browser.new_context(color_scheme="light",
                                      viewport={"width": PRINT_WIDTH, "height": 1000})
        # pydata-sphinx-theme reads the reader's choice from localStorage: make it light. MathJax's
        # menu settings live there too: no assistive MathML (hidden copies of every formula for
        # screen readers of the HTML), which costs time and hides some formulas' text in the PDF.
        context.add_init_script(
            "try { localStorage.setItem('mode', 'light'); localStorage.setItem('theme', 'light');"
            " localStorage.setItem('MathJax-Menu-Settings', JSON.stringify({assistiveMml: false}));"
            " } catch (e) {}")
        page = context.new_page()
        # Playwright's default of 30 s is too short on a busy 2-core machine: loading and
        # typesetting the book there was measured at 32 s (7 s on a quiet one).
        page.set_default_timeout(300_000)
        page.emulate_media(media="print", color_scheme="light")
        page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
        page.on("console", lambda m: m.type == "error" and not m.text.startswith(
            "Failed to load resource") and problems.append(f"console: {m.text}"))
        # A single-page build has no search index; the search button that asks for it is not
        # printed. Any other missing file is a problem.
        page.on("requestfailed", lambda r: not r.url.endswith("/searchindex.js")
                and problems.append(f"request failed: {r.url}"))
        start = time.perf_counter()
        page.goto(page_path.as_uri(), wait_until="load")
        found = page.evaluate(WAIT_FOR_TYPESETTING)
        if found["untypeset"]:
            problems.append(f"{found['untypeset']} math elements left untypeset")
        if found["errors"]:
            problems.append(f"MathJax errors: {found['errors'][:5]}")
        if found["brokenImages"]:
            problems.append(f"images that did not load: {found['brokenImages'][:5]}")
        found.update(page.evaluate(PREPARE_PAGE, {
            "title": config.get("title", ""), "author": config.get("author", ""),
            "online": labels["online"], "baseurl": (config.get("html") or {}).get("baseurl", ""),
            "contents": labels["contents"], "language": language, "ownPath": own_path,
        }))
        if not found["stamp"]:
            problems.append("no build stamp in the page's footer (book/_ext/build_stamp.py)")
        cut = page.evaluate(CUT_AT_THE_MARGIN)
        if cut:
            problems.append(f"{len(cut)} elements wider than the page: {cut[:5]}")
        found["typeset_seconds"] = time.perf_counter() - start
        if problems:
            browser.close()
            sys.exit("print_pdf: the page did not render cleanly:\n  " + "\n  ".join(problems))
        start = time.perf_counter()
        # Tagged (the structure a screen reader follows), with an outline (the bookmarks a
        # reader's sidebar shows), which Chromium builds from the tagged headings.
        page.pdf(
            path=str(out), format="A4", print_background=True, tagged=True, outline=True,
            display_header_footer=True, header_template="<span></span>",
            footer_template=FOOTER,
            margin={"top": "18mm", "bottom": "18mm", "left": "16mm", "right": "16mm"},
        )
        found["print_seconds"] = time.perf_counter() - start
        browser.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, required=True, help="the single-page build folder")
    parser.add_argument("--out", type=Path, required=True, help="the PDF to write")
    parser.add_argument("--language", default="en", help="the edition's language (en, zh_CN)")
    parser.add_argument("--config", type=Path, default=HERE.parents[1] / "_config.yml",
                        help="the book's _config.yml (title, author, web address)")
    args = parser.parse_args()
    start = time.perf_counter()
    found = print_pdf(args.site, args.out, args.language, args.config)
    if found is None:
        return
    print(f"print_pdf: {args.out} ({args.out.stat().st_size / 1e6:.1f} MB, "
          f"{found['chapters']} entries in the contents, {found['typeset']} formulas): loaded "
          f"and typeset in {found['typeset_seconds']:.1f} s, printed in "
          f"{found['print_seconds']:.1f} s, {time.perf_counter() - start:.1f} s in all")


if __name__ == "__main__":
    main()

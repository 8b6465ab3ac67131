"""Plain `jupyter-book build <dir>` as a reader runs it: math offline, or a clear failure.

A reader runs `pip install -r requirements.txt`, then plain `jupyter-book build .`: no Makefile,
no -W, no npm. The small book here has the repository's _config.yml and _ext/ and two pages of
math, one in a subfolder; it is built exactly so, then opened from file:// in headless Chromium,
as a reader opens `_build/html/index.html`, with every request that is not file:// blocked.
Without the MathJax package the build must fail, saying what to install.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from chromium import INSPECT_PAGE, RAW_TEX

REPO = Path(__file__).resolve().parents[1]
JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")
PIN = next(line for line in (REPO / "requirements.txt").read_text().splitlines()
           if line.startswith("django-static-mathjax=="))
PAGES = {
    "book/index.md": (
        "# A test book\n\nInline math $a^2 + b^2 = c^2$, and on a line of its own:\n\n"
        "$$\n\\operatorname{softmax}(x)_i = \\frac{e^{x_i}}{\\sum_j e^{x_j}}\n$$\n"),
    # \boldsymbol is not in tex-chtml.js: MathJax loads it from input/tex/extensions/.
    "book/deep/page.md": (
        "# A page in a subfolder\n\nBackpropagation through $\\boldsymbol{h}_t$:\n\n"
        "```{math}\n:label: eq-chain\n"
        "\\frac{\\partial L}{\\partial h_0} = "
        "\\prod_{t=1}^{T} \\frac{\\partial h_t}{\\partial h_{t-1}}\n"
        "```\n\nSee {eq}`eq-chain`.\n"),
}
# Ways a reader's environment can lack the package: not installed, or another `mathjax` module.
HIDE_MATHJAX = {
    "not installed": ("sitecustomize.py", 'import sys\nsys.modules["mathjax"] = None\n'),
    "another package named mathjax": ("mathjax/__init__.py", ""),
    "a module named mathjax": ("mathjax.py", ""),
}


def make_book(root: Path) -> None:
    shutil.copy(REPO / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/index\n"
                                   "chapters:\n  - file: book/deep/page\n")
    book = root / "book"
    shutil.copytree(REPO / "book" / "_ext", book / "_ext")
    for name in ("references.bib", "favicon.svg"):
        shutil.copy(REPO / "book" / name, book / name)
    for name, text in PAGES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def plain_build(root: Path, pythonpath_first: Path | None = None) -> tuple[int, str]:
    """Run `jupyter-book build <root>` with this environment's jupyter-book, optionally with a
    folder put first on PYTHONPATH; return the exit status and the output."""
    env = dict(os.environ)
    if pythonpath_first is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath_first),
                                                          env.get("PYTHONPATH")]))
    result = subprocess.run([str(JUPYTER_BOOK), "build", str(root)], env=env,
                            capture_output=True, text=True, timeout=300)
    return result.returncode, result.stdout + result.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("plain_book")
    make_book(root)
    returncode, output = plain_build(root)
    assert returncode == 0, output[-3000:]
    # "build succeeded, 1 warning." was the symptom of issue 17: no warning at all now.
    assert "build succeeded." in output, output[-3000:]
    return root / "_build" / "html"


@pytest.mark.parametrize("page", ["book/index.html", "book/deep/page.html"])
def test_pages_load_mathjax_from_the_copy_in_the_site(site, page):
    html = (site / page).read_text(encoding="utf-8")
    [src] = re.findall(r'<script[^>]* src="([^"?]*tex-chtml\.js)[^"]*"', html)
    script = (site / page).parent.joinpath(src).resolve()
    assert script == (site / "mathjax" / "tex-chtml.js").resolve()
    assert script.is_file()


@pytest.mark.parametrize("page", ["book/index.html", "book/deep/page.html"])
def test_math_is_typeset_with_no_network(browser, site, page):
    context = browser.new_context()
    offline = []

    def only_files(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            offline.append(route.request.url)
            route.abort()

    context.route("**/*", only_files)
    tab = context.new_page()
    problems = []
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    tab.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
    tab.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} {r.failure}"))
    tab.goto((site / page).as_uri(), wait_until="load")
    has_mathjax = tab.evaluate("() => Boolean(window.MathJax && window.MathJax.startup)")
    if has_mathjax:
        tab.evaluate("() => MathJax.startup.promise")
    tab.wait_for_load_state("networkidle")
    found = tab.evaluate(INSPECT_PAGE)
    context.close()

    assert not offline, f"requests that would need the network: {offline}"
    assert not problems, "\n".join(problems)
    assert has_mathjax, "MathJax did not load"
    assert found["mathCount"] >= 2 and found["untypesetMath"] == 0
    assert found["typesetCount"] >= found["mathCount"]
    assert not found["mathErrors"], f"MathJax errors: {found['mathErrors']}"
    assert not RAW_TEX.findall(found["text"]), found["text"]


@pytest.mark.parametrize("how", HIDE_MATHJAX)
def test_without_the_mathjax_package_the_build_fails_saying_what_to_install(tmp_path, how):
    name, text = HIDE_MATHJAX[how]
    shadow = tmp_path / "shadow"
    (shadow / name).parent.mkdir(parents=True)
    (shadow / name).write_text(text)
    root = tmp_path / "book"
    root.mkdir()
    make_book(root)
    returncode, output = plain_build(root, pythonpath_first=shadow)
    assert returncode != 0
    assert f"`pip install {PIN}`" in output
    assert "`pip install -r requirements.txt`" in output
    assert not (root / "_build" / "html" / "book" / "index.html").exists()

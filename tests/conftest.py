"""Fixtures shared by the tests."""

import functools
import http.server
import shutil
import threading
from pathlib import Path

import pytest
import torch
from chromium import CHROMIUM_FLAGS, browser_required, chromium_path, skip_or_fail
from page_visit import AXE, Visitor

# The built book: both editions, English at the root and 简体中文 in zh_CN/ (`make book`).
REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "_build" / "html"


@pytest.fixture
def one_thread():
    """Train on one thread, as the chapters do: the tensors are small, and a second thread only
    adds synchronisation (and waits for a core on a busy machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium, shared by every browser test of the session (see tests/chromium.py)."""
    path = chromium_path()
    if path is None:
        message = ("Chromium not found: install it with `apt-get install -y chromium` "
                   "(Debian's package), or point LONGDEP_CHROMIUM at a Chromium binary")
        if browser_required():
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def visit(browser):
    """visit(page_path, prepare=None) -> page_visit.Visit: each built page visited once in the
    session, whichever test asks first (tests/page_visit.py)."""
    if not (SITE / "index.html").exists():
        skip_or_fail(f"no built book at {SITE}: run `make book` first")
    if not AXE.exists():
        fetch = AXE.relative_to(SITE.parents[1])
        skip_or_fail(f"axe-core not found at {AXE}: run `make {fetch}` (part of `make test`'s "
                     "set-up; needs npm)")
    visitor = Visitor(browser)
    yield functools.cache(visitor.visit)
    visitor.close()


@pytest.fixture(scope="session")
def server():
    """The built book served over HTTP, as a reader's server would (the browser tests)."""
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


@pytest.fixture(scope="session")
def two_page_build(tmp_path_factory):
    """tests/test_zh_edition.py's two-page book, committed to a repository of its own, then
    built with the Makefile's targets: both editions, and both PDFs when Chromium is there (the
    PDF step prints nothing without it, unless the PDF is required). Returns (root, commit,
    {target: its output}); the Chinese edition's tests and the build stamp's read one build."""
    from test_build_stamp import commit_everything
    from test_zh_edition import make, make_two_page_book

    root = tmp_path_factory.mktemp("two_page_book")
    make_two_page_book(root)
    shutil.copy(REPO / ".gitignore", root / ".gitignore")
    commit = commit_everything(root)
    logs = {}
    for target in ("build-only", "build-zh", "pdf-only"):
        done = make(target, root)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        logs[target] = done.stdout + done.stderr
    return root, commit, logs

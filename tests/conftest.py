"""Fixtures shared by the tests."""

import pytest
import torch
from chromium import CHROMIUM_FLAGS, browser_required, chromium_path


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

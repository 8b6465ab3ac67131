"""The build stamp (book/_ext/build_stamp.py): every page's footer and each PDF's title page say
which commit and date the build is of, and whether the tree had uncommitted changes.

The stamp is first read from small git repositories made here (a commit of a known date, then
changes, then no git at all); then a two-page book (tests/test_zh_edition.py's) is committed to a
temporary repository and built with the Makefile's own targets, both editions and both PDFs: every
page's footer shows the commit and its date, the same in both editions, and so does each PDF's
title page. The real build's pages and PDFs are checked in tests/test_browser.py and
tests/test_pdf.py.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from build_stamp import read_stamp, stamp_text
from chromium import browser_required, chromium_path

REPO = Path(__file__).resolve().parents[1]

# 02:00 on 1 March in UTC+05:00 is 21:00 on 29 February in UTC: the stamp's date is UTC's.
COMMIT_DATE = "2024-03-01T02:00:00+05:00"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_AUTHOR_DATE": COMMIT_DATE,
           "GIT_COMMITTER_DATE": COMMIT_DATE}


def git(folder: Path, *arguments: str) -> str:
    return subprocess.run(["git", "-C", str(folder), "-c", "commit.gpgsign=false", *arguments],
                          env={**os.environ, **GIT_ENV}, capture_output=True, text=True,
                          check=True).stdout.strip()


def commit_everything(folder: Path) -> str:
    git(folder, "init", "--quiet")
    git(folder, "add", "--all")
    git(folder, "commit", "--quiet", "-m", "a commit")
    return git(folder, "log", "-1", "--format=%h")


@pytest.fixture
def repository(tmp_path):
    (tmp_path / ".gitignore").write_text("_build/\n")
    (tmp_path / "page.md").write_text("# A page\n")
    return tmp_path, commit_everything(tmp_path)


def test_a_clean_checkout_is_stamped_with_its_commit_and_the_commits_utc_date(repository):
    folder, commit = repository
    (folder / "_build").mkdir()
    (folder / "_build" / "page.html").write_text("ignored by .gitignore: not a change")
    stamp = read_stamp(folder)
    assert stamp == {"commit": commit, "date": "2024-02-29", "dirty": False}
    assert stamp_text(stamp, "en") == f"Build {commit}, 2024-02-29"
    assert stamp_text(stamp, "zh_CN") == f"构建 {commit}，2024-02-29"


@pytest.mark.parametrize("change", ["edit a committed file", "add a file"])
def test_uncommitted_changes_are_stamped(repository, change):
    folder, commit = repository
    (folder / ("page.md" if change == "edit a committed file" else "new.md")).write_text("# New\n")
    stamp = read_stamp(folder)
    assert stamp == {"commit": commit, "date": "2024-02-29", "dirty": True}
    assert stamp_text(stamp, "en") == f"Build {commit}, 2024-02-29; uncommitted changes"
    assert stamp_text(stamp, "zh_CN") == f"构建 {commit}，2024-02-29；工作区有未提交的修改"


def test_a_copy_outside_git_says_so(tmp_path):
    stamp = read_stamp(tmp_path)
    assert stamp["commit"] is None and re.fullmatch(r"\d{4}-\d\d-\d\d", stamp["date"])
    assert stamp_text(stamp, "en") == f"Build of {stamp['date']}, not from a git checkout"
    assert stamp_text(stamp, "zh_CN") == f"构建于 {stamp['date']}，不在 git 仓库中"


@pytest.fixture(scope="module")
def built_book(two_page_build):
    """The two-page book, committed, then built: both editions, and both PDFs when Chromium is
    there (conftest.py)."""
    root, commit, _ = two_page_build
    return root, commit


def test_the_build_leaves_the_checkout_clean(built_book):
    root, _ = built_book
    assert git(root, "status", "--porcelain") == "", "the build changed the checkout"


def footer_stamps(site: Path) -> dict[str, str]:
    stamps = {}
    for page in sorted(site.glob("book/*.html")):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        [stamp] = soup.select("footer .build-stamp")
        stamps[page.name] = stamp.get_text(strip=True)
    return stamps


def test_every_page_of_both_editions_shows_the_commit_and_its_date(built_book):
    root, commit = built_book
    site = root / "_build" / "html"
    english, chinese = footer_stamps(site), footer_stamps(site / "zh_CN")
    assert set(english) == set(chinese) == {"index.html", "chapter.html"}
    assert set(english.values()) == {f"Build {commit}, 2024-02-29"}
    assert set(chinese.values()) == {f"构建 {commit}，2024-02-29"}


def test_each_pdf_title_page_shows_the_stamp(built_book):
    root, commit = built_book
    if chromium_path() is None or shutil.which("pdftotext") is None:
        message = "the PDF needs Chromium and poppler-utils (see README)"
        if browser_required():
            pytest.fail(message)
        pytest.skip(message)
    site = root / "_build" / "html"
    for pdf, stamp in ((site / "_downloads", f"Build {commit}, 2024-02-29"),
                       (site / "zh_CN" / "_downloads", f"构建 {commit}，2024-02-29")):
        [path] = pdf.glob("*.pdf")
        first = subprocess.run(["pdftotext", "-enc", "UTF-8", "-f", "1", "-l", "1", str(path), "-"],
                               capture_output=True, text=True, check=True).stdout
        assert stamp in first, first
        whole = subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"],
                               capture_output=True, text=True, check=True).stdout
        # the printed book leaves out the collapsed (hide-cell) cell, the site keeps it
        assert "glue('answer'" not in whole and "import numpy as np" in whole

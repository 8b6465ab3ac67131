"""The Chinese edition's catalogs (book/locale/zh_CN/LC_MESSAGES/, one per page) are complete,
current and faithful.

- Every page of the book has a catalog, and each catalog holds exactly the messages that Sphinx
  extracts from the page today (else `make translations` was not run after an English change).
- Every page declared translated has no untranslated and no fuzzy message: a missing message
  would fall back to English in the middle of a Chinese page; a fuzzy one (its English changed)
  is not used until a translator has checked it.
- A translation keeps its message's math, code, glued numbers, equation references, citations
  and link targets exactly (the words around them, and a link's text, are translated); a
  glued word may be pasted as its Chinese twin, `key_zh` for `key` (CONTRIBUTING.md, "Both
  editions").
- A translation is Markdown that means what the English means. Two traps of Chinese Markdown:
  a message that starts with "1. " is parsed as a list (Sphinx then silently keeps the English
  heading: write "1\\. "), and a closing `**` right after Chinese punctuation and before a
  character, as in `**原文说：**若`, is not a closing mark in CommonMark (write `**原文说**：若`).
"""

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from catalog_status import catalog_status

REPO = Path(__file__).resolve().parents[1]
CATALOGS = REPO / "book" / "locale" / "zh_CN" / "LC_MESSAGES"

ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")
# Roles whose text is shown to the reader: only their target must be kept.
LINK_ROLES = {"ref", "doc", "term", "numref"}
MATH = re.compile(r"(?<![\\$])\$[^$]+\$")
CODE = re.compile(r"(?<![}`])`([^`{}]+)`")


def toc_pages() -> list[str]:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        pages += [chapter["file"] for chapter in part["chapters"]]
    return pages


def catalog(page: str) -> Path:
    return CATALOGS / f"{page}.po"


def kept_parts(message: str) -> Counter:
    """What a translation must keep: math, code, roles (a link role's target only). A glued
    word's Chinese key, `<key>_zh` (longdep.book.chapter_glue glues it beside `<key>`), counts as
    its English key: the Chinese sentence pastes the Chinese word."""
    parts = []
    for name, text in ROLE.findall(message):
        if name.startswith("glue"):
            text = re.sub(r"_zh(?=:|$)", "", text)
        if name in LINK_ROLES:
            match = re.fullmatch(r".*<(.+)>", text, flags=re.DOTALL)
            text = (match.group(1) if match else text).strip()
            if name == "term":
                text = text.lower()
        if name.startswith("glue"):  # a glued word's Chinese is its _zh key (CONTRIBUTING.md)
            text = re.sub(r"_zh(?=:|$)", "", text)
        parts.append(f"{{{name}}}{text}")
    without_roles = ROLE.sub("", message)
    parts += MATH.findall(without_roles)
    parts += [f"`{code}`" for code in CODE.findall(MATH.sub("", without_roles))]
    return Counter(parts)


def test_every_page_has_a_catalog():
    assert [p for p in toc_pages() if not catalog(p).exists()] == [], "run `make translations`"


@pytest.mark.parametrize("page", toc_pages())
def test_every_page_has_every_message_translated(page):
    status = catalog_status(catalog(page))
    assert status["translated"], "an empty catalog: run `make translations`"
    assert status["untranslated"] == [], f"{len(status['untranslated'])} untranslated"
    assert status["fuzzy"] == [], f"{len(status['fuzzy'])} fuzzy: check them, drop the flag"


@pytest.mark.parametrize("page", toc_pages())
def test_a_translation_keeps_math_code_numbers_and_targets(page):
    from babel.messages.pofile import read_po

    with catalog(page).open("rb") as f:
        messages = [m for m in read_po(f) if m.id and m.string]
    changed = [(m.id[:70], dict(kept_parts(m.id) - kept_parts(m.string)),
                dict(kept_parts(m.string) - kept_parts(m.id)))
               for m in messages if kept_parts(m.id) != kept_parts(m.string)]
    assert changed == []


# CommonMark's punctuation, for the flanking rules of emphasis: ASCII's, and the CJK forms.
PUNCTUATION = re.compile(r"[\u3000-\u303f\uff00-\uffef!-/:-@\[-`{-~]")


def markdown_traps(translation: str) -> list[str]:
    """Places where Markdown would not read a translation as its translator meant."""
    traps = []
    if re.match(r"\d+\. ", translation):
        traps.append("starts with a list number: escape it as 1\\.")
    for i, mark in enumerate(re.finditer(r"(?<!\*)\*\*(?!\*)", translation)):
        before = translation[mark.start() - 1] if mark.start() else " "
        after = translation[mark.end()] if mark.end() < len(translation) else " "
        closing = i % 2 == 1
        if closing and PUNCTUATION.match(before) and not (after.isspace()
                                                          or PUNCTUATION.match(after)):
            traps.append(f"'{translation[max(0, mark.start() - 6):mark.end() + 2]}': a closing ** "
                         "after punctuation and before a character does not close")
    return traps


@pytest.mark.parametrize("page", toc_pages())
def test_a_translation_is_markdown_that_renders_as_meant(page):
    from babel.messages.pofile import read_po

    with catalog(page).open("rb") as f:
        traps = {m.id[:60]: markdown_traps(m.string) for m in read_po(f) if m.id and m.string}
    assert {k: v for k, v in traps.items() if v} == {}


def test_the_markdown_traps_are_caught():
    assert markdown_traps("1. 梯度爆炸的条件")
    assert not markdown_traps("1\\. 梯度爆炸的条件")
    assert markdown_traps("**原文说：**若")
    assert not markdown_traps("**原文说**：若")
    assert not markdown_traps("**来源：**{cite:p}`x`")
    assert not markdown_traps("见 **粗体。**")


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    """The messages Sphinx extracts from the pages today (the gettext builder, no execution)."""
    out = tmp_path_factory.mktemp("gettext")
    config = out / "_config.yml"
    python = Path(sys.executable)
    subprocess.run([python, REPO / "book/_ext/edition_config.py", "zh_CN", config,
                    "--root", REPO, "--execute", "off"], check=True)
    result = subprocess.run(
        [python.parent / "jupyter-book", "build", REPO, "--config", config, "--path-output", out,
         "--builder", "custom", "--custom-builder", "gettext", "--quiet"],
        check=False, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out / "_build" / "gettext"


@pytest.mark.parametrize("page", toc_pages())
def test_the_catalogs_hold_the_messages_of_the_pages_today(page, extracted):
    from babel.messages.pofile import read_po

    with (extracted / f"{page}.pot").open("rb") as f:
        today = {m.id for m in read_po(f) if m.id}
    with catalog(page).open("rb") as f:
        stored = {m.id for m in read_po(f) if m.id}
    assert today - stored == set(), "new English messages: run `make translations`"
    assert stored - today == set(), "messages the page no longer has: run `make translations`"


PLACEHOLDERS = ("Project name not set", "FULL NAME", "EMAIL@ADDRESS", "LL@li.org",
                "SOME DESCRIPTIVE TITLE", "FIRST AUTHOR", "YEAR-MO-DA", "#, fuzzy")


@pytest.mark.parametrize("page", toc_pages())
def test_a_catalog_header_names_the_book_and_no_obsolete_message_is_kept(page):
    from babel.messages.pofile import read_po

    text = catalog(page).read_text(encoding="utf-8")
    header = text.split("\n\n", 1)[0]
    assert [p for p in PLACEHOLDERS if p in header] == [], "run book/_ext/catalog_headers.py"
    with catalog(page).open("rb") as f:
        messages = read_po(f)
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    assert messages.project == config["title"]
    assert messages.language_team.startswith("Chinese (Simplified) <https://")
    assert not messages.fuzzy and not messages.obsolete and "\n#~ " not in text


def test_a_new_catalog_gets_the_header_and_a_filled_one_is_left_alone(tmp_path):
    """What `make translations` relies on: sphinx-intl creates a new page's catalog with the
    template's header, and book/_ext/catalog_headers.py fills it in, once."""
    from catalog_headers import fill_headers

    template = (
        "# SOME DESCRIPTIVE TITLE.\n# Copyright (C) 2026\n# FIRST AUTHOR <EMAIL@ADDRESS>, 2026.\n"
        "#\n#, fuzzy\nmsgid \"\"\nmsgstr \"\"\n"
        "\"Project-Id-Version: Project name not set \\n\"\n"
        "\"PO-Revision-Date: YEAR-MO-DA HO:MI+ZONE\\n\"\n"
        "\"Last-Translator: FULL NAME <EMAIL@ADDRESS>\\n\"\n\"Language: zh_CN\\n\"\n"
        "\"Language-Team: zh_CN <LL@li.org>\\n\"\n"
        "\"Content-Type: text/plain; charset=utf-8\\n\"\n\n"
        "msgid \"Glossary\"\nmsgstr \"术语表\"\n\n#~ msgid \"Old\"\n#~ msgstr \"旧\"\n")
    page = tmp_path / "book" / "new_page.po"
    page.parent.mkdir()
    page.write_text(template, encoding="utf-8")
    assert fill_headers(tmp_path) == [page]
    text = page.read_text(encoding="utf-8")
    assert [p for p in PLACEHOLDERS if p in text] == [] and "#~" not in text
    assert "# Page: book/new_page\n" in text and 'msgstr "术语表"' in text
    assert "Project-Id-Version: Transformer from 0 to 1" in text
    assert fill_headers(tmp_path) == [] and page.read_text(encoding="utf-8") == text

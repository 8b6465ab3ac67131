"""Fill in the header of every catalog, and drop its obsolete messages.

    python book/_ext/catalog_headers.py book/locale/zh_CN/LC_MESSAGES

sphinx-intl creates a page's catalog from the template of Sphinx's gettext builder, whose header
is a form to fill in ("Project name not set", "FULL NAME <EMAIL@ADDRESS>", a "#, fuzzy" flag),
and afterwards keeps whatever header a catalog has. `make translations` runs this after
sphinx-intl, so that every catalog, a new page's too, names the book, its translators and where
to report a problem; a catalog whose header is already complete and that has no obsolete
message is left byte for byte. The book's name, authors, year and repository come from
_config.yml.
"""

import argparse
import datetime
import io
from pathlib import Path

import yaml
from babel.messages.pofile import read_po, write_po

REPO = Path(__file__).resolve().parents[2]
# sphinx-intl's line width, so that both write the same lines
WIDTH = 76
# the language team, by the catalog's locale
TEAMS = {"zh_CN": "Chinese (Simplified)"}


def book_settings(config: Path = REPO / "_config.yml") -> dict[str, str]:
    settings = yaml.safe_load(config.read_text(encoding="utf-8"))
    return {"title": settings["title"], "author": settings["author"],
            "year": str(settings["copyright"]), "issues": settings["repository"]["url"] + "/issues"}


def filled(catalog, page: str, book: dict[str, str]) -> None:
    """Fill in the header of `catalog`, the catalog of `page`, and forget its obsolete messages."""
    locale = str(catalog.locale_identifier)
    catalog.header_comment = (
        f"# {TEAMS.get(locale, locale)} translation of \"{book['title']}\"\n"
        f"# Page: {page}\n"
        f"# Copyright (C) {book['year']} {book['author']}")
    catalog.project, catalog.version = book["title"], ""
    catalog.msgid_bugs_address = book["issues"]
    catalog.last_translator = book["author"]
    catalog.language_team = f"{TEAMS.get(locale, locale)} <{book['issues']}>"
    if isinstance(catalog.revision_date, str):  # still the template's YEAR-MO-DA HO:MI+ZONE
        catalog.revision_date = datetime.datetime.now(datetime.UTC)
    catalog.fuzzy = False
    catalog.obsolete.clear()


def fill_headers(folder: Path, book: dict[str, str] | None = None) -> list[Path]:
    """Fill in every catalog under `folder`; returns the catalogs that changed."""
    book = book or book_settings()
    changed = []
    for path in sorted(folder.rglob("*.po")):
        before = path.read_bytes()
        catalog = read_po(io.BytesIO(before), abort_invalid=True)
        filled(catalog, path.relative_to(folder).with_suffix("").as_posix(), book)
        out = io.BytesIO()
        write_po(out, catalog, width=WIDTH, ignore_obsolete=True)
        if out.getvalue() != before:
            path.write_bytes(out.getvalue())
            changed.append(path)
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a language's LC_MESSAGES folder")
    for path in fill_headers(parser.parse_args().folder):
        print(f"header filled in: {path}")


if __name__ == "__main__":
    main()

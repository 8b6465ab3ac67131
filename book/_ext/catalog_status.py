"""How much of each page's catalog is left to translate: untranslated plus fuzzy messages.

    python book/_ext/catalog_status.py book/locale/zh_CN/LC_MESSAGES

Used by `make translations` and by tests/test_translations.py.
"""

import sys
from pathlib import Path

from babel.messages.pofile import read_po


def catalog_status(catalog: Path) -> dict[str, list[str]]:
    """The msgids of a .po file by state: translated, untranslated, fuzzy."""
    with catalog.open("rb") as f:
        messages = [m for m in read_po(f, abort_invalid=True) if m.id]
    status = {"translated": [], "untranslated": [], "fuzzy": []}
    for message in messages:
        state = "fuzzy" if message.fuzzy else "translated" if message.string else "untranslated"
        status[state].append(message.id)
    return status


def main() -> None:
    folder = Path(sys.argv[1])
    total_pending = 0
    for catalog in sorted(folder.rglob("*.po")):
        status = catalog_status(catalog)
        pending = len(status["untranslated"]) + len(status["fuzzy"])
        total_pending += pending
        print(f"{pending:5d} to translate ({len(status['untranslated'])} untranslated, "
              f"{len(status['fuzzy'])} fuzzy), {len(status['translated']):4d} done: "
              f"{catalog.relative_to(folder)}")
    print(f"{total_pending:5d} messages to translate in all")


if __name__ == "__main__":
    main()

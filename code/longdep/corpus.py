"""Real text for Chapter 7 ("A corpus that never drifts"): a frozen copy of CPython's help topics.

``data/pydoc_topics.txt`` holds the text of Python 3.11.7's ``pydoc_data.topics`` (the 79
entries of its ``topics`` dict joined in sorted key order by :data:`SEPARATOR`; PSF licence,
see ``data/README.md``): 465,126 characters of technical English with many repeated
identifiers. The topics change between Python versions, so the book ships the file and
:func:`load_corpus_text` checks its SHA-256 on every load: a changed file raises, naming the
file and both hashes, instead of silently changing the chapter's numbers.

The text is split once, at a fixed place (:func:`split_text`): the first 90 % for training,
the last 10 % (from the start of a line) held out. Characters are the tokens: the vocabulary is
the sorted set of the text's characters, and a text is encoded as int64 indices into it.
:func:`identifier_classes` finds the characters of a window that continue an identifier seen
earlier in it (Chapter 7, "Repeated identifiers").
"""

import hashlib
import importlib.resources
import re
from dataclasses import dataclass
from pathlib import Path

import torch

CORPUS_FILE = "pydoc_topics.txt"
CORPUS_SHA256 = "71f2ff5d99bdc1f9c48c5c2353ad138201c5ca1c377e0226857ef8fa89b8bcee"
SEPARATOR = "\n\n"
"""Between two topics: one blank line (every topic already ends with a newline)."""
HELD_OUT_FRACTION = 0.1


def corpus_path() -> Path:
    """Where the installed package keeps the frozen corpus (``longdep/data/pydoc_topics.txt``)."""
    return Path(str(importlib.resources.files("longdep") / "data" / CORPUS_FILE))


def load_corpus_text(path: str | Path | None = None, sha256: str = CORPUS_SHA256) -> str:
    """The corpus text, read from ``path`` (default :func:`corpus_path`) as UTF-8, after
    checking that the file's SHA-256 is ``sha256``; a ``ValueError`` names the file and both
    hashes if it is not (Chapter 7, "A corpus that never drifts")."""
    if path is not None and not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str, a Path or None, got {type(path).__name__}")
    path = corpus_path() if path is None else Path(path)
    data = path.read_bytes()
    found = hashlib.sha256(data).hexdigest()
    if found != sha256:
        raise ValueError(f"{path} has changed: its SHA-256 is {found}, expected {sha256}. "
                         f"Chapter 7's numbers hold for the frozen text only; restore the file")
    return data.decode("utf-8")


def split_text(text: str, held_out_fraction: float = HELD_OUT_FRACTION) -> tuple[str, str]:
    """(training text, held-out text): the held-out text is the last ``held_out_fraction`` of
    the characters, its start moved forward to the beginning of the next line, so that it
    starts where a line of the text does (Chapter 7)."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"text must be a non-empty str, got {type(text).__name__}")
    if isinstance(held_out_fraction, bool) or not isinstance(held_out_fraction, float) or not (
            0 < held_out_fraction < 1):
        raise ValueError(f"held_out_fraction must be a float in (0, 1), got "
                         f"{held_out_fraction!r}")
    cut = int(len(text) * (1 - held_out_fraction))
    line_start = text.find("\n", cut) + 1  # 0 if no newline follows
    cut = line_start if line_start > 0 else cut
    return text[:cut], text[cut:]


@dataclass(frozen=True)
class Corpus:
    """The encoded corpus: ``vocabulary`` the sorted distinct characters of the whole text;
    ``train`` and ``held_out`` the two parts of :func:`split_text` as int64 indices into it,
    each of shape (characters,)."""

    vocabulary: str
    train: torch.Tensor
    held_out: torch.Tensor

    @property
    def vocab_size(self) -> int:
        return len(self.vocabulary)

    def encode(self, text: str) -> torch.Tensor:
        """``text`` as (len(text),) int64 indices; a ``ValueError`` names a character that is
        not in the vocabulary."""
        index = {character: i for i, character in enumerate(self.vocabulary)}
        unknown = sorted(set(text) - set(index))
        if unknown:
            raise ValueError(f"characters not in the vocabulary: {unknown!r}")
        return torch.tensor([index[character] for character in text], dtype=torch.int64)

    def decode(self, indices: torch.Tensor) -> str:
        """The text of (characters,) int64 ``indices``."""
        return "".join(self.vocabulary[i] for i in indices.tolist())


def load_corpus(path: str | Path | None = None, sha256: str = CORPUS_SHA256) -> Corpus:
    """The checked corpus (:func:`load_corpus_text`), split (:func:`split_text`) and encoded
    character by character (Chapter 7)."""
    text = load_corpus_text(path, sha256)
    train, held_out = split_text(text)
    vocabulary = "".join(sorted(set(text)))
    corpus = Corpus(vocabulary, torch.empty(0, dtype=torch.int64),
                    torch.empty(0, dtype=torch.int64))
    return Corpus(vocabulary, corpus.encode(train), corpus.encode(held_out))


IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def identifier_classes(window: str, min_length: int = 3) -> tuple[list[int], list[int]]:
    """The characters of ``window`` that continue an identifier (every character of a word or
    name of at least ``min_length`` but its first): (repeats, firsts), two lists of indices
    into the window, for identifiers that occurred earlier in the window and for those that
    did not. Identifiers touching either end of the window are skipped: they may be cut."""
    repeats, firsts, seen = [], [], set()
    for match in IDENTIFIER.finditer(window):
        start, end = match.span()
        if start == 0 or end == len(window) or end - start < min_length:
            continue
        (repeats if match.group() in seen else firsts).extend(range(start + 1, end))
        seen.add(match.group())
    return repeats, firsts

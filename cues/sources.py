"""The primary texts the project carries (``cues/data/sources``) and verbatim-quote checking.

A quote is verbatim when, punctuation and white space aside, it occurs in the cited file.
Nothing else is normalized: characters, variants (賔/賓, 鍾/鐘) and footnote numbers must match.
"""

from __future__ import annotations

import unicodedata
from functools import cache
from importlib import resources
from pathlib import PurePosixPath

SOURCES_PACKAGE = "cues"
SOURCES_DIR = "data/sources"


def _is_punctuation(ch: str) -> bool:
    if ch.isspace():
        return True
    cat = unicodedata.category(ch)
    # P* punctuation, S* symbols such as ︰ and ·; Z* separators (the full-width space)
    return cat[0] in "PZ" or ch in "︰·．〔〕【】「」『』《》〈〉"


def normalize(text: str) -> str:
    """The text with punctuation and white space removed (for verbatim comparison)."""
    return "".join(ch for ch in text if not _is_punctuation(ch))


def source_files() -> tuple[str, ...]:
    """Relative paths (``seeds/…``, ``reference/…``) of the bundled source texts."""
    root = resources.files(SOURCES_PACKAGE).joinpath(SOURCES_DIR)
    out: list[str] = []
    for sub in ("seeds", "reference"):
        for entry in root.joinpath(sub).iterdir():
            if entry.name.endswith((".txt", ".json")):
                out.append(f"{sub}/{entry.name}")
    return tuple(sorted(out))


@cache
def read_source(relpath: str) -> str:
    """The text of a bundled source file, e.g. ``seeds/004_1d8b5caa97974f06.txt``."""
    parts = PurePosixPath(relpath).parts
    if len(parts) != 2 or parts[0] not in ("seeds", "reference") or ".." in parts:
        raise FileNotFoundError(relpath)
    node = resources.files(SOURCES_PACKAGE).joinpath(SOURCES_DIR, *parts)
    return node.read_text(encoding="utf-8")


@cache
def _normalized_source(relpath: str) -> str:
    return normalize(read_source(relpath))


def quote_found(quote: str, relpath: str) -> bool:
    """True when ``quote`` occurs verbatim (punctuation aside) in the cited source file."""
    needle = normalize(quote)
    return bool(needle) and needle in _normalized_source(relpath)


def read_json_source(relpath: str) -> object:
    import json

    return json.loads(read_source(relpath))

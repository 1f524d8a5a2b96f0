"""The texts a sheet cites and verbatim-quote checking.

A citation's ``file`` names either a text the project carries (``seeds/…`` or ``reference/…``,
under ``cues/data/sources``) or, when it names none of those, the user's own text file: a path
relative to the sheet (or absolute), read as UTF-8.  The loader says where a sheet's own texts
are with ``texts_beside(folder)`` while it parses the sheet; a built-in rite has none.

A bundled text is named by its readable path (``seeds/yili-da-she-zhushu.txt``); its former
hashed name (``seeds/004_1d8b5caa97974f06.txt``) still finds it (``cues.editions``).

A quote is verbatim when, punctuation and white space aside, it occurs in the cited file.
Nothing else is normalized: characters, variants (賔/賓, 鍾/鐘) and footnote numbers must match.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

from cues.editions import current_name
from cues.limits import SOURCE_TEXT_BYTES, InputFileError, read_text_limited

SOURCES_PACKAGE = "cues"
SOURCES_DIR = "data/sources"


@cache
def is_punctuation(ch: str) -> bool:
    if ch.isspace():
        return True
    cat = unicodedata.category(ch)
    # P* punctuation, S* symbols such as ︰ and ·; Z* separators (the full-width space)
    return cat[0] in "PZ" or ch in "︰·．〔〕【】「」『』《》〈〉"


def normalize(text: str) -> str:
    """The text with punctuation and white space removed (for verbatim comparison)."""
    return "".join(ch for ch in text if not is_punctuation(ch))


@cache
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
    """The text of a bundled source file, e.g. ``seeds/yili-da-she-zhushu.txt``."""
    parts = PurePosixPath(current_name(relpath)).parts
    if len(parts) != 2 or parts[0] not in ("seeds", "reference") or ".." in parts:
        raise FileNotFoundError(relpath)
    node = resources.files(SOURCES_PACKAGE).joinpath(SOURCES_DIR, *parts)
    return node.read_text(encoding="utf-8")


@cache
def _normalized_source(relpath: str) -> str:
    return normalize(read_source(relpath))


_SHEET_FOLDER: ContextVar[Path | None] = ContextVar("sheet_folder", default=None)


@contextmanager
def texts_beside(folder: Path | None) -> Iterator[None]:
    """Within: a ``file`` that names no bundled text is a path relative to ``folder``."""
    token = _SHEET_FOLDER.set(folder)
    try:
        yield
    finally:
        _SHEET_FOLDER.reset(token)


def own_text_path(file: str) -> Path | None:
    """Where a user's own cited text is (None when no sheet folder is in force)."""
    folder = _SHEET_FOLDER.get()
    path = Path(file)
    if path.is_absolute():
        return path
    return None if folder is None else folder / path


@cache
def _normalized_own_text(path: Path, mtime_ns: int, size: int) -> str:
    return normalize(read_text_limited(path, SOURCE_TEXT_BYTES, "a UTF-8 text file"))


def _normalized_text(file: str) -> str:
    """The cited text, punctuation aside (raises OSError/UnicodeError if it cannot be read)."""
    if current_name(file) in source_files():
        return _normalized_source(current_name(file))
    path = own_text_path(file)
    if path is None:
        raise FileNotFoundError(file)
    stat = path.stat()
    return _normalized_own_text(path.resolve(), stat.st_mtime_ns, stat.st_size)


def citation_problem(file: str) -> str | None:
    """Why ``file`` cannot be cited (None when it can): neither bundled nor a readable text."""
    if current_name(file) in source_files():
        return None
    path = own_text_path(file)
    if path is None:
        return f"is not a bundled source; expected one of: {', '.join(source_files())}"
    try:
        _normalized_text(file)
    except FileNotFoundError:
        return (f"is neither a bundled source (seeds/…, reference/…) nor a file: {path} "
                "does not exist")
    except IsADirectoryError:
        return f"names the folder {path}: expected a text file"
    except UnicodeDecodeError:
        return f"{path} is not UTF-8 text"
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    except InputFileError as exc:  # not a regular file, past its limit, not UTF-8
        return str(exc)
    return None


def quote_found(quote: str, relpath: str) -> bool:
    """True when ``quote`` occurs verbatim (punctuation aside) in the cited file (a bundled
    text or the user's own: False when it cannot be read)."""
    needle = normalize(quote)
    try:
        return bool(needle) and needle in _normalized_text(relpath)
    except (OSError, UnicodeError, InputFileError):
        return False


def read_json_source(relpath: str) -> Any:
    import json

    return json.loads(read_source(relpath))

"""TOML values to source lines: where each table and key of a sheet was written.

``tomllib`` gives values but no positions, so a sheet's errors are located by a second, simple
reading of the text: every table header (``[rite]``, ``[[cue]]``) and the first line of every key
inside it.  Syntax errors carry their line in tomllib's message and are located from that.
"""

from __future__ import annotations

import re
import tomllib

from cues.errors import SheetError

_KEY_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_-]*)\s*=")
_HEADER_RE = re.compile(r"^\s*\[\[?\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\]\]?")
_AT_LINE_RE = re.compile(r"\(at line (\d+), column (\d+)\)")


class TomlLines:
    """Maps tables and keys of a TOML text to line numbers (tomllib gives none)."""

    def __init__(self, text: str) -> None:
        # header name → its tables in order, each (header line, {key: line}); "" is the top
        # level, before any header
        self.tables: dict[str, list[tuple[int, dict[str, int]]]] = {"": [(1, {})]}
        keys = self.tables[""][0][1]
        for number, line in enumerate(text.splitlines(), start=1):
            header = _HEADER_RE.match(line)
            if header and not _KEY_RE.match(line):
                keys = {}
                self.tables.setdefault(header.group(1), []).append((number, keys))
                continue
            key = _KEY_RE.match(line)
            if key:
                keys.setdefault(key.group(1), number)
        # each name's header lines → the table's index (``index_at``)
        self._index_of_line = {
            name: {start: i for i, (start, _) in enumerate(found)}
            for name, found in self.tables.items()
        }

    def table(self, name: str, index: int) -> tuple[int, dict[str, int]] | None:
        """The header line and key lines of the ``index``-th table called ``name``."""
        found = self.tables.get(name, [])
        if 0 <= index < len(found):
            return found[index]
        return None

    def line(self, name: str, index: int = 0, key: str | None = None) -> int | None:
        """The line of ``key`` in that table, else of its header; None if there is no table."""
        table = self.table(name, index)
        if table is None:
            return None
        header_line, keys = table
        if key is not None and key in keys:
            return keys[key]
        return header_line

    def index_at(self, name: str, header_line: int | None) -> int:
        """Which table called ``name`` starts at ``header_line`` (0 if none does)."""
        if header_line is None:
            return 0
        return self._index_of_line.get(name, {}).get(header_line, 0)


def toml_syntax_error(exc: tomllib.TOMLDecodeError, path: str) -> SheetError:
    """tomllib's error as a SheetError located by line (the column stays in the message)."""
    msg = str(exc)
    match = _AT_LINE_RE.search(msg)
    line = int(match.group(1)) if match else None
    text = re.sub(r"\s*\(at line \d+, column \d+\)", "", msg)
    if match:
        text += f" (column {match.group(2)})"
    return SheetError(f"TOML syntax error: {text}", file=path, line=line)

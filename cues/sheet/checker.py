"""The validator's tools: a checker that collects every error of one sheet, and typed getters.

A getter records an error (with file, line and cue id) and returns None when a value is missing
or of the wrong type, so that the loader goes on and reports every problem together.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from typing import Any, TypedDict, TypeGuard, Unpack

from cues.errors import SheetError
from cues.limits import ERRORS_SHOWN
from cues.sheet.toml_lines import TomlLines


class InTable(TypedDict):
    """Which table of a sheet a value is in: keywords of ``SheetChecker.error`` and its kin."""

    table: str
    index: int


class Where(InTable, total=False):
    """... and the cue it belongs to."""

    cue: str | None


class WhereKey(Where, total=False):
    """... and the key in it."""

    key: str | None


class SheetChecker:
    """Collects the errors (and the warnings) of one sheet, each located by table, key and
    cue."""

    def __init__(self, path: str, lines: TomlLines) -> None:
        self.path = path
        self.lines = lines
        self.errors: list[SheetError] = []
        self.warnings: list[SheetError] = []
        self.unlisted = 0  # errors past ERRORS_SHOWN: counted, not located nor listed

    @property
    def full(self) -> bool:
        """Whether ERRORS_SHOWN errors are listed already (later ones are only counted)."""
        return len(self.errors) >= ERRORS_SHOWN.value

    def problems(self) -> list[SheetError]:
        """The errors listed, and a last one counting those past ERRORS_SHOWN."""
        if not self.unlisted:
            return list(self.errors)
        return [*self.errors, SheetError(f"… and {self.unlisted:,} more problems (only the "
                                         f"first {ERRORS_SHOWN.value} are listed)",
                                         file=self.path)]

    def error(
        self, message: str, *, table: str = "", index: int = 0, key: str | None = None,
        cue: str | None = None, line: int | None = None,
    ) -> None:
        """Record ``message`` at ``line``, or at ``key`` of the ``index``-th ``table``."""
        if self.full:
            self.unlisted += 1
            return
        if line is None and table:
            line = self.lines.line(table, index, key)
        self.errors.append(SheetError(message, file=self.path, line=line, cue=cue))

    def warn(self, message: str, *, table: str = "", index: int = 0, key: str | None = None,
             cue: str | None = None) -> None:
        """Record a warning: doubtful, not wrong (the sheet still loads)."""
        line = self.lines.line(table, index, key) if table else None
        self.warnings.append(SheetError(message, file=self.path, line=line, cue=cue))

    def get(
        self, data: dict, key: str, kind: type | tuple[type, ...], what: str, *,
        required: bool = False, table: str = "", index: int = 0, cue: str | None = None,
    ) -> Any:
        """``data[key]`` if it is a ``kind`` (a bool only if asked for), else None."""
        if key not in data:
            if required:
                self.error(f"missing {key!r}: expected {what}", table=table, index=index,
                           cue=cue)
            return None
        value = data[key]
        ok = isinstance(value, kind) and not (isinstance(value, bool) and bool not in (
            kind if isinstance(kind, tuple) else (kind,)))
        if not ok:
            self.error(f"{key!r} is {describe_value(value)}: expected {what}", table=table,
                       index=index, key=key, cue=cue)
            return None
        return value

    def unknown_keys(
        self, data: dict, allowed: AbstractSet[str], where: str, *, table: str = "", index: int = 0,
        cue: str | None = None, key: str | None = None,
    ) -> None:
        """Record every key of ``data`` not in ``allowed``, with the closest allowed one."""
        for k in data:
            if k not in allowed:
                hint = None if self.full else closest(k, allowed)
                extra = f" (did you mean {hint!r}?)" if hint else ""
                self.error(
                    f"unknown key {k!r} in {where}{extra}; expected one of: "
                    f"{', '.join(sorted(allowed))}",
                    table=table, index=index, key=key or k, cue=cue,
                )

    def array(self, raw: object, name: str, what: str, **where: Unpack[WhereKey]) -> list | None:
        """``raw`` if it is an array; None if it is absent, or (reported) anything else."""
        if raw is None:
            return None
        if not isinstance(raw, list):
            self.error(f"{name!r} is {describe_value(raw)}: expected {what}", **where)
            return None
        return raw

    def string_list(
        self, data: dict, key: str, *, table: str, index: int, cue: str | None = None,
    ) -> tuple[str, ...]:
        """``data[key]`` as stripped non-empty strings (one string counts as a list of one)."""
        raw = data.get(key)
        if raw is None:
            return ()
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list) or not all(isinstance(v, str) and v.strip() for v in raw):
            self.error(f"{key!r} is {describe_value(raw)}: expected an array of non-empty "
                       "strings", table=table, index=index, key=key, cue=cue)
            return ()
        return tuple(v.strip() for v in raw)

    def table_array(self, data: dict, name: str) -> Iterator[tuple[int, dict]]:
        """The tables of an array of tables ``[[name]]``, reporting anything that is not one."""
        raw = data.get(name, [])
        if not isinstance(raw, list):
            self.error(f"{name!r} is {describe_value(raw)}: expected tables, each written "
                       f"[[{name}]]", table=name)
            return
        for i, item in enumerate(raw):
            if not isinstance(item, dict):
                self.error(f"a [[{name}]] must be a table, not {describe_value(item)}",
                           table=name, index=i)
                continue
            yield i, item


def describe_value(value: object) -> str:
    """A TOML value in words, for messages: "the string 'x'", "an array", …"""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__}"


def closest(word: str, options: Iterable[str]) -> str | None:
    """The option most like ``word`` (a "did you mean"), or None."""
    found = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return found[0] if found else None


def is_number(value: object) -> TypeGuard[int | float]:
    """An int or float, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)

"""The size of a parsed sheet against the limits (``cues.limits``), checked before validation.

A sheet past a limit is refused at once, so that nothing later (the validator, the compiler)
does work that grows with a hostile sheet: the number of values, of cues, of entries in any
array, of pieces in a cue and of pairs (耦) in a 射節.
"""

from __future__ import annotations

from cues.errors import SheetError
from cues.limits import ARRAY_ENTRIES, CUES, OU, PIECES, SHEET_VALUES, Limit, over_limit
from cues.sheet.toml_lines import TomlLines

_ARRAY_LIMITS = {"pieces": PIECES, "ou": OU}  # by key; the top-level "cue" has CUES


def bounds_errors(data: dict, path: str, lines: TomlLines) -> list[SheetError]:
    """The limits ``data`` (a parsed sheet) is past, each located; [] if it is within them."""
    values = _count_values(data, SHEET_VALUES.value + 1)
    if values > SHEET_VALUES.value:
        return [SheetError(f"the sheet holds more than {over_limit(SHEET_VALUES, values - 1)}",
                           file=path)]
    errors: list[SheetError] = []
    for name, value in data.items():
        if isinstance(value, list) and name == "cue":
            errors += _cue_errors(value, path, lines)
        else:
            errors += _array_errors(value, name, path, lines, table=name)
    return errors


def _cue_errors(cues: list, path: str, lines: TomlLines) -> list[SheetError]:
    """The ``[[cue]]`` array past CUES, or any cue's arrays past theirs."""
    if len(cues) > CUES.value:
        return [SheetError(f"the sheet has {over_limit(CUES, len(cues))}", file=path,
                           line=lines.line("cue", CUES.value))]
    errors: list[SheetError] = []
    for index, cue in enumerate(cues):
        errors += _array_errors(cue, "cue", path, lines, table="cue", index=index)
    return errors


def _array_errors(
    value: object, name: str, path: str, lines: TomlLines, *, table: str, index: int = 0,
) -> list[SheetError]:
    """Every array inside ``value`` (named by its key) past its limit, at its table's line."""
    errors: list[SheetError] = []
    stack: list[tuple[str, object]] = [(name, value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, dict):
            stack += item.items()
        elif isinstance(item, list):
            limit: Limit = _ARRAY_LIMITS.get(key, ARRAY_ENTRIES)
            if len(item) > limit.value:
                errors.append(SheetError(f"{key!r} has {over_limit(limit, len(item))}",
                                         file=path, line=lines.line(table, index, key)))
                continue
            stack += ((key, entry) for entry in item)
    return errors


def _count_values(data: object, stop: int) -> int:
    """How many keys and array entries ``data`` holds (counting stops at ``stop``)."""
    count = 0
    stack = [data]
    while stack and count < stop:
        item = stack.pop()
        if isinstance(item, dict):
            count += len(item)
            stack += item.values()
        elif isinstance(item, list):
            count += len(item)
            stack += item
    return count

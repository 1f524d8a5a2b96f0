"""The small tables a sheet nests: a source citation, counted names, positions on the ground."""

from __future__ import annotations

from collections.abc import Callable

from cues.catalog import canonical_instrument, instrument_names
from cues.editions import current_name
from cues.layouts import FACINGS
from cues.model import Count, Position, Source
from cues.passages import layer_doubt, layer_problem
from cues.sheet.checker import SheetChecker, Where, WhereKey, closest, describe_value, is_number
from cues.sources import citation_problem, quote_found

MAX_COUNT = 128
SOURCE_KEYS = {"work", "quote", "file", "note"}
COUNT_KEYS = {"name", "count", "silent"}
MAX_METRES = 1000  # |x|, |y| of a position


def parse_source(
    checker: SheetChecker, data: object, *, table: str, index: int, cue: str | None,
    required: bool, key: str = "source",
) -> Source | None:
    """A ``{ work, quote, file }`` citation; a quote naming a bundled file must be found in it."""
    if data is None:
        if required:
            checker.error(f"missing {key!r}: expected a table {{ work = \"…\", quote = \"…\", "
                          "file = \"seeds/…\" }} citing the passage verbatim",
                          table=table, index=index, cue=cue)
        return None
    if not isinstance(data, dict):
        checker.error(f"{key!r} is {describe_value(data)}: expected a table "
                      "{ work, quote, file }", table=table, index=index, key=key, cue=cue)
        return None
    where: Where = {"table": table, "index": index, "cue": cue}
    checker.unknown_keys(data, SOURCE_KEYS, f"{key}", key=key, **where)
    work = checker.get(data, "work", str, "the work cited, e.g. \"儀禮·大射\"", required=True,
                       **where)
    quote = checker.get(data, "quote", str, "the passage, verbatim", required=True, **where)
    file = checker.get(data, "file", str, "a bundled source path such as "
                       "\"seeds/yili-da-she-zhushu.txt\" or the path of a text file beside the "
                       "sheet",
                       **where)
    note = checker.get(data, "note", str, "a string", **where) or ""
    if work is None or quote is None:
        return None
    if not quote.strip():
        checker.error(f"{key}.quote is empty: expected the passage, verbatim", key=key, **where)
        return None
    if file is not None:
        if (problem := citation_problem(file)) is not None:
            checker.error(f"{key}.file {file!r} {problem}", key=key, **where)
        elif not quote_found(quote, file):
            checker.error(f"{key}.quote 「{quote}」 is not found verbatim (punctuation aside) in "
                          f"{file}", key=key, **where)
        elif (misstated := layer_problem(Source(work, quote, file))) is not None:
            checker.error(f"{key}.{misstated}", key=key, **where)
        elif (doubt := layer_doubt(Source(work, quote, file))) is not None:
            checker.warn(f"{key}: {doubt}", key=key, **where)
        file = current_name(file)
    return Source(work=work, quote=quote, file=file, note=note)


def parse_counts(
    checker: SheetChecker, data: dict, key: str, *, table: str, index: int, cue: str | None,
    check_name: Callable[[str], str | None] | None = None, what: str,
) -> tuple[Count, ...]:
    """An array of ``{ name, count }``; ``check_name`` gives a name's canonical form or None."""
    where: WhereKey = {"table": table, "index": index, "key": key, "cue": cue}
    raw = checker.array(data.get(key), key, "an array of { name = \"…\", count = N }}", **where)
    out: list[Count] = []
    for item in raw or ():
        if not isinstance(item, dict):
            checker.error(f"an entry of {key!r} is {describe_value(item)}: expected "
                          "{ name = \"…\", count = N }", **where)
            continue
        checker.unknown_keys(item, COUNT_KEYS, f"an entry of {key!r}", **where)
        name = item.get("name")
        count = item.get("count", 1)
        if not isinstance(name, str) or not name.strip():
            checker.error(f"an entry of {key!r} has no name: expected name = \"…\"", **where)
            continue
        if check_name is not None:
            canon = check_name(name)
            if canon is None:
                hint = closest(name, instrument_names())
                checker.error(
                    f"unknown {what} {name!r}" + (f" (did you mean {hint!r}?)" if hint else "")
                    + f"; expected one of: {', '.join(instrument_names())}", **where)
                continue
            name = canon
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
            checker.error(f"{what} {name!r} has count {count!r}: expected a whole number from 1 "
                          f"to {MAX_COUNT}", **where)
            continue
        if any(c.name == name for c in out):
            checker.error(f"{what} {name!r} is listed twice in {key!r}: give one entry with the "
                          "total count", **where)
            continue
        silent = item.get("silent", "")
        if not isinstance(silent, str):
            checker.error(f"{what} {name!r} has silent = {describe_value(silent)}: expected a "
                          "string saying why it does not sound", **where)
            silent = ""
        out.append(Count(name, count, silent.strip()))
    return tuple(out)


def parse_positions(
    checker: SheetChecker, raw: object, *, table: str, key: str | None, cue: str | None,
    allowed: set[str], index_of: Callable[[int], int],
) -> tuple[Position, ...]:
    """An array of ``{ name, x, y, instrument, facing, source }`` (the layout or a cue's moves).

    ``index_of(i)`` is the table an entry's errors point at: the i-th ``[[position]]``, or the
    one cue that holds all its moves.
    """
    entries = checker.array(raw, key or table, "an array of positions { name, x, y }",
                            table=table, index=index_of(0), key=key, cue=cue)
    out: list[Position] = []
    for i, item in enumerate(entries or ()):
        where: Where = {"table": table, "index": index_of(i), "cue": cue}
        if not isinstance(item, dict):
            checker.error(f"a position is {describe_value(item)}: expected {{ name, x, y }}",
                          key=key, **where)
            continue
        checker.unknown_keys(item, allowed, "a position", key=key, **where)
        position = _position(checker, item, {p.name for p in out}, key=key, where=where)
        if position is not None:
            out.append(position)
    return tuple(out)


def _position(
    checker: SheetChecker, item: dict, taken: set[str], *, key: str | None, where: Where,
) -> Position | None:
    """One position; None (with the error recorded) if it has no name, no place, or a name
    already ``taken``."""
    name = item.get("name")
    x, y = item.get("x"), item.get("y")
    if not isinstance(name, str) or not name.strip():
        checker.error("a position has no name: expected name = \"…\"", key=key, **where)
        return None
    if not (is_number(x) and is_number(y)) or abs(x) > MAX_METRES or abs(y) > MAX_METRES:
        checker.error(f"position {name!r} needs x and y in metres (x east, y north; |x|, |y| "
                      f"≤ {MAX_METRES}): got x = {x!r}, y = {y!r}", key=key or "x", **where)
        return None
    if name in taken:
        checker.error(f"position {name!r} is given twice", key=key, **where)
        return None
    instrument = item.get("instrument")
    if instrument is not None:
        canon = canonical_instrument(instrument) if isinstance(instrument, str) else None
        if canon is None:
            checker.error(f"position {name!r} has unknown instrument {instrument!r}; "
                          f"expected one of: {', '.join(instrument_names())}",
                          key=key or "instrument", **where)
        instrument = canon
    facing = item.get("facing")
    if facing is not None and facing not in FACINGS:
        checker.error(f"position {name!r} has facing = {facing!r}: expected "
                      f"{', '.join(FACINGS[:-1])} or {FACINGS[-1]}", key=key or "facing",
                      **where)
        facing = None
    source = None
    if "source" in item:
        source = parse_source(checker, item["source"], required=False, **where)
    return Position(name, float(x), float(y), instrument, facing, source)

"""The cue-sheet format (TOML) and its loader and validator.

A sheet holds one rite::

    [rite]            id, title, work, hang, aliases, signals, layout_source
    [settings]        defaults for the compiler (tempo, 節 length, 黃鍾, …)
    [[reading]]       a reading the sources leave open: name, value, choices, note
    [[position]]      name, x, y (metres; x east, y north), instrument, facing, source
    [[variant]]       id, title, source, note
    [[cue]]           id, kind, at, trigger, pieces, zhong, performers, instruments, stop,
                      moves, song/jie/listen/ou (射節), when/unless (variants), source, …

``load_sheet`` parses and validates a sheet and returns an immutable ``Rite``; every problem it
finds is reported together, each naming the file, the line and the cue id, and saying what was
expected.  ``load_rite`` resolves a built-in rite name (or a Chinese alias) or a path.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from cues import repertoire
from cues.catalog import canonical_instrument, instrument_names
from cues.errors import SheetError, SheetErrors, UserError
from cues.layouts import standard_hang
from cues.model import (
    BY_BELLS,
    BY_GUAN,
    BY_SHENG,
    BY_SINGERS,
    BY_VALUES,
    KINDS,
    TRIGGER_AFTER,
    TRIGGER_FOLLOW,
    TRIGGER_GO,
    TRIGGER_SIGNAL,
    Count,
    Cue,
    Ou,
    PieceRef,
    Position,
    Rite,
    Setting,
    ShootingMusic,
    Source,
    Stop,
    Trigger,
    Variant,
)
from cues.sources import quote_found, source_files

MAX_COUNT = 128
ARROWS = 4  # 乘矢: each archer shoots four arrows, one 拾 per 節
HANGS = ("宮縣", "軒縣", "判縣", "特縣")
SIDES = ("右", "左")

# the keys each table may hold (anything else is an unknown key)
RITE_KEYS = {"id", "title", "work", "hang", "aliases", "signals", "layout_source", "note"}
SETTING_KEYS = {
    "tempo_bpm", "jie_seconds", "huangzhong_hz", "tuning", "lost_zhong_seconds",
    "drum_pattern", "drum_reading", "release_rule", "bell_interval", "ticks_per_beat",
}
READING_KEYS = {"name", "value", "choices", "note"}
POSITION_KEYS = {"name", "x", "y", "instrument", "facing", "source", "note"}
VARIANT_KEYS = {"id", "title", "source", "note"}
CUE_KEYS = {
    "id", "kind", "title", "at", "trigger", "pieces", "zhong", "performers", "instruments",
    "stop", "moves", "song", "jie", "listen", "ou", "when", "unless", "source",
    "pre_wait_s", "post_wait_s", "duration_s", "operator_ends", "note",
}
SOURCE_KEYS = {"work", "quote", "file", "note"}
PIECE_KEYS = {"title", "by", "realization"}
COUNT_KEYS = {"name", "count"}
STOP_KEYS = {"event", "at"}
MOVE_KEYS = {"name", "x", "y", "facing", "instrument"}
OU_KEYS = {"name", "upper", "lower", "exempt", "note"}
TOP_KEYS = {"rite", "settings", "reading", "position", "variant", "cue"}

_ID_RE = re.compile(r"^[^\s/]+$")
_KEY_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_-]*)\s*=")
_HEADER_RE = re.compile(r"^\s*\[\[?\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\]\]?")


class _Lines:
    """Maps tables and keys of a TOML text to line numbers (tomllib gives none)."""

    def __init__(self, text: str) -> None:
        # (header name, header line, {key: line})
        self.tables: list[tuple[str, int, dict[str, int]]] = [("", 1, {})]
        for number, line in enumerate(text.splitlines(), start=1):
            header = _HEADER_RE.match(line)
            if header and not _KEY_RE.match(line):
                self.tables.append((header.group(1), number, {}))
                continue
            key = _KEY_RE.match(line)
            if key:
                self.tables[-1][2].setdefault(key.group(1), number)

    def table(self, name: str, index: int) -> tuple[int, dict[str, int]] | None:
        found = [t for t in self.tables if t[0] == name]
        if 0 <= index < len(found):
            return found[index][1], found[index][2]
        return None

    def line(self, name: str, index: int = 0, key: str | None = None) -> int | None:
        table = self.table(name, index)
        if table is None:
            return None
        header_line, keys = table
        if key is not None and key in keys:
            return keys[key]
        return header_line


class _Checker:
    """Collects errors for one sheet."""

    def __init__(self, path: str, lines: _Lines) -> None:
        self.path = path
        self.lines = lines
        self.errors: list[SheetError] = []

    def error(
        self, message: str, *, table: str = "", index: int = 0, key: str | None = None,
        cue: str | None = None, line: int | None = None,
    ) -> None:
        if line is None and table:
            line = self.lines.line(table, index, key)
        self.errors.append(SheetError(message, file=self.path, line=line, cue=cue))

    # typed getters: they record an error and return None when the value is wrong
    def get(
        self, data: dict, key: str, kind: type | tuple[type, ...], what: str, *,
        required: bool = False, table: str = "", index: int = 0, cue: str | None = None,
    ) -> Any:
        if key not in data:
            if required:
                self.error(f"missing {key!r}: expected {what}", table=table, index=index,
                           cue=cue)
            return None
        value = data[key]
        ok = isinstance(value, kind) and not (isinstance(value, bool) and bool not in (
            kind if isinstance(kind, tuple) else (kind,)))
        if not ok:
            self.error(f"{key!r} is {_describe(value)}: expected {what}", table=table,
                       index=index, key=key, cue=cue)
            return None
        return value

    def unknown_keys(
        self, data: dict, allowed: set[str], where: str, *, table: str = "", index: int = 0,
        cue: str | None = None, key: str | None = None,
    ) -> None:
        for k in data:
            if k not in allowed:
                hint = _closest(k, allowed)
                extra = f" (did you mean {hint!r}?)" if hint else ""
                self.error(
                    f"unknown key {k!r} in {where}{extra}; expected one of: "
                    f"{', '.join(sorted(allowed))}",
                    table=table, index=index, key=key or k, cue=cue,
                )


def _describe(value: object) -> str:
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


def _closest(word: str, options: Iterable[str]) -> str | None:
    import difflib

    found = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return found[0] if found else None


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# ── parsing helpers for sub-tables ──────────────────────────────────────────────────────────


def _source(
    chk: _Checker, data: object, *, table: str, index: int, cue: str | None, required: bool,
    key: str = "source",
) -> Source | None:
    if data is None:
        if required:
            chk.error(f"missing {key!r}: expected a table {{ work = \"…\", quote = \"…\", "
                      "file = \"seeds/…\" }} citing the passage verbatim",
                      table=table, index=index, cue=cue)
        return None
    if not isinstance(data, dict):
        chk.error(f"{key!r} is {_describe(data)}: expected a table {{ work, quote, file }}",
                  table=table, index=index, key=key, cue=cue)
        return None
    chk.unknown_keys(data, SOURCE_KEYS, f"{key}", table=table, index=index, cue=cue, key=key)
    work = chk.get(data, "work", str, "the work cited, e.g. \"儀禮·大射\"", required=True,
                   table=table, index=index, cue=cue)
    quote = chk.get(data, "quote", str, "the passage, verbatim", required=True,
                    table=table, index=index, cue=cue)
    file = chk.get(data, "file", str, "a bundled source path such as \"seeds/004_….txt\"",
                   table=table, index=index, cue=cue)
    note = chk.get(data, "note", str, "a string", table=table, index=index, cue=cue) or ""
    if work is None or quote is None:
        return None
    if not quote.strip():
        chk.error(f"{key}.quote is empty: expected the passage, verbatim", table=table,
                  index=index, key=key, cue=cue)
        return None
    if file is not None:
        if file not in source_files():
            chk.error(f"{key}.file {file!r} is not a bundled source; expected one of: "
                      f"{', '.join(source_files())}", table=table, index=index, key=key,
                      cue=cue)
        elif not quote_found(quote, file):
            chk.error(f"{key}.quote 「{quote}」 is not found verbatim (punctuation aside) in "
                      f"{file}", table=table, index=index, key=key, cue=cue)
    return Source(work=work, quote=quote, file=file, note=note)


def _counts(
    chk: _Checker, data: dict, key: str, *, table: str, index: int, cue: str,
    check_name: Callable[[str], str | None] | None = None, what: str,
) -> tuple[Count, ...]:
    raw = data.get(key)
    if raw is None:
        return ()
    if not isinstance(raw, list):
        chk.error(f"{key!r} is {_describe(raw)}: expected an array of {{ name = \"…\", "
                  "count = N }}", table=table, index=index, key=key, cue=cue)
        return ()
    out: list[Count] = []
    seen: set[str] = set()
    for item in raw:
        if not isinstance(item, dict):
            chk.error(f"an entry of {key!r} is {_describe(item)}: expected "
                      "{ name = \"…\", count = N }", table=table, index=index, key=key, cue=cue)
            continue
        chk.unknown_keys(item, COUNT_KEYS, f"an entry of {key!r}", table=table, index=index,
                         cue=cue, key=key)
        name = item.get("name")
        count = item.get("count", 1)
        if not isinstance(name, str) or not name.strip():
            chk.error(f"an entry of {key!r} has no name: expected name = \"…\"", table=table,
                      index=index, key=key, cue=cue)
            continue
        if check_name is not None:
            canon = check_name(name)
            if canon is None:
                hint = _closest(name, instrument_names())
                chk.error(
                    f"unknown {what} {name!r}" + (f" (did you mean {hint!r}?)" if hint else "")
                    + f"; expected one of: {', '.join(instrument_names())}",
                    table=table, index=index, key=key, cue=cue)
                continue
            name = canon
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
            chk.error(f"{what} {name!r} has count {count!r}: expected a whole number from 1 "
                      f"to {MAX_COUNT}", table=table, index=index, key=key, cue=cue)
            continue
        if name in seen:
            chk.error(f"{what} {name!r} is listed twice in {key!r}: give one entry with the "
                      "total count", table=table, index=index, key=key, cue=cue)
            continue
        seen.add(name)
        out.append(Count(name, count))
    return tuple(out)


def _default_by(kind: str, piece: repertoire.Piece | None) -> str:
    if piece is not None and piece.is_sheng_piece:
        return BY_SHENG
    if kind == "管":
        return BY_GUAN
    if kind in ("金奏", "陔", "驁"):
        return BY_BELLS
    if kind == "笙":
        return BY_SHENG
    return BY_SINGERS


def _pieces(
    chk: _Checker, data: dict, kind: str, *, index: int, cue: str, base: Path | None,
) -> tuple[PieceRef, ...]:
    raw = data.get("pieces")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        chk.error(f"'pieces' is {_describe(raw)}: expected an array of titles or "
                  "{ title = \"…\", by = \"歌\"|\"笙\" }", table="cue", index=index,
                  key="pieces", cue=cue)
        return ()
    out: list[PieceRef] = []
    for item in raw:
        by = None
        realization = None
        if isinstance(item, str):
            title = item
        elif isinstance(item, dict):
            chk.unknown_keys(item, PIECE_KEYS, "a piece", table="cue", index=index, cue=cue,
                             key="pieces")
            title = item.get("title")
            by = item.get("by")
            realization = item.get("realization")
            if not isinstance(title, str):
                chk.error("a piece has no title: expected title = \"…\"", table="cue",
                          index=index, key="pieces", cue=cue)
                continue
            if by is not None and by not in BY_VALUES:
                chk.error(f"piece 《{title}》 has by = {by!r}: expected one of "
                          f"{', '.join(BY_VALUES)}", table="cue", index=index, key="pieces",
                          cue=cue)
                by = None
            if realization is not None:
                if not isinstance(realization, str) or not realization.strip():
                    chk.error(f"piece 《{title}》 has realization = {realization!r}: expected "
                              "the path of a MIDI or MusicXML file", table="cue", index=index,
                              key="pieces", cue=cue)
                    realization = None
                else:
                    path = Path(realization)
                    if base is not None and not path.is_absolute():
                        path = base / path
                    if path.suffix.lower() not in (".mid", ".midi", ".musicxml", ".xml", ".mxl"):
                        chk.error(f"piece 《{title}》 realization {realization!r}: expected a "
                                  ".mid or .musicxml file", table="cue", index=index,
                                  key="pieces", cue=cue)
                    elif not path.is_file():
                        chk.error(f"piece 《{title}》 realization file {str(path)!r} does not "
                                  "exist", table="cue", index=index, key="pieces", cue=cue)
                    realization = str(path)
        else:
            chk.error(f"a piece is {_describe(item)}: expected a title or a table",
                      table="cue", index=index, key="pieces", cue=cue)
            continue
        canon = repertoire.canonical_title(title)
        piece = None
        if canon is None:
            if realization is None:
                known = [p.title for p in repertoire.all_pieces()]
                hint = _closest(title.strip("《》"), known)
                chk.error(
                    f"unknown piece 《{title}》" + (f" (did you mean 《{hint}》?)" if hint else "")
                    + "; expected a piece of the repertoire (yuezheng pieces lists them) or a "
                    "piece with its own realization file", table="cue", index=index,
                    key="pieces", cue=cue)
                continue
            canon = title.strip("《》")
        else:
            piece = repertoire.get_piece(canon)
        if piece is not None and piece.is_sheng_piece and by == BY_SINGERS:
            chk.error(f"《{canon}》 is a 笙詩 (no words survive; it is played, not sung): "
                      "expected by = \"笙\"", table="cue", index=index, key="pieces", cue=cue)
        out.append(PieceRef(canon, by or _default_by(kind, piece), realization))
    return tuple(out)


def _trigger(chk: _Checker, value: object, *, index: int, cue: str) -> Trigger | None:
    if value is None:
        return Trigger(TRIGGER_GO)
    if not isinstance(value, str):
        chk.error(f"'trigger' is {_describe(value)}: expected \"go\", \"follow\", "
                  "\"after:CUE\" or \"signal:NAME\"", table="cue", index=index, key="trigger",
                  cue=cue)
        return None
    text = value.strip()
    if text in (TRIGGER_GO, TRIGGER_FOLLOW):
        return Trigger(text)
    kind, sep, target = text.partition(":")
    if sep and kind in (TRIGGER_AFTER, TRIGGER_SIGNAL) and target.strip():
        return Trigger(kind, target.strip())
    chk.error(f"trigger {value!r} is not understood: expected \"go\" (the operator's GO), "
              "\"follow\" (when the previous cue ends), \"after:CUE\" or \"signal:NAME\"",
              table="cue", index=index, key="trigger", cue=cue)
    return None


def _positions(
    chk: _Checker, raw: object, *, table: str, key: str | None, cue: str | None,
    allowed: set[str], index_of: Callable[[int], int],
) -> tuple[Position, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        chk.error(f"{key or table!r} is {_describe(raw)}: expected an array of positions "
                  "{ name, x, y }", table=table, index=index_of(0), key=key, cue=cue)
        return ()
    out: list[Position] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        idx = index_of(i)
        if not isinstance(item, dict):
            chk.error(f"a position is {_describe(item)}: expected {{ name, x, y }}",
                      table=table, index=idx, key=key, cue=cue)
            continue
        chk.unknown_keys(item, allowed, "a position", table=table, index=idx, key=key, cue=cue)
        name = item.get("name")
        x, y = item.get("x"), item.get("y")
        if not isinstance(name, str) or not name.strip():
            chk.error("a position has no name: expected name = \"…\"", table=table, index=idx,
                      key=key, cue=cue)
            continue
        if not (_number(x) and _number(y)) or abs(x) > 1000 or abs(y) > 1000:
            chk.error(f"position {name!r} needs x and y in metres (x east, y north; |x|, |y| "
                      f"≤ 1000): got x = {x!r}, y = {y!r}", table=table, index=idx,
                      key=key or "x", cue=cue)
            continue
        if name in seen:
            chk.error(f"position {name!r} is given twice", table=table, index=idx, key=key,
                      cue=cue)
            continue
        seen.add(name)
        instrument = item.get("instrument")
        if instrument is not None:
            canon = canonical_instrument(instrument) if isinstance(instrument, str) else None
            if canon is None:
                chk.error(f"position {name!r} has unknown instrument {instrument!r}; "
                          f"expected one of: {', '.join(instrument_names())}", table=table,
                          index=idx, key=key or "instrument", cue=cue)
            instrument = canon
        facing = item.get("facing")
        if facing is not None and facing not in ("東", "西", "南", "北"):
            chk.error(f"position {name!r} has facing = {facing!r}: expected 東, 西, 南 or 北",
                      table=table, index=idx, key=key or "facing", cue=cue)
            facing = None
        src = None
        if "source" in item:
            src = _source(chk, item["source"], table=table, index=idx, cue=cue, required=False)
        out.append(Position(name, float(x), float(y), instrument, facing, src))
    return tuple(out)


def _string_list(
    chk: _Checker, data: dict, key: str, *, table: str, index: int, cue: str | None = None,
) -> tuple[str, ...]:
    raw = data.get(key)
    if raw is None:
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(v, str) and v.strip() for v in raw):
        chk.error(f"{key!r} is {_describe(raw)}: expected an array of non-empty strings",
                  table=table, index=index, key=key, cue=cue)
        return ()
    return tuple(v.strip() for v in raw)


# ── the cue ─────────────────────────────────────────────────────────────────────────────────


def _cue(chk: _Checker, data: object, index: int, base: Path | None) -> Cue | None:
    if not isinstance(data, dict):
        chk.error(f"cue number {index + 1} is {_describe(data)}: expected a [[cue]] table",
                  table="cue", index=index)
        return None
    raw_id = data.get("id")
    if not isinstance(raw_id, str) or not _ID_RE.match(raw_id):
        chk.error(f"cue number {index + 1} has id = {raw_id!r}: expected a non-empty id "
                  "without spaces or '/'", table="cue", index=index, key="id")
        return None
    cid = raw_id
    chk.unknown_keys(data, CUE_KEYS, "a cue", table="cue", index=index, cue=cid)
    kind = chk.get(data, "kind", str, f"one of {', '.join(KINDS)}", required=True,
                   table="cue", index=index, cue=cid)
    if kind is not None and kind not in KINDS:
        hint = _closest(kind, KINDS)
        chk.error(f"unknown kind {kind!r}" + (f" (did you mean {hint!r}?)" if hint else "")
                  + f"; expected one of: {', '.join(KINDS)}", table="cue", index=index,
                  key="kind", cue=cid)
        kind = None
    if kind is None:
        return None
    music = KINDS[kind][0]
    title = chk.get(data, "title", str, "a string", table="cue", index=index, cue=cid) or ""
    at = chk.get(data, "at", str, "the ritual moment in the text's words, e.g. \"賓及庭\"",
                 table="cue", index=index, cue=cid) or ""
    trigger = _trigger(chk, data.get("trigger"), index=index, cue=cid)
    if trigger is not None and trigger.kind == TRIGGER_GO and not at.strip():
        chk.error("a cue the operator calls (trigger \"go\") needs 'at': the ritual moment "
                  "to watch for at standby, in the text's words", table="cue", index=index,
                  key="trigger", cue=cid)
    source = _source(chk, data.get("source"), table="cue", index=index, cue=cid,
                     required=music)
    pieces = _pieces(chk, data, kind, index=index, cue=cid, base=base)
    zhong = data.get("zhong")
    if zhong is not None and (isinstance(zhong, bool) or not isinstance(zhong, int)
                              or not 1 <= zhong <= 99):
        chk.error(f"'zhong' (終) is {_describe(zhong)}: expected a whole number from 1 to 99",
                  table="cue", index=index, key="zhong", cue=cid)
        zhong = None
    performers = _counts(chk, data, "performers", table="cue", index=index, cue=cid,
                         what="performer")
    instruments = _counts(chk, data, "instruments", table="cue", index=index, cue=cid,
                          check_name=canonical_instrument, what="instrument")
    stop = None
    if "stop" in data:
        raw_stop = data["stop"]
        if not isinstance(raw_stop, dict) or not all(
                isinstance(raw_stop.get(k), str) and raw_stop.get(k).strip()
                for k in STOP_KEYS):
            chk.error(f"'stop' is {_describe(raw_stop)}: expected {{ event = \"樂闋\", at = "
                      "\"the ritual moment\" }}", table="cue", index=index, key="stop", cue=cid)
        else:
            chk.unknown_keys(raw_stop, STOP_KEYS, "'stop'", table="cue", index=index, cue=cid,
                             key="stop")
            stop = Stop(raw_stop["event"].strip(), raw_stop["at"].strip())
    moves = _positions(chk, data.get("moves"), table="cue", key="moves", cue=cid,
                       allowed=MOVE_KEYS, index_of=lambda _i: index)
    waits: dict[str, float] = {}
    for key in ("pre_wait_s", "post_wait_s", "duration_s"):
        value = data.get(key)
        if value is None:
            continue
        if not _number(value) or not 0 <= value <= 24 * 3600:
            chk.error(f"{key!r} is {_describe(value)}: expected seconds from 0 to 86400",
                      table="cue", index=index, key=key, cue=cid)
            continue
        waits[key] = float(value)
    operator_ends = data.get("operator_ends", kind == "無算樂")
    if not isinstance(operator_ends, bool):
        chk.error(f"'operator_ends' is {_describe(operator_ends)}: expected true or false",
                  table="cue", index=index, key="operator_ends", cue=cid)
        operator_ends = False

    # kind-specific rules
    shooting = _shooting(chk, data, kind, index=index, cue=cid)
    if kind == "遷樂" and not moves:
        chk.error("a 遷樂 cue moves the musicians: expected 'moves' with their new positions",
                  table="cue", index=index, cue=cid)
    if kind != "遷樂" and moves and kind != "管":
        chk.error(f"'moves' belongs to a 遷樂 cue (this cue is {kind})", table="cue",
                  index=index, key="moves", cue=cid)
    if music and kind not in ("無算樂", "射節") and not pieces:
        chk.error(f"a {kind} cue needs 'pieces': the pieces it plays, in order", table="cue",
                  index=index, cue=cid)
    if not music and pieces:
        chk.error(f"a {kind} cue plays no music: remove 'pieces'", table="cue", index=index,
                  key="pieces", cue=cid)
    if pieces and zhong is not None and kind != "無算樂":
        n = len(pieces) if kind != "射節" else 1
        if zhong % n and n % zhong:
            chk.error(f"{zhong} 終 does not fit {n} pieces: expected the 終 to repeat each piece "
                      "(終 a multiple of the pieces) or to group them (the pieces a multiple "
                      "of the 終)", table="cue", index=index, key="zhong", cue=cid)
    if kind == "間歌" and pieces:
        for i, ref in enumerate(pieces):
            expected = BY_SINGERS if i % 2 == 0 else BY_SHENG
            if ref.by != expected:
                chk.error(f"間歌 alternates 歌 and 笙 (「一歌則一吹」), starting with 歌: piece "
                          f"{i + 1} 《{ref.title}》 is played by {ref.by}, expected {expected}",
                          table="cue", index=index, key="pieces", cue=cid)
                break
        if len(pieces) % 2:
            chk.error(f"間歌 alternates 歌 and 笙 in pairs: {len(pieces)} pieces leave the last "
                      "歌 without its 笙", table="cue", index=index, key="pieces", cue=cid)
    return Cue(
        id=cid, kind=kind, at=at.strip(), trigger=trigger or Trigger(TRIGGER_GO),
        source=source or Source(work="", quote=""), pieces=pieces, zhong=zhong,
        performers=performers, instruments=instruments, stop=stop, title=title, moves=moves,
        shooting=shooting, pre_wait_s=waits.get("pre_wait_s", 0.0),
        post_wait_s=waits.get("post_wait_s", 0.0), duration_s=waits.get("duration_s"),
        operator_ends=operator_ends, line=chk.lines.line("cue", index),
    )


def _shooting(
    chk: _Checker, data: dict, kind: str, *, index: int, cue: str,
) -> ShootingMusic | None:
    keys = [k for k in ("song", "jie", "listen", "ou") if k in data]
    if kind != "射節":
        if keys:
            chk.error(f"{', '.join(repr(k) for k in keys)} belong to a 射節 cue (this cue is "
                      f"{kind})", table="cue", index=index, key=keys[0], cue=cue)
        return None
    song = chk.get(data, "song", str, "the song that paces the shooting, e.g. \"騶虞\"",
                   required=True, table="cue", index=index, cue=cue)
    jie = chk.get(data, "jie", int, "the number of 節: 9, 7 or 5", required=True, table="cue",
                  index=index, cue=cue)
    listen = chk.get(data, "listen", int, "the number of listening 節 (先以聽)", required=True,
                     table="cue", index=index, cue=cue)
    if song is not None:
        canon = repertoire.canonical_title(song)
        if canon is None:
            chk.error(f"unknown song 《{song}》 for the 射節; expected e.g. 騶虞, 貍首, 采蘋, 采蘩",
                      table="cue", index=index, key="song", cue=cue)
            song = None
        else:
            song = canon
    if jie is not None and not 2 <= jie <= 36:
        chk.error(f"'jie' is {jie}: expected a number of 節 such as 9, 7 or 5", table="cue",
                  index=index, key="jie", cue=cue)
        jie = None
    if listen is not None and listen < 0:
        chk.error(f"'listen' is {listen}: expected 0 or more listening 節", table="cue",
                  index=index, key="listen", cue=cue)
        listen = None
    if jie is not None and listen is not None and jie - listen != ARROWS:
        chk.error(
            f"{jie} 節 with {listen} listening 節 leaves {jie - listen} 節 for the {ARROWS} "
            f"arrows (乘矢, one 拾 per 節): expected listen = {jie - ARROWS} "
            "(「鄉射之鼓五節…四節四拾，其一節先以聽也」)",
            table="cue", index=index, key="listen", cue=cue)
    ou: list[Ou] = []
    raw_ou = data.get("ou", [{"name": "三耦"}])
    if not isinstance(raw_ou, list) or not raw_ou:
        chk.error(f"'ou' is {_describe(raw_ou)}: expected the shooting order, an array of "
                  "pairs { name = \"上耦\" }", table="cue", index=index, key="ou", cue=cue)
        raw_ou = []
    for item in raw_ou:
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            chk.error("a pair (耦) needs a name: expected { name = \"…\" }", table="cue",
                      index=index, key="ou", cue=cue)
            continue
        chk.unknown_keys(item, OU_KEYS, "a pair (耦)", table="cue", index=index, cue=cue,
                         key="ou")
        exempt = item.get("exempt", [])
        if isinstance(exempt, str):
            exempt = [exempt]
        if not isinstance(exempt, list) or any(s not in SIDES for s in exempt):
            chk.error(f"pair {item['name']!r} has exempt = {exempt!r}: expected sides among "
                      "\"右\" (the 上射's) and \"左\"", table="cue", index=index, key="ou",
                      cue=cue)
            exempt = []
        ou.append(Ou(name=item["name"], upper=str(item.get("upper", "上射")),
                     lower=str(item.get("lower", "下射")), exempt=tuple(exempt),
                     note=str(item.get("note", ""))))
    if song is None or jie is None or listen is None:
        return None
    return ShootingMusic(song=song, jie=jie, listen=listen, ou=tuple(ou), arrows=ARROWS)


# ── the sheet ───────────────────────────────────────────────────────────────────────────────


def _toml_error(exc: tomllib.TOMLDecodeError, path: str) -> SheetError:
    msg = str(exc)
    match = re.search(r"\(at line (\d+), column (\d+)\)", msg)
    line = int(match.group(1)) if match else None
    text = re.sub(r"\s*\(at line \d+, column \d+\)", "", msg)
    if match:
        text += f" (column {match.group(2)})"
    return SheetError(f"TOML syntax error: {text}", file=path, line=line)


def parse_sheet(
    text: str, path: str = "<sheet>", variants: Sequence[str] = (), base: Path | None = None,
) -> Rite:
    """Parse and validate sheet ``text``; raise SheetErrors listing every problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SheetErrors([_toml_error(exc, path)]) from None
    except RecursionError:
        raise SheetErrors([SheetError("TOML nesting too deep", file=path)]) from None
    chk = _Checker(path, _Lines(text))
    rite = _rite(chk, data, base)
    if chk.errors:
        raise SheetErrors(chk.errors)
    assert rite is not None
    return select_variants(rite, variants)


def _table_array(chk: _Checker, data: dict, name: str) -> Iterator[tuple[int, dict]]:
    """The tables of an array of tables ``[[name]]``, reporting anything that is not one."""
    raw = data.get(name, [])
    if not isinstance(raw, list):
        chk.error(f"{name!r} is {_describe(raw)}: expected tables, each written [[{name}]]",
                  table=name)
        return
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            chk.error(f"a [[{name}]] must be a table, not {_describe(item)}", table=name,
                      index=i)
            continue
        yield i, item


def _rite(chk: _Checker, data: dict, base: Path | None) -> Rite | None:
    chk.unknown_keys(data, TOP_KEYS, "the sheet (top level)")
    head = data.get("rite")
    if not isinstance(head, dict):
        chk.error("missing the [rite] table: expected [rite] with id, title, work and hang")
        head = {}
    else:
        chk.unknown_keys(head, RITE_KEYS, "[rite]", table="rite")
    rid = chk.get(head, "id", str, "a short name such as \"xiang-she\"", required=bool(head),
                  table="rite")
    if rid is not None and not _ID_RE.match(rid):
        chk.error(f"rite id {rid!r}: expected a name without spaces", table="rite", key="id")
    title = chk.get(head, "title", str, "the rite's name, e.g. \"鄉射禮\"", required=bool(head),
                    table="rite")
    work = chk.get(head, "work", str, "the work, e.g. \"儀禮·鄉射禮\"", table="rite") or ""
    hang = chk.get(head, "hang", str, f"one of {', '.join(HANGS)}", table="rite") or "特縣"
    if hang not in HANGS:
        chk.error(f"hang {hang!r}: expected one of {', '.join(HANGS)}", table="rite",
                  key="hang")
    aliases = _string_list(chk, head, "aliases", table="rite", index=0)
    signals = _string_list(chk, head, "signals", table="rite", index=0)
    layout_source = None
    if "layout_source" in head:
        layout_source = _source(chk, head["layout_source"], table="rite", index=0, cue=None,
                                required=False, key="layout_source")

    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        chk.error("[settings] must be a table", table="settings")
        settings = {}
    chk.unknown_keys(settings, SETTING_KEYS, "[settings]", table="settings")

    readings: list[Setting] = []
    for i, item in _table_array(chk, data, "reading"):
        chk.unknown_keys(item, READING_KEYS, "a [[reading]]", table="reading", index=i)
        name = chk.get(item, "name", str, "the setting's name", required=True,
                       table="reading", index=i)
        value = chk.get(item, "value", str, "the reading used", required=True,
                        table="reading", index=i)
        choices = _string_list(chk, item, "choices", table="reading", index=i)
        if name and value:
            if choices and value not in choices:
                chk.error(f"reading {name!r} uses {value!r}, which is not among its choices "
                          f"{list(choices)}", table="reading", index=i, key="value")
            readings.append(Setting(name, value, choices or (value,),
                                    str(item.get("note", ""))))

    raw_positions = data.get("position", [])
    layout = _positions(chk, raw_positions, table="position", key=None, cue=None,
                        allowed=POSITION_KEYS, index_of=lambda i: i)
    if not layout and "position" not in data and hang in HANGS:
        layout = standard_hang(hang)  # the sheet names its hang and places nothing

    variants: list[Variant] = []
    for i, item in _table_array(chk, data, "variant"):
        chk.unknown_keys(item, VARIANT_KEYS, "a [[variant]]", table="variant", index=i)
        vid = chk.get(item, "id", str, "a short name", required=True, table="variant", index=i)
        vtitle = chk.get(item, "title", str, "a title", table="variant", index=i) or vid
        vsrc = _source(chk, item.get("source"), table="variant", index=i, cue=None,
                       required=False)
        if vid is not None:
            if any(v.id == vid for v in variants):
                chk.error(f"variant {vid!r} is declared twice", table="variant", index=i,
                          key="id")
            variants.append(Variant(vid, vtitle or vid, vsrc, str(item.get("note", ""))))
    variant_ids = {v.id for v in variants}

    raw_cues = data.get("cue")
    if raw_cues is None:
        chk.error("the sheet has no cues: expected one or more [[cue]] tables")
        raw_cues = []
    elif not isinstance(raw_cues, list):
        chk.error("'cue' must be an array of tables: write each cue as [[cue]]", table="cue")
        raw_cues = []

    cues: list[tuple[Cue, tuple[str, ...], tuple[str, ...]]] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(raw_cues):
        cue = _cue(chk, item, i, base)
        if cue is None:
            continue
        when = _string_list(chk, item, "when", table="cue", index=i, cue=cue.id)
        unless = _string_list(chk, item, "unless", table="cue", index=i, cue=cue.id)
        for v in when + unless:
            if v not in variant_ids:
                chk.error(f"variant {v!r} is not declared: expected one of "
                          f"{sorted(variant_ids) or 'the [[variant]] ids'}", table="cue",
                          index=i, key="when" if v in when else "unless", cue=cue.id)
        if cue.id in seen:
            chk.error(f"duplicate cue id {cue.id!r} (first used by cue number {seen[cue.id] + 1})",
                      table="cue", index=i, key="id", cue=cue.id)
            continue
        seen[cue.id] = i
        cues.append((cue, when, unless))

    _check_triggers(chk, [c for c, _, _ in cues], set(signals))
    if chk.errors or rid is None or title is None:
        return None
    return Rite(
        id=rid, title=title, work=work, hang=hang, layout=layout,
        cues=tuple(replace(c, when=w, unless=u) for c, w, u in cues),
        variants=tuple(variants), signals=signals, aliases=aliases,
        settings=MappingProxyType(dict(settings)), readings=tuple(readings), path=chk.path,
        layout_source=layout_source,
    )


def _trigger_problems(cues: Sequence[Cue], signals: set[str]) -> list[tuple[Cue, str]]:
    """The cues whose trigger can never fire in this order, with the reason."""
    problems: list[tuple[Cue, str]] = []
    position = {c.id: i for i, c in enumerate(cues)}
    for i, cue in enumerate(cues):
        trig = cue.trigger
        if trig.kind == TRIGGER_FOLLOW and i == 0:
            problems.append((cue, "trigger \"follow\" on the first cue can never fire: there is "
                             "no previous cue; expected \"go\""))
        elif trig.kind == TRIGGER_AFTER:
            target = trig.target or ""
            if target == cue.id:
                problems.append((cue, f"trigger \"after:{target}\" waits for the cue itself and "
                                 "can never fire"))
            elif target not in position:
                problems.append((cue, f"trigger \"after:{target}\" names no cue of this rite "
                                 "(a dangling cue id)"))
            elif position[target] > i:
                problems.append((cue, f"trigger \"after:{target}\" waits for a later cue and can "
                                 "never fire: cues run in order"))
        elif trig.kind == TRIGGER_SIGNAL and trig.target not in signals:
            known = ", ".join(sorted(signals)) or "none declared"
            problems.append((cue, f"trigger \"signal:{trig.target}\" waits for a signal the rite "
                             f"never declares (rite.signals: {known})"))
    return problems


def _check_triggers(chk: _Checker, cues: Sequence[Cue], signals: set[str]) -> None:
    for cue, message in _trigger_problems(cues, signals):
        chk.error(message, line=chk.lines.line("cue", _index_of(chk, cue), "trigger"),
                  cue=cue.id)


def _index_of(chk: _Checker, cue: Cue) -> int:
    starts = [t[1] for t in chk.lines.tables if t[0] == "cue"]
    return starts.index(cue.line) if cue.line in starts else 0


def select_variants(rite: Rite, variants: Sequence[str]) -> Rite:
    """The rite as played with ``variants`` chosen (cues filtered by their when/unless)."""
    chosen = tuple(dict.fromkeys(v.strip() for v in variants if v.strip()))
    known = {v.id for v in rite.variants}
    unknown = [v for v in chosen if v not in known]
    if unknown:
        listing = ", ".join(f"{v.id} ({v.title})" for v in rite.variants) or "none"
        raise UserError(f"{rite.path or rite.id}: unknown variant {unknown[0]!r} for "
                        f"{rite.title}; its variants: {listing}")
    active = set(chosen)
    cues = tuple(
        c for c in rite.cues
        if all(w in active for w in c.when) and not any(u in active for u in c.unless)
    )
    problems = _trigger_problems(cues, set(rite.signals))
    if problems:
        raise SheetErrors([
            SheetError(f"with variants {list(chosen)}: {message}", file=rite.path,
                       line=cue.line, cue=cue.id)
            for cue, message in problems
        ])
    return replace(rite, cues=cues, active_variants=chosen)


def load_sheet(path: str | Path, variants: Sequence[str] = ()) -> Rite:
    """Read and validate a cue sheet file."""
    p = Path(path)
    name = str(path)
    if p.is_dir():
        raise SheetErrors([SheetError("is a directory: expected a .toml cue sheet", file=name)])
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise SheetErrors([SheetError("no such file", file=name)]) from None
    except OSError as exc:
        raise SheetErrors([SheetError(f"cannot read: {exc.strerror}", file=name)]) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SheetErrors([SheetError("not UTF-8 text: a cue sheet is a UTF-8 TOML file",
                                      file=name, line=line)]) from None
    return parse_sheet(text, name, variants, base=p.parent)


# ── built-in rites ──────────────────────────────────────────────────────────────────────────

BUILTIN_RITES = ("xiang-yin-jiu", "xiang-she", "yan", "da-she")


def _builtin_text(rite_id: str) -> str:
    return resources.files("cues.rites").joinpath(f"{rite_id}.toml").read_text(encoding="utf-8")


def builtin_rite(rite_id: str, variants: Sequence[str] = ()) -> Rite:
    return parse_sheet(_builtin_text(rite_id), f"{rite_id}.toml (built-in)", variants)


def builtin_names() -> dict[str, str]:
    """Every name that selects a built-in rite (ids, titles, aliases) → the rite id."""
    names: dict[str, str] = {}
    for rid in BUILTIN_RITES:
        head = tomllib.loads(_builtin_text(rid)).get("rite", {})
        for name in (rid, head.get("title", ""), *head.get("aliases", [])):
            if name:
                names[name] = rid
    return names


def resolve_rite_name(name: str) -> str | None:
    """The built-in rite id for a name or alias, or None."""
    return builtin_names().get(name.strip())


def load_rite(name_or_path: str, variants: Sequence[str] = ()) -> Rite:
    """A built-in rite by name or alias, or a cue sheet by path."""
    rid = resolve_rite_name(name_or_path)
    if rid is not None:
        return builtin_rite(rid, variants)
    p = Path(name_or_path)
    if p.suffix.lower() == ".toml" or p.exists():
        return load_sheet(p, variants)
    hint = _closest(name_or_path, builtin_names())
    raise UserError(
        f"unknown rite {name_or_path!r}" + (f" (did you mean {hint!r}?)" if hint else "")
        + f"; expected a built-in rite ({', '.join(BUILTIN_RITES)}, or a Chinese name such as "
        "鄉射禮) or the path of a .toml cue sheet")

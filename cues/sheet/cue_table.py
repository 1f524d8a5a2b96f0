"""One ``[[cue]]`` table of a sheet: its keys, their checks, and the rules of each kind of cue."""

from __future__ import annotations

from pathlib import Path
from typing import TypeGuard

from cues.catalog import canonical_instrument
from cues.limits import ID_CHARS, TIMELINE_SECONDS
from cues.model import (
    BY_SHENG,
    BY_SINGERS,
    KIND_PINYIN,
    KINDS,
    SETTING_KEYS,
    TRIGGER_GO,
    Cue,
    PieceRef,
    ProjectChoice,
    Source,
    Stop,
    Trigger,
)
from cues.pinyin import loose_match, name_key
from cues.sheet.call_table import parse_calls
from cues.sheet.checker import SheetChecker, Where, closest, describe_value, is_number
from cues.sheet.cue_pieces import parse_pieces
from cues.sheet.shooting_table import parse_shooting
from cues.sheet.subtables import parse_counts, parse_positions, parse_source
from cues.sheet.triggers import parse_trigger

CUE_KEYS = {
    "id", "kind", "title", "at", "trigger", "pieces", "zhong", "performers", "instruments",
    "stop", "moves", "song", "jie", "listen", "ou", "when", "unless", "source",
    "pre_wait_s", "post_wait_s", "duration_s", "operator_ends", "note", "choices", "calls",
    "rules",
}
CHOICE_KEYS = {"field", "reason"}
STOP_KEYS = {"event", "at"}
MOVE_KEYS = {"name", "x", "y", "facing", "instrument"}
WAIT_KEYS = ("pre_wait_s", "post_wait_s", "duration_s")
MAX_WAIT_S = TIMELINE_SECONDS.value  # one wait may fill the longest timeline
MAX_ZHONG = 99


def is_id(text: object) -> TypeGuard[str]:
    """Whether ``text`` is an id: printable, no whitespace, no '/', at most ID_CHARS long."""
    return (isinstance(text, str) and 0 < len(text) <= ID_CHARS.value and text.isprintable()
            and not any(c.isspace() or c == "/" for c in text))


def parse_cue(checker: SheetChecker, data: object, index: int, base: Path | None) -> Cue | None:
    """The ``index``-th ``[[cue]]`` (None if it has no valid id or kind: nothing to build)."""
    head = _id_and_kind(checker, data, index)
    if head is None:
        return None
    cid, kind = head
    assert isinstance(data, dict)
    where: Where = {"table": "cue", "index": index, "cue": cid}
    music = KINDS[kind][0]
    title = checker.get(data, "title", str, "a string", **where) or ""
    at = checker.get(data, "at", str, "the ritual moment in the text's words, e.g. \"賓及庭\"",
                     **where) or ""
    trigger = parse_trigger(checker, data.get("trigger"), index=index, cue=cid)
    if trigger is not None and trigger.kind == TRIGGER_GO and not at.strip():
        checker.error("a cue the operator calls (trigger \"go\") needs 'at': the ritual moment "
                      "to watch for at standby, in the text's words", key="trigger", **where)
    source = parse_source(checker, data.get("source"), required=music, **where)
    pieces = parse_pieces(checker, data, kind, index=index, cue=cid, base=base)
    zhong = _zhong(checker, data, where)
    performers = parse_counts(checker, data, "performers", what="performer", **where)
    instruments = parse_counts(checker, data, "instruments", check_name=canonical_instrument,
                               what="instrument", **where)
    stop = _stop(checker, data, where)
    moves = parse_positions(checker, data.get("moves"), table="cue", key="moves", cue=cid,
                            allowed=MOVE_KEYS, index_of=lambda _i: index)
    waits = _waits(checker, data, where)
    operator_ends = _operator_ends(checker, data, kind, where)
    shooting = parse_shooting(checker, data, kind, index=index, cue=cid)
    _check_kind_rules(checker, kind, pieces, zhong, bool(moves), where)
    return Cue(
        id=cid, kind=kind, at=at.strip(), trigger=trigger or Trigger(TRIGGER_GO),
        source=source or Source(work="", quote=""), pieces=pieces, zhong=zhong,
        performers=performers, instruments=instruments, stop=stop, title=title, moves=moves,
        shooting=shooting, pre_wait_s=waits.get("pre_wait_s", 0.0),
        post_wait_s=waits.get("post_wait_s", 0.0), duration_s=waits.get("duration_s"),
        operator_ends=operator_ends, line=checker.lines.line("cue", index),
        choices=_choices(checker, data, where), calls=parse_calls(checker, data, kind, where),
        rules=_rules(checker, data, where),
    )


def _rules(checker: SheetChecker, data: dict, where: Where) -> tuple[Source, ...]:
    """The cue's ``rules``: passages that bind the rite once the cue begins (the 記's 「樂作，
    大夫不入」), each a ``{ work, file, quote, note }`` checked like a cue's source."""
    raw = checker.array(data.get("rules"), "rules", "an array of { work, file, quote, note }",
                        key="rules", **where)
    out: list[Source] = []
    for item in raw or ():
        rule = parse_source(checker, item, table=where["table"], index=where["index"],
                            cue=where.get("cue"), required=True, key="rules")
        if rule is not None:
            out.append(rule)
    return tuple(out)


def _id_and_kind(checker: SheetChecker, data: object, index: int) -> tuple[str, str] | None:
    """The cue's id and kind, its keys checked; None if either is missing or wrong."""
    if not isinstance(data, dict):
        checker.error(f"cue number {index + 1} is {describe_value(data)}: expected a [[cue]] "
                      "table", table="cue", index=index)
        return None
    cid = data.get("id")
    if not is_id(cid):
        checker.error(f"cue number {index + 1} has id = {cid!r}: expected a non-empty id "
                      f"without spaces or '/', of printable characters (at most {ID_CHARS.value})",
                      table="cue", index=index, key="id")
        return None
    where: Where = {"table": "cue", "index": index, "cue": cid}
    checker.unknown_keys(data, CUE_KEYS, "a cue", **where)
    kind = checker.get(data, "kind", str, f"one of {', '.join(KINDS)}", required=True, **where)
    if kind is not None and kind not in KINDS:
        kind = canonical_kind(kind) or kind
    if kind is not None and kind not in KINDS:
        hint = closest(kind, KINDS)
        checker.error(f"unknown kind {kind!r}" + (f" (did you mean {hint!r}?)" if hint else "")
                      + f"; expected one of: {', '.join(KINDS)}", key="kind", **where)
        return None
    return None if kind is None else (cid, kind)


def _zhong(checker: SheetChecker, data: dict, where: Where) -> int | None:
    """How many 終 (times through) the pieces are played, if the sheet says."""
    zhong = data.get("zhong")
    if zhong is not None and (isinstance(zhong, bool) or not isinstance(zhong, int)
                              or not 1 <= zhong <= MAX_ZHONG):
        checker.error(f"'zhong' (終) is {describe_value(zhong)}: expected a whole number from 1 "
                      f"to {MAX_ZHONG}", key="zhong", **where)
        return None
    return zhong


def _stop(checker: SheetChecker, data: dict, where: Where) -> Stop | None:
    """The event that ends a cue that plays until stopped, and the moment it comes."""
    if "stop" not in data:
        return None
    raw = data["stop"]
    if not isinstance(raw, dict) or not all(
            isinstance(v := raw.get(k), str) and v.strip() for k in STOP_KEYS):
        checker.error(f"'stop' is {describe_value(raw)}: expected {{ event = \"樂闋\", at = "
                      "\"the ritual moment\" }}", key="stop", **where)
        return None
    checker.unknown_keys(raw, STOP_KEYS, "'stop'", key="stop", **where)
    return Stop(raw["event"].strip(), raw["at"].strip())


def _choices(checker: SheetChecker, data: dict, where: Where) -> tuple[ProjectChoice, ...]:
    """The cue's ``choices``: ``{ field, reason }`` for each value no source fixes (``field``
    a cue key or a setting)."""
    raw = checker.array(data.get("choices"), "choices",
                        "an array of { field = \"…\", reason = \"…\" }", key="choices", **where)
    out: list[ProjectChoice] = []
    for item in raw or ():
        if not isinstance(item, dict) or not all(
                isinstance(item.get(k), str) and item[k].strip() for k in CHOICE_KEYS):
            checker.error(f"an entry of 'choices' is {describe_value(item)}: expected "
                          "{ field = \"…\", reason = \"…\" }", key="choices", **where)
            continue
        checker.unknown_keys(item, CHOICE_KEYS, "an entry of 'choices'", key="choices", **where)
        field = item["field"].strip()
        if field not in CUE_KEYS and field not in SETTING_KEYS:
            hint = closest(field, CUE_KEYS | SETTING_KEYS)
            checker.error(f"choice field {field!r} is neither a cue key nor a setting"
                          + (f" (did you mean {hint!r}?)" if hint else ""), key="choices",
                          **where)
            continue
        out.append(ProjectChoice(field, item["reason"].strip()))
    return tuple(out)


def _waits(checker: SheetChecker, data: dict, where: Where) -> dict[str, float]:
    """The waits and the fixed length the sheet gives, in seconds."""
    waits: dict[str, float] = {}
    for key in WAIT_KEYS:
        value = data.get(key)
        if value is None:
            continue
        if not is_number(value) or not 0 <= value <= MAX_WAIT_S:
            checker.error(f"{key!r} is {describe_value(value)}: expected seconds from 0 to "
                          f"{MAX_WAIT_S}", key=key, **where)
            continue
        waits[key] = float(value)
    return waits


def _operator_ends(checker: SheetChecker, data: dict, kind: str, where: Where) -> bool:
    """Whether the operator ends the cue (a 無算樂 unless the sheet says otherwise)."""
    operator_ends = data.get("operator_ends", kind == "無算樂")
    if not isinstance(operator_ends, bool):
        checker.error(f"'operator_ends' is {describe_value(operator_ends)}: expected true or "
                      "false", key="operator_ends", **where)
        return False
    return operator_ends


def _check_kind_rules(
    checker: SheetChecker, kind: str, pieces: tuple[PieceRef, ...], zhong: int | None,
    has_moves: bool, where: Where,
) -> None:
    """What a cue of ``kind`` must have and must not have."""
    music = KINDS[kind][0]
    if kind == "遷樂" and not has_moves:
        checker.error("a 遷樂 cue moves the musicians: expected 'moves' with their new positions",
                      **where)
    if kind != "遷樂" and has_moves and kind != "管":
        checker.error(f"'moves' belongs to a 遷樂 cue (this cue is {kind})", key="moves", **where)
    if music and kind not in ("無算樂", "射節") and not pieces:
        checker.error(f"a {kind} cue needs 'pieces': the pieces it plays, in order", **where)
    if not music and pieces:
        checker.error(f"a {kind} cue plays no music: remove 'pieces'", key="pieces", **where)
    if pieces and zhong is not None and kind != "無算樂":
        n = len(pieces) if kind != "射節" else 1
        if zhong % n and n % zhong:
            checker.error(f"{zhong} 終 does not fit {n} pieces: expected the 終 to repeat each "
                          "piece (終 a multiple of the pieces) or to group them (the pieces a "
                          "multiple of the 終)", key="zhong", **where)
    if kind == "間歌" and pieces:
        _check_alternation(checker, pieces, where)


def _check_alternation(checker: SheetChecker, pieces: tuple[PieceRef, ...], where: Where) -> None:
    """間歌: 歌 and 笙 take turns, in pairs, 歌 first."""
    for i, ref in enumerate(pieces):
        expected = BY_SINGERS if i % 2 == 0 else BY_SHENG
        if ref.by != expected:
            checker.error(f"間歌 alternates 歌 and 笙 (「一歌則一吹」), starting with 歌: piece "
                          f"{i + 1} 《{ref.title}》 is played by {ref.by}, expected {expected}",
                          key="pieces", **where)
            break
    if len(pieces) % 2:
        checker.error(f"間歌 alternates 歌 and 笙 in pairs: {len(pieces)} pieces leave the last "
                      "歌 without its 笙", key="pieces", **where)


def canonical_kind(name: str) -> str | None:
    """The kind ``name`` is a form of — simplified (「合乐」), pinyin (「he-yue」, 「HeYue」) — or
    None."""
    return loose_match(name, KINDS) or next(
        (kind for kind, pinyin in KIND_PINYIN.items() if name_key(pinyin) == name_key(name)),
        None)

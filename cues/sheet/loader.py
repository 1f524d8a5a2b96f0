"""The cue-sheet format (TOML) and its loader: a sheet into an immutable ``Rite``.

A sheet holds one rite::

    [rite]            id, title, work, hang, aliases, signals, layout_source
    [settings]        defaults for the compiler (tempo, 節 length, 黃鍾, …)
    [[reading]]       a reading the sources leave open: name, value (the default), note,
                      and [[reading.choice]] tables: value, source, cues / setting it sets
    [[position]]      name, x, y (metres; x east, y north), instrument, facing, source
    [[variant]]       id, title, source, note
    [[cue]]           id, kind, at, trigger, pieces, zhong, performers, instruments, stop,
                      moves, song/jie/listen/ou (射節), when/unless (variants), source, …

``load_sheet`` parses and validates a sheet and returns an immutable ``Rite``; every problem it
finds is reported together, each naming the file, the line and the cue id, and saying what was
expected.  ``load_rite`` resolves a built-in rite name (or a Chinese alias) or a path.

The checks of each part live next to it: ``cues.sheet.cue_table`` (a ``[[cue]]``),
``cues.sheet.cue_pieces``, ``cues.sheet.shooting_table`` (射節), ``cues.sheet.triggers``,
``cues.sheet.subtables`` (sources, counts, positions), ``cues.sheet.variants``,
``cues.sheet.readings``, ``cues.sheet.quotations`` (a quoted ``at``); ``cues.sheet.checker``
collects the errors and ``cues.sheet.toml_lines`` finds their lines.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from cues.builtin import BUILTIN_RITES, builtin_names, builtin_text, resolve_rite_name
from cues.errors import SheetError, SheetErrors, UserError
from cues.layouts import HANG_SIDES, standard_hang
from cues.limits import SHEET_BYTES, InputFileError, read_limited, toml_text_problem
from cues.model import SETTING_KEYS, Cue, Position, Rite
from cues.sheet.bounds import bounds_errors
from cues.sheet.checker import SheetChecker, closest
from cues.sheet.cue_table import is_id, parse_cue
from cues.sheet.quotations import misquotation_message, misquotations
from cues.sheet.readings import (
    check_choice_quotes,
    parse_readings,
    reading_notices,
    select_readings,
)
from cues.sheet.subtables import parse_positions, parse_source
from cues.sheet.toml_lines import TomlLines, toml_syntax_error
from cues.sheet.triggers import check_triggers
from cues.sheet.variants import cue_conditions, parse_variants, select_variants
from cues.sources import texts_beside

__all__ = ["BUILTIN_RITES", "builtin_rite", "load_rite", "load_sheet", "parse_sheet"]

HANGS = tuple(HANG_SIDES)  # 宮縣 軒縣 判縣 特縣
DEFAULT_HANG = "特縣"

# the keys each table may hold (anything else is an unknown key)
TOP_KEYS = {"rite", "settings", "reading", "position", "variant", "cue"}
RITE_KEYS = {"id", "title", "work", "hang", "aliases", "signals", "layout_source", "note"}
POSITION_KEYS = {"name", "x", "y", "instrument", "facing", "source", "note"}


def parse_sheet(
    text: str, path: str = "<sheet>", variants: Sequence[str] | None = (),
    base: Path | None = None, readings: Mapping[str, str] | None = None,
) -> Rite:
    """Parse and validate sheet ``text``; raise SheetErrors listing every problem.

    The rite is returned with ``variants`` chosen (None: every cue of every variant, as the
    validator sees it) and then its ``readings`` in force (the defaults where none is given).
    """
    return _chosen(_parse_as_written(text, path, base), variants, readings)


def _chosen(whole: Rite, variants: Sequence[str] | None,
            readings: Mapping[str, str] | None) -> Rite:
    """``whole`` with ``variants`` chosen (None: all) and ``readings`` in force, and a notice
    for each reading that changes nothing under those variants."""
    rite = whole if variants is None else select_variants(whole, variants)
    rite = select_readings(rite, readings, every=variants is None)
    notices = reading_notices(whole, rite, readings or {})
    return replace(rite, notices=notices) if notices else rite


def _parse_as_written(text: str, path: str, base: Path | None) -> Rite:
    """The sheet's rite with every cue of every variant and no reading applied."""
    guard = toml_text_problem(text)  # before tomllib, whose work a hostile key can explode
    if guard is not None:
        raise SheetErrors([SheetError(guard[0], file=path, line=guard[1])])
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SheetErrors([toml_syntax_error(exc, path)]) from None
    except RecursionError:
        raise SheetErrors([SheetError("TOML nesting too deep", file=path)]) from None
    lines = TomlLines(text)
    too_big = bounds_errors(data, path, lines)
    if too_big:
        raise SheetErrors(too_big)
    checker = SheetChecker(path, lines)
    with texts_beside(base):  # a source.file of the user's own is relative to the sheet
        rite = _rite(checker, data, base)
    if checker.errors:
        raise SheetErrors(checker.problems())
    assert rite is not None
    return replace(rite, warnings=tuple(str(w) for w in checker.warnings))


def _rite(checker: SheetChecker, data: dict, base: Path | None) -> Rite | None:
    checker.unknown_keys(data, TOP_KEYS, "the sheet (top level)")
    head = _rite_head(checker, data)
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        checker.error("[settings] must be a table", table="settings")
        settings = {}
    checker.unknown_keys(settings, SETTING_KEYS, "[settings]", table="settings")
    readings = parse_readings(checker, data, base)
    layout = _layout(checker, data, head["hang"])
    variants = parse_variants(checker, data)
    cues = _cues(checker, data, {v.id for v in variants}, base)
    raw_cues = data.get("cue")
    if not isinstance(raw_cues, list) or len(cues) == len(raw_cues):
        # with a cue left out for its own error, the order is not the sheet's: a trigger's
        # "first cue" or "after:" would be judged against the wrong neighbours
        check_triggers(checker, cues, set(head["signals"]))
    if head["id"] is None or head["title"] is None:
        return None
    rite = Rite(
        **head, layout=layout, cues=cues, variants=variants,
        settings=MappingProxyType(dict(settings)), readings=readings, path=checker.path,
    )
    cited = rite.cited_files()
    _check_callers(checker, cues, {p.name for p in layout})
    _check_quoted_moments(checker, cues, cited)
    check_choice_quotes(checker, readings, cited)
    return None if checker.errors else rite


def _rite_head(checker: SheetChecker, data: dict) -> dict[str, Any]:
    """The ``[rite]`` table: id, title, work, hang, aliases, signals, layout_source."""
    head = data.get("rite")
    if not isinstance(head, dict):
        checker.error("missing the [rite] table: expected [rite] with id, title, work and hang")
        head = {}
    else:
        checker.unknown_keys(head, RITE_KEYS, "[rite]", table="rite")
    rid = checker.get(head, "id", str, "a short name such as \"xiang-she\"", required=bool(head),
                      table="rite")
    if rid is not None and not is_id(rid):
        checker.error(f"rite id {rid!r}: expected a name without spaces", table="rite", key="id")
    title = checker.get(head, "title", str, "the rite's name, e.g. \"鄉射禮\"",
                        required=bool(head), table="rite")
    work = checker.get(head, "work", str, "the work, e.g. \"儀禮·鄉射禮\"", table="rite") or ""
    hang = checker.get(head, "hang", str, f"one of {', '.join(HANGS)}",
                       table="rite") or DEFAULT_HANG
    if hang not in HANGS:
        checker.error(f"hang {hang!r}: expected one of {', '.join(HANGS)}", table="rite",
                      key="hang")
    aliases = checker.string_list(head, "aliases", table="rite", index=0)
    signals = checker.string_list(head, "signals", table="rite", index=0)
    layout_source = None
    if "layout_source" in head:
        layout_source = parse_source(checker, head["layout_source"], table="rite", index=0,
                                     cue=None, required=False, key="layout_source")
    return {"id": rid, "title": title, "work": work, "hang": hang, "aliases": aliases,
            "signals": signals, "layout_source": layout_source}


def _check_callers(checker: SheetChecker, cues: Sequence[Cue], places: set[str]) -> None:
    """Whoever calls (``calls.who``) stands at a position of the layout: the call sounds there."""
    for cue in cues:
        for call in cue.calls:
            if call.who not in places:
                checker.error(f"a call's who = {call.who!r} is not a [[position]] of the layout: "
                              f"the call sounds where its caller stands; expected one of "
                              f"{', '.join(sorted(places)) or 'the positions'}", table="cue",
                              index=checker.lines.index_at("cue", cue.line), key="calls",
                              cue=cue.id)


def _check_quoted_moments(checker: SheetChecker, cues: Sequence[Cue],
                          cited: Sequence[str]) -> None:
    """An ``at`` or ``stop.at`` written with 「」 quotes a text the sheet cites."""
    for cue in cues:
        index = checker.lines.index_at("cue", cue.line)
        moments = [("at", cue.at)] + ([("stop.at", cue.stop.at)] if cue.stop else [])
        for key, moment in moments:
            for part in misquotations(moment, cited):
                checker.error(misquotation_message(key, part, cited), table="cue", index=index,
                              key=key.split(".")[0], cue=cue.id)


def _layout(checker: SheetChecker, data: dict, hang: str) -> tuple[Position, ...]:
    """The ``[[position]]`` tables, or the standard hang if the sheet places nothing."""
    layout = parse_positions(checker, data.get("position", []), table="position", key=None,
                             cue=None, allowed=POSITION_KEYS, index_of=lambda i: i)
    if not layout and "position" not in data and hang in HANGS:
        layout = standard_hang(hang)  # the sheet names its hang and places nothing
    return layout


def _cues(
    checker: SheetChecker, data: dict, variant_ids: set[str], base: Path | None,
) -> tuple[Cue, ...]:
    """The ``[[cue]]`` tables in order, with their variant conditions (ids must be unique)."""
    raw_cues = data.get("cue")
    if raw_cues is None:
        checker.error("the sheet has no cues: expected one or more [[cue]] tables")
        raw_cues = []
    elif not isinstance(raw_cues, list):
        checker.error("'cue' must be an array of tables: write each cue as [[cue]]", table="cue")
        raw_cues = []
    cues: list[Cue] = []
    first_index: dict[str, int] = {}
    for i, item in enumerate(raw_cues):
        cue = parse_cue(checker, item, i, base)
        if cue is None:
            continue
        when, unless = cue_conditions(checker, item, variant_ids, index=i, cue=cue.id)
        if cue.id in first_index:
            checker.error(f"duplicate cue id {cue.id!r} (first used by cue number "
                          f"{first_index[cue.id] + 1})", table="cue", index=i, key="id",
                          cue=cue.id)
            continue
        first_index[cue.id] = i
        cues.append(replace(cue, when=when, unless=unless))
    return tuple(cues)


def load_sheet(path: str | Path, variants: Sequence[str] | None = (),
               readings: Mapping[str, str] | None = None) -> Rite:
    """Read and validate a cue sheet file (``variants``, ``readings``: as ``parse_sheet``)."""
    return _chosen(load_sheet_as_written(path), variants, readings)


def load_sheet_as_written(path: str | Path) -> Rite:
    """Read and validate a cue sheet file: its rite with every cue of every variant and no
    reading applied (``select_variants`` and ``select_readings`` choose; ``load_sheet`` is
    the two applied once, ``validate`` applies them to one reading per combination)."""
    p = Path(path)
    name = str(path)
    try:
        raw = read_limited(p, SHEET_BYTES, "a .toml cue sheet")
    except InputFileError as exc:
        raise SheetErrors([SheetError(exc.problem, file=name)]) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SheetErrors([SheetError("not UTF-8 text: a cue sheet is a UTF-8 TOML file",
                                      file=name, line=line)]) from None
    return _parse_as_written(text, name, p.parent)


def builtin_rite(rite_id: str, variants: Sequence[str] | None = (),
                 readings: Mapping[str, str] | None = None) -> Rite:
    """Built-in rite ``rite_id`` (one of ``BUILTIN_RITES``) with ``variants`` and ``readings``
    chosen."""
    return parse_sheet(builtin_text(rite_id), f"{rite_id}.toml (built-in)", variants,
                       readings=readings)


def load_rite(name_or_path: str, variants: Sequence[str] | None = (),
              readings: Mapping[str, str] | None = None) -> Rite:
    """A built-in rite by name or alias, or a cue sheet by path."""
    rid = resolve_rite_name(name_or_path)
    if rid is not None:
        return builtin_rite(rid, variants, readings)
    p = Path(name_or_path)
    if p.suffix.lower() == ".toml" or p.exists():
        return load_sheet(p, variants, readings)
    hint = closest(name_or_path, builtin_names())
    raise UserError(
        f"unknown rite {name_or_path!r}" + (f" (did you mean {hint!r}?)" if hint else "")
        + f"; expected a built-in rite ({', '.join(BUILTIN_RITES)}, or a Chinese name such as "
        "鄉射禮) or the path of a .toml cue sheet")


def new_sheet(path: str, from_rite: str, *, force: bool = False) -> tuple[Path, str, Rite]:
    """``yuezheng new``: built-in rite ``from_rite`` as an editable sheet to be written at
    ``path`` — (the target, its text, the rite it loads as where it is written); UserError for a
    name that is no .toml, a file that exists without ``force``, or an unknown rite."""
    from cues.builtin import editable_sheet

    target = Path(path)
    if target.suffix.lower() != ".toml":
        raise UserError(f"{path}: a cue sheet is a .toml file")
    if target.exists() and not force:
        raise UserError(f"{path} exists: give --force to replace it")
    rid = resolve_rite_name(from_rite)
    if rid is None:
        raise UserError(f"--from {from_rite}: not a built-in rite; expected one of "
                        f"{', '.join(BUILTIN_RITES)} (or an alias `rites` lists)")
    text = editable_sheet(rid, path)
    return target, text, parse_sheet(text, path, base=target.parent)

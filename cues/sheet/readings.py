"""Readings: the places where the sources leave a sheet a choice, and what each value changes.

A ``[[reading]]`` has a ``name``, the default ``value``, a ``note`` and one
``[[reading.choice]]`` table per value: its passage (``source``) and what it sets — the fields
of some cues (``cues = { she-jie = { song = "采蘋", jie = 5, … } }``) or compile settings
(``setting = { jiu_xia_order = "鼓先" }``).  Every choice is checked by applying it to its cues
and validating them as any cue is.  ``select_readings`` applies the values in force (the
defaults, the sheet's ``[settings] readings``, then ``--reading``) after the variants.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from cues.errors import UserError
from cues.model import SETTING_KEYS, Cue, ReadingChoice, Rite, Setting
from cues.pinyin import loose_match
from cues.repertoire import canonical_title
from cues.sheet.checker import InTable, SheetChecker, Where, WhereKey, describe_value
from cues.sheet.cue_table import parse_cue
from cues.sheet.quotations import misquotation_message, misquotations
from cues.sheet.subtables import parse_source

READING_KEYS = {"name", "value", "choices", "choice", "note", "when"}
CHOICE_KEYS = {"value", "source", "cues", "setting"}
# the cue fields a reading's value may set
CUE_FIELDS = {"title", "at", "pieces", "zhong", "song", "jie", "listen", "ou", "performers",
              "instruments", "stop", "note", "choices"}
# the Cue attribute each of those fields sets ("note" is read by no Cue attribute)
_CUE_ATTRIBUTE = {"song": "shooting", "jie": "shooting", "listen": "shooting", "ou": "shooting",
                  "note": None}
CHOICE_TABLE = "reading.choice"


def parse_readings(checker: SheetChecker, data: dict, base: Path | None) -> tuple[Setting, ...]:
    """The ``[[reading]]`` tables, each choice applied to its cues and checked."""
    raw_cues = {c["id"]: (i, c) for i, c in enumerate(data.get("cue") or [])
                if isinstance(c, dict) and isinstance(c.get("id"), str)}
    variant_ids = {v.get("id") for v in data.get("variant") or () if isinstance(v, dict)}
    readings: list[Setting] = []
    choice_index = 0  # the [[reading.choice]] tables are counted across the readings
    for i, item in checker.table_array(data, "reading"):
        where: Where = {"table": "reading", "index": i}
        checker.unknown_keys(item, READING_KEYS, "a [[reading]]", **where)
        name = checker.get(item, "name", str, "the reading's name", required=True, **where)
        value = checker.get(item, "value", str, "the reading used", required=True, **where)
        old_form = checker.string_list(item, "choices", **where)
        when = checker.string_list(item, "when", **where)
        for v in when:
            if v not in variant_ids:
                checker.error(f"reading {name!r}: variant {v!r} is not declared", key="when",
                              **where)
        options: list[ReadingChoice] = []
        for raw in checker.array(item.get("choice"), "choice",
                                 "tables, each written [[reading.choice]]", **where) or ():
            option = _choice(checker, raw, name or "?", choice_index, raw_cues, base)
            choice_index += 1
            if option is not None:
                options.append(option)
        if not name or not value:
            continue
        values = tuple(o.value for o in options) or old_form or (value,)
        if old_form and not options:
            checker.warn(f"reading {name!r}: its choices change nothing; give "
                         "[[reading.choice]] tables", key="choices", **where)
        if value not in values:
            checker.error(f"reading {name!r} value {value!r} changes nothing: it is not among "
                          f"its choices ({' | '.join(values)})", key="value", **where)
        readings.append(Setting(name, value, values, str(item.get("note", "")), tuple(options),
                                tuple(when)))
    return tuple(readings)


def _choice(
    checker: SheetChecker, raw: object, name: str, index: int,
    raw_cues: Mapping[str, tuple[int, dict]], base: Path | None,
) -> ReadingChoice | None:
    """One ``[[reading.choice]]``: its value, passage, and the cues and settings it sets."""
    where: InTable = {"table": CHOICE_TABLE, "index": index}
    if not isinstance(raw, dict):
        checker.error(f"a [[reading.choice]] of {name!r} is {describe_value(raw)}: expected a "
                      "table", **where)
        return None
    checker.unknown_keys(raw, CHOICE_KEYS, "a [[reading.choice]]", **where)
    value = checker.get(raw, "value", str, "the value this choice stands for", required=True,
                        **where)
    if value is None:
        return None
    source = parse_source(checker, raw.get("source"), cue=None, required=False, **where)
    cues = _choice_cues(checker, raw, name, value, index, raw_cues, base)
    setting = _choice_setting(checker, raw, name, value, index)
    given = raw.get("cues")
    fields = {cid: frozenset(f for f in given[cid] if f in CUE_FIELDS)
              for cid in cues} if isinstance(given, dict) else {}
    option = ReadingChoice(value, source, MappingProxyType(cues), MappingProxyType(setting),
                           MappingProxyType(fields))
    if option.changes_nothing:
        checker.error(f"reading {name!r} value {value!r} changes nothing", **where)
    return option


def _choice_cues(
    checker: SheetChecker, raw: dict, name: str, value: str, index: int,
    raw_cues: Mapping[str, tuple[int, dict]], base: Path | None,
) -> dict[str, Cue]:
    """The cues a choice sets, each rebuilt from its table with the choice's fields applied
    and checked as any cue is (the errors located at the ``[[reading.choice]]``)."""
    where: InTable = {"table": CHOICE_TABLE, "index": index}
    given = raw.get("cues", {})
    if not isinstance(given, dict):
        checker.error(f"'cues' is {describe_value(given)}: expected a table cue id → "
                      "{ field = value, … }", key="cues", **where)
        return {}
    out: dict[str, Cue] = {}
    prefix = f"reading {name!r} value {value!r}"
    for cue_id, fields in given.items():
        if cue_id not in raw_cues:
            checker.error(f"{prefix} sets cue {cue_id!r}, which the sheet does not have",
                          key="cues", cue=cue_id, **where)
            continue
        if not isinstance(fields, dict) or not fields:
            checker.error(f"{prefix}: cue {cue_id!r} is set to {describe_value(fields)}: "
                          "expected a table of the cue fields it sets", key="cues",
                          cue=cue_id, **where)
            continue
        checker.unknown_keys(fields, CUE_FIELDS, f"the fields {prefix} sets", key="cues",
                             cue=cue_id, **where)
        cue_index, table = raw_cues[cue_id]
        probe = SheetChecker(checker.path, checker.lines)
        cue = parse_cue(probe, {**table, **fields}, cue_index, base)
        for error in probe.errors:
            checker.error(f"{prefix}: {error.message}", key="cues", cue=cue_id, **where)
        if cue is not None and not probe.errors:
            # the variants its cue plays under, to say which one a value needs (select_readings)
            out[cue_id] = replace(cue, when=_names(table.get("when")),
                                  unless=_names(table.get("unless")))
    return out


def _names(raw: object) -> tuple[str, ...]:
    """A cue's ``when``/``unless`` as written (one string or a list; checked by the loader)."""
    if isinstance(raw, str):
        return (raw,)
    return tuple(v for v in raw if isinstance(v, str)) if isinstance(raw, list) else ()


def _choice_setting(checker: SheetChecker, raw: dict, name: str, value: str,
                    index: int) -> dict[str, str]:
    """The compile settings a choice sets (their values are checked by the compiler)."""
    where: WhereKey = {"table": CHOICE_TABLE, "index": index, "key": "setting"}
    given = raw.get("setting", {})
    if not isinstance(given, dict):
        checker.error(f"'setting' is {describe_value(given)}: expected a table of settings",
                      **where)
        return {}
    out: dict[str, str] = {}
    for key, setting in given.items():
        if key not in SETTING_KEYS or key == "readings":
            checker.error(f"reading {name!r} value {value!r} sets {key!r}, which is not a "
                          f"setting; expected one of: {', '.join(sorted(SETTING_KEYS))}",
                          **where)
            continue
        out[key] = str(setting)
    return out


def check_choice_quotes(checker: SheetChecker, readings: Sequence[Setting],
                        cited: Sequence[str]) -> None:
    """Every quoted ``at`` a reading's value gives its cues is in the texts the sheet cites."""
    index = 0
    for reading in readings:
        for option in reading.options:
            for cue in option.cues.values():
                moments = [("at", cue.at)] + ([("stop.at", cue.stop.at)] if cue.stop else [])
                for key, moment in moments:
                    for part in misquotations(moment, cited):
                        checker.error(f"reading {reading.name!r} value {option.value!r}: "
                                      + misquotation_message(key, part, cited),
                                      table=CHOICE_TABLE, index=index, key="cues", cue=cue.id)
            index += 1


def parse_reading_args(items: Sequence[str]) -> dict[str, str]:
    """``--reading ID=VALUE`` arguments as a mapping (UserError when one has no ``=``)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise UserError(f"--reading {item!r}: expected ID=VALUE, e.g. "
                            "--reading yan-she-jie=采蘋-5")
        out[name.strip()] = value.strip()
    return out


def select_readings(rite: Rite, chosen: Mapping[str, str] | None = None,
                    every: bool = False) -> Rite:
    """The rite with its readings in force: the defaults, the sheet's ``[settings] readings``,
    then ``chosen``; each value's cues take the fields it sets (the others stay as the sheet or
    an earlier reading set them; a cue a variant removed stays out) and its settings join the
    rite's (UserError on an unknown reading or value).  A reading whose variants (``when``)
    are not all chosen is not in force and not listed (``every``: the validator's view of
    every cue of every variant, where it is listed, not applied)."""
    sheet_choice = rite.settings.get("readings", {})
    by_name = {r.name: r for r in rite.readings}
    wanted = {**(sheet_choice if isinstance(sheet_choice, dict) else {}),
              **canonical_readings(rite, chosen or {})}
    for name, value in wanted.items():
        reading = by_name.get(name)
        if reading is None or value not in reading.choices:
            what = (f"unknown reading {name!r}" if reading is None
                    else f"unknown value {value!r} of reading {name!r}")
            raise UserError(f"{what} for {rite.title}; its readings: {_listing(rite)}")
    cues = {c.id: c for c in rite.cues}
    settings = dict(rite.settings)
    in_force: list[Setting] = []
    for reading in rite.readings:
        value = str(wanted.get(reading.name, reading.value))
        if not set(reading.when) <= set(rite.active_variants):
            if every:
                in_force.append(replace(reading, value=value))
            continue
        in_force.append(replace(reading, value=value))
        option = reading.option(value)
        if option is None:
            continue
        for cue_id, cue in option.cues.items():
            if cue_id in cues:
                cues[cue_id] = _set_fields(cues[cue_id], cue, option.fields.get(cue_id))
        settings.update(option.setting)
    return replace(rite, cues=tuple(cues.values()), settings=MappingProxyType(settings),
                   readings=tuple(in_force))


def _set_fields(old: Cue, new: Cue, fields: frozenset[str] | None) -> Cue:
    """``old`` with the fields a reading's value sets taken from ``new`` (its cue as that value
    sets it); a listed instrument keeps the ``silent`` reason an earlier reading gave it when
    the later one gives none (the 歌 of a lost program stays said silent under another value's
    bells)."""
    if fields is None:
        return replace(new, when=old.when, unless=old.unless)
    attrs = {a for f in fields if (a := _CUE_ATTRIBUTE.get(f, f)) is not None}
    out = replace(old, **{a: getattr(new, a) for a in attrs})
    if "instruments" in attrs:
        why = {c.name: c.silent for c in old.instruments if c.silent}
        out = replace(out, instruments=tuple(
            c if c.silent or c.name not in why else replace(c, silent=why[c.name])
            for c in out.instruments))
    return out


def canonical_readings(rite: Rite, chosen: Mapping[str, str]) -> dict[str, str]:
    """``chosen`` with each reading's id and value in the sheet's own form where the user wrote
    another: case, spacing, simplified characters (「yan-she-jie=狸首-7」, 「JIU-XIA-ORDER=钟先」)
    or a piece's other name (「zouyu-5」 for 騶虞-5); a name that matches nothing is kept."""
    by_name = {r.name: r for r in rite.readings}
    out: dict[str, str] = {}
    for name, value in chosen.items():
        canon = name if name in by_name else loose_match(name, by_name) or name
        reading = by_name.get(canon)
        if reading is not None and value not in reading.choices:
            value = loose_match(value, reading.choices) or _piece_value(value, reading) or value
        out[canon] = value
    return out


def _piece_value(value: str, reading: Setting) -> str | None:
    """A value 「PIECE-N」 whose piece is named another way (pinyin, simplified, a variant)."""
    piece, sep, count = value.rpartition("-")
    title = canonical_title(piece) if sep else None
    if title is None:
        return None
    return next((c for c in reading.choices if c.rpartition("-")[::2] == (title, count)), None)


def reading_notices(whole: Rite, played: Rite, chosen: Mapping[str, str]) -> tuple[str, ...]:
    """What a ``--reading`` the user chose does not do: a value whose cues are all left out by
    the variants chosen changes nothing — said, naming the variant the cues need."""
    notices: list[str] = []
    by_name = {r.name: r for r in played.readings}
    in_play = {c.id for c in played.cues}
    all_cues = {c.id: c for c in whole.cues}
    gated = {r.name: r for r in whole.readings if r.when}
    for name, value in canonical_readings(whole, chosen).items():
        reading = by_name.get(name)
        if reading is None and name in gated:
            needs = [v for v in gated[name].when if v not in played.active_variants]
            notices.append(f"--reading {name}={value} changes nothing: reading {name} applies "
                           f"only with {' '.join(f'--variant {v}' for v in needs)}; add it")
            continue
        option = reading.option(value) if reading is not None else None
        if option is None or option.setting or not option.cues:
            continue
        ids = [cid for cid in option.cues if cid in all_cues]
        if not ids or any(cid in in_play for cid in ids):
            continue
        needs = sorted({v for cid in ids for v in all_cues[cid].when
                        if v not in played.active_variants})
        blocks = sorted({v for cid in ids for v in all_cues[cid].unless
                         if v in played.active_variants})
        why = (" ".join(f"--variant {v}" for v in needs) + " is not chosen" if needs
               else " ".join(f"--variant {v}" for v in blocks) + " leaves it out" if blocks
               else "it is not in the range played")
        notice = (f"--reading {name}={value} changes nothing: it sets cue {', '.join(ids)}, "
                  f"which is not played ({why})")
        notices.append(notice + (f"; add {' '.join(f'--variant {v}' for v in needs)}"
                                 if needs else ""))
    return tuple(notices)


def _listing(rite: Rite) -> str:
    return ", ".join(f"{r.name} ({' | '.join(r.choices)})" for r in rite.readings) or "none"

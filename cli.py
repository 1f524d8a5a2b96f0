"""yuezheng command line — the only module that prints.

Each command is a ``cmd_<name>(args) -> int`` function; a ``_register_<name>`` function marked
``@command`` adds its sub-parser, and ``_build_parser`` calls them all.  The arguments several
commands share are added by one helper each (``_add_settings``, ``_add_tuning``, …).  Library
errors that are the user's fault (a bad sheet, a bad argument) are ``UserError`` subclasses and
end in exit code 2 with a one-paragraph message and no traceback; anything else is exit 1.
Heavy libraries (pyo, music21, numpy-heavy modules) are imported inside the commands that need
them so that ``yuezheng --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from cues.errors import UserError
from cues.text import clock as _clock
from cues.text import display_width, pad

KIND_WIDTH = 6  # a cue's kind in the show table: up to three characters (無算樂)

if TYPE_CHECKING:
    from sequencer.live.delivery import ShowDelivery

if TYPE_CHECKING:
    from sequencer.live.showlog import ShowLog

if TYPE_CHECKING:
    from sequencer.live.link_show import LinkShow

if TYPE_CHECKING:
    from sequencer.live.player import Player
    from sequencer.web.player_view import PlayerView, ScreenOptions

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
PROG = "yuezheng"


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so that main() owns the exit code."""

    def error(self, message: str) -> None:  # type: ignore[override]
        where = self.prog.removeprefix(PROG).strip()  # main() says "yuezheng: " once
        raise UserError(f"{where + ': ' if where else ''}{message}\n"
                        f"{self.format_usage().rstrip()}")


# control characters but the newline, and the bidi overrides: a sheet's text printed as is could
# drive the terminal (ANSI escapes in a title) or reorder what it shows
_CONTROL_RE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with its control characters written as escapes (ESC as ``\\x1b``)."""
    return _CONTROL_RE.sub(lambda m: repr(m.group())[1:-1], text)


def one_line(text: str) -> str:
    """``printable`` and the newline escaped too: a name from a file on one line of a table."""
    return printable(text).replace("\n", "\\n")


def _out(text: str = "") -> None:
    sys.stdout.write(printable(text) + "\n")


def _err(text: str) -> None:
    sys.stderr.write(printable(text.rstrip("\n")) + "\n")


def _err_notes(exc: BaseException) -> None:
    """The notes an exception gathered on its way (e.g. "OUT not written; the old file is
    untouched")."""
    for note in getattr(exc, "__notes__", ()):
        _err(f"yuezheng: {note}")


def _print_json(obj: object) -> None:
    """JSON escapes control characters itself; the strings stay the sheet's, exactly."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


# ── commands ────────────────────────────────────────────────────────────────────────────────
# (commands are added above the "commands end" marker; each registers itself in _COMMANDS)

_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = []


def command(register: Callable[[argparse._SubParsersAction], None]):
    """Decorator: add a function that registers a sub-command on the sub-parsers."""
    _COMMANDS.append(register)
    return register


# — rites, show, validate, pieces, midi (the foundation) —


_VARIANT_HELP = "choose a variant of the rite (repeatable); `show` lists them"


def _add_variant(p: argparse.ArgumentParser | argparse._ArgumentGroup,
                 text: str = _VARIANT_HELP) -> None:
    """--variant V and --reading ID=VALUE (repeatable): the variants of the rite to play and the
    values of its readings; ``text`` is the help of --variant."""
    p.add_argument("--variant", action="append", default=[], metavar="V", help=text)
    p.add_argument("--reading", action="append", default=[], metavar="ID=VALUE",
                   help="choose the value of one of the rite's readings (repeatable); `show` "
                   "lists them with the passage behind each value")


def _add_tuning(p: argparse.ArgumentParser | argparse._ArgumentGroup, own: bool = False) -> None:
    """--huangzhong HZ and --tuning: the pitch of 黃鍾 and the tuning system.

    A timeline command (``own`` false): both default to None, so that the sheet's [settings]
    (else the compiler's defaults) decide, and the compiler reads the text as it reads the
    sheet's; a command without a timeline (``own``) gets the compiler's default tuning and 黃鍾
    as a number, so that every command defaults to the same tuning.
    """
    from instruments.tuning import DEFAULT_HUANGZHONG_HZ, TUNING_SYSTEMS
    from sequencer.settings import CompileSettings

    default_tuning = CompileSettings.tuning if own else None
    p.add_argument("--huangzhong", dest="huangzhong_hz", type=float if own else None,
                   metavar="HZ", default=DEFAULT_HUANGZHONG_HZ if own else None,
                   help=f"frequency of 黃鍾 in Hz (default {DEFAULT_HUANGZHONG_HZ:.2f} = C4: the "
                   "sources give none)")
    p.add_argument("--tuning", choices=TUNING_SYSTEMS, default=default_tuning,
                   help="sanfen = 三分損益 (the default of every command), equal = equal "
                   "temperament")


def _add_bell_interval(p: argparse.ArgumentParser) -> None:
    """--bell-interval: the 側鼓音 of the 編鐘 above its 正鼓音."""
    p.add_argument("--bell-interval", choices=("minor", "major"), default="minor",
                   help="編鐘: 側鼓音 a minor (default) or major third above the 正鼓音")


def _add_settings(p: argparse.ArgumentParser) -> None:
    """The variants and the compiler settings every timeline command accepts."""
    g = p.add_argument_group("settings (override the sheet's [settings])")
    _add_variant(g)
    g.add_argument("--tempo", dest="tempo_bpm", metavar="BPM",
                   help="sung syllables a minute (default 60)")
    g.add_argument("--jie-seconds", dest="jie_seconds", metavar="S",
                   help="length of one 節 of a 射節 (default: one 終 of its song)")
    g.add_argument("--lost-zhong-seconds", dest="lost_zhong_seconds", metavar="S",
                   help="length of one 終 of a piece whose music is lost (default 20)")
    g.add_argument("--go-gap", dest="go_gap_s", metavar="S",
                   help="offline: seconds between a cue's end and the next operator GO "
                        "(default 2)")
    _add_tuning(g)
    g.add_argument("--drum-pattern", dest="drum_pattern",
                   choices=("jie", "lu", "xue", "lu2", "xue2"),
                   help="射節 strokes: jie (default) or a 投壺 pattern (魯鼓, 薛鼓)")
    g.add_argument("--drum-reading", dest="drum_reading", choices=("follow", "precede"),
                   help="reading of 投壺 block 1's labels (default follow)")
    g.add_argument("--release-rule", dest="release_rule", choices=("half", "quarters"),
                   help="when a release accords with the drum (default half: 上射 on the 節, "
                        "下射 half a 節 later)")


def _add_piece_target(p: argparse.ArgumentParser) -> None:
    """RITE|FILE|PIECE and --ensemble: a rite, a sheet, or one piece played by an ensemble."""
    from cues.builtin import DEFAULT_ENSEMBLE, ENSEMBLES

    p.add_argument("rite", metavar="RITE|FILE|PIECE",
                   help="a built-in rite, a .toml sheet, or a piece (`pieces` lists them)")
    p.add_argument("--ensemble", choices=tuple(ENSEMBLES), metavar="NAME",
                   help="a piece's players (default " + DEFAULT_ENSEMBLE + "): " + "; ".join(
                       f"{name} = {what}" for name, (_, _, what) in ENSEMBLES.items()))


def _add_timeline_args(p: argparse.ArgumentParser, output: str) -> None:
    """RITE|FILE|PIECE, -o OUTPUT, --from/--until and the settings: what every timeline view
    takes."""
    _add_piece_target(p)
    p.add_argument("-o", "--output", required=True, metavar=output)
    p.add_argument("--from", dest="from_cue", metavar="CUE", help="start at this cue")
    p.add_argument("--until", dest="until_cue", metavar="CUE", help="end with this cue")
    _add_groups(p)
    _add_settings(p)


# — instrument groups (--only/--except: a station's part of the ensemble) —


def _add_groups(p: argparse.ArgumentParser) -> None:
    """--only GROUP… and --except GROUP… (sequencer.groups)."""
    g = p.add_argument_group("instrument groups (a side 東 西 中 堂上 堂下, an 八音 family, an "
                             "instrument, a layout position; `show` lists them)")
    g.add_argument("--only", action="extend", nargs="+", default=[], metavar="GROUP",
                   help="play only these groups (names, or joined by commas)")
    g.add_argument("--except", dest="excluded", action="extend", nargs="+", default=[],
                   metavar="GROUP", help="leave these groups out")


def _selection(args: argparse.Namespace, rite):
    """The note selection --only/--except name (None: the whole ensemble)."""
    from sequencer.groups import note_selection

    return note_selection(rite, getattr(args, "only", ()), getattr(args, "excluded", ()))


def _load(args: argparse.Namespace):
    """The rite named on the command line, with its variants, range and compiled settings."""
    from sequencer.selection import selected_rite

    return selected_rite(args.rite, variants=getattr(args, "variant", ()) or (),
                         readings=getattr(args, "reading", ()) or (),
                         from_cue=getattr(args, "from_cue", None),
                         until_cue=getattr(args, "until_cue", None), overrides=vars(args),
                         ensemble=getattr(args, "ensemble", None))


def _load_timeline(args: argparse.Namespace):
    """The rite named on the command line and its compiled timeline."""
    rite, _, timeline = _load_part(args)
    return rite, timeline


def _load_part(args: argparse.Namespace):
    """(rite, its whole timeline, the part --only/--except select: the whole without them)."""
    from sequencer.compiler import compile_rite
    from sequencer.groups import select_notes

    rite, settings = _load(args)
    selection = _selection(args, rite)
    whole = compile_rite(rite, settings)
    timeline = select_notes(whole, selection)
    if selection is not None and not timeline.notes:
        _warn([f"{selection.describe()}: no note of {rite.id} is left"])
    return rite, whole, timeline


@contextmanager
def _writing(path: str) -> Iterator[None]:
    """A failure to write ``path`` becomes the user's error (a full disk, a missing folder)."""
    try:
        yield
    except OSError as exc:
        error = UserError(f"cannot write {path}: {exc.strerror or exc}")
        for note in getattr(exc, "__notes__", ()):  # what was left as it was
            error.add_note(note)
        raise error from None


def _warn(problems: Sequence[str]) -> None:
    for problem in problems:
        _err(f"yuezheng: warning: {problem}")


@command
def _register_rites(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rites", help="list the built-in rites")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_rites)


def cmd_rites(args: argparse.Namespace) -> int:
    from cues.sheet import BUILTIN_RITES, builtin_rite

    rows = []
    for rid in BUILTIN_RITES:
        rite = builtin_rite(rid)
        rows.append({"rite": rid, "title": rite.title, "work": rite.work, "hang": rite.hang,
                     "aliases": list(rite.aliases), "cues": len(rite.cues),
                     "variants": [v.id for v in rite.variants]})
    if args.json:
        _print_json(rows)
        return EXIT_OK
    title_width = max((display_width(r["title"]) for r in rows), default=0)
    for r in rows:
        variants = f"  variants: {', '.join(r['variants'])}" if r["variants"] else ""
        _out(f"{r['rite']:<14} {pad(r['title'], title_width)} {pad(r['hang'], 4)}  "
             f"{r['cues']:>2} cues  aliases: {', '.join(r['aliases'])}{variants}")
    return EXIT_OK


@command
def _register_show(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="show a rite's cues (a table, or the JSON contract)")
    p.add_argument("rite", metavar="RITE|FILE", help="a built-in rite (or alias) or a .toml sheet")
    p.add_argument("--json", action="store_true", help="print the JSON contract")
    _add_groups(p)
    _add_settings(p)
    p.set_defaults(func=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    from sequencer.groups import groups_json
    from sequencer.views import rite_json, rite_length_s

    rite, timeline = _load_timeline(args)
    data = rite_json(rite, timeline)
    data["groups"] = groups_json(rite, timeline)
    if args.json:
        _print_json(data)
        return EXIT_OK
    _out(f"{data['title']} ({data['rite']}) — {rite.work}; hang: {rite.hang}; "
         f"{_clock(rite_length_s(timeline))} offline")
    if rite.variants:
        chosen = set(rite.active_variants)
        _out("variants: " + "; ".join(
            f"{'[x]' if v.id in chosen else '[ ]'} {v.id} = {v.title}" for v in rite.variants))
    _show_readings(data["readings"])
    _out(_groups_line(data["groups"]))
    _out("")
    _out(f"{'#':>2}  {'cue':<18} {pad('kind', KIND_WIDTH)} {'start':>8} {'length':>8}  "
         "trigger     pieces")
    for i, cue in enumerate(data["cues"], start=1):
        chosen = {c["field"] for c in cue["choices"]}
        mark = {field: "*" if field in chosen else "" for field in (
            "duration_s", "trigger", "pieces", "zhong", "jie_s")}
        start = _clock(cue["start_s"])
        length = _clock(cue["duration_s"]) if cue["duration_s"] is not None else "operator"
        pieces = " ".join(f"《{t}》" for t in cue["pieces"]) + mark["pieces"]
        if cue["zhong"]:
            pieces += f" {cue['zhong']}終{mark['zhong']}"
        if cue.get("lost"):
            pieces += " (lost: structure only)"
        for title, words in cue.get("fragments", {}).items():
            pieces += f" (《{title}》 text a fragment: 「{words}」)"
        if cue["kind"] == "射節":
            pieces += f" — {cue['jie']}節{mark['jie_s']}, {cue['listen']} to listen"
        _out(f"{i:>2}  {cue['id'] + ('*' if chosen else ''):<18} "
             f"{pad(cue['kind'], KIND_WIDTH)} {start:>8} "
             f"{length + mark['duration_s']:>8}  {cue['trigger'] + mark['trigger']:<10}  "
             f"{pieces}")
        _out(f"    at 「{cue['at']}」 — {cue['source']['work']}: 「{cue['source']['quote']}」")
    _show_choices(data["cues"])
    return EXIT_OK


def _groups_line(groups: list[dict]) -> str:
    """The groups --only/--except may name, by kind (° marks one without a note here)."""
    from sequencer.groups import PLURALS

    kinds: dict[str, list[str]] = {}
    for g in groups:
        kinds.setdefault(g["kind"], []).append(g["name"] + ("" if g["notes"] else "°"))
    return ("groups (--only/--except): " + "; ".join(
        f"{PLURALS[kind]} {' '.join(names)}" for kind, names in kinds.items())
        + "  (°: no note here)")


def _show_readings(readings: list[dict]) -> None:
    """Each reading: its value in force, and every value with the passage behind it."""
    for reading in readings:
        values = ", ".join(c["value"] for c in reading["choices"])
        _out(f"reading {reading['name']} = {reading['value']} (choices: {values})")
        for choice in reading["choices"]:
            if "source" in choice:
                _out(f"    {choice['value']}: {choice['source']['work']}: "
                     f"「{choice['source']['quote']}」")


def _show_choices(cues: list[dict]) -> None:
    """Under the table: the project's own choices (marked *), each with its reason."""
    rows = [(cue["id"], c) for cue in cues for c in cue["choices"]]
    if not rows:
        return
    _out("")
    _out("* the project's own choices (no source fixes them):")
    for cue_id, choice in rows:
        _out(f"    {cue_id} {choice['field']}: {choice['reason']}")


@command
def _register_validate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="check cue sheets and report every problem")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.set_defaults(func=cmd_validate)


def cmd_validate(args: argparse.Namespace) -> int:
    from cues.sheet import load_sheet
    from sequencer.sheetcheck import check_sheet, sheet_warnings

    bad = 0
    for path in args.files:
        try:
            rite, problems = check_sheet(path)
            warnings = [] if problems or rite is None else sheet_warnings(
                load_sheet(path, variants=None))
        except UserError as exc:  # a [settings] value out of range, an unknown reading
            bad += 1
            _err(f"{path}: {exc}")
            continue
        if problems or rite is None:
            bad += 1
            for e in problems:
                _err(str(e))
            continue
        _warn(warnings)
        _out(f"{path}: ok — {rite.title}, {len(rite.cues)} cues, {len(rite.variants)} variants")
    return EXIT_USAGE if bad else EXIT_OK


@command
def _register_new(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "new", help="start your own cue sheet from a built-in rite",
        description="Write a built-in rite as an editable cue sheet (its TOML, headed by where "
        "it came from). Example: yuezheng new my-she.toml --from xiang-she",
    )
    p.add_argument("sheet", metavar="SHEET.toml", help="the sheet to write")
    p.add_argument("--from", dest="from_rite", required=True, metavar="RITE",
                   help="the built-in rite to start from (name or alias; `rites` lists them)")
    p.add_argument("--force", action="store_true", help="replace SHEET.toml if it exists")
    p.set_defaults(func=cmd_new)


def cmd_new(args: argparse.Namespace) -> int:
    from pathlib import Path

    from cues.builtin import BUILTIN_RITES, editable_sheet, resolve_rite_name
    from cues.sheet import parse_sheet
    from instruments.atomicfile import write_text_atomically

    target = Path(args.sheet)
    if target.suffix.lower() != ".toml":
        raise UserError(f"{args.sheet}: a cue sheet is a .toml file")
    if target.exists() and not args.force:
        raise UserError(f"{args.sheet} exists: give --force to replace it")
    rid = resolve_rite_name(args.from_rite)
    if rid is None:
        raise UserError(f"--from {args.from_rite}: not a built-in rite; expected one of "
                        f"{', '.join(BUILTIN_RITES)} (or an alias `rites` lists)")
    text = editable_sheet(rid, args.sheet)
    rite = parse_sheet(text, args.sheet, base=target.parent)  # it loads where it is written
    with _writing(args.sheet):
        write_text_atomically(target, text)
    _out(f"wrote {args.sheet}: {rite.title} from the built-in {rid}, {len(rite.cues)} cues; "
         f"edit it, then `yuezheng validate {args.sheet}`")
    return EXIT_OK


@command
def _register_pieces(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pieces", help="list the repertoire: every piece the rites name")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_pieces)


def cmd_pieces(args: argparse.Namespace) -> int:
    from cues.repertoire import all_pieces

    rows = [{"title": p.title, "pinyin": p.pinyin, "category": p.category,
             "text_lost": p.text_lost,
             "text": p.text_state, "melody_lost": p.melody_lost, "mode": p.mode,
             "stanzas": len(p.stanzas),
             "source": {"work": p.source.work, "file": p.source.file, "quote": p.source.quote}}
            for p in all_pieces()]
    if args.json:
        _print_json(rows)
        return EXIT_OK
    title_width = max((display_width(r["title"]) for r in rows), default=0)
    category_width = max((display_width(r["category"]) for r in rows), default=0)
    for r in rows:
        melody = f"詩譜, {r['mode']}, {r['stanzas']} stanzas" if not r["melody_lost"] else \
            "melody lost"
        text = f"text {r['text']}"
        _out(f"{pad(r['pinyin'], 16)} {pad('《' + r['title'] + '》', title_width + 4)} "
             f"{pad(r['category'], category_width)} {text}; {melody} — "
             f"「{r['source']['quote']}」")
    return EXIT_OK


@command
def _register_midi(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("midi", help="write a rite as a Standard MIDI File")
    _add_timeline_args(p, "OUT.mid")
    p.set_defaults(func=cmd_midi)


def cmd_midi(args: argparse.Namespace) -> int:
    from sequencer.smf import write_midi
    from sequencer.views import rite_length_s

    rite, timeline = _load_timeline(args)
    with _writing(args.output):
        write_midi(timeline, args.output, title=rite.title)
    jie = sum(1 for m in timeline.markers if m.kind == "jie")
    _out(f"wrote {args.output}: {rite.title}, {len(rite.cues)} cues, {len(timeline.notes)} notes, "
         f"{jie} 節 markers, {_clock(rite_length_s(timeline))}")
    return EXIT_OK


EXIT_TEMPO_VIOLATION = 4  # `check`: a block of 節 or onsets does not hold


@command
def _register_check(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="prove the timing holds (「間若一」): test 節 or onsets as an equal-interval grid",
        description="Test a MIDI file, an audio recording or a live show log as equal-interval "
        "grids. MIDI: each block of '節 k/N' markers (a block starts where k goes back to 1); "
        "without markers, the note_on onsets merged within 30 ms. Audio (.wav .flac .aif .aiff "
        ".ogg): the detected onsets. Log (.jsonl .ndjson): the {\"event\": \"jie\"} records of "
        "the live player. With --rite (and the settings and range the file was made with), an "
        "audio or MIDI file is checked only in the rite's 射節, each against the stroke grid "
        "of its timeline, and its offset from the timeline is reported. One line per block; "
        "--verbose for each violation. Exit codes: 0 every block holds, 4 a block fails, "
        "2 bad input. Example: yuezheng check xiang-she.wav --rite xiang-she",
    )
    p.add_argument("file", metavar="FILE", help="FILE.mid, FILE.wav, FILE.flac or FILE.jsonl")
    p.add_argument(
        "--channel", type=int, metavar="N", default=None,
        help="MIDI only, without 節 markers: check note onsets of channel N (1-16); "
        "default: all channels",
    )
    p.add_argument(
        "--tolerance-ms", type=float, metavar="T", default=None,
        help="largest allowed deviation of an onset from the fitted grid, in ms "
        "(default: MIDI 1, audio 10, log 5)",
    )
    p.add_argument("--rite", metavar="RITE|FILE", default=None,
                   help="check the file in this rite's 射節 only, against its timeline")
    p.add_argument("--from", dest="from_cue", metavar="CUE",
                   help="with --rite: the file starts at this cue")
    p.add_argument("--until", dest="until_cue", metavar="CUE",
                   help="with --rite: the file ends with this cue")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print each violation and note, not only one line per block")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    _add_settings(p)
    p.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    from sequencer.selection import SETTING_NAMES
    from sequencer.tempo_check import check_file, check_timeline

    if args.rite is None:
        if args.from_cue or args.until_cue or args.variant or getattr(args, "reading", None) or any(
                getattr(args, k, None) is not None for k in SETTING_NAMES):
            raise UserError("--from, --until, --variant, --reading and the settings apply with "
                            "--rite only")
        report = check_file(args.file, channel=args.channel, tolerance_ms=args.tolerance_ms)
    else:
        from sequencer.compiler import compile_rite

        if args.channel is not None:
            raise UserError("--channel does not apply with --rite (the 射節 strokes are checked)")
        rite, settings = _load(args)
        report = check_timeline(args.file, compile_rite(rite, settings), args.tolerance_ms)
    if args.json:
        _print_json(report.to_json())
        return EXIT_OK if report.ok else EXIT_TEMPO_VIOLATION
    kinds = {
        "midi-markers": "MIDI, 節 markers",
        "midi-notes": "MIDI, note onsets",
        "audio": "audio onsets",
        "log": "live show log, 節 records",
        "audio-timeline": f"audio onsets in the 射節 of {args.rite}",
        "midi-timeline": f"MIDI note onsets in the 射節 of {args.rite}",
    }
    _out(f"{report.source} — {kinds.get(report.kind, report.kind)}, "
         f"tolerance ±{report.tolerance_ms:g} ms")
    if args.verbose:
        for note in report.notes:
            _out(f"  note: {note}")
    for warning in report.warnings:
        _out(f"  warning: {warning}")
    timeline = report.kind.endswith("-timeline")
    offset = f"  {'offset':>10}" if timeline else ""
    _out(f"  {'#':>2}  {'count':>9}  {'mean interval':>14}  {'max dev':>10}  {'CV':>8}{offset}  "
         f"{'result':<6}  block")
    jie = report.kind in ("midi-markers", "log")
    for number, block in enumerate(report.blocks, start=1):
        count = (f"{block.count}/{block.expected_count}" if block.expected_count is not None
                 else str(block.count))
        shift = f"  {block.offset_s:>+8.3f} s" if block.offset_s is not None else ""
        bad = f" ({len(block.violations)} off the grid)" if block.violations else ""
        _out(f"  {number:>2}  {count:>9}  {block.mean_interval_s:>12.6f} s  "
             f"{block.max_deviation_ms:>7.3f} ms  {block.cv * 100:>7.3f}%{shift}  "
             f"{'ok' if block.ok else 'FAIL':<6}  {one_line(block.label)}{bad}")
        if not args.verbose:
            continue
        for v in block.violations:
            which = f"節 {v.index + 1}" if jie else f"{'stroke' if timeline else 'onset'} " \
                f"{v.index + 1}"
            _out(f"        {which} at {v.time_s:.6f} s: {v.deviation_ms:+.3f} ms "
                 f"({'late' if v.deviation_ms > 0 else 'early'})")
        for note in block.notes:
            _out(f"        note: {note}")
    failed = sum(not b.ok for b in report.blocks)
    plural = "s" if len(report.blocks) != 1 else ""
    if failed:
        more = "" if args.verbose else " (--verbose for each violation)"
        _out(f"{failed} of {len(report.blocks)} block{plural} "
             f"{'fails' if failed == 1 else 'fail'}: the timing does not hold{more}")
        return EXIT_TEMPO_VIOLATION
    _out(f"every block holds ({len(report.blocks)} block{plural}): 間若一")
    return EXIT_OK


@command
def _register_score(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score",
        help="write the score of a 詩譜 piece, or of the sung pieces of a rite",
        description="Write a score (MusicXML, compressed .mxl, or PDF through LilyPond) of a "
        "piece of the 風雅十二詩譜 (every stanza: voice with syllable, 律 and 工尺 under each "
        "note, and the 瑟 an octave below, as the MIDI and audio play it), or of the sung (歌) "
        "pieces of a rite in order with the cue ids as rehearsal marks. The 詩譜 notates no "
        "rhythm: every syllable is a quarter note. Lost melodies are never invented.",
    )
    p.add_argument("target", metavar="PIECE|RITE",
                   help="a repertoire title (鹿鳴, 关雎, …) or a rite (name, alias or .toml path)")
    p.add_argument("-o", "--output", metavar="OUT", required=True,
                   help="OUT.musicxml, OUT.xml, OUT.mxl or OUT.pdf (PDF needs Debian lilypond)")
    _add_tuning(p, own=True)
    _add_variant(p, "rites only: select a variant reading (repeatable)")
    p.set_defaults(func=cmd_score)


def cmd_score(args: argparse.Namespace) -> int:
    from cues.repertoire import canonical_title
    from instruments.score import piece_score, rite_score
    from instruments.score_files import write_score
    from instruments.tuning import parse_tuning

    tuning = parse_tuning(args.tuning, args.huangzhong_hz)
    title = canonical_title(args.target)
    if title is not None:
        if args.variant or args.reading:
            raise UserError(f"--variant and --reading apply to rites only; {title!r} is a piece")
        score = piece_score(title, tuning)
        what = f"《{title}》"
    else:
        from cues.readings import parse_reading_args
        from cues.sheet import load_rite

        rite = load_rite(args.target, args.variant, parse_reading_args(args.reading))
        score = rite_score(rite, tuning)
        what = rite.title
    with _writing(args.output):
        out = write_score(score, args.output)
    notes = len(score.parts[0].recurse().notes) if score.parts else 0
    _out(f"wrote {out}: {what}, {notes} sung notes, {tuning.describe()}")
    return EXIT_OK


@command
def _register_instruments(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "instruments",
        help="list the instrument catalog: 八音, GM fallback and the synthesis voice model",
        description="List every instrument of the catalog with its 八音 class, aliases, the "
        "General MIDI fallback for external synths, and the model of its built-in voice.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON array")
    p.set_defaults(func=cmd_instruments)


def cmd_instruments(args: argparse.Namespace) -> int:
    from cues.catalog import CATALOG
    from instruments.voices import describe

    rows = []
    for inst in CATALOG.values():
        rows.append({
            "name": inst.name, "english": inst.english, "bayin": inst.bayin,
            "pitched": inst.pitched, "aliases": list(inst.aliases), "pinyin": inst.pinyin,
            "gm_program": inst.gm_program, "gm_key": inst.gm_key,
            "description": inst.description, "voice": describe(inst.name),
        })
    if args.json:
        _print_json(rows)
        return EXIT_OK
    name_width = max((display_width(r["name"]) for r in rows), default=0)
    for r in rows:
        gm = (f"GM program {r['gm_program']}" if r["gm_program"] is not None
              else f"GM drum key {r['gm_key']}")
        _out(f"{pad(r['name'], name_width)}  [{r['bayin']}]  {r['english']}  "
             f"({'pitched' if r['pitched'] else 'unpitched'}; {gm})")
        _out(f"    aliases: {' '.join([r['pinyin'], *r['aliases']])}")
        _out(f"    {r['description']}")
        _out(f"    voice: {r['voice']}")
    return EXIT_OK


@command
def _register_audition(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audition",
        help="render a short demonstration of one instrument's voice to an audio file",
        description="Render a few seconds of one instrument: the pentatonic 宮 商 角 徵 羽 清宮 "
        "on 黃鍾 for pitched instruments, a few strokes for drums. 48 kHz stereo, 24-bit WAV or "
        "FLAC by the output's extension.",
    )
    p.add_argument("name", metavar="NAME", help="an instrument of `yuezheng instruments`")
    p.add_argument("-o", "--output", metavar="OUT", required=True, help="OUT.wav or OUT.flac")
    _add_tuning(p, own=True)
    _add_bell_interval(p)
    _add_room_args(p, loudness=False)
    p.set_defaults(func=cmd_audition)


def _add_room_args(p: argparse.ArgumentParser, loudness: bool) -> None:
    """--room (and for render --loudness, --bell-detune): how the built-in voices are heard."""
    p.add_argument("--room", choices=("courtyard", "dry"), default="courtyard",
                   help="courtyard (default): reflections from the hall and the side walls, "
                   "a short tail, delays by distance; dry: pan and distance only")
    if loudness:
        p.add_argument("--loudness", type=float, metavar="LUFS", default=-18.0,
                       help="normalise the render to this integrated loudness (BS.1770; "
                       "default -18)")
        p.add_argument("--bell-detune", choices=("0", "5", "excavated"), default="0",
                       help="each bell's fixed tuning error: none (default), up to ±5 cents, "
                       "or an excavated set's ±25 cents")


def cmd_audition(args: argparse.Namespace) -> int:
    from instruments.audio_files import write_audio
    from instruments.audition import audition_notes
    from instruments.mixer import Mastering

    pitch_hz = None
    if args.tuning == "sanfen":
        from instruments.tuning import parse_tuning

        pitch_hz = parse_tuning(args.tuning, args.huangzhong_hz).hz
    notes = audition_notes(args.name, args.huangzhong_hz, bell_interval=args.bell_interval,
                           pitch_hz=pitch_hz)
    with _writing(args.output):
        report = write_audio(args.output, notes, how=Mastering(room=args.room))
    _out(f"wrote {report.path}: {notes[0].instrument}, {report.notes} notes, "
         f"{report.duration_s:.2f} s, peak {report.peak:.3f}, "
         f"{report.realtime_factor:.1f}× real time")
    return EXIT_OK


@command
def _register_render(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("render", help="render a rite to audio (built-in voices or FluidSynth)")
    _add_timeline_args(p, "OUT.wav|.flac")
    p.add_argument("--stems", metavar="DIR", help="also write one file per instrument")
    p.add_argument("--engine", choices=("yuezheng", "fluidsynth"), default="yuezheng",
                   help="built-in voices (default) or FluidSynth with a SoundFont")
    p.add_argument("--soundfont", metavar="FILE.sf2", help="for --engine fluidsynth")
    _add_bell_interval(p)
    _add_room_args(p, loudness=True)
    p.set_defaults(func=cmd_render)


def cmd_render(args: argparse.Namespace) -> int:
    from sequencer.render import render_fluidsynth, render_timeline
    from sequencer.views import rite_length_s

    rite, whole, timeline = _load_part(args)
    if args.engine == "fluidsynth":
        if args.stems:
            raise UserError("--stems needs the built-in engine (FluidSynth renders one mix)")
        with _writing(args.output):
            report = render_fluidsynth(timeline, args.output, args.soundfont, rite.title)
        _out(f"wrote {report.path}: {rite.title} through FluidSynth ({report.soundfont}), "
             f"{_clock(rite_length_s(timeline))}, {report.realtime_factor:.1f}× real time")
        return EXIT_OK
    progress = (_progress_bar(f"render {rite.id}") if sys.stderr.isatty() else
                _progress_lines(f"render {rite.id}"))
    with _writing(args.output):
        report = render_timeline(timeline, args.output, stems_dir=args.stems,
                                 bell_interval=args.bell_interval, bell_detune=args.bell_detune,
                                 room=args.room, loudness=args.loudness, progress=progress,
                                 whole=None if whole is timeline else whole)
    if sys.stderr.isatty():
        _err("")
    stems = f", {len(report.stems)} stems in {args.stems}" if report.stems else ""
    _out(f"wrote {report.path}: {rite.title}, {len(rite.cues)} cues, {report.notes} notes, "
         f"{_clock(rite_length_s(timeline))}, peak {report.peak:.3f}, "
         f"{report.realtime_factor:.1f}× real time{stems}")
    return EXIT_OK


def _progress_bar(label: str):
    """A one-line progress bar on standard error (only on a terminal)."""
    def show(done: float, total: float) -> None:
        frac = 0.0 if total <= 0 else min(1.0, done / total)
        bar = "█" * int(frac * 30)
        sys.stderr.write(f"\r{label} [{bar:<30}] {frac * 100:5.1f}%  {_clock(done)} / "
                         f"{_clock(total)}")
        sys.stderr.flush()
    return show


LONG_RENDER_S = 600.0
"""A render of more audio than this reports its progress off a terminal too (every 10 %)."""


def _progress_lines(label: str):
    """Progress as a line on standard error at every tenth of a long render (not a terminal:
    a log keeps whole lines)."""
    shown = [0]

    def show(done: float, total: float) -> None:
        tenth = 0 if total < LONG_RENDER_S else int(10 * min(1.0, done / total))
        if tenth > shown[0]:
            shown[0] = tenth
            _err(f"{label}: {tenth * 10} % ({_clock(done)} of {_clock(total)})")
    return show


@command
def _register_ports(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ports", help="list the MIDI inputs a live output can connect to",
        description="List the MIDI inputs that `jack:PORT` / `alsa:PORT` outputs can connect to "
        "(PORT may be any part of a name shown here).",
    )
    p.add_argument("--api", choices=("jack", "alsa", "default"), default="jack",
                   help="MIDI API to list (default: jack)")
    p.add_argument("--json", action="store_true", help="print a JSON list of names")
    p.set_defaults(func=cmd_ports)


def cmd_ports(args: argparse.Namespace) -> int:
    from instruments.ports import list_ports

    names = list_ports(args.api)
    if args.json:
        _print_json(names)
    else:
        for name in names:
            _out(name)
        if not names:
            _err(f"yuezheng: no {args.api} MIDI inputs")
    return EXIT_OK


# — plot, layout (the pictures) —


@command
def _register_plot(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot", help="draw a rite's timeline (PNG or SVG)")
    _add_timeline_args(p, "OUT.png|OUT.svg")
    p.set_defaults(func=cmd_plot)


def cmd_plot(args: argparse.Namespace) -> int:
    from sequencer.plots import picture_format
    from sequencer.timeline_plot import plot_timeline
    from sequencer.views import rite_length_s

    picture_format(args.output)  # a bad extension fails before any work
    rite, timeline = _load_timeline(args)
    with _writing(args.output):
        problems = plot_timeline(rite, timeline, args.output)
    _warn(problems)
    _out(f"wrote {args.output}: {rite.title}, {len(timeline.spans)} cues, "
         f"{len(timeline.notes)} notes, {_clock(rite_length_s(timeline))}")
    return EXIT_OK


@command
def _register_layout(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("layout", help="draw a rite's hang from above (PNG or SVG)")
    p.add_argument("rite", metavar="RITE|FILE")
    p.add_argument("-o", "--output", required=True, metavar="OUT.png|OUT.svg")
    _add_variant(p)
    p.set_defaults(func=cmd_layout)


def cmd_layout(args: argparse.Namespace) -> int:
    from sequencer.layout_plot import plot_layout
    from sequencer.plots import picture_format

    picture_format(args.output)
    rite, _ = _load(args)
    with _writing(args.output):
        problems = plot_layout(rite, args.output)
    _warn(problems)
    moves = sum(len(c.moves) for c in rite.cues)
    _out(f"wrote {args.output}: {rite.title}, {rite.hang}, {len(rite.layout)} positions, "
         f"{moves} moves")
    return EXIT_OK


@command
def _register_judge(sub: argparse._SubParsersAction) -> None:
    from sequencer.judge import DEFAULT_TOLERANCE_MS

    p = sub.add_parser("judge", help="「不鼓不釋」: tally the archers' hits by the drum rule")
    p.add_argument("rite", metavar="RITE|FILE")
    p.add_argument("--releases", required=True, metavar="FILE.csv",
                   help="columns time_s,side,hit: seconds from the 射節 cue's start (all pairs, "
                        "one cycle of 節 each, in the shooting order), side 右 (the 上射's) or "
                        "左, hit 0/1")
    p.add_argument("--cue", metavar="CUE", help="the 射節 cue (default: the rite's first)")
    p.add_argument("--tolerance-ms", type=float, default=DEFAULT_TOLERANCE_MS,
                   help="how far a release may be from a drum accord and still count "
                        f"(default {DEFAULT_TOLERANCE_MS:g} ms)")
    p.add_argument("--json", action="store_true", help="print JSON")
    _add_settings(p)
    p.set_defaults(func=cmd_judge)


def cmd_judge(args: argparse.Namespace) -> int:
    from sequencer.compiler import compile_rite
    from sequencer.judge import read_releases_csv, shooting_setup

    if not args.tolerance_ms >= 0:
        raise UserError(f"--tolerance-ms {args.tolerance_ms}: expected 0 or more")
    rite, settings = _load(args)
    shooting = [c for c in rite.cues if c.kind == "射節" and c.shooting is not None]
    if args.cue:
        shooting = [c for c in shooting if c.id == args.cue]
    if not shooting:
        which = f"no 射節 cue {args.cue!r}" if args.cue else "no 射節 cue"
        raise UserError(f"{rite.title}: {which} (its cues: {', '.join(c.id for c in rite.cues)})")
    cue = shooting[0]
    releases = read_releases_csv(args.releases)
    setup = shooting_setup(cue, compile_rite(rite, settings).span(cue.id))
    tally = setup.judge(releases, args.tolerance_ms / 1000.0)
    if args.json:
        data = tally.to_json()
        data["announcement"] = tally.announcement()
        data["cue"] = cue.id
        _print_json(data)
        return EXIT_OK
    _out(f"{rite.title} {cue.id}: 《{cue.shooting.song}》 {setup.jie} 節 of {setup.jie_s:g} s, "
         f"{setup.listen} to listen; drum accords ±{args.tolerance_ms:g} ms at "
         + ", ".join(f"{w:g}" for w in setup.windows_s) + " s of each cycle")
    for d in tally.decisions:
        mark = "釋" if d.counted else ("—" if not d.release.hit else "不釋")
        _out(f"  {d.release.time_s:9.3f} s  {d.release.side}  {'hit ' if d.release.hit else 'miss'}"
             f"  {pad(mark, 4)}  {d.reason}")
    _out(f"右 {tally.right}, 左 {tally.left}: 「{tally.announcement()}」")
    return EXIT_OK


@command
def _register_live(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "live", help="run a rite live: cue by cue to a MIDI output, from the console or headless",
        description="Play a rite live to a MIDI port. The console (curses) shows the cue list, "
        "the standby cue's ritual moment, the 節 counter and the keys: space GO, s stop "
        "(樂闋: ends a looping cue at its next rest point; twice: at once), h hold, r resume, "
        "n/b skip/back, p panic (twice: CC 123/120 on every channel), +/- nudge a 射節 from its "
        "next 耦 cycle, 1/2/3/4 the judge marks a release (右 hit, 右 miss, 左 hit, 左 miss: "
        "「不鼓不釋」, tallied live), q quit (twice while music sounds). A GO within --go-guard "
        "of the last is ignored; a GO while a follow cue waits starts nothing; a GO while music "
        "sounds asks for a second GO, which cuts it (--go-cuts: at once). --auto runs every cue "
        "without an operator. At the end a summary says what was not delivered: the output "
        "lost, messages late; the exit code is then 1.",
    )
    _add_piece_target(p)
    p.add_argument("--output", required=True, metavar="SPEC",
                   help="jack:PORT, jack-virtual:NAME, alsa:PORT, virtual:NAME, pyo (the "
                   "built-in voices through pyo's audio server: pyo:jack, pyo:portaudio, "
                   "pyo:jack:CLIENT), or memory:[PATH] (no hardware: the messages are "
                   "recorded, to PATH as JSON lines)")
    p.add_argument("--auto", action="store_true",
                   help="headless: GO cues start the go gap after the previous cue ends; cues "
                        "that run until stopped play one pass")
    p.add_argument("--from", dest="from_cue", metavar="CUE", help="start at this cue")
    p.add_argument("--until", dest="until_cue", metavar="CUE", help="end with this cue")
    p.add_argument("--control", metavar="URL",
                   help="OSC remote control, e.g. osc://127.0.0.1:53000 (/go /stop /panic /hold "
                        "/resume /cue/ID/start, /release SIDE HIT; replies /reply/...)")
    p.add_argument("--remote-quit", dest="remote_quit", action="store_true",
                   help="let OSC /quit end the show (refused otherwise)")
    p.add_argument("--midi-in", dest="midi_in", metavar="SPEC",
                   help="MIDI input for GO/stop/panic and MIDI Show Control (GO, STOP, RESUME)")
    p.add_argument("--midi-go", default="note:60", metavar="note:N|cc:N",
                   help="the MIDI input's GO (default note:60)")
    p.add_argument("--midi-stop", default="note:62", metavar="note:N|cc:N",
                   help="the MIDI input's stop (default note:62)")
    p.add_argument("--midi-panic", default="note:61", metavar="note:N|cc:N",
                   help="the MIDI input's panic (default note:61)")
    p.add_argument("--clock-out", action="store_true",
                   help="send MIDI clock (24 ppqn at the rite's tempo, start/stop/continue)")
    p.add_argument("--log", metavar="FILE.jsonl", help="append the show log (JSON lines) here")
    p.add_argument("--resume", metavar="LOG", help="start again at the last cue LOG started")
    p.add_argument("--go-guard", dest="go_guard_s", type=float, default=1.0, metavar="S",
                   help="the least time between two GOs; a GO sooner is ignored (default 1)")
    p.add_argument("--go-cuts", action="store_true",
                   help="a GO while music sounds cuts it at once (default: GO again to confirm)")
    p.add_argument("--web", metavar="[ADDR:]PORT",
                   help="serve the performers' 節 display (/) and the operator remote "
                        "(/operator) on this port, loopback unless ADDR is given")
    p.add_argument("--web-token", metavar="TOKEN",
                   help="the token the operator page needs to give commands (else view only)")
    p.add_argument("--web-token-file", metavar="FILE", help="read --web-token from FILE")
    p.add_argument("--speak", action="store_true",
                   help="announce standby and GO aloud with espeak-ng (backstage calls)")
    p.add_argument("--plain", action="store_true",
                   help="a plain console for screen readers: what changes, a line each; type a "
                        "command (go, stop, hold, resume, skip, back, panic, faster, slower, "
                        "quit) or a console key")
    _add_groups(p)
    link = p.add_mutually_exclusive_group()
    link.add_argument("--link", action="store_true",
                      help="join an Ableton Link session and lead it: each 射節's 節 become "
                           "Link beats (phase 0 on 節 1), its start and stop the session's")
    link.add_argument("--link-follow", dest="link_follow", action="store_true",
                      help="join an Ableton Link session and follow it: each 射節 takes the "
                           "session's tempo and starts on its next phase 0 (tempo locked "
                           "for the cue)")
    _add_standby_args(p)
    _add_settings(p)
    p.set_defaults(func=cmd_live)


def _add_standby_args(p: argparse.ArgumentParser) -> None:
    """``live``'s hot standby (docs/standby.md)."""
    g = p.add_argument_group("hot standby (a main and a muted backup machine; docs/standby.md)")
    g.add_argument("--role", choices=("main", "backup"),
                   help="main: mirror every action to the backup; backup: play muted, take over "
                        "when the main falls silent")
    g.add_argument("--peer", metavar="osc.udp://HOST:PORT", help="the other machine's --listen")
    g.add_argument("--listen", metavar="[ADDR:]PORT",
                   help="where this machine hears its peer (loopback unless ADDR is given; "
                        "default: loopback on the --peer port)")
    g.add_argument("--peer-key-file", metavar="FILE",
                   help="the shared key (else the environment variable YUEZHENG_PEER_KEY)")
    g.add_argument("--peer-lead", dest="peer_lead_ms", type=float, default=50.0, metavar="MS",
                   help="both machines act this long after the main's action (default 50)")
    g.add_argument("--heartbeat", dest="heartbeat_ms", type=float, default=100.0, metavar="MS",
                   help="how often each side says it is alive (default 100)")
    g.add_argument("--takeover", dest="takeover_ms", type=float, default=500.0, metavar="MS",
                   help="the backup takes over after this long without the main (default 500)")


def _standby(args: argparse.Namespace, player: Player):
    """Attach the hot-standby link asked for (None without --role)."""
    if args.role is None:
        return None
    from sequencer.live.peer_auth import load_key
    from sequencer.live.standby import Standby, standby_options

    options = standby_options(args.role, args.peer, args.listen, load_key(args.peer_key_file),
                              args.peer_lead_ms, args.heartbeat_ms, args.takeover_ms)
    standby = Standby(player, options)
    _err(f"yuezheng: hot standby: {args.role}, show {standby.show[:12]}, listening on "
         f"{options.listen[0]}:{options.listen[1]}, peer {args.peer}")
    return standby


class _Terminated(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: the signals that end a live show, silenced (SIGHUP: a lost terminal or SSH session)
LIVE_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")


def _catch_live_signals() -> dict[int, object]:
    """Raise ``_Terminated`` on each of LIVE_SIGNALS (a SIGHUP ignored by ``nohup`` stays
    ignored); returns the old handlers."""
    import signal

    def on_signal(signum: int, frame: object) -> None:
        raise _Terminated(signum)

    old = {}
    for name in LIVE_SIGNALS:
        number = getattr(signal, name)
        if name == "SIGHUP" and signal.getsignal(number) is signal.SIG_IGN:
            continue
        old[number] = signal.signal(number, on_signal)
    return old


def _log_failure(log: ShowLog) -> bool:
    """Report a show log that could not be written (the show went on); True if so."""
    if log.error is None:
        return False
    _err(f"yuezheng: {log.error}; {log.lost} record(s) not written")
    return True


def cmd_live(args: argparse.Namespace) -> int:
    import signal

    from instruments.ports import parse_spec
    from sequencer.live import protocol
    from sequencer.live.midi_in import parse_trigger, start_midi_in
    from sequencer.live.osc import parse_control, start_osc
    from sequencer.live.player import Player
    from sequencer.live.showlog import resume_point

    parse_spec(args.output)
    if args.resume:
        rite_id, cue = resume_point(args.resume)
        if args.from_cue and args.from_cue != cue:
            raise UserError("give --resume or --from, not both")
        args.from_cue = cue
    rite, settings = _load(args)
    if args.resume and rite_id and rite_id != rite.id:
        raise UserError(f"--resume {args.resume}: the log is of rite {rite_id!r}, not {rite.id!r}")
    mapping = {parse_trigger(args.midi_go): protocol.Go(),
               parse_trigger(args.midi_stop): protocol.Stop(),
               parse_trigger(args.midi_panic): protocol.Panic()}
    if args.control:
        parse_control(args.control)
    screens = _screen_options(args)
    tty = sys.stdin.isatty() and sys.stdout.isatty()
    interactive = not args.auto and (tty or args.plain)
    if not (args.auto or interactive or args.control or args.midi_in or args.web
            or args.role == "backup"):  # a backup is operated by its main
        raise UserError("the live console needs a terminal; use --auto to run headless, or "
                        "--control/--midi-in/--web to be operated remotely")

    old = _catch_live_signals()
    if args.go_guard_s < 0:
        raise UserError(f"--go-guard {args.go_guard_s:g}: must be 0 or more seconds")
    player = Player(rite, settings, args.output, auto=args.auto, log_path=args.log,
                    clock_out=args.clock_out, go_guard_s=args.go_guard_s, go_cuts=args.go_cuts,
                    only=_selection(args, rite),
                    muted=args.role == "backup", lead_s=args.peer_lead_ms / 1000)
    standby = _standby(args, player)
    player.log.on_error = (lambda text: setattr(player, "message", text)) if interactive else (
        lambda text: _err(f"yuezheng: {text}"))
    link = _start_link(player, args)
    try:
        with player:
            if args.control:
                host, port = start_osc(player, args.control, remote_quit=args.remote_quit)
                if not interactive:
                    _err(f"yuezheng: OSC control on osc://{host}:{port}")
            if args.midi_in:
                start_midi_in(player, args.midi_in, mapping)
            view = _start_screens(player, screens, quiet=interactive and not args.plain)
            if interactive:
                _console(player, view if args.plain else None)
            else:  # --auto, or remote control without a terminal: until the show is done
                player.run(stop=lambda: player.machine.done and not args.auto
                           and player.machine.pos >= len(player.machine.cues))
    except _Terminated as exc:
        _err(f"yuezheng: {signal.Signals(exc.signum).name}: silenced and stopped")
        _log_failure(player.log)
        return 128 + exc.signum
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        if link is not None:
            link.close()
    if standby is not None:
        if standby.refused:
            raise UserError(f"backup refused to arm: {standby.refused}")
        _out(f"hot standby: {standby.status()['line']}")
    if args.auto:
        _out(f"played {rite.title}: {len(rite.cues)} cues" +
             (f"; log {args.log}" if args.log else ""))
    delivery = player.delivery
    for line in _delivery_lines(delivery):
        _out(line)
    failed = _log_failure(player.log)
    if not delivery.faultless:
        _err("yuezheng: the show was not delivered whole (see above; exit 1)")
        return EXIT_FAILURE
    return EXIT_FAILURE if failed else EXIT_OK


def _start_link(player: Player, args: argparse.Namespace) -> LinkShow | None:
    """Join the Link session ``--link``/``--link-follow`` ask for (None: neither)."""
    if not (args.link or args.link_follow):
        return None
    from sequencer.live.link import LinkError
    from sequencer.live.link_show import start_link

    try:
        return start_link(player, follow=args.link_follow)
    except (LinkError, ImportError) as exc:
        raise UserError(f"--link: {exc} (pip install aalink)") from None


def _delivery_lines(delivery: ShowDelivery) -> list[str]:
    """The end-of-show summary of what was not delivered."""
    def at(t: float) -> str:
        seconds = t - delivery.t0
        return f"{int(seconds // 60)}:{seconds % 60:04.1f}"

    lines = []
    for lost, regained in delivery.losses:
        lines.append(f"OUTPUT LOST at {at(lost)}: " + (
            "never regained — nothing sent after it was heard" if regained is None
            else f"regained at {at(regained)}"))
    if delivery.late:
        per_cue = ", ".join(f"{e.key} {e.late + e.missed + e.lost}" for e in delivery.late)
        lines.append(f"NOT ON TIME: {delivery.not_on_time} messages ({per_cue}); worst "
                     f"{delivery.worst_s * 1000:.1f} ms late")
    return lines or ["delivered: every message on time"]


def _screen_options(args: argparse.Namespace) -> ScreenOptions:
    """``live``'s screens (--web, its token, --speak, --plain), checked before the show opens."""
    from sequencer.web.player_view import screen_options

    return screen_options(args.web, args.web_token, args.web_token_file, args.speak, args.plain)


def _start_screens(player: Player, screens: ScreenOptions, *, quiet: bool) -> PlayerView | None:
    """Start the screens asked for (None: none); say where the web pages are unless ``quiet``."""
    if not screens.wanted:
        return None
    from sequencer.web.player_view import start_screens

    view, url = start_screens(player, screens)
    if url and not quiet:
        _err(f"yuezheng: web pages on {url} (operator: {url}operator)")
    return view


def _console(player: Player, plain_view: PlayerView | None) -> None:
    """The operator's console: curses; with --plain, a line per change (printed here)."""
    if plain_view is None:
        from sequencer.live.console import run_console

        run_console(player)
    else:
        from sequencer.web.plain import run_plain_console

        run_plain_console(player, plain_view, _out)


# ── commands end ────────────────────────────────────────────────────────────────────────────


# Every sub-command's --help ends with examples (tests/test_help.py checks that each has some).
_EXAMPLES: dict[str, tuple[str, ...]] = {
    "rites": ("yuezheng rites", "yuezheng rites --json"),
    "show": ("yuezheng show xiang-she", "yuezheng show 燕禮 --variant she --json"),
    "validate": ("yuezheng validate my-rite.toml",),
    "new": ("yuezheng new my-she.toml --from xiang-she   # then edit it, and: "
            "yuezheng render my-she.toml -o my-she.wav",),
    "pieces": ("yuezheng pieces", "yuezheng pieces --json"),
    "midi": ("yuezheng midi xiang-she -o xiang-she.mid",
             "yuezheng midi yan -o she.mid --variant she --from she-jie --until she-jie"),
    "check": ("yuezheng check xiang-she.mid", "yuezheng check show.jsonl --json",
              "yuezheng check xiang-she.wav --rite xiang-she"),
    "score": ("yuezheng score 關雎 -o guanju.pdf",
              "yuezheng score xiang-yin-jiu -o xiang-yin-jiu.musicxml --tuning equal"),
    "instruments": ("yuezheng instruments",),
    "audition": ("yuezheng audition 編鐘 -o bianzhong.wav",
                 "yuezheng audition 瑟 -o se.flac --tuning equal"),
    "render": ("yuezheng render xiang-she -o xiang-she.wav",
               "yuezheng render guanju -o guanju.wav --ensemble sheng-ge",
               "yuezheng render xiang-she -o x.wav --engine fluidsynth "
               "--soundfont /usr/share/sounds/sf2/FluidR3_GM.sf2"),
    "ports": ("yuezheng ports", "yuezheng ports --api alsa"),
    "plot": ("yuezheng plot xiang-she -o xiang-she.png",),
    "layout": ("yuezheng layout da-she -o da-she.svg",),
    "judge": ("yuezheng judge xiang-she --releases releases.csv   "
              "# rows: time_s,side,hit e.g. 4.0,右,1",),
    "live": ("yuezheng live xiang-she --output jack:fluidsynth",
             "yuezheng live xiang-she --output pyo --auto --log show.jsonl"),
}
HELP_WIDTH = 90


def _document(sub: argparse._SubParsersAction) -> None:
    """Give each sub-command's own --help its one-line description (the line ``yuezheng
    --help`` shows), the longer description under it, and its examples as the epilog."""
    for action in sub._choices_actions:
        parser = sub.choices[action.dest]
        summary = (action.help or "").strip()
        more = parser.description or ""
        body = "\n".join(textwrap.fill(part, HELP_WIDTH) for part in more.split("\n") if part)
        parser.description = summary + (f"\n\n{body}" if body else "")
        examples = _EXAMPLES.get(action.dest, ())
        parser.epilog = ("example" + ("s" if len(examples) > 1 else "") + ":\n"
                         + "\n".join(f"  {line}" for line in examples)) if examples else None
        parser.formatter_class = argparse.RawDescriptionHelpFormatter


def _version() -> str:
    """yuezheng's version: the installed package's, else the pyproject.toml beside this file."""
    from importlib import metadata

    try:
        return metadata.version(PROG)
    except metadata.PackageNotFoundError:
        import tomllib
        from pathlib import Path

        pyproject = Path(__file__).with_name("pyproject.toml")
        with pyproject.open("rb") as handle:
            return str(tomllib.load(handle)["project"]["version"])


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="樂正 — cue, render, score and check the music of the Zhou rites "
        "(鄉飲酒禮, 鄉射禮, 燕禮, 大射).",
        epilog="Exit codes: 0 success, 2 bad input or usage, 1 anything else "
        "(`check` also uses 4: a tempo violation).",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for register in _COMMANDS:
        register(sub)
    _document(sub)
    return parser


_PROBING_COMMANDS = ("live", "ports")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``yuezheng`` script."""
    try:
        parser = _build_parser()
        args = parser.parse_args(argv)
        if args.command in _PROBING_COMMANDS:  # they open audio/MIDI libraries that chatter
            from instruments.quiet import quiet_libraries

            with quiet_libraries():
                return int(args.func(args))
        return int(args.func(args))
    except UserError as exc:
        _err(f"{PROG}: {exc}")
        _err_notes(exc)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM while writing (atomicfile)
        _err("yuezheng: interrupted")
        _err_notes(exc)
        return 128 + getattr(exc, "signum", 2)
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # the last line of defence: no traceback for users
        _err(f"yuezheng: internal error: {type(exc).__name__}: {exc}")
        _err_notes(exc)
        if os.environ.get("YUEZHENG_DEBUG"):
            raise
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())

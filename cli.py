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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from cues.errors import UserError

if TYPE_CHECKING:
    from sequencer.live.player import Player
    from sequencer.web.player_view import PlayerView, ScreenOptions

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so that main() owns the exit code."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(f"{self.prog}: {message}\n{self.format_usage().rstrip()}")


# control characters but the newline, and the bidi overrides: a sheet's text printed as is could
# drive the terminal (ANSI escapes in a title) or reorder what it shows
_CONTROL_RE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with its control characters written as escapes (ESC as ``\\x1b``)."""
    return _CONTROL_RE.sub(lambda m: repr(m.group())[1:-1], text)


def _out(text: str = "") -> None:
    sys.stdout.write(printable(text) + "\n")


def _err(text: str) -> None:
    sys.stderr.write(printable(text.rstrip("\n")) + "\n")


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


def _add_tuning(p: argparse.ArgumentParser | argparse._ArgumentGroup,
                default_tuning: str | None = None) -> None:
    """--huangzhong HZ and --tuning: the pitch of 黃鍾 and the tuning system.

    A timeline command gives no ``default_tuning``: both default to None, so that the sheet's
    [settings] (else the compiler's defaults) decide, and the compiler reads the text as it reads
    the sheet's; a command without a timeline names its tuning and gets 黃鍾 as a number.
    """
    from instruments.tuning import DEFAULT_HUANGZHONG_HZ, TUNING_SYSTEMS

    own = default_tuning is not None
    p.add_argument("--huangzhong", dest="huangzhong_hz", type=float if own else None,
                   metavar="HZ", default=DEFAULT_HUANGZHONG_HZ if own else None,
                   help=f"frequency of 黃鍾 in Hz (default {DEFAULT_HUANGZHONG_HZ:.2f} = C4: the "
                   "sources give none)")
    p.add_argument("--tuning", choices=TUNING_SYSTEMS, default=default_tuning,
                   help="sanfen = 三分損益, equal = equal temperament (default "
                   f"{default_tuning or 'sanfen'})")


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


def _add_timeline_args(p: argparse.ArgumentParser, output: str) -> None:
    """RITE|FILE, -o OUTPUT, --from/--until and the settings: what every timeline view takes."""
    p.add_argument("rite", metavar="RITE|FILE")
    p.add_argument("-o", "--output", required=True, metavar=output)
    p.add_argument("--from", dest="from_cue", metavar="CUE", help="start at this cue")
    p.add_argument("--until", dest="until_cue", metavar="CUE", help="end with this cue")
    _add_settings(p)


def _load(args: argparse.Namespace):
    """The rite named on the command line, with its variants, range and compiled settings."""
    from sequencer.selection import selected_rite

    return selected_rite(args.rite, variants=getattr(args, "variant", ()) or (),
                         readings=getattr(args, "reading", ()) or (),
                         from_cue=getattr(args, "from_cue", None),
                         until_cue=getattr(args, "until_cue", None), overrides=vars(args))


def _load_timeline(args: argparse.Namespace):
    """The rite named on the command line and its compiled timeline."""
    from sequencer.compiler import compile_rite

    rite, settings = _load(args)
    return rite, compile_rite(rite, settings)


@contextmanager
def _writing(path: str) -> Iterator[None]:
    """A failure to write ``path`` becomes the user's error (a full disk, a missing folder)."""
    try:
        yield
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None


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
    for r in rows:
        variants = f"  variants: {', '.join(r['variants'])}" if r["variants"] else ""
        _out(f"{r['rite']:<14} {r['title']:<6} {r['hang']}  {r['cues']:>2} cues  "
             f"aliases: {', '.join(r['aliases'])}{variants}")
    return EXIT_OK


@command
def _register_show(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="show a rite's cues (a table, or the JSON contract)")
    p.add_argument("rite", metavar="RITE|FILE", help="a built-in rite (or alias) or a .toml sheet")
    p.add_argument("--json", action="store_true", help="print the JSON contract")
    _add_settings(p)
    p.set_defaults(func=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    from sequencer.views import rite_json

    rite, timeline = _load_timeline(args)
    data = rite_json(rite, timeline)
    if args.json:
        _print_json(data)
        return EXIT_OK
    _out(f"{data['title']} ({data['rite']}) — {rite.work}; hang: {rite.hang}")
    if rite.variants:
        chosen = set(rite.active_variants)
        _out("variants: " + "; ".join(
            f"{'[x]' if v.id in chosen else '[ ]'} {v.id} = {v.title}" for v in rite.variants))
    _show_readings(data["readings"])
    _out("")
    _out(f"{'#':>2}  {'cue':<18} {'kind':<4} {'start':>8} {'length':>8}  trigger     pieces")
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
        _out(f"{i:>2}  {cue['id'] + ('*' if chosen else ''):<18} {cue['kind']:<4} {start:>8} "
             f"{length + mark['duration_s']:>8}  {cue['trigger'] + mark['trigger']:<10}  "
             f"{pieces}")
        _out(f"    at 「{cue['at']}」 — {cue['source']['work']}: 「{cue['source']['quote']}」")
    _show_choices(data["cues"])
    return EXIT_OK


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


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = int(round(seconds))
    return f"{whole // 60}:{whole % 60:02d}"


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
def _register_pieces(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pieces", help="list the repertoire: every piece the rites name")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_pieces)


def cmd_pieces(args: argparse.Namespace) -> int:
    from cues.repertoire import all_pieces

    rows = [{"title": p.title, "category": p.category, "text_lost": p.text_lost,
             "text": p.text_state, "melody_lost": p.melody_lost, "mode": p.mode,
             "stanzas": len(p.stanzas),
             "source": {"work": p.source.work, "file": p.source.file, "quote": p.source.quote}}
            for p in all_pieces()]
    if args.json:
        _print_json(rows)
        return EXIT_OK
    for r in rows:
        melody = f"詩譜, {r['mode']}, {r['stanzas']} stanzas" if not r["melody_lost"] else \
            "melody lost"
        text = f"text {r['text']}"
        _out(f"《{r['title']}》 {r['category']:<3} {text}; {melody} — 「{r['source']['quote']}」")
    return EXIT_OK


@command
def _register_midi(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("midi", help="write a rite as a Standard MIDI File")
    _add_timeline_args(p, "OUT.mid")
    p.set_defaults(func=cmd_midi)


def cmd_midi(args: argparse.Namespace) -> int:
    from sequencer.smf import write_midi
    from sequencer.timebase import seconds

    rite, timeline = _load_timeline(args)
    with _writing(args.output):
        write_midi(timeline, args.output, title=rite.title)
    jie = sum(1 for m in timeline.markers if m.kind == "jie")
    _out(f"wrote {args.output}: {rite.title}, {len(rite.cues)} cues, {len(timeline.notes)} notes, "
         f"{jie} 節 markers, {_clock(float(seconds(timeline.end)))}")
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
        "the live player. Exit codes: 0 every block holds, 4 a block fails, 2 bad input.",
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
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    from sequencer.tempo_check import check_file

    report = check_file(args.file, channel=args.channel, tolerance_ms=args.tolerance_ms)
    if args.json:
        _print_json(report.to_json())
        return EXIT_OK if report.ok else EXIT_TEMPO_VIOLATION
    kinds = {
        "midi-markers": "MIDI, 節 markers",
        "midi-notes": "MIDI, note onsets",
        "audio": "audio onsets",
        "log": "live show log, 節 records",
    }
    _out(f"{report.source} — {kinds.get(report.kind, report.kind)}, "
         f"tolerance ±{report.tolerance_ms:g} ms")
    for note in report.notes:
        _out(f"  note: {note}")
    _out(f"  {'#':>2}  {'count':>5}  {'mean interval':>14}  {'max dev':>10}  {'CV':>8}  "
         f"{'result':<6}  block")
    jie = report.kind in ("midi-markers", "log")
    for number, block in enumerate(report.blocks, start=1):
        _out(f"  {number:>2}  {block.count:>5}  {block.mean_interval_s:>12.6f} s  "
             f"{block.max_deviation_ms:>7.3f} ms  {block.cv * 100:>7.3f}%  "
             f"{'ok' if block.ok else 'FAIL':<6}  {block.label}")
        for v in block.violations:
            which = f"節 {v.index + 1}" if jie else f"onset {v.index + 1}"
            _out(f"        {which} at {v.time_s:.6f} s: {v.deviation_ms:+.3f} ms "
                 f"({'late' if v.deviation_ms > 0 else 'early'})")
        for note in block.notes:
            _out(f"        note: {note}")
    failed = sum(not b.ok for b in report.blocks)
    if failed:
        _out(f"{failed} of {len(report.blocks)} block{'s' if len(report.blocks) != 1 else ''} "
             f"{'fails' if failed == 1 else 'fail'}: the timing does not hold")
        return EXIT_TEMPO_VIOLATION
    _out(f"every block holds ({len(report.blocks)} "
         f"block{'s' if len(report.blocks) != 1 else ''}): 間若一")
    return EXIT_OK


@command
def _register_score(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score",
        help="write the score of a 詩譜 piece, or of the sung pieces of a rite",
        description="Write a score (MusicXML, compressed .mxl, or PDF through LilyPond) of a "
        "piece of the 風雅十二詩譜 (every stanza: voice with syllable, 律 and 工尺 under each "
        "note, and the 瑟 in unison), or of the sung (歌) pieces of a rite in order with the cue "
        "ids as rehearsal marks. The 詩譜 notates no rhythm: every syllable is a quarter note. "
        "Lost melodies are never invented.",
    )
    p.add_argument("target", metavar="PIECE|RITE",
                   help="a repertoire title (鹿鳴, 关雎, …) or a rite (name, alias or .toml path)")
    p.add_argument("-o", "--output", metavar="OUT", required=True,
                   help="OUT.musicxml, OUT.xml, OUT.mxl or OUT.pdf (PDF needs Debian lilypond)")
    _add_tuning(p, "sanfen")
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
            "pitched": inst.pitched, "aliases": list(inst.aliases),
            "gm_program": inst.gm_program, "gm_key": inst.gm_key,
            "description": inst.description, "voice": describe(inst.name),
        })
    if args.json:
        _print_json(rows)
        return EXIT_OK
    for r in rows:
        gm = (f"GM program {r['gm_program']}" if r["gm_program"] is not None
              else f"GM drum key {r['gm_key']}")
        _out(f"{r['name']}  [{r['bayin']}]  {r['english']}  "
             f"({'pitched' if r['pitched'] else 'unpitched'}; {gm})")
        if r["aliases"]:
            _out(f"    aliases: {' '.join(r['aliases'])}")
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
    _add_tuning(p, "equal")
    _add_bell_interval(p)
    p.set_defaults(func=cmd_audition)


def cmd_audition(args: argparse.Namespace) -> int:
    from instruments.audio_files import write_audio
    from instruments.audition import audition_notes

    pitch_hz = None
    if args.tuning == "sanfen":
        from instruments.tuning import parse_tuning

        pitch_hz = parse_tuning(args.tuning, args.huangzhong_hz).hz
    notes = audition_notes(args.name, args.huangzhong_hz, bell_interval=args.bell_interval,
                           pitch_hz=pitch_hz)
    report = write_audio(args.output, notes)
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
    p.set_defaults(func=cmd_render)


def cmd_render(args: argparse.Namespace) -> int:
    from sequencer.render import render_fluidsynth, render_timeline

    rite, timeline = _load_timeline(args)
    if args.engine == "fluidsynth":
        if args.stems:
            raise UserError("--stems needs the built-in engine (FluidSynth renders one mix)")
        report = render_fluidsynth(timeline, args.output, args.soundfont, rite.title)
        _out(f"wrote {report.path}: {rite.title} through FluidSynth ({report.soundfont}), "
             f"{_clock(report.duration_s)}, {report.realtime_factor:.1f}× real time")
        return EXIT_OK
    progress = _progress_bar(f"render {rite.id}") if sys.stderr.isatty() else None
    report = render_timeline(timeline, args.output, stems_dir=args.stems,
                             bell_interval=args.bell_interval, progress=progress)
    if progress is not None:
        _err("")
    stems = f", {len(report.stems)} stems in {args.stems}" if report.stems else ""
    _out(f"wrote {report.path}: {rite.title}, {len(rite.cues)} cues, {report.notes} notes, "
         f"{_clock(report.duration_s)}, peak {report.peak:.3f}, "
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
    from sequencer.timebase import seconds
    from sequencer.timeline_plot import plot_timeline

    picture_format(args.output)  # a bad extension fails before any work
    rite, timeline = _load_timeline(args)
    with _writing(args.output):
        problems = plot_timeline(rite, timeline, args.output)
    _warn(problems)
    _out(f"wrote {args.output}: {rite.title}, {len(timeline.spans)} cues, "
         f"{len(timeline.notes)} notes, {_clock(float(seconds(timeline.end)))}")
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
             f"  {mark:<2}  {d.reason}")
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
        "「不鼓不釋」, tallied live), q quit. --auto runs every cue without an operator and "
        "exits 0 at the end.",
    )
    p.add_argument("rite", metavar="RITE|FILE")
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
    _add_settings(p)
    p.set_defaults(func=cmd_live)


class _Terminated(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


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
    if not (args.auto or interactive or args.control or args.midi_in or args.web):
        raise UserError("the live console needs a terminal; use --auto to run headless, or "
                        "--control/--midi-in/--web to be operated remotely")

    def on_signal(signum: int, frame: object) -> None:
        raise _Terminated(signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    player = Player(rite, settings, args.output, auto=args.auto, log_path=args.log,
                    clock_out=args.clock_out)
    try:
        with player:
            if args.control:
                host, port = start_osc(player, args.control)
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
        return 128 + exc.signum
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    if args.auto:
        _out(f"played {rite.title}: {len(rite.cues)} cues" +
             (f"; log {args.log}" if args.log else ""))
    return EXIT_OK


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


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="yuezheng",
        description="樂正 — cue, render, score and check the music of the Zhou rites "
        "(鄉飲酒禮, 鄉射禮, 燕禮, 大射).",
        epilog="Exit codes: 0 success, 2 bad input or usage, 1 anything else "
        "(`check` also uses 4: a tempo violation).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for register in _COMMANDS:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``yuezheng`` script."""
    try:
        parser = _build_parser()
        args = parser.parse_args(argv)
        return int(args.func(args))
    except UserError as exc:
        _err(f"yuezheng: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _err("yuezheng: interrupted")
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # the last line of defence: no traceback for users
        _err(f"yuezheng: internal error: {type(exc).__name__}: {exc}")
        if os.environ.get("YUEZHENG_DEBUG"):
            raise
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())

"""yuezheng command line: it parses, calls the library and prints — nothing else, and nothing
below it prints.

Each command is declared once, where it is run: ``@command(NAME, HELP, examples=…)`` on the
function that adds its arguments, followed by ``cmd_<name>(args) -> int``, which calls the
library and prints the lines it returns.  Every choice and default an argument offers is
imported from the module that owns it (tests/test_cli_args.py holds them equal).  Library errors
that are the user's to fix are ``UserError`` and end in exit code 2 with a one-paragraph message
and no traceback; anything else is exit 1.  Heavy libraries (pyo, music21, numpy-heavy modules)
are imported inside the commands that need them, so that ``yuezheng --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cues.errors import UserError
from cues.text import clock as _clock

if TYPE_CHECKING:
    from cues.model import Rite
    from sequencer.timeline.groups import NoteSelection
    from sequencer.timeline.settings import CompileSettings

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_TEMPO_VIOLATION = 4  # `check`: a block of 節 or onsets does not hold
PROG = "yuezheng"
HELP_WIDTH = 90


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so that main() owns the exit code."""

    def error(self, message: str) -> None:  # type: ignore[override]  # raises, never returns
        where = self.prog.removeprefix(PROG).strip()  # main() says "yuezheng: " once
        raise UserError(f"{where + ': ' if where else ''}{message}\n"
                        f"{self.format_usage().rstrip()}")


# ── printing ────────────────────────────────────────────────────────────────────────────────

# control characters but the newline, and the bidi overrides: a sheet's text printed as is could
# drive the terminal (ANSI escapes in a title) or reorder what it shows
_CONTROL_RE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with its control characters written as escapes (ESC as ``\\x1b``)."""
    return _CONTROL_RE.sub(lambda m: repr(m.group())[1:-1], text)


def _out(text: str = "") -> None:
    sys.stdout.write(printable(text) + "\n")


def _lines(lines: Iterable[str]) -> None:
    for line in lines:
        _out(line)


def _table(rows: list[dict[str, Any]], lines: Callable[[list[dict[str, Any]]], list[str]],
           as_json: bool) -> None:
    """A listing: its rows as JSON, or as the lines of its table."""
    if as_json:
        _print_json(rows)
    else:
        _lines(lines(rows))


def _err(text: str) -> None:
    sys.stderr.write(printable(text.rstrip("\n")) + "\n")


def _say(text: str) -> None:
    """A message of the program's own while it works (standard error)."""
    _err(f"{PROG}: {text}")


def _warn(problems: Sequence[str]) -> None:
    for problem in problems:
        _say(f"warning: {problem}")


def _err_notes(exc: BaseException) -> None:
    """The notes an exception gathered on its way (e.g. "OUT not written; the old file is
    untouched")."""
    for note in getattr(exc, "__notes__", ()):
        _say(note)


def _print_json(obj: object) -> None:
    """JSON escapes control characters itself; the strings stay the sheet's, exactly."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


@contextmanager
def _writing(path: str) -> Iterator[None]:
    """A failure to write ``path`` becomes the user's error (a full disk, a missing folder);
    SIGTERM and SIGHUP end the work as Ctrl-C does, removing every temporary file
    (``instruments.files.atomic``)."""
    from instruments.files.atomic import interrupt_on_ending

    try:
        with interrupt_on_ending():
            yield
    except OSError as exc:
        error = UserError(f"cannot write {path}: {exc.strerror or exc}")
        for note in getattr(exc, "__notes__", ()):  # what was left as it was
            error.add_note(note)
        raise error from None


def _wrote(path: object, text: str) -> None:
    """"wrote PATH: TEXT" — on standard error when the file went to standard output (``-o -``)."""
    from instruments.files.targets import STDOUT

    if str(path) == STDOUT:
        _err(f"wrote standard output: {text}")
    else:
        _out(f"wrote {path}: {text}")


# ── the commands, each declared where it runs ───────────────────────────────────────────────

Register = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class _Command:
    name: str
    help: str  # the one line `yuezheng --help` shows
    description: str  # more, under it in the command's own --help
    examples: tuple[str, ...]  # the epilog (tests/test_help.py parses each)
    register: Register


_COMMANDS: list[_Command] = []


def command(name: str, help: str, *, examples: Sequence[str],
            description: str = "") -> Callable[[Register], Register]:
    """Decorator: the function that adds command ``name``'s arguments (and sets its ``func``)."""
    def add(register: Register) -> Register:
        _COMMANDS.append(_Command(name, help, description, tuple(examples), register))
        return register
    return add


# — arguments several commands share —

_VARIANT_HELP = "choose a variant of the rite (repeatable); `show` lists them"

# The timeline's settings on the command line: flag → CompileSettings field. The parser declares
# these flags from this map, and an error in a value names the flag it came by.
SETTING_FLAGS: dict[str, str] = {
    "--tempo": "tempo_bpm", "--jie-seconds": "jie_seconds",
    "--lost-zhong-seconds": "lost_zhong_seconds", "--go-gap": "go_gap_s",
    "--huangzhong": "huangzhong_hz", "--tuning": "tuning", "--drum-pattern": "drum_pattern",
    "--drum-reading": "drum_reading", "--release-rule": "release_rule",
    "--humanize": "humanize_ms",
}
FLAG_OF = {field: flag for flag, field in SETTING_FLAGS.items()}


def _add_variant(p: argparse.ArgumentParser | argparse._ArgumentGroup,
                 text: str = _VARIANT_HELP) -> None:
    """--variant V and --reading ID=VALUE (repeatable): the variants of the rite to play and the
    values of its readings; ``text`` is the help of --variant."""
    p.add_argument("--variant", action="append", default=[], metavar="V", help=text)
    p.add_argument("--reading", action="append", default=[], metavar="ID=VALUE",
                   help="choose the value of one of the rite's readings (repeatable); `show` "
                   "lists them with the passage behind each value")


def _add_tuning(p: argparse.ArgumentParser | argparse._ArgumentGroup, *,
                timeline: bool = True) -> None:
    """--huangzhong HZ and --tuning: the pitch of 黃鍾 and the tuning system.

    A timeline command (``timeline``): both default to None, so that the sheet's [settings]
    (else the compiler's defaults) decide, and the compiler reads the text as it reads the
    sheet's; a command without a timeline gets the compiler's default tuning and 黃鍾 as a
    number, so that every command defaults to the same tuning.
    """
    from instruments.tuning import DEFAULT_HUANGZHONG_HZ, TUNING_SYSTEMS
    from sequencer.timeline.settings import CompileSettings

    p.add_argument("--huangzhong", dest="huangzhong_hz", type=str if timeline else float,
                   metavar="HZ", default=None if timeline else CompileSettings.huangzhong_hz,
                   help=f"frequency of 黃鍾 in Hz (default {DEFAULT_HUANGZHONG_HZ:.2f} = C4: the "
                   "sources give none)")
    p.add_argument("--tuning", choices=TUNING_SYSTEMS,
                   default=None if timeline else CompileSettings.tuning,
                   help="sanfen = 三分損益 (the default of every command), equal = equal "
                   "temperament")


def _add_midi_tuning(p: argparse.ArgumentParser) -> None:
    """--midi-tuning mts|bend: how MIDI out carries a pitch between the keys."""
    from instruments.midi import DEFAULT_MIDI_TUNING, MIDI_TUNINGS

    p.add_argument("--midi-tuning", dest="midi_tuning", choices=MIDI_TUNINGS,
                   default=DEFAULT_MIDI_TUNING,
                   help="how a pitch between the keys (三分損益) goes out: mts (default: the "
                   "MIDI Tuning Standard, each key its own pitch; FluidSynth, TiMidity++ read "
                   "it) or bend (a channel pitch bend before each note, for synths that read "
                   "no MTS: it retunes the notes still ringing on the channel)")


def _add_bell_interval(p: argparse.ArgumentParser) -> None:
    """--bell-interval: the 側鼓音 of the 編鐘 above its 正鼓音."""
    from instruments.voices.models import BELL_INTERVALS

    p.add_argument("--bell-interval", choices=tuple(BELL_INTERVALS), default="minor",
                   help="編鐘: 側鼓音 a minor (default) or major third above the 正鼓音")


def _add_settings(p: argparse.ArgumentParser) -> None:
    """The variants and the compiler settings every timeline command accepts."""
    from sequencer.timeline import drums
    from sequencer.timeline.settings import RELEASE_RULES, CompileSettings

    g = p.add_argument_group("settings (override the sheet's [settings])")
    _add_variant(g)
    flag = FLAG_OF
    g.add_argument(flag["tempo_bpm"], dest="tempo_bpm", metavar="BPM",
                   help=f"sung syllables a minute (default {CompileSettings.tempo_bpm})")
    g.add_argument(flag["jie_seconds"], dest="jie_seconds", metavar="S",
                   help="length of one 節 of a 射節 (default: one 終 of its song)")
    g.add_argument(flag["lost_zhong_seconds"], dest="lost_zhong_seconds", metavar="S",
                   help="length of one 終 of a piece whose music is lost (default "
                   f"{CompileSettings.lost_zhong_seconds})")
    g.add_argument(flag["go_gap_s"], dest="go_gap_s", metavar="S",
                   help="offline: seconds between a cue's end and the next operator GO "
                        f"(default {CompileSettings.go_gap_s})")
    _add_tuning(g)
    g.add_argument(flag["drum_pattern"], dest="drum_pattern", choices=drums.PATTERNS,
                   help=f"射節 strokes: {drums.DEFAULT_PATTERN} (default) or a 投壺 pattern "
                   "(魯鼓, 薛鼓)")
    g.add_argument(flag["drum_reading"], dest="drum_reading", choices=drums.READINGS,
                   help=f"reading of 投壺 block 1's labels (default {drums.DEFAULT_READING})")
    g.add_argument(flag["release_rule"], dest="release_rule", choices=RELEASE_RULES,
                   help=f"when a release accords with the drum (default "
                        f"{CompileSettings.release_rule}: 上射 on the 節, 下射 half a 節 later)")
    g.add_argument(flag["humanize_ms"], dest="humanize_ms", metavar="MS",
                   help="the drummers' timing error, standard deviation in ms (default 0: every "
                        "stroke on the tick; a drummer to a metronome: 10–20)")


def _add_piece_target(p: argparse.ArgumentParser) -> None:
    """RITE|FILE|PIECE and --ensemble: a rite, a sheet, or one piece played by an ensemble."""
    from cues.builtin import DEFAULT_ENSEMBLE, ENSEMBLES, ensemble_name

    p.add_argument("rite", metavar="RITE|FILE|PIECE",
                   help="a built-in rite, a .toml sheet, or a piece (`pieces` lists them)")
    p.add_argument("--ensemble", choices=tuple(ENSEMBLES), type=ensemble_name, metavar="NAME",
                   help="a piece's players (default " + DEFAULT_ENSEMBLE + "): " + "; ".join(
                       f"{name} = {what}" for name, (_, _, what) in ENSEMBLES.items()))


def _add_range(p: argparse.ArgumentParser, which: str = "") -> None:
    """--from CUE and --until CUE."""
    p.add_argument("--from", dest="from_cue", metavar="CUE",
                   help=f"{which}start at this cue" if not which else f"{which}the file "
                   "starts at this cue")
    p.add_argument("--until", dest="until_cue", metavar="CUE",
                   help=f"{which}end with this cue" if not which else f"{which}the file "
                   "ends with this cue")


def _add_timeline_args(p: argparse.ArgumentParser, output: str) -> None:
    """RITE|FILE|PIECE, -o OUTPUT, --from/--until and the settings: what every timeline view
    takes."""
    _add_piece_target(p)
    p.add_argument("-o", "--output", required=True, metavar=output)
    _add_range(p)
    _add_groups(p)
    _add_settings(p)


def _add_groups(p: argparse.ArgumentParser) -> None:
    """--only GROUP… and --except GROUP… (sequencer.timeline.groups)."""
    g = p.add_argument_group("instrument groups (a side 東 西 中 堂上 堂下, an 八音 family, an "
                             "instrument, a layout position; `show` lists them)")
    g.add_argument("--only", action="extend", nargs="+", default=[], metavar="GROUP",
                   help="play only these groups (names, or joined by commas)")
    g.add_argument("--except", dest="excluded", action="extend", nargs="+", default=[],
                   metavar="GROUP", help="leave these groups out")


def _add_room_args(p: argparse.ArgumentParser, *, loudness: bool) -> None:
    """--room (and for render --loudness, --bell-detune): how the built-in voices are heard."""
    from instruments.mix.room import DEFAULT_ROOM, ROOMS

    p.add_argument("--room", choices=ROOMS, default=DEFAULT_ROOM,
                   help="courtyard: reflections from the hall and the side walls, a short "
                   "tail, delays by distance; dry: pan and distance only (default "
                   f"{DEFAULT_ROOM})")
    if loudness:
        from instruments.voices.models import BELL_DETUNES
        from sequencer.outputs.render import DEFAULT_LOUDNESS_LUFS

        p.add_argument("--loudness", type=float, metavar="LUFS", default=DEFAULT_LOUDNESS_LUFS,
                       help="normalise the render to this integrated loudness (BS.1770; "
                       f"default {DEFAULT_LOUDNESS_LUFS:g})")
        p.add_argument("--bell-detune", choices=BELL_DETUNES, default=BELL_DETUNES[0],
                       help="each bell's fixed tuning error: none (default), up to ±5 cents, "
                       "or an excavated set's ±25 cents")


# — what the shared arguments select —


def _setting_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The settings given on the command line, by field (None: not given)."""
    return {field: getattr(args, field, None) for field in SETTING_FLAGS.values()}


def _load(args: argparse.Namespace, from_cue: str | None = None) -> tuple[Rite, CompileSettings]:
    """The rite named on the command line, with its variants, range and compiled settings."""
    from sequencer.timeline.selection import selected_rite

    rite, settings = selected_rite(args.rite, variants=getattr(args, "variant", ()) or (),
                                   readings=getattr(args, "reading", ()) or (),
                                   from_cue=from_cue or getattr(args, "from_cue", None),
                                   until_cue=getattr(args, "until_cue", None),
                                   overrides=_setting_overrides(args), flags=FLAG_OF,
                                   ensemble=getattr(args, "ensemble", None))
    return rite, settings


def _selection(args: argparse.Namespace, rite: Rite) -> NoteSelection | None:
    """The note selection --only/--except name (None: the whole ensemble)."""
    from sequencer.timeline.groups import note_selection

    return note_selection(rite, getattr(args, "only", ()), getattr(args, "excluded", ()))


def _provenance(args: argparse.Namespace, command: str, rite: Rite, part: Any,
                *options: str) -> Any:
    """What the file a command writes was made from (sequencer.outputs.provenance)."""
    from sequencer.outputs.provenance import make_provenance

    return make_provenance(
        command, args.rite, rite, part, from_cue=args.from_cue, until_cue=args.until_cue,
        readings=args.reading, overrides=_setting_overrides(args), flags=FLAG_OF,
        ensemble=args.ensemble, only=args.only, excluded=args.excluded, options=options)


def _load_part(args: argparse.Namespace) -> tuple[Rite, Any, Any]:
    """(rite, its whole timeline, the part --only/--except select: the whole without them)."""
    from sequencer.timeline.selection import compiled_part

    rite, settings = _load(args)
    whole, part, warnings = compiled_part(rite, settings, _selection(args, rite))
    _warn(warnings)
    return rite, whole, part


# — rites, show, validate, new, pieces: the rites as data —


@command("rites", "list the built-in rites", examples=("yuezheng rites", "yuezheng rites --json"))
def _register_rites(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_rites)


def cmd_rites(args: argparse.Namespace) -> int:
    from sequencer.listings import rites_lines, rites_rows

    _table(rites_rows(), rites_lines, args.json)
    return EXIT_OK


@command("show", "show a rite's cues (a table, or the JSON contract)",
         examples=("yuezheng show xiang-she", "yuezheng show 燕禮 --variant she --json"))
def _register_show(p: argparse.ArgumentParser) -> None:
    p.add_argument("rite", metavar="RITE|FILE", help="a built-in rite (or alias) or a .toml sheet")
    p.add_argument("--json", action="store_true", help="print the JSON contract")
    _add_groups(p)
    _add_settings(p)
    p.set_defaults(func=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    from sequencer.timeline.groups import groups_json
    from sequencer.timeline.rite_json import rite_json, rite_length_s
    from sequencer.timeline.rite_text import show_lines

    rite, _, timeline = _load_part(args)
    data = rite_json(rite, timeline)
    data["groups"] = groups_json(rite, timeline)
    if args.json:
        _print_json(data)
    else:
        _lines(show_lines(rite, data, rite_length_s(timeline)))
    return EXIT_OK


@command("validate", "check cue sheets and report every problem",
         examples=("yuezheng validate my-rite.toml",))
def _register_validate(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE")
    p.set_defaults(func=cmd_validate)


def cmd_validate(args: argparse.Namespace) -> int:
    from cues.sheet.loader import load_sheet
    from sequencer.timeline.sheet_check import check_sheet, sheet_warnings

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


@command("new", "start your own cue sheet from a built-in rite",
         description="Write a built-in rite as an editable cue sheet (its TOML, headed by where "
         "it came from). Example: yuezheng new my-she.toml --from xiang-she",
         examples=("yuezheng new my-she.toml --from xiang-she   # then edit it, and: "
                   "yuezheng render my-she.toml -o my-she.wav",))
def _register_new(p: argparse.ArgumentParser) -> None:
    p.add_argument("sheet", metavar="SHEET.toml", help="the sheet to write")
    p.add_argument("--from", dest="from_rite", required=True, metavar="RITE",
                   help="the built-in rite to start from (name or alias; `rites` lists them)")
    p.add_argument("--force", action="store_true", help="replace SHEET.toml if it exists")
    p.set_defaults(func=cmd_new)


def cmd_new(args: argparse.Namespace) -> int:
    from cues.sheet.loader import new_sheet
    from instruments.files.atomic import write_text_atomically

    target, text, rite = new_sheet(args.sheet, args.from_rite, force=args.force)
    with _writing(args.sheet):
        write_text_atomically(target, text)
    _wrote(args.sheet, f"{rite.title} from the built-in {rite.id}, {len(rite.cues)} cues; "
         f"edit it, then `yuezheng validate {args.sheet}`")
    return EXIT_OK


@command("pieces", "list the repertoire: every piece the rites name",
         examples=("yuezheng pieces", "yuezheng pieces --json"))
def _register_pieces(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_pieces)


def cmd_pieces(args: argparse.Namespace) -> int:
    from sequencer.listings import pieces_lines, pieces_rows

    _table(pieces_rows(), pieces_lines, args.json)
    return EXIT_OK


@command("source", "show the passage a cue, piece, position, variant or reading cites, in its "
         "context",
         description="The work, what the quote is (經, 記, 注, 疏, a later commentary or a modern "
         "note: as the file marks it, else as cited), the file and line, the edition, and the "
         "lines around the quote with the layer of each; the quote is marked ⟦…⟧.",
         examples=("yuezheng source 騶虞", "yuezheng source she-jie --rite xiang-she",
                   "yuezheng source 笙 --rite 鄉射禮   # a position of the layout"))
def _register_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="CUE|PIECE",
                   help="a piece, or a cue id, position, variant, reading or `layout` of a rite")
    p.add_argument("--rite", metavar="RITE|FILE",
                   help="the rite (built-in or a .toml sheet) whose cue is meant; without "
                        "it a piece's name means the piece")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_source)


def cmd_source(args: argparse.Namespace) -> int:
    from sequencer.citations import find_citations, source_json, source_lines

    found = find_citations(args.name, args.rite)
    if args.json:
        _print_json(source_json(found))
    else:
        _lines(source_lines(found))
    return EXIT_OK


# — midi, render, score, audition, instruments: the rites as files —


@command("midi", "write a rite as a Standard MIDI File",
         examples=("yuezheng midi xiang-she -o xiang-she.mid",
                   "yuezheng midi yan -o she.mid --variant she --from she-jie --until she-jie"))
def _register_midi(p: argparse.ArgumentParser) -> None:
    _add_timeline_args(p, "OUT.mid")
    _add_midi_tuning(p)
    p.set_defaults(func=cmd_midi)


def cmd_midi(args: argparse.Namespace) -> int:
    from sequencer.outputs.smf import write_midi
    from sequencer.timeline.rite_json import rite_length_s

    rite, _, timeline = _load_part(args)
    provenance = _provenance(args, "midi", rite, timeline, "--midi-tuning", args.midi_tuning)
    with _writing(args.output):
        write_midi(timeline, args.output, title=rite.title, midi_tuning=args.midi_tuning,
                   provenance=provenance.text())
    jie = sum(1 for m in timeline.markers if m.kind == "jie")
    _wrote(args.output, f"{rite.title}, {len(rite.cues)} cues, {len(timeline.notes)} notes, "
         f"{jie} 節 markers, {_clock(rite_length_s(timeline))}")
    return EXIT_OK


@command("render", "render a rite to audio (built-in voices or FluidSynth)",
         examples=("yuezheng render xiang-she -o xiang-she.wav",
                   "yuezheng render guanju -o guanju.wav --ensemble sheng-ge",
                   "yuezheng render xiang-she -o x.wav --engine fluidsynth "
                   "--soundfont /usr/share/sounds/sf2/FluidR3_GM.sf2"))
def _register_render(p: argparse.ArgumentParser) -> None:
    from sequencer.outputs.render import ENGINES

    _add_timeline_args(p, "OUT.wav|.flac")
    p.add_argument("--stems", metavar="DIR", help="also write one file per instrument")
    p.add_argument("--engine", choices=ENGINES, default=ENGINES[0],
                   help="built-in voices (default) or FluidSynth with a SoundFont")
    p.add_argument("--soundfont", metavar="FILE.sf2", help="for --engine fluidsynth")
    _add_bell_interval(p)
    _add_room_args(p, loudness=True)
    p.set_defaults(func=cmd_render)


def cmd_render(args: argparse.Namespace) -> int:
    from sequencer.outputs.render import render_fluidsynth, render_timeline
    from sequencer.timeline.rite_json import rite_length_s

    rite, whole, timeline = _load_part(args)
    length = _clock(rite_length_s(timeline))
    if args.engine == "fluidsynth":
        if args.stems:
            raise UserError("--stems needs the built-in engine (FluidSynth renders one mix)")
        provenance = _provenance(args, "render", rite, timeline, "--engine", "fluidsynth",
                                 "--loudness", f"{args.loudness:g}")
        with _writing(args.output):
            fluid = render_fluidsynth(timeline, args.output, args.soundfont, rite.title,
                                      provenance=provenance, loudness=args.loudness)
        _wrote(fluid.path, f"{rite.title} through FluidSynth ({fluid.soundfont}), "
             f"{length}, {fluid.realtime_factor:.1f}× real time")
        return EXIT_OK
    terminal = sys.stderr.isatty()
    progress = (_progress_bar if terminal else _progress_lines)(f"render {rite.id}")
    provenance = _provenance(args, "render", rite, timeline, "--room", args.room,
                             "--loudness", f"{args.loudness:g}", "--bell-detune", args.bell_detune,
                             "--bell-interval", args.bell_interval)
    with _writing(args.output):
        report = render_timeline(timeline, args.output, stems_dir=args.stems,
                                 bell_interval=args.bell_interval, bell_detune=args.bell_detune,
                                 room=args.room, loudness=args.loudness, progress=progress,
                                 whole=None if whole is timeline else whole,
                                 provenance=provenance)
    if terminal:
        _err("")
    stems = f", {len(report.stems)} stems in {args.stems}" if report.stems else ""
    _wrote(report.path, f"{rite.title}, {len(rite.cues)} cues, {report.notes} notes, "
         f"{length}, peak {report.peak:.3f}, {report.realtime_factor:.1f}× real time{stems}")
    return EXIT_OK


def _progress_bar(label: str) -> Callable[[float, float], None]:
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


def _progress_lines(label: str) -> Callable[[float, float], None]:
    """Progress as a line on standard error at every tenth of a long render (not a terminal:
    a log keeps whole lines)."""
    shown = [0]

    def show(done: float, total: float) -> None:
        tenth = 0 if total < LONG_RENDER_S else int(10 * min(1.0, done / total))
        if tenth > shown[0]:
            shown[0] = tenth
            _err(f"{label}: {tenth * 10} % ({_clock(done)} of {_clock(total)})")
    return show


@command("score", "write the score of a 詩譜 piece, or of the sung pieces of a rite",
         description="Write a score (MusicXML, compressed .mxl, or PDF through LilyPond) of a "
         "piece of the 風雅十二詩譜 (every stanza: voice with syllable, 律 and 工尺 under each "
         "note, and the 瑟 an octave below, as the MIDI and audio play it), or of the sung (歌) "
         "pieces of a rite in order with the cue ids as rehearsal marks. The 詩譜 notates no "
         "rhythm: every syllable is a quarter note. Lost melodies are never invented.",
         examples=("yuezheng score 關雎 -o guanju.pdf",
                   "yuezheng score xiang-yin-jiu -o xiang-yin-jiu.musicxml --tuning equal"))
def _register_score(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="PIECE|RITE",
                   help="a repertoire title (鹿鳴, 关雎, …) or a rite (name, alias or .toml path)")
    p.add_argument("-o", "--output", metavar="OUT", required=True,
                   help="OUT.musicxml, OUT.xml, OUT.mxl or OUT.pdf (PDF needs Debian lilypond)")
    _add_tuning(p, timeline=False)
    _add_variant(p, "rites only: select a variant reading (repeatable)")
    p.set_defaults(func=cmd_score)


def _tuning(args: argparse.Namespace) -> Any:
    """The tuning --tuning and --huangzhong give a command without a timeline."""
    from instruments.tuning import parse_tuning

    try:
        return parse_tuning(args.tuning, args.huangzhong_hz)
    except UserError as exc:
        raise UserError(f"--huangzhong {args.huangzhong_hz:g}: {exc}") from None


def cmd_score(args: argparse.Namespace) -> int:
    from instruments.notation.score import piece_score, rite_score
    from instruments.notation.score_files import write_score
    from sequencer.timeline.selection import piece_or_rite

    tuning = _tuning(args)
    title, rite = piece_or_rite(args.target, args.variant, args.reading)
    score = rite_score(rite, tuning) if rite is not None else piece_score(str(title), tuning)
    what = f"《{title}》" if rite is None else rite.title
    with _writing(args.output):
        out = write_score(score, args.output)
    notes = len(score.parts[0].recurse().notes) if score.parts else 0
    _wrote(out, f"{what}, {notes} sung notes, {tuning.describe()}")
    return EXIT_OK


@command("instruments",
         "list the instrument catalog: 八音, GM fallback and the synthesis voice model",
         description="List every instrument of the catalog with its 八音 class, aliases, the "
         "General MIDI fallback for external synths, and the model of its built-in voice.",
         examples=("yuezheng instruments",))
def _register_instruments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON array")
    p.set_defaults(func=cmd_instruments)


def cmd_instruments(args: argparse.Namespace) -> int:
    from sequencer.listings import instruments_lines, instruments_rows

    _table(instruments_rows(), instruments_lines, args.json)
    return EXIT_OK


@command("audition", "render a short demonstration of one instrument's voice to an audio file",
         description="Render a few seconds of one instrument: the pentatonic 宮 商 角 徵 羽 清宮 "
         "on 黃鍾 for pitched instruments, a few strokes for drums. 48 kHz stereo, 24-bit WAV or "
         "FLAC by the output's extension.",
         examples=("yuezheng audition 編鐘 -o bianzhong.wav",
                   "yuezheng audition 瑟 -o se.flac --tuning equal"))
def _register_audition(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="an instrument of `yuezheng instruments`")
    p.add_argument("-o", "--output", metavar="OUT", required=True, help="OUT.wav or OUT.flac")
    _add_tuning(p, timeline=False)
    _add_bell_interval(p)
    _add_room_args(p, loudness=False)
    p.set_defaults(func=cmd_audition)


def cmd_audition(args: argparse.Namespace) -> int:
    from instruments.mix.audition import audition_notes
    from instruments.mix.mixer import Mastering
    from instruments.mix.render_files import write_audio

    pitch_hz = _tuning(args).hz if args.tuning == "sanfen" else None
    notes = audition_notes(args.name, args.huangzhong_hz, bell_interval=args.bell_interval,
                           pitch_hz=pitch_hz)
    from sequencer.outputs.provenance import tool_provenance

    provenance = tool_provenance("audition", f"audition {notes[0].instrument}", (
        args.name, "--tuning", args.tuning, "--huangzhong", str(args.huangzhong_hz),
        "--bell-interval", args.bell_interval, "--room", args.room))
    with _writing(args.output):
        report = write_audio(args.output, notes, how=Mastering(room=args.room),
                             tags=provenance.tags())
    _wrote(report.path, f"{notes[0].instrument}, {report.notes} notes, "
         f"{report.duration_s:.2f} s, peak {report.peak:.3f}, "
         f"{report.realtime_factor:.1f}× real time")
    return EXIT_OK


# — check, judge: the proofs —


@command("check",
         "prove the timing holds (「間若一」): test 節 or onsets as an equal-interval grid",
         description="Test a MIDI file, an audio recording or a live show log as equal-interval "
         "grids. MIDI: each block of '節 k/N' markers (a block starts where k goes back to 1); "
         "without markers, the note_on onsets merged within 30 ms. Audio (.wav .flac .aif .aiff "
         ".ogg): the detected onsets. Log (.jsonl .ndjson): the {\"event\": \"jie\"} records of "
         "the live player. With --rite (and the settings and range the file was made with), an "
         "audio or MIDI file is checked only in the rite's 射節, each against the stroke grid "
         "of its timeline, and its offset from the timeline is reported. One line per block; "
         "--verbose for each violation. Exit codes: 0 every block holds, 4 a block fails, "
         "2 bad input. Example: yuezheng check xiang-she.wav --rite xiang-she",
         examples=("yuezheng check xiang-she.mid", "yuezheng check show.jsonl --json",
                   "yuezheng check xiang-she.wav --rite xiang-she"))
def _register_check(p: argparse.ArgumentParser) -> None:
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
    _add_range(p, "with --rite: ")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print each violation and note, not only one line per block")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    _add_settings(p)
    p.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    from cues.limits import regular_file_size

    # a device, a FIFO or a folder is refused before the audio libraries are even loaded
    regular_file_size(args.file, "a .mid, .wav, .flac or .jsonl file")
    from sequencer.check.made_with import CheckRequest, check_request
    from sequencer.check.report_text import report_lines

    report = check_request(CheckRequest(
        args.file, rite=args.rite, from_cue=args.from_cue, until_cue=args.until_cue,
        variants=tuple(args.variant), readings=tuple(args.reading),
        overrides=_setting_overrides(args), flags=FLAG_OF, channel=args.channel,
        tolerance_ms=args.tolerance_ms))
    if args.json:
        _print_json(report.to_json())
    else:
        _lines(report_lines(report, args.rite, verbose=args.verbose))
    return EXIT_OK if report.ok else EXIT_TEMPO_VIOLATION


@command("judge", "「不鼓不釋」: tally the archers' hits by the drum rule",
         examples=("yuezheng judge xiang-she --releases releases.csv   "
                   "# rows: time_s,side,hit e.g. 4.0,右,1",))
def _register_judge(p: argparse.ArgumentParser) -> None:
    from sequencer.judge.tally import DEFAULT_TOLERANCE_MS

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
    from sequencer.judge.report import shooting_cue, tally_lines
    from sequencer.judge.tally import read_releases_csv, shooting_setup
    from sequencer.timeline.compiler import compile_rite

    if not args.tolerance_ms >= 0:
        raise UserError(f"--tolerance-ms {args.tolerance_ms}: expected 0 or more")
    rite, settings = _load(args)
    cue = shooting_cue(rite, args.cue)
    releases = read_releases_csv(args.releases)
    setup = shooting_setup(cue, compile_rite(rite, settings).span(cue.id))
    tally = setup.judge(releases, args.tolerance_ms / 1000.0)
    if args.json:
        _print_json({**tally.to_json(), "announcement": tally.announcement(), "cue": cue.id})
    else:
        _lines(tally_lines(rite, cue, setup, tally, args.tolerance_ms))
    return EXIT_OK


# — plot, layout: the pictures —


@command("plot", "draw a rite's timeline (PNG or SVG)",
         examples=("yuezheng plot xiang-she -o xiang-she.png",))
def _register_plot(p: argparse.ArgumentParser) -> None:
    _add_timeline_args(p, "OUT.png|OUT.svg")
    p.set_defaults(func=cmd_plot)


def cmd_plot(args: argparse.Namespace) -> int:
    from sequencer.pictures.common import picture_format
    from sequencer.pictures.timeline import plot_timeline
    from sequencer.timeline.rite_json import rite_length_s

    picture_format(args.output)  # a bad extension fails before any work
    rite, _, timeline = _load_part(args)
    with _writing(args.output):
        problems = plot_timeline(rite, timeline, args.output)
    _warn(problems)
    _wrote(args.output, f"{rite.title}, {len(timeline.spans)} cues, "
         f"{len(timeline.notes)} notes, {_clock(rite_length_s(timeline))}")
    return EXIT_OK


@command("layout", "draw a rite's hang from above (PNG or SVG)",
         examples=("yuezheng layout da-she -o da-she.svg",))
def _register_layout(p: argparse.ArgumentParser) -> None:
    p.add_argument("rite", metavar="RITE|FILE")
    p.add_argument("-o", "--output", required=True, metavar="OUT.png|OUT.svg")
    _add_variant(p)
    p.set_defaults(func=cmd_layout)


def cmd_layout(args: argparse.Namespace) -> int:
    from sequencer.pictures.common import picture_format
    from sequencer.pictures.layout import plot_layout

    picture_format(args.output)
    rite, _ = _load(args)
    with _writing(args.output):
        problems = plot_layout(rite, args.output)
    _warn(problems)
    moves = sum(len(c.moves) for c in rite.cues)
    _wrote(args.output, f"{rite.title}, {rite.hang}, {len(rite.layout)} positions, "
         f"{moves} moves")
    return EXIT_OK


# — ports, live: the show —


@command("ports", "list the MIDI inputs a live output can connect to",
         description="List the MIDI inputs that `jack:PORT` / `alsa:PORT` outputs can connect to "
         "(PORT may be any part of a name shown here).",
         examples=("yuezheng ports", "yuezheng ports --api alsa"))
def _register_ports(p: argparse.ArgumentParser) -> None:
    from instruments.ports.rtmidi import API_NAMES

    p.add_argument("--api", choices=API_NAMES, default=API_NAMES[0],
                   help=f"MIDI API to list (default: {API_NAMES[0]})")
    p.add_argument("--json", action="store_true", help="print a JSON list of names")
    p.set_defaults(func=cmd_ports)


def cmd_ports(args: argparse.Namespace) -> int:
    from instruments.ports import list_ports

    names = list_ports(args.api)
    if args.json:
        _print_json(names)
        return EXIT_OK
    _lines(names)
    if not names:
        _say(f"no {args.api} MIDI inputs")
    return EXIT_OK


@command("reaction", "measure the judge's delay from a sight to a key, for live --mark-delay",
         description="A block appears on the terminal after an unforeseeable wait; press space "
         "(or 1-4) the moment it does. After --trials presses the median delay is printed: "
         "pass it to `live --mark-delay` so that each release the judge marks is judged at "
         "the release, not at the key. A press before the block, or within 0.1 s of it (a "
         "guess), is not counted and that trial is done again.",
         examples=("yuezheng reaction", "yuezheng reaction --trials 20"))
def _register_reaction(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trials", type=int, default=10, metavar="N",
                   help="presses to measure (default 10; 1-100)")
    p.set_defaults(func=cmd_reaction)


def cmd_reaction(args: argparse.Namespace) -> int:
    from sequencer.live.screens.reaction import measure

    if not 1 <= args.trials <= 100:
        raise UserError(f"--trials {args.trials}: expected 1 to 100")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UserError("reaction needs a terminal to show the block and read the keys")
    _lines(measure(args.trials).report())
    return EXIT_OK


@command("live", "run a rite live: cue by cue to a MIDI output, from the console or headless",
         description="Play a rite live to a MIDI port. The console (curses) shows the cue list, "
         "the standby cue's ritual moment, the 節 counter and the keys: space GO, s stop "
         "(樂闋: ends a looping cue at its next rest point; twice: at once), h hold, r resume, "
         "n/b skip/back, p panic (twice: CC 123/120 on every channel), +/- nudge a 射節 from its "
         "next 耦 cycle, ,/. the 無算樂's next piece, 1/2/3/4 the judge marks a release (右 hit, "
         "右 miss, 左 hit, 左 miss: 「不鼓不釋」 at the press less --mark-delay, tallied live), "
         "q quit (twice while music sounds). Every command says what it did, or why it did "
         "nothing. The console fits the terminal (80x24 shows everything; 40x12 at least). "
         "A GO within --go-guard "
         "of the last is ignored; a GO while a follow cue waits starts nothing; a GO while music "
         "sounds asks for a second GO, which cuts it (--go-cuts: at once). --auto runs every cue "
         "without an operator. At the end a summary says what was not delivered: the output "
         "lost, messages late; the exit code is then 1.",
         examples=("yuezheng live xiang-she --output jack:fluidsynth",
                   "yuezheng live xiang-she --output pyo --auto --log show.jsonl"))
def _register_live(p: argparse.ArgumentParser) -> None:
    from sequencer.live.control.midi_in import DEFAULT_GO, DEFAULT_PANIC, DEFAULT_STOP
    from sequencer.live.go_safety import DEFAULT_GO_GUARD_S
    from sequencer.live.player.judging import DEFAULT_MARK_DELAY_S
    from sequencer.live.screens.web.guard import MIN_TOKEN_CHARS
    from sequencer.outputs.render import DEFAULT_LOUDNESS_LUFS

    _add_piece_target(p)
    p.add_argument("--output", required=True, metavar="SPEC",
                   help="jack:PORT, jack-virtual:NAME, alsa:PORT, virtual:NAME, pyo (the "
                   "built-in voices through pyo's audio server: pyo:jack, pyo:portaudio, "
                   "pyo:jack:CLIENT), or memory:[PATH] (no hardware: the messages are "
                   "recorded, to PATH as JSON lines)")
    p.add_argument("--auto", action="store_true",
                   help="headless: GO cues start the go gap after the previous cue ends; cues "
                        "that run until stopped play one pass")
    _add_range(p)
    p.add_argument("--control", metavar="URL",
                   help="OSC remote control, e.g. osc://127.0.0.1:53000 (/go /stop /panic /hold "
                        "/resume /cue/ID/start, /release SIDE HIT; replies /reply/...)")
    p.add_argument("--remote-quit", dest="remote_quit", action="store_true",
                   help="let OSC /quit end the show (refused otherwise)")
    p.add_argument("--midi-in", dest="midi_in", metavar="SPEC",
                   help="MIDI input for GO/stop/panic and MIDI Show Control (GO, STOP, RESUME)")
    for name, default in (("go", DEFAULT_GO), ("stop", DEFAULT_STOP), ("panic", DEFAULT_PANIC)):
        p.add_argument(f"--midi-{name}", default=default, metavar="note:N|cc:N",
                       help=f"the MIDI input's {'GO' if name == 'go' else name} "
                       f"(default {default})")
    p.add_argument("--clock-out", action="store_true",
                   help="send MIDI clock (24 ppqn at the rite's tempo, start/stop/continue)")
    p.add_argument("--loudness", type=float, metavar="LUFS", default=DEFAULT_LOUDNESS_LUFS,
                   help="the pyo output plays the show as loud as its render normalised to "
                   f"this integrated loudness (default {DEFAULT_LOUDNESS_LUFS:g}, render's)")
    _add_midi_tuning(p)
    p.add_argument("--log", metavar="FILE.jsonl", help="append the show log (JSON lines) here")
    p.add_argument("--resume", metavar="LOG", help="start again at the last cue LOG started")
    p.add_argument("--go-guard", dest="go_guard_s", type=float, default=DEFAULT_GO_GUARD_S,
                   metavar="S", help="the least time between two GOs; a GO sooner is ignored "
                   f"(default {DEFAULT_GO_GUARD_S:g})")
    p.add_argument("--mark-delay", dest="mark_delay_ms", type=float,
                   default=DEFAULT_MARK_DELAY_S * 1000, metavar="MS",
                   help="the judge's delay from an archer's release to the key (1-4, OSC "
                   "/release) that marks it, taken off each mark before it is judged (default "
                   f"{DEFAULT_MARK_DELAY_S * 1000:g}; `yuezheng reaction` measures yours)")
    p.add_argument("--go-cuts", action="store_true",
                   help="a GO while music sounds cuts it at once (default: GO again to confirm)")
    p.add_argument("--web", metavar="[ADDR:]PORT",
                   help="serve the performers' 節 display (/) and the operator remote "
                        "(/operator) on this port, loopback unless ADDR is given")
    p.add_argument("--web-token", metavar="TOKEN",
                   help="the token the operator page needs to give commands, at least "
                   f"{MIN_TOKEN_CHARS} characters (default: one of 128 bits is made and "
                   "printed at the start)")
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
    _add_hearing_args(p)
    _add_standby_args(p)
    _add_settings(p)
    p.set_defaults(func=cmd_live)


def _add_hearing_args(p: argparse.ArgumentParser) -> None:
    """``live``'s ears (docs/hearing.md)."""
    g = p.add_argument_group("the drum heard (docs/hearing.md)")
    g.add_argument("--hear", metavar="SPEC",
                   help="hear the drum: jack:PORT (a JACK audio output, e.g. "
                        "jack:system:capture_1), jack: (an input to connect yourself) or an "
                        "audio file played in from the show's start; each stroke is placed on "
                        "the 射節's grid (console, pages, log) and the judge uses it")
    g.add_argument("--hear-latency", dest="hear_latency_ms", type=float, default=0.0,
                   metavar="MS", help="the sound's way from the drum to the microphone, taken "
                   "off every stroke besides the input's own latency (about 3 ms a metre; "
                   "default 0)")
    g.add_argument("--follow", nargs="?", const="hold", choices=("hold", "continue"),
                   help="the drum leads: each 射節 keeps to the drummer's grid, placed at each "
                        "耦 cycle (needs --hear); when the drum stops the accompaniment holds "
                        "(default) or continues at the last 節")


def _add_standby_args(p: argparse.ArgumentParser) -> None:
    """``live``'s hot standby (docs/standby.md)."""
    from sequencer.live.standby.pair import (
        DEFAULT_HEARTBEAT_MS,
        DEFAULT_LEAD_MS,
        DEFAULT_TAKEOVER_MS,
        ROLES,
    )

    g = p.add_argument_group("hot standby (a main and a muted backup machine; docs/standby.md)")
    g.add_argument("--role", choices=ROLES,
                   help="main: mirror every action to the backup; backup: play muted, take over "
                        "when the main falls silent")
    g.add_argument("--peer", metavar="osc.udp://HOST:PORT", help="the other machine's --listen")
    g.add_argument("--listen", metavar="[ADDR:]PORT",
                   help="where this machine hears its peer (loopback unless ADDR is given; "
                        "default: loopback on the --peer port)")
    g.add_argument("--peer-key-file", metavar="FILE",
                   help="the shared key (else the environment variable YUEZHENG_PEER_KEY)")
    g.add_argument("--peer-lead", dest="peer_lead_ms", type=float, default=DEFAULT_LEAD_MS,
                   metavar="MS", help="both machines act this long after the main's action "
                   f"(default {DEFAULT_LEAD_MS:g})")
    g.add_argument("--heartbeat", dest="heartbeat_ms", type=float, default=DEFAULT_HEARTBEAT_MS,
                   metavar="MS", help=f"how often each side says it is alive (default "
                   f"{DEFAULT_HEARTBEAT_MS:g})")
    g.add_argument("--takeover", dest="takeover_ms", type=float, default=DEFAULT_TAKEOVER_MS,
                   metavar="MS", help="the backup takes over after this long without the main "
                   f"(default {DEFAULT_TAKEOVER_MS:g})")


def cmd_live(args: argparse.Namespace) -> int:
    from instruments.ports import parse_spec
    from sequencer.live.screens.player_adapter import screen_options
    from sequencer.live.show import (
        LiveOptions,
        StandbyRequest,
        checked_options,
        resume_cue,
        run_live,
        standby_request,
    )

    parse_spec(args.output)
    log_rite, from_cue = resume_cue(args.resume, args.from_cue)
    rite, settings = _load(args, from_cue=from_cue)
    if log_rite and log_rite != rite.id:
        raise UserError(f"--resume {args.resume}: the log is of rite {log_rite!r}, not {rite.id!r}")
    terminal = all(f is not None and f.isatty() for f in (sys.stdin, sys.stdout))  # (closed: None)
    if (args.plain and not args.auto and sys.stdin is None
            and not (args.control or args.midi_in or args.web)):
        raise UserError("--plain reads its commands from standard input, which is closed: give "
                        "it a terminal or a pipe, or use --auto, --control, --midi-in or --web")
    standby = None if args.role is None else standby_request(StandbyRequest(
        args.role, args.peer, args.listen, args.peer_key_file, args.peer_lead_ms,
        args.heartbeat_ms, args.takeover_ms))
    options = checked_options(LiveOptions(
        output=args.output, auto=args.auto,
        interactive=not args.auto and (terminal or args.plain), log_path=args.log,
        clock_out=args.clock_out, go_guard_s=args.go_guard_s, go_cuts=args.go_cuts,
        lead_s=args.peer_lead_ms / 1000, control=args.control, remote_quit=args.remote_quit,
        midi_in=args.midi_in, midi_triggers=(args.midi_go, args.midi_stop, args.midi_panic),
        screens=screen_options(args.web, args.web_token, args.web_token_file, args.speak,
                               args.plain),
        link="lead" if args.link else "follow" if args.link_follow else None,
        standby=standby, only=_selection(args, rite),
        resumed=(args.resume, from_cue) if args.resume and from_cue else None,
        mark_delay_ms=args.mark_delay_ms, midi_tuning=args.midi_tuning, hear=args.hear,
        hear_latency_ms=args.hear_latency_ms, follow=args.follow, loudness=args.loudness))
    if options.screens.token_made:
        _say(f"web operator token (made for this show, printed only here): "
             f"{options.screens.token}")
    outcome = run_live(rite, settings, options, say=_say, out=_out)
    _lines(outcome.report)
    for problem in outcome.problems:
        _say(problem)
    return outcome.code


# ── the parser and the entry point ──────────────────────────────────────────────────────────


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


def _build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or with ``only`` the arguments of that command alone
    declared (the others listed): a command's declarations import the modules that own its
    choices and defaults (numpy, scipy…), which ``yuezheng --help`` and another command's run
    need not wait for."""
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
    for c in _COMMANDS:
        body = "\n".join(textwrap.fill(part, HELP_WIDTH)
                         for part in c.description.split("\n") if part)
        examples = "example" + ("s" if len(c.examples) > 1 else "") + ":\n" + "\n".join(
            f"  {line}" for line in c.examples)
        command = sub.add_parser(
            c.name, help=c.help, description=c.help + (f"\n\n{body}" if body else ""),
            epilog=examples, formatter_class=argparse.RawDescriptionHelpFormatter)
        if only is None or c.name == only:
            c.register(command)
    return parser


def _command_in(argv: Sequence[str]) -> str:
    """The command named on the command line: its first word that is no option ("" if it
    names none: the parser then says so, or gives the help or the version asked for)."""
    names = {c.name for c in _COMMANDS}
    word = next((w for w in argv if not w.startswith("-")), "")
    return word if word in names else ""


_PROBING_COMMANDS = ("live", "ports")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``yuezheng`` script."""
    try:
        words = sys.argv[1:] if argv is None else list(argv)
        args = _build_parser(_command_in(words)).parse_args(words)
        if args.command in _PROBING_COMMANDS:  # they open audio/MIDI libraries that chatter
            from instruments.ports.library_chatter import quiet_libraries

            with quiet_libraries():
                return int(args.func(args))
        return int(args.func(args))
    except UserError as exc:
        _say(str(exc))
        _err_notes(exc)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM while writing (files.atomic)
        _say("interrupted")
        _err_notes(exc)
        return 128 + getattr(exc, "signum", 2)
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # the last line of defence: no traceback for users
        _say(f"internal error: {type(exc).__name__}: {exc}")
        _err_notes(exc)
        if os.environ.get("YUEZHENG_DEBUG"):
            raise
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())

"""yuezheng command line: it parses, calls the library and prints — nothing else, and nothing
below it prints.

Each command is declared once, with its examples, in ``sequencer/command_line.py``
(``@command(NAME, HELP, examples=…)`` on the function that adds its arguments); its body here,
``cmd_<name>(args) -> int``, bound to its name in ``_BODIES`` (the parser is built from the
declarations by ``sequencer/command_parser.py``), calls the library and prints the lines it
returns.  Every choice and default an argument offers is imported from the module that
owns it (tests/test_cli_args.py holds them equal).  Library errors that are the user's to fix
are ``UserError`` and end in exit code 2 with a one-paragraph message and no traceback; anything
else is exit 1.  Heavy libraries (pyo, music21, numpy-heavy modules) are imported inside the
commands that need them, so that ``yuezheng --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from cues.errors import UserError
from cues.text import clock as _clock
from sequencer.command_line import FLAG_OF, SETTING_FLAGS
from sequencer.command_parser import PROG, Body, build_parser, command_in

if TYPE_CHECKING:
    from cues.model import Rite
    from sequencer.timeline.groups import NoteSelection
    from sequencer.timeline.settings import CompileSettings

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_TEMPO_VIOLATION = 4  # `check`: a block of 節 or onsets does not hold

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


# ── what the arguments select ───────────────────────────────────────────────────────────────


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


# ── the commands' bodies (sequencer/command_line.py declares each) ──────────────────────────

# — rites, show, validate, new, pieces: the rites as data —


def cmd_rites(args: argparse.Namespace) -> int:
    from sequencer.listings import rites_lines, rites_rows

    _table(rites_rows(), rites_lines, args.json)
    return EXIT_OK


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


def cmd_new(args: argparse.Namespace) -> int:
    from cues.sheet.loader import new_sheet
    from instruments.files.atomic import write_text_atomically

    target, text, rite = new_sheet(args.sheet, args.from_rite, force=args.force)
    with _writing(args.sheet):
        write_text_atomically(target, text)
    _wrote(args.sheet, f"{rite.title} from the built-in {rite.id}, {len(rite.cues)} cues; "
         f"edit it, then `yuezheng validate {args.sheet}`")
    return EXIT_OK


def cmd_pieces(args: argparse.Namespace) -> int:
    from sequencer.listings import pieces_lines, pieces_rows

    _table(pieces_rows(), pieces_lines, args.json)
    return EXIT_OK


def cmd_source(args: argparse.Namespace) -> int:
    from sequencer.citations import find_citations, source_json, source_lines

    found = find_citations(args.name, args.rite)
    if args.json:
        _print_json(source_json(found))
    else:
        _lines(source_lines(found))
    return EXIT_OK


# — midi, render, score, audition, instruments: the rites as files —


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


def cmd_instruments(args: argparse.Namespace) -> int:
    from sequencer.listings import instruments_lines, instruments_rows

    _table(instruments_rows(), instruments_lines, args.json)
    return EXIT_OK


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


def cmd_reaction(args: argparse.Namespace) -> int:
    from sequencer.live.screens.reaction import measure

    if not 1 <= args.trials <= 100:
        raise UserError(f"--trials {args.trials}: expected 1 to 100")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UserError("reaction needs a terminal to show the block and read the keys")
    _lines(measure(args.trials).report())
    return EXIT_OK


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

# each command's body, by the name sequencer/command_line.py declares it with
_BODIES: dict[str, Body] = {
    "rites": cmd_rites, "show": cmd_show, "validate": cmd_validate, "new": cmd_new,
    "pieces": cmd_pieces, "source": cmd_source, "midi": cmd_midi, "render": cmd_render,
    "score": cmd_score, "instruments": cmd_instruments, "audition": cmd_audition,
    "check": cmd_check, "judge": cmd_judge, "plot": cmd_plot, "layout": cmd_layout,
    "ports": cmd_ports, "reaction": cmd_reaction, "live": cmd_live,
}


def _build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command bound to its body (with ``only``: that command's arguments
    alone declared; ``sequencer.command_parser.build_parser``)."""
    return build_parser(_BODIES, only)


_PROBING_COMMANDS = ("live", "ports")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``yuezheng`` script."""
    try:
        words = sys.argv[1:] if argv is None else list(argv)
        args = _build_parser(command_in(words)).parse_args(words)
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

"""The tempo-consistency checker: does the timing of a file hold — 「間若一」, every interval the
same?  Its onsets are tested as equal-interval grids (:mod:`sequencer.check.grid`); the inputs are
read by :mod:`sequencer.check.inputs`.

- **MIDI** (:func:`check_midi`). If the file has 節 markers, each block of them is checked
  (:mod:`sequencer.check.jie_blocks`). Otherwise the ``note_on`` onsets (velocity > 0) of all
  channels, or of one channel (numbered 1–16 as users count), merged within ``MERGE_WINDOW_S``, are
  checked as one grid.
- **Audio** (:func:`check_audio`): the detected onsets, as one grid; or (:func:`check_found`,
  what ``check`` does with a recording that carries no provenance) the runs of equal strokes
  found in it, each a block, with the spacing and the 節 found and how sure that is
  (:mod:`sequencer.check.spacing`).
- **Live show log** (:func:`check_log`): its 節 records, block by block as for MIDI markers;
  and the drum heard (``live --hear``), each 射節's strokes as one grid on the input's own clock
  (as a recording is checked, at the audio tolerance): what the drummer did, not what was
  planned.
- **Against a rite's timeline** (:func:`check_timeline`, ``check FILE --rite RITE``): a
  recording or MIDI file checked only where 「間若一」 applies — each 射節 cue's span of the
  compiled timeline is a block, its strokes due on a known grid; onsets elsewhere are ignored and
  the offset of the file from the timeline is reported; :func:`check_grids` does the same with
  the stroke grids a file's provenance gives.

Each kind has its own default tolerance (``DEFAULT_TOLERANCE_MS``). Bad input — an unreadable or
unknown file, a malformed 節 marker or log record, a block with fewer than three onsets — raises
:class:`cues.errors.UserError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from cues.errors import UserError
from sequencer.check.grid import (
    MERGE_WINDOW_S,
    MIN_ONSETS,
    BlockReport,
    Violation,
    check_grid,
    merge_onsets,
    too_few_onsets,
    valid_tolerance,
)
from sequencer.check.inputs import (
    audio_reader,
    read_audio_onsets,
    read_audio_strength,
    read_log_heard,
    read_log_jie,
    read_midi_timing,
)
from sequencer.check.jie_blocks import (
    MAX_OFFSET_S,
    check_jie_blocks,
    check_stroke_grid,
    stroke_grids,
)
from sequencer.check.onsets import MIN_TIMED_SPACING_S
from sequencer.check.spacing import check_found as find_and_check
from sequencer.check.spacing import found_lines
from sequencer.timeline.events import Timeline
from sequencer.timeline.stroke_grids import StrokeGrid

__all__ = [
    "AUDIO_EXTENSIONS",
    "BlockReport",
    "CheckReport",
    "DEFAULT_TOLERANCE_MS",
    "LOG_EXTENSIONS",
    "MERGE_WINDOW_S",
    "MIDI_EXTENSIONS",
    "MIN_ONSETS",
    "Violation",
    "check_audio",
    "check_file",
    "check_found",
    "check_grid",
    "check_grids",
    "check_log",
    "check_midi",
    "check_timeline",
    "file_kind",
    "merge_onsets",
]

DEFAULT_TOLERANCE_MS: dict[str, float] = {"midi": 1.0, "audio": 10.0, "log": 5.0}
MIDI_EXTENSIONS = frozenset({".mid", ".midi", ".smf"})
AUDIO_EXTENSIONS = frozenset({".wav", ".flac", ".aif", ".aiff", ".ogg"})
LOG_EXTENSIONS = frozenset({".jsonl", ".ndjson"})


@dataclass(frozen=True)
class CheckReport:
    """The verdict on one file: ``ok`` when every block holds.

    ``kind`` is ``"midi-markers"``, ``"midi-notes"``, ``"audio"`` or ``"log"``, or
    ``"audio-timeline"`` / ``"midi-timeline"`` when checked against a rite's timeline.
    """

    source: str
    kind: str
    blocks: tuple[BlockReport, ...]
    ok: bool
    tolerance_ms: float | None = None
    notes: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())  # what limits the verdict: always shown
    made_with: str | None = None
    rite: str | None = None  # the rite whose 射節 were checked (a -timeline kind)
    found: tuple[dict[str, Any], ...] = field(default=())
    found_lines: tuple[tuple[str, ...], ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "tolerance_ms": self.tolerance_ms,
            "ok": self.ok,
            "notes": list(self.notes),
            "warnings": list(self.warnings),
            "blocks": [b.to_json() for b in self.blocks],
            "made_with": self.made_with,
            "rite": self.rite,
            "found": list(self.found),
        }


def check_midi(
    path: str | Path, channel: int | None = None,
    tolerance_ms: float = DEFAULT_TOLERANCE_MS["midi"],
) -> CheckReport:
    """Check a Standard MIDI File: its 節 marker blocks, or else its note onsets.

    ``channel`` (1–16, as users count) restricts the note onsets to one channel; it does not
    apply when the file has 節 markers (a note says so).
    """
    path = Path(path)
    if channel is not None and not 1 <= channel <= 16:
        raise UserError(f"--channel must be between 1 and 16 (as users count), got {channel}")
    timing = read_midi_timing(path)
    if timing.jie:
        notes: tuple[str, ...] = ()
        if channel is not None:
            notes = (f"--channel {channel} ignored: the file has 節 markers, which are checked",)
        blocks = check_jie_blocks(timing.jie, tolerance_ms)
        return CheckReport(str(path), "midi-markers", blocks, all(b.ok for b in blocks),
                           tolerance_ms, notes)
    onsets = merge_onsets([t for t, ch in timing.note_ons
                           if channel is None or ch == channel - 1])
    which = "all channels" if channel is None else f"channel {channel}"
    window = f"{MERGE_WINDOW_S * 1000:g} ms"
    if len(onsets) < MIN_ONSETS:
        raise UserError(
            f"{path}: no 節 markers, and only {len(onsets)} note onset"
            f"{'s' if len(onsets) != 1 else ''} on {which} (after merging within {window}); "
            f"at least {MIN_ONSETS} are needed"
        )
    note = (f"no 節 markers: checked note_on onsets (velocity > 0) of {which}, "
            f"merged within {window}")
    block = check_grid(onsets, tolerance_ms, f"note onsets ({which})")
    return CheckReport(str(path), "midi-notes", (block,), block.ok, tolerance_ms, (note,))


def check_audio(path: str | Path,
                tolerance_ms: float = DEFAULT_TOLERANCE_MS["audio"]) -> CheckReport:
    """Check the onsets of an audio file (any format libsndfile reads) as one grid."""
    path = Path(path)
    onsets, sample_rate = read_audio_onsets(path)
    if len(onsets) < MIN_ONSETS:
        raise UserError(f"{path}: found {too_few_onsets(len(onsets))}")
    note = f"onsets detected at {sample_rate} Hz (band rises over decay, refined at sample level)"
    block = check_grid(onsets, tolerance_ms, "audio onsets")
    return CheckReport(str(path), "audio", (block,), block.ok, tolerance_ms, (note,))


def check_log(path: str | Path, tolerance_ms: float = DEFAULT_TOLERANCE_MS["log"],
              heard_tolerance_ms: float = DEFAULT_TOLERANCE_MS["audio"]) -> CheckReport:
    """Check the 節 records of a live show log (format in :mod:`sequencer.check.inputs`), and
    the strokes of the drum heard in it at ``heard_tolerance_ms``."""
    path = Path(path)
    jie = read_log_jie(path)
    heard = read_log_heard(path)
    if not jie and not heard:
        raise UserError(f'{path}: no 節 records ({{"event": "jie", ...}}) in the log')
    blocks = check_jie_blocks(jie, tolerance_ms) if jie else ()
    notes: tuple[str, ...] = ()
    if heard:
        blocks += heard_blocks(heard, heard_tolerance_ms)
        notes = (f"the drum heard: its strokes on the input's own clock, tolerance "
                 f"±{heard_tolerance_ms:g} ms",)
    return CheckReport(str(path), "log", blocks, all(b.ok for b in blocks), tolerance_ms,
                       notes)


def heard_blocks(blocks: list, tolerance_ms: float) -> tuple[BlockReport, ...]:
    """Each 射節's strokes of the drum heard, as one grid (a stroke missing leaves a gap in
    the indices; blocks of fewer than three strokes are left out)."""
    out = []
    for block in blocks:
        if len(block) < MIN_ONSETS:
            continue
        label = f"{block[0].cue}: the drum heard ({len(block)} strokes)"
        out.append(check_grid([s.t for s in block], tolerance_ms, label,
                              [s.index for s in block]))
    return tuple(out)


def file_kind(path: str | Path) -> str:
    """``"midi"``, ``"audio"`` or ``"log"`` by the file's extension; ``UserError`` otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix in MIDI_EXTENSIONS:
        return "midi"
    if suffix in AUDIO_EXTENSIONS:
        return "audio"
    if suffix in LOG_EXTENSIONS:
        return "log"
    known = sorted(MIDI_EXTENSIONS | AUDIO_EXTENSIONS | LOG_EXTENSIONS)
    raise UserError(
        f"{path}: unknown file type {suffix or '(no extension)'!r}; expected one of "
        + " ".join(known)
    )


def check_file(
    path: str | Path, channel: int | None = None, tolerance_ms: float | None = None
) -> CheckReport:
    """Check ``path`` by its kind, with the kind's default tolerance unless one is given."""
    kind = file_kind(path)
    tol = DEFAULT_TOLERANCE_MS[kind] if tolerance_ms is None else tolerance_ms
    if not valid_tolerance(tol):
        raise UserError(f"--tolerance-ms must be a positive number, got {tol!r}")
    if kind == "midi":
        return check_midi(path, channel, tol)
    if channel is not None:
        raise UserError("--channel applies to MIDI files only")
    if kind == "audio":
        return check_audio(path, tol)
    return check_log(path, tol) if tolerance_ms is None else check_log(path, tol, tol)


def humanized(humanize_ms: float | str | Fraction) -> tuple[str, ...]:
    """A note when a timeline's drummers are off the tick by design (``--humanize``)."""
    ms = float(humanize_ms)
    if ms == 0:
        return ()
    return (f"the timeline was compiled with --humanize {ms:g}: its drummers are off the tick "
            f"by design (standard deviation {ms:g} ms); the strokes are measured against the "
            f"even grid of 「間若一」, so what is off is the drummers' error, reported as it is",)


def check_timeline(path: str | Path, timeline: Timeline,
                   tolerance_ms: float | None = None) -> CheckReport:
    """Check an audio or MIDI file against the 射節 blocks of a compiled ``timeline``."""
    path = Path(path)
    if file_kind(path) == "log":
        raise UserError(f"{path}: --rite checks audio or MIDI files; a show log has its 節 "
                        f"records (check it without --rite)")
    grids = stroke_grids(timeline)
    if not grids:
        raise UserError(f"{timeline.rite}: the selected cues have no 射節, where 「間若一」 "
                        f"applies: nothing to check")
    return check_grids(path, grids, tolerance_ms,
                       f"射節 blocks of {timeline.rite}'s timeline; onsets outside them ignored",
                       rite=timeline.rite, extra=humanized(timeline.settings.humanize_ms))


def check_grids(path: str | Path, grids: list[StrokeGrid] | tuple[StrokeGrid, ...],
                tolerance_ms: float | None = None, where: str = "",
                made_with: str | None = None, rite: str | None = None,
                extra: tuple[str, ...] = ()) -> CheckReport:
    """Check an audio or MIDI file in the 射節 ``grids`` (where their strokes are due);
    ``where``: whence the grids came (the report's first note); ``extra``: more notes."""
    path = Path(path)
    kind = file_kind(path)
    tol = DEFAULT_TOLERANCE_MS[kind] if tolerance_ms is None else tolerance_ms
    if not valid_tolerance(tol):
        raise UserError(f"--tolerance-ms must be a positive number, got {tol!r}")
    if kind == "midi":
        onsets = merge_onsets([t for t, _ in read_midi_timing(path).note_ons])
        blocks = tuple(check_stroke_grid(onsets, g, tol) for g in grids)
        note = f"MIDI note onsets merged within {MERGE_WINDOW_S * 1000:g} ms"
    else:
        strength = read_audio_strength(path)
        blocks = tuple(
            check_stroke_grid(strength.strokes(g.start_s - MAX_OFFSET_S - g.step_s / 2,
                                               g.end_s + MAX_OFFSET_S, spacing_s=g.step_s),
                              g, tol)
            for g in grids)
        note = (f"onsets detected at {strength.sample_rate} Hz (band rises over decay, refined "
                f"at sample level)")
    warnings: tuple[str, ...] = ()
    close = min(g.step_s for g in grids)
    if kind != "midi" and close < MIN_TIMED_SPACING_S:  # a stroke missed may be the detector's
        warnings = (f"strokes {close:g} s apart are closer than the {MIN_TIMED_SPACING_S:g} s "
                    f"this detector is measured to find: a stroke reported missing or off may "
                    f"be missed by the detector, not by the player (check the MIDI file too)",)
    notes = ((where, note) if where else (note,)) + extra
    return CheckReport(str(path), f"{kind}-timeline", blocks, all(b.ok for b in blocks), tol,
                       notes, warnings, made_with, rite)


def check_found(path: str | Path, tolerance_ms: float | None = None,
                why: str = "the file carries no provenance") -> CheckReport:
    """Check a recording by the runs of equal strokes found in it: each a block, with the
    spacing and the 節 found and how sure that is (:mod:`sequencer.check.spacing`); ``why``
    it is not checked against known grids."""
    path = Path(path)
    tol = DEFAULT_TOLERANCE_MS["audio"] if tolerance_ms is None else tolerance_ms
    if not valid_tolerance(tol):
        raise UserError(f"--tolerance-ms must be a positive number, got {tol!r}")
    strength = read_audio_strength(path)
    found, warnings = find_and_check(strength, audio_reader(path), tol, str(path))
    notes = (f"{why}: the strokes' spacing and the 節 were found in the recording itself",
             f"onsets detected at {strength.sample_rate} Hz (band rises over decay, refined at "
             f"sample level)")
    blocks = tuple(f.report for f in found if f.judged)
    return CheckReport(str(path), "audio-found", blocks, all(b.ok for b in blocks), tol, notes,
                       warnings, found=tuple(f.to_json() for f in found),
                       found_lines=tuple(tuple(found_lines(f)) for f in found))

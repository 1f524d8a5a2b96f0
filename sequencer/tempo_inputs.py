"""The tempo checker's inputs: the 節 and onsets of a MIDI file, an audio file or a show log.

- **MIDI**: marker meta events ``節 k/N`` (DESIGN.md: every 節 of a 射節 has one; MIDI text is
  UTF-8), each labelled with the cue marker before it, and the ``note_on`` onsets (velocity > 0)
  with their channels. Times come from the file's integer ticks and tempo map
  (:class:`sequencer.midifile.TempoMap`).
- **Audio**: the onset strength and onsets of :mod:`sequencer.onsets`, streamed from the file.
- **Live show log**: a JSON-lines file written by the live player, one JSON object per line.
  Records whose ``"event"`` is ``"jie"`` mark a 節 as it sounded::

      {"event": "jie", "t": 12.3456, "k": 1, "n": 5, "cue": "she-3"}

  ``t`` — seconds (a number) on the player's monotonic show clock; any origin, the same for all
  records of the file. ``k`` — the 節's number, 1…``n`` (1 is the first listening 節). ``n`` — the
  number of 節 of the 射節 (an integer ≥ 1). ``cue`` — optional: the id of the cue the 節 belongs
  to, used as the block's label. Other keys are allowed and ignored. The delivery records
  (``output-lost``, ``output-regained``, ``late``: see ``sequencer.log_faults``) mark the 節
  that may not have been heard on time. Records with any other ``"event"`` (or none) are
  ignored, as are blank lines; a line that is not a JSON object is an error.

An unreadable or unknown file, or a malformed 節 marker or log record, raises ``UserError``.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cues.errors import UserError
from cues.limits import (
    AUDIO_CHANNELS,
    AUDIO_RATE,
    AUDIO_SECONDS,
    LOG_BYTES,
    MIDI_BYTES,
    json_line,
    over_limit,
    read_limited,
)
from sequencer.events import parse_jie_text
from sequencer.jie_blocks import JieOnset
from sequencer.log_faults import LogFaults
from sequencer.midifile import TempoMap, absolute_events

if TYPE_CHECKING:
    from sequencer.onsets import OnsetStrength


@dataclass(frozen=True)
class MidiTiming:
    """What the tempo checker reads from a MIDI file."""

    jie: tuple[JieOnset, ...]  # its 節 markers, in time order
    note_ons: tuple[tuple[float, int], ...]  # (seconds, channel 0–15) of every sounding note_on


def require_file(path: Path) -> None:
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if not path.is_file():
        raise UserError(f"{path}: not a regular file")


def read_midi_timing(path: Path) -> MidiTiming:
    """The 節 markers and note onsets of a Standard MIDI File (type 0 or 1, metrical time)."""
    import mido  # imported here: `yuezheng --help` stays fast

    data = read_limited(path, MIDI_BYTES, "a Standard MIDI File (.mid)")
    try:
        # latin-1 keeps every byte of the text events; 節 markers are decoded as UTF-8 below
        mid = mido.MidiFile(file=io.BytesIO(data), charset="latin1")
    except Exception as exc:  # mido raises many kinds (EOFError, OSError, ValueError, KeyError…)
        raise UserError(f"{path}: not a readable Standard MIDI File ({exc})") from exc
    if mid.type == 2:
        raise UserError(f"{path}: MIDI type 2 (independent tracks) is not supported")
    tpb = int(mid.ticks_per_beat)
    if tpb <= 0:
        raise UserError(f"{path}: SMPTE time division is not supported (ticks per beat {tpb})")
    events = absolute_events(mid)
    tempo_map = TempoMap(events, tpb)
    jie: list[JieOnset] = []
    last_cue: str | None = None
    for tick, track_no, _, msg in events:
        if msg.type != "marker":
            continue
        text = msg.text.encode("latin1").decode("utf-8", errors="replace")
        where = f"{path}: track {track_no}, tick {tick}"
        if not text.startswith("節 "):
            last_cue = text.strip() or last_cue
            continue
        k_n = parse_jie_text(text)
        if k_n is None:
            raise UserError(f"{where}: marker {text!r} is not of the form '節 k/N'")
        jie.append(JieOnset(tempo_map.seconds(tick), *k_n, where, last_cue))
    note_ons = tuple((tempo_map.seconds(tick), msg.channel) for tick, _, _, msg in events
                     if msg.type == "note_on" and msg.velocity > 0)
    return MidiTiming(tuple(jie), note_ons)


def read_audio_strength(path: Path) -> OnsetStrength:
    """The onset strength of an audio file (any format libsndfile reads), streamed in blocks."""
    import soundfile

    from sequencer.onsets import onset_strength_of_file

    require_file(path)
    try:
        info = soundfile.info(str(path))
    except Exception as exc:  # soundfile.LibsndfileError, RuntimeError, TypeError…
        raise UserError(f"{path}: not a readable audio file ({exc})") from exc
    seconds = info.frames / info.samplerate if info.samplerate > 0 else math.inf
    for limit, got in ((AUDIO_CHANNELS, info.channels), (AUDIO_RATE, info.samplerate),
                       (AUDIO_SECONDS, seconds)):
        if got > limit.value:  # before a block is read (memory grows with the channels)
            raise UserError(f"{path}: {over_limit(limit, math.ceil(got))}")
    try:
        return onset_strength_of_file(path)
    except UserError:
        raise
    except Exception as exc:  # soundfile.LibsndfileError, RuntimeError, TypeError…
        raise UserError(f"{path}: not a readable audio file ({exc})") from exc


def read_audio_onsets(path: Path) -> tuple[list[float], int]:
    """The onsets (seconds) of an audio file (any format libsndfile reads), and its rate."""
    strength = read_audio_strength(path)
    return strength.grid_onsets(), strength.sample_rate


def read_log_jie(path: Path) -> list[JieOnset]:
    """The 節 records of a live show log (format in the module docstring), in file order,
    each marked with its delivery fault, if any."""
    require_file(path)
    try:
        text = read_limited(path, LOG_BYTES, "a show log (.jsonl)").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    jie: list[JieOnset] = []
    faults = LogFaults()
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            record = _log_object(line, f"{path}:{lineno}")
            onset = _log_jie(record, f"{path}:{lineno}")
            faults.note(record)
            if onset is not None:
                jie.append(onset)
    return faults.mark(jie)


def _log_object(line: str, where: str) -> dict:
    """One log line's JSON object (UserError if it is not one)."""
    record = json_line(line, where)
    if not isinstance(record, dict):
        raise UserError(f"{where}: each line must be a JSON object")
    return record


def _log_jie(record: dict, where: str) -> JieOnset | None:
    """The 節 of one log record, None for a record of another event (UserError if
    malformed)."""
    if record.get("event") != "jie":
        return None
    t, k, n = record.get("t"), record.get("k"), record.get("n")
    if not _is_number(t) or not math.isfinite(t):
        raise UserError(f"{where}: a 'jie' record needs \"t\": seconds (a number), got {t!r}")
    for key, value in (("k", k), ("n", n)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise UserError(
                f"{where}: a 'jie' record needs \"{key}\": a positive integer, got {value!r}"
            )
    cue = record.get("cue")
    return JieOnset(float(t), k, n, where, cue if isinstance(cue, str) and cue else None)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)

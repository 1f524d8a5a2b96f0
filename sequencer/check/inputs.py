"""The tempo checker's inputs: the 節 and onsets of a MIDI file, an audio file or a show log.

- **MIDI**: marker meta events ``節 k/N`` (the MIDI contract: every 節 of a 射節 has one; MIDI
  text is UTF-8), each labelled with the cue marker before it, and the ``note_on`` onsets
  (velocity > 0) with their channels. Times come from the file's integer ticks and tempo map
  (:class:`sequencer.timeline.smf_reading.TempoMap`).
- **Audio**: the onset strength and onsets of :mod:`sequencer.check.onsets`, streamed from the file.
- **Live show log**: a JSON-lines file written by the live player, one JSON object per line.
  Records whose ``"event"`` is ``"jie"`` mark a 節 as it sounded::

      {"event": "jie", "t": 12.3456, "k": 1, "n": 5, "cue": "she-3"}

  ``t`` — seconds (a number) on the player's monotonic show clock; any origin, the same for all
  records of the file. ``k`` — the 節's number, 1…``n`` (1 is the first listening 節). ``n`` — the
  number of 節 of the 射節 (an integer ≥ 1). ``cue`` — optional: the id of the cue the 節 belongs
  to, used as the block's label. Other keys are allowed and ignored. The delivery records
  (``output-lost``, ``output-regained``, ``late``: see ``sequencer.check.log_faults``) mark the 節
  that may not have been heard on time. Records with any other ``"event"`` (or none) are
  ignored, as are blank lines; a line that is not a JSON object is an error.

  The drum heard (``live --hear``): records whose ``"event"`` is ``"heard"`` are its strokes::

      {"event": "heard", "t": 12.3, "frame": 592384.25, "rate": 48000, "cue": "she-jie",
       "index": 7, ...}

  ``index`` — the stroke's place in the 射節 (its grid position: a stroke missing leaves a
  gap), ``cue`` the 射節; ``frame`` / ``rate`` time it on the input's own clock (as a recording
  is timed; ``t`` when they are missing). A stroke outside any 射節 (no ``cue``/``index``) is
  not checked; a new block starts where ``index`` goes back or the cue changes.

An unreadable or unknown file, or a malformed 節 marker or log record, raises ``UserError``.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from cues.errors import UserError
from cues.limits import (
    AUDIO_CHANNELS,
    AUDIO_RATE,
    AUDIO_SAMPLES,
    AUDIO_SECONDS,
    JIE_RECORDS,
    LOG_BYTES,
    MIDI_BYTES,
    InputFileError,
    json_line,
    lines_within,
    over_limit,
    read_limited,
)
from sequencer.check.jie_blocks import JieOnset
from sequencer.check.log_breaks import LogBreaks
from sequencer.check.log_faults import LogFaults
from sequencer.timeline.events import parse_jie_text
from sequencer.timeline.smf_reading import TempoMap, absolute_events

if TYPE_CHECKING:
    import numpy as np

    from sequencer.check.onsets import OnsetStrength


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
    _jie_within(path, len(jie))
    note_ons = tuple((tempo_map.seconds(tick), msg.channel) for tick, _, _, msg in events
                     if msg.type == "note_on" and msg.velocity > 0)
    return MidiTiming(tuple(jie), note_ons)


def read_audio_strength(path: Path) -> OnsetStrength:
    """The onset strength of an audio file (any format libsndfile reads), streamed in blocks."""
    import soundfile

    from sequencer.check.onsets import onset_strength_of_file

    require_file(path)
    try:
        info = soundfile.info(str(path))
    except Exception as exc:  # soundfile.LibsndfileError, RuntimeError, TypeError…
        raise UserError(f"{path}: not a readable audio file ({exc})") from exc
    seconds = info.frames / info.samplerate if info.samplerate > 0 else math.inf
    for limit, got in ((AUDIO_CHANNELS, info.channels), (AUDIO_RATE, info.samplerate),
                       (AUDIO_SECONDS, seconds), (AUDIO_SAMPLES, info.frames * info.channels)):
        if got > limit.value:  # before a block is read (memory grows with the channels)
            raise UserError(f"{path}: {over_limit(limit, math.ceil(got))}")
    try:
        return onset_strength_of_file(path)
    except UserError:
        raise
    except Exception as exc:  # soundfile.LibsndfileError, RuntimeError, TypeError…
        raise UserError(f"{path}: not a readable audio file ({exc})") from exc


def audio_reader(path: Path) -> Callable[[int, int], np.ndarray]:
    """A reader of an audio file's samples ``[start, stop)``, mixed to mono (zeros past its
    end), each call reading only what it asks for."""
    import numpy as np
    import soundfile

    def read(start: int, stop: int) -> np.ndarray:
        with soundfile.SoundFile(str(path)) as f:
            f.seek(min(max(0, start), f.frames))
            x = f.read(max(0, stop - start), dtype="float64", always_2d=True)
        mono = x.mean(axis=1)
        return np.pad(mono, (0, max(0, stop - start - mono.size)))
    return read


def read_audio_onsets(path: Path) -> tuple[list[float], int]:
    """The onsets (seconds) of an audio file (any format libsndfile reads), and its rate."""
    strength = read_audio_strength(path)
    return strength.grid_onsets(), strength.sample_rate


def read_log_jie(path: Path) -> list[JieOnset]:
    """The 節 records of a live show log (format in the module docstring), in file order,
    each marked with its delivery fault, if any."""
    require_file(path)
    try:
        text = lines_within(path, read_limited(path, LOG_BYTES, "a show log (.jsonl)")
                            .decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    jie: list[JieOnset] = []
    faults = LogFaults()
    breaks = LogBreaks()
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            record = _log_object(line, f"{path}:{lineno}")
            onset = _log_jie(record, f"{path}:{lineno}")
            faults.note(record)
            breaks.note(record, len(jie))
            if onset is not None:
                jie.append(onset)
    _jie_within(path, len(jie))
    return breaks.mark(faults.mark(jie))


def _jie_within(path: Path, count: int) -> None:
    """Refuse (InputFileError) a file of more 節 than JIE_RECORDS, before they are tested."""
    if count > JIE_RECORDS.value:
        raise InputFileError(path, f"the file has {over_limit(JIE_RECORDS, count)}")


@dataclass(frozen=True)
class HeardOnset:
    """A stroke of the drum heard, as a show log tells it."""

    t: float  # seconds on the input's clock (frame / rate), else the show clock
    index: int
    cue: str
    where: str


def read_log_heard(path: Path) -> list[list[HeardOnset]]:
    """The strokes of the drum heard in a live show log, in blocks (see the module
    docstring)."""
    require_file(path)
    try:
        text = lines_within(path, read_limited(path, LOG_BYTES, "a show log (.jsonl)")
                            .decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    blocks: list[list[HeardOnset]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or '"heard"' not in line:
            continue
        record = _log_object(line, f"{path}:{lineno}")
        if record.get("event") != "heard":
            continue
        cue, index = record.get("cue"), record.get("index")
        if not isinstance(cue, str) or not isinstance(index, int) or isinstance(index, bool):
            continue
        frame, rate, t = record.get("frame"), record.get("rate"), record.get("t")
        if _is_number(frame) and isinstance(rate, int) and rate > 0:
            t = frame / rate
        if not _is_number(t) or not math.isfinite(t):
            raise UserError(f"{path}:{lineno}: a 'heard' record needs \"t\" (or \"frame\" and "
                            f"\"rate\"): seconds, got {t!r}")
        onset = HeardOnset(float(t), index, cue, f"{path}:{lineno}")
        last = blocks[-1][-1] if blocks else None
        if last is None or last.cue != cue or index <= last.index:
            blocks.append([onset])
        else:
            blocks[-1].append(onset)
    return blocks


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
        if not _positive_int(value):
            raise UserError(
                f"{where}: a 'jie' record needs \"{key}\": a positive integer, got {value!r}"
            )
    assert _positive_int(k) and _positive_int(n)
    cue = record.get("cue")
    return JieOnset(float(t), k, n, where, cue if isinstance(cue, str) and cue else None)


def _positive_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)

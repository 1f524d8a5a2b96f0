"""A user's own realization of a piece (a MIDI or MusicXML file named in the cue sheet).

The sources lose the music of most pieces; a production may supply its own reconstruction
rather than the structure-only default. The file's notes are read as (offset, length, MIDI key,
velocity) in exact ticks of the timeline (1/960 s):

- MIDI: note on/off pairs on any channel, timed by the file's own tempo map (exact Fractions);
  notes on the GM percussion channel (10) are returned as strokes (``drum`` true).
- MusicXML (music21): notes and chords, a quarter note lasting one syllable at the compiler's
  tempo (the 詩譜's one note per syllable).

Each note also carries the instrument the file says plays it (``RealizedNote.instrument``, with
``said``: where the file says it), first found of: the track's name (MIDI) or the part's
(MusicXML), when it names an instrument of the catalog (its name, an alias, its pinyin; a
name such as yuezheng's own "鼓 (gu, drum)" too); on the GM percussion channel, the key — the
catalog drum of that key, else a bass drum (35, 36) as the large 鼓 and any other key as the
small 鼙; the channel's General MIDI program (the catalog's fallbacks: 14 the bells, 13 the
chimes, 107 the 瑟, 20 the 笙, 75 the 管, 52 the 歌; 47 timpani and 116 taiko a large drum, 117
and 118 a small one).  A note the file says nothing of (no name, no program, a program of no
such instrument) has none: the cue plays it (``sequencer.timeline.piece_notes``).
"""

from __future__ import annotations

import io
import warnings
from collections import deque
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path

from cues.catalog import CATALOG, GM_PERCUSSION_CHANNEL, canonical_instrument
from cues.errors import UserError
from cues.limits import (
    NOTE_SECONDS,
    REALIZATION_BYTES,
    REALIZATION_NOTES,
    REALIZATION_SECONDS,
    InputFileError,
    over_limit,
    read_limited,
)
from instruments.midi import check_message, note_on
from sequencer.timeline.musicxml_bytes import musicxml_text
from sequencer.timeline.smf_reading import TempoMap, absolute_events
from sequencer.timeline.timebase import TICKS_PER_SECOND

LARGE_DRUM, SMALL_DRUM = "鼓", "鼙"  # the catalog's plain drums: what a GM drum key stands for
_GM_BASS_DRUMS = (35, 36)
_GM_DRUM_PROGRAMS = {47: LARGE_DRUM, 116: LARGE_DRUM, 117: SMALL_DRUM, 118: SMALL_DRUM}


@dataclass(frozen=True)
class RealizedNote:
    offset: int  # ticks from the piece's start
    length: int
    key: int
    velocity: int
    drum: bool = False
    instrument: str | None = None  # the catalog instrument the file says plays it
    said: str = ""  # where the file says so ("track 2 '鼓 (gu, drum)'", "GM program 14", …)


def named_instrument(name: str) -> str | None:
    """The catalog instrument a track or part name names: the whole name, or its first word
    (yuezheng's own tracks: "gu, drum"; before them "鼓 (gu, drum)")."""
    name = name.strip()
    if not name:
        return None
    first = name.split(" (")[0].split(",")[0].split()
    return canonical_instrument(name) or (canonical_instrument(first[0]) if first else None)


def gm_drum(key: int) -> str:
    """The catalog drum a GM percussion key stands for."""
    for inst in CATALOG.values():
        if inst.gm_key == key:
            return inst.name
    return LARGE_DRUM if key in _GM_BASS_DRUMS else SMALL_DRUM


def gm_program_instrument(program: int) -> str | None:
    """The catalog instrument a General MIDI program stands for (the first with that fallback;
    a drum for the drum programs); None for any other."""
    if program in _GM_DRUM_PROGRAMS:
        return _GM_DRUM_PROGRAMS[program]
    return next((i.name for i in CATALOG.values() if i.gm_program == program), None)


@dataclass(frozen=True)
class Realization:
    notes: tuple[RealizedNote, ...]
    length: int  # ticks: one pass (終) of the piece


def load_realization(path: str, tempo_bpm: Fraction) -> Realization:
    """The notes of a realization file (cached by path and tempo), every limit checked."""
    return _load(str(Path(path).resolve()), Fraction(tempo_bpm))


@cache
def _load(path: str, tempo_bpm: Fraction) -> Realization:
    data = read_limited(path, REALIZATION_BYTES, "a MIDI or MusicXML file")
    suffix = Path(path).suffix.lower()
    try:
        if suffix in (".mid", ".midi"):
            notes, end = _from_midi(path, data)
        else:
            notes, end = _from_musicxml(path, musicxml_text(path, data), tempo_bpm)
    except UserError:
        raise
    except EOFError:
        raise UserError(f"{path}: cannot read this realization file: it ends too early") from None
    except Exception as exc:  # any parser failure is the file's problem
        raise UserError(f"{path}: cannot read this realization file: "
                        f"{exc or type(exc).__name__}") from None
    return _checked(path, notes, end)


def _checked(path: str, notes: list[RealizedNote], end: int) -> Realization:
    """The notes, sorted, if every one is within MIDI's range and the limits."""
    if not notes:
        raise UserError(f"{path}: the file has no notes")
    if len(notes) > REALIZATION_NOTES.value:
        raise InputFileError(path, f"it has {over_limit(REALIZATION_NOTES, len(notes))}")
    notes.sort(key=lambda n: (n.offset, n.key))
    for number, n in enumerate(notes, start=1):
        where = f"note {number} (at {float(n.offset / TICKS_PER_SECOND):.3f} s)"
        try:
            check_message(note_on(0, n.key, n.velocity))
        except ValueError:
            raise InputFileError(path, f"{where} has key {n.key} and velocity {n.velocity}: "
                                 "expected both within MIDI's range, 0–127") from None
        if n.length > NOTE_SECONDS.value * TICKS_PER_SECOND:
            raise InputFileError(path, f"{where} lasts "
                                 f"{over_limit(NOTE_SECONDS, n.length // TICKS_PER_SECOND)}")
    length = max(end, max(n.offset + n.length for n in notes))
    if length > REALIZATION_SECONDS.value * TICKS_PER_SECOND:
        raise InputFileError(path, "one pass lasts "
                             f"{over_limit(REALIZATION_SECONDS, length // TICKS_PER_SECOND)}")
    return Realization(tuple(notes), length)


def _from_midi(path: str, data: bytes) -> tuple[list[RealizedNote], int]:
    """A MIDI file's notes, and the time of its last event (one pass of the piece)."""
    import mido

    mid = mido.MidiFile(file=io.BytesIO(data))
    if mid.type == 2 or mid.ticks_per_beat <= 0:
        raise UserError(f"{path}: expected a type 0 or 1 MIDI file with metrical timing")
    events = absolute_events(mid)
    tempo_map = TempoMap(events, mid.ticks_per_beat)

    def ticks(tick: int) -> int:  # the file's tick → the timeline's
        return round(tempo_map.exact(tick) * TICKS_PER_SECOND)

    names = {}  # track → the instrument its name says
    for number, track in enumerate(mid.tracks):
        for msg in track:
            if msg.type == "track_name":
                text = msg.name.encode("latin1").decode("utf-8", errors="replace")
                if (inst := named_instrument(text)) is not None:
                    names[number] = (inst, f"track {number + 1} {text.strip()!r}")
                break
    programs: dict[int, int] = {}  # channel → its program now
    sounding: dict[tuple[int, int], deque[tuple[int, int, str | None, str]]] = {}
    notes: list[RealizedNote] = []
    for tick, track_no, _, msg in events:
        if msg.type == "program_change":
            programs[msg.channel] = msg.program
        elif msg.type == "note_on" and msg.velocity > 0:
            inst, said = _said(msg, track_no, names, programs)
            sounding.setdefault((msg.channel, msg.note), deque()).append(
                (ticks(tick), msg.velocity, inst, said))
        elif msg.type in ("note_off", "note_on"):
            stack = sounding.get((msg.channel, msg.note))
            if stack:
                start, velocity, inst, said = stack.popleft()
                notes.append(RealizedNote(start, max(1, ticks(tick) - start), msg.note, velocity,
                                          drum=msg.channel == GM_PERCUSSION_CHANNEL,
                                          instrument=inst, said=said))
                if len(notes) > REALIZATION_NOTES.value:
                    break
    return notes, ticks(events[-1][0]) if events else 0


def _said(msg: object, track_no: int, names: dict[int, tuple[str, str]],
          programs: dict[int, int]) -> tuple[str | None, str]:
    """The instrument a MIDI note's track, percussion key or program says, and where."""
    channel, key = msg.channel, msg.note  # type: ignore[attr-defined]
    if track_no in names:
        return names[track_no]
    if channel == GM_PERCUSSION_CHANNEL:
        return gm_drum(key), f"GM percussion key {key} (channel 10)"
    program = programs.get(channel)
    if program is not None and (inst := gm_program_instrument(program)) is not None:
        return inst, f"GM program {program + 1} on channel {channel + 1}"
    return None, ""


def _from_musicxml(
    path: str, text: bytes, tempo_bpm: Fraction,
) -> tuple[list[RealizedNote], int]:
    """A MusicXML score's notes (a quarter note lasts one syllable), and its end."""
    from music21 import converter

    with warnings.catch_warnings():  # music21 warns on stderr of what it then raises
        warnings.simplefilter("ignore")
        score = converter.parse(text, format="musicxml")
    beat = Fraction(60 * TICKS_PER_SECOND) / tempo_bpm  # ticks per quarter note
    notes: list[RealizedNote] = []
    parts = list(getattr(score, "parts", ())) or [score]
    for number, part in enumerate(parts, start=1):
        name = str(getattr(part, "partName", "") or "")
        inst = named_instrument(name)
        said = f"part {number} {name.strip()!r}" if inst else ""
        for element in part.flatten().notes:
            offset = round(Fraction(element.offset) * beat)
            length = max(1, round(Fraction(element.quarterLength) * beat))
            velocity = element.volume.velocity or 80
            for pitch in getattr(element, "pitches", ()):
                notes.append(RealizedNote(offset, length, int(round(pitch.ps)), int(velocity),
                                          instrument=inst, said=said))
    return notes, round(Fraction(score.highestTime) * beat)

"""A user's own realization of a piece (a MIDI or MusicXML file named in the cue sheet).

The sources lose the music of most pieces; a production may supply its own reconstruction
rather than the structure-only default. The file's notes are read as (offset, length, MIDI key,
velocity) in exact ticks of the timeline (1/960 s):

- MIDI: note on/off pairs on any channel, timed by the file's own tempo map (exact Fractions);
  notes on the GM percussion channel (10) are returned as strokes (``drum`` true).
- MusicXML (music21): notes and chords, a quarter note lasting one syllable at the compiler's
  tempo (the 詩譜's one note per syllable).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path

from cues.catalog import GM_PERCUSSION_CHANNEL
from cues.errors import UserError
from sequencer.midifile import TempoMap, absolute_events
from sequencer.timebase import TICKS_PER_SECOND


@dataclass(frozen=True)
class RealizedNote:
    offset: int  # ticks from the piece's start
    length: int
    key: int
    velocity: int
    drum: bool = False


@dataclass(frozen=True)
class Realization:
    notes: tuple[RealizedNote, ...]
    length: int  # ticks: one pass (終) of the piece


def load_realization(path: str, tempo_bpm: Fraction) -> Realization:
    """The notes of a realization file (cached by path and tempo)."""
    return _load(str(Path(path).resolve()), Fraction(tempo_bpm))


@cache
def _load(path: str, tempo_bpm: Fraction) -> Realization:
    suffix = Path(path).suffix.lower()
    try:
        if suffix in (".mid", ".midi"):
            return _from_midi(path)
        return _from_musicxml(path, tempo_bpm)
    except UserError:
        raise
    except Exception as exc:  # any parser failure is the file's problem
        raise UserError(f"{path}: cannot read this realization file: {exc}") from None


def _from_midi(path: str) -> Realization:
    import mido

    mid = mido.MidiFile(path)
    if mid.type == 2 or mid.ticks_per_beat <= 0:
        raise UserError(f"{path}: expected a type 0 or 1 MIDI file with metrical timing")
    events = absolute_events(mid)
    tempo_map = TempoMap(events, mid.ticks_per_beat)

    def ticks(tick: int) -> int:  # the file's tick → the timeline's
        return round(tempo_map.exact(tick) * TICKS_PER_SECOND)

    sounding: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (channel, key) → starts
    notes: list[RealizedNote] = []
    for tick, _, _, msg in events:
        if msg.type == "note_on" and msg.velocity > 0:
            sounding.setdefault((msg.channel, msg.note), []).append((ticks(tick), msg.velocity))
        elif msg.type in ("note_off", "note_on"):
            stack = sounding.get((msg.channel, msg.note))
            if stack:
                start, velocity = stack.pop(0)
                notes.append(RealizedNote(start, max(1, ticks(tick) - start), msg.note, velocity,
                                          drum=msg.channel == GM_PERCUSSION_CHANNEL))
    if not notes:
        raise UserError(f"{path}: the MIDI file has no notes")
    notes.sort(key=lambda n: (n.offset, n.key))
    end = ticks(events[-1][0])  # the last event's time: one pass of the piece
    return Realization(tuple(notes), max(end, max(n.offset + n.length for n in notes)))


def _from_musicxml(path: str, tempo_bpm: Fraction) -> Realization:
    from music21 import converter

    score = converter.parse(path)
    beat = Fraction(60 * TICKS_PER_SECOND) / tempo_bpm  # ticks per quarter note
    notes: list[RealizedNote] = []
    for element in score.flatten().notes:
        offset = round(Fraction(element.offset) * beat)
        length = max(1, round(Fraction(element.quarterLength) * beat))
        velocity = element.volume.velocity or 80
        for pitch in getattr(element, "pitches", ()):
            notes.append(RealizedNote(offset, length, int(round(pitch.ps)), int(velocity)))
    if not notes:
        raise UserError(f"{path}: the MusicXML file has no notes")
    end = round(Fraction(score.highestTime) * beat)
    notes.sort(key=lambda n: (n.offset, n.key))
    return Realization(tuple(notes), max(end, max(n.offset + n.length for n in notes)))

"""The timeline's immutable events and the Timeline itself.

Every output — MIDI files, live MIDI, audio, scores, checks — is a view of one Timeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple

from sequencer.timebase import seconds


class Note(NamedTuple):
    """A sounding note (or a drum stroke) in ticks (a NamedTuple: immutable and cheap to make)."""

    tick: int
    duration: int
    channel: int
    key: int  # MIDI key (drums: the GM percussion key)
    velocity: int
    instrument: str
    cue: str
    bend: int = 0  # pitch-wheel value (-8192 … 8191) for the tuning, range ±2 semitones
    semitones: int | None = None  # above 黃鍾 (None for unpitched strokes)
    hz: float | None = None
    lyric: str | None = None
    position: str = ""  # the layout position it sounds from
    x: float = 0.0  # metres east (where the position is at this moment: moves apply)
    y: float = 0.0  # metres north

    @property
    def end(self) -> int:
        return self.tick + self.duration


class Marker(NamedTuple):
    """A marker: every cue start (text begins with the cue id) and every 節 (``節 k/N``)."""

    tick: int
    text: str
    cue: str
    kind: str  # "cue" or "jie"


@dataclass(frozen=True)
class CueSpan:
    """Where a cue sits in the timeline."""

    cue: str
    kind: str
    start: int
    end: int
    fixed_length: bool  # False where the operator decides the length (無算樂, stop rules, pauses)
    release_ticks: tuple[int, ...] = ()  # 射節: drum-accord release times in one 耦's cycle
    jie_ticks: int | None = None  # 射節: the length of one 節
    listen: int = 0
    jie: int = 0
    cycles: int = 0

    @property
    def start_s(self) -> Fraction:
        return seconds(self.start)

    @property
    def duration_s(self) -> Fraction:
        return seconds(self.end - self.start)


@dataclass(frozen=True)
class Timeline:
    rite: str
    notes: tuple[Note, ...]
    markers: tuple[Marker, ...]
    spans: tuple[CueSpan, ...]
    settings: tuple[tuple[str, str], ...] = field(default=())

    @property
    def end(self) -> int:
        last_note = max((n.end for n in self.notes), default=0)
        last_span = max((s.end for s in self.spans), default=0)
        return max(last_note, last_span)

    def span(self, cue_id: str) -> CueSpan:
        for s in self.spans:
            if s.cue == cue_id:
                return s
        raise KeyError(cue_id)

"""The timeline's immutable events and the Timeline itself.

Every output made of the music as it sounds in time — MIDI files, live MIDI, audio, the
timeline picture, the checks against a rite — is a view of one Timeline (a score and the
layout picture are views of the rite itself).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple

from sequencer.timeline.settings import CompileSettings
from sequencer.timeline.timebase import seconds


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


MARKER_CUE = "cue"
MARKER_JIE = "jie"
# at most 18 digits each: a marker claiming a 5,000-digit count is not a 節 marker
_JIE_TEXT = re.compile(r"^節 ([0-9]{1,18})/([0-9]{1,18})(?:\s|$)")


def jie_text(k: int, n: int) -> str:
    """The text of the MIDI marker of 節 ``k`` of ``n`` (the MIDI contract: ``節 k/N``)."""
    return f"節 {k}/{n}"


def parse_jie_text(text: str) -> tuple[int, int] | None:
    """(k, N) of a marker text ``節 k/N`` (anything may follow after a space), else None."""
    match = _JIE_TEXT.match(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


class Marker(NamedTuple):
    """A marker: every cue start (text begins with the cue id) and every 節 of a 射節.

    ``text`` is what the MIDI file carries; a 節 also has its number ``k`` of ``n`` and its 耦
    ``cycle`` (0-based) as data, None on a cue marker.
    """

    tick: int
    text: str
    cue: str
    kind: str  # MARKER_CUE or MARKER_JIE
    k: int | None = None
    n: int | None = None
    cycle: int | None = None

    @classmethod
    def jie(cls, tick: int, cue: str, k: int, n: int, cycle: int) -> Marker:
        """The marker of 節 ``k`` of ``n`` in 耦 cycle ``cycle`` of cue ``cue``."""
        return cls(tick, jie_text(k, n), cue, MARKER_JIE, k, n, cycle)


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
    # each piece as played, in order: (title, start, end) in ticks (the operator may pick the
    # next one of a 無算樂 live)
    sections: tuple[tuple[str, int, int], ...] = ()

    @property
    def start_s(self) -> Fraction:
        return seconds(self.start)

    @property
    def duration_s(self) -> Fraction:
        return seconds(self.end - self.start)


@dataclass(frozen=True)
class Timeline:
    """A compiled rite: its notes (sorted by tick), its markers, where each cue sits, and the
    settings it was compiled with."""

    rite: str
    notes: tuple[Note, ...]
    markers: tuple[Marker, ...]
    spans: tuple[CueSpan, ...]
    settings: CompileSettings = field(default_factory=CompileSettings)

    @property
    def end(self) -> int:
        """The tick where the last note or cue ends."""
        last_note = max((n.end for n in self.notes), default=0)
        last_span = max((s.end for s in self.spans), default=0)
        return max(last_note, last_span)

    def span(self, cue_id: str) -> CueSpan:
        """Where cue ``cue_id`` sits (KeyError if the timeline has no such cue)."""
        for s in self.spans:
            if s.cue == cue_id:
                return s
        raise KeyError(cue_id)

"""Each cue of a compiled Timeline as a live schedule: the messages ``yuezheng midi`` writes for
that cue, with times in seconds from the cue's start.

The channel messages come from ``sequencer.outputs.smf.track_events`` — the same function that
writes the file's tracks (``sequencer.outputs.smf.instrument_tracks``) — so a live cue sends
exactly the file's messages (program changes, RPN bend range, the layout's pan and volume, the
tuning — MTS single-note tuning changes, or pitch bends before notes, as ``midi_tuning`` says —
note on/off; meta events are left out) in the file's order:
merged across tracks by tick, ties in track order, as ``mido.merge_tracks`` reads the file.
Times are exact: a tick is 1/960 s and each time is ``tick / 960`` of an integer tick.

Besides the messages a cue schedule carries its 節 marks (for the show log), its length, and its
rest points: the cue-relative times where none of its notes sounds across — where a 樂闋 stop
ends the music without cutting a note.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from fractions import Fraction

from instruments.midi import DEFAULT_MIDI_TUNING
from sequencer.timeline.events import CueSpan, Note, Timeline
from sequencer.timeline.timebase import TICKS_PER_SECOND


@dataclass(frozen=True)
class JieMark:
    """A 節 of a 射節: cue-relative seconds, its number k of n, and its 耦 cycle (0-based)."""

    t: float
    k: int
    n: int
    cycle: int


@dataclass(frozen=True)
class CueSchedule:
    cue: str
    times: tuple[float, ...]  # seconds from the cue's start, sorted
    messages: tuple[bytes, ...]
    ticks: tuple[int, ...]  # the compiled times in ticks (exact)
    length_s: float  # the cue's span (start to end), seconds
    rest_points: tuple[float, ...]  # where a 樂闋 stop may end the music (ends with length_s)
    jie: tuple[JieMark, ...] = ()
    cycle_s: float | None = None  # 射節: the length of one 耦's cycle (N 節)
    channels: frozenset[int] = frozenset()
    scale: Fraction = Fraction(1)  # times are ticks / 960 × scale (``retimed``: Link follow)
    sections: tuple[tuple[str, float, float], ...] = ()  # each piece: title, start, end (s)


def _seconds(tick: int) -> float:
    return tick / TICKS_PER_SECOND


def cue_schedule(timeline: Timeline, span: CueSpan, notes: list[Note],
                 midi_tuning: str = DEFAULT_MIDI_TUNING) -> CueSchedule:
    from sequencer.outputs.smf import instrument_tracks

    merged: list[tuple[int, int, int, bytes]] = []
    tracks = instrument_tracks(notes, origin=span.start, midi_tuning=midi_tuning)
    for track, (_, events) in enumerate(tracks):
        for tick, order, data in events:
            if data[0] != 0xFF:
                merged.append((tick, track, order, data))
    merged.sort(key=lambda e: (e[0], e[1], e[2]))
    ticks = tuple(e[0] for e in merged)
    length = span.end - span.start
    jie: list[JieMark] = []
    for marker in timeline.markers:
        if marker.cue == span.cue and marker.kind == "jie":
            k, n = marker.k or 0, marker.n or 0  # a 節 marker has both
            rel = marker.tick - span.start
            cycle = rel // (span.jie * span.jie_ticks) if span.jie and span.jie_ticks else 0
            jie.append(JieMark(_seconds(rel), k, n, cycle))
    cycle_s = (_seconds(span.jie * span.jie_ticks) if span.jie and span.jie_ticks else None)
    return CueSchedule(
        cue=span.cue, times=tuple(_seconds(t) for t in ticks),
        messages=tuple(e[3] for e in merged), ticks=ticks, length_s=_seconds(length),
        rest_points=tuple(_seconds(t) for t in rest_points(notes, span.start, length)),
        jie=tuple(jie), cycle_s=cycle_s, channels=frozenset(n.channel for n in notes),
        sections=tuple((title, _seconds(a - span.start), _seconds(b - span.start))
                       for title, a, b in span.sections),
    )


def rest_points(notes: list[Note], origin: int, length: int) -> list[int]:
    """Cue-relative ticks (> 0) where no note sounds across: every note start that no earlier
    note outlasts, and the cue's end."""
    out: list[int] = []
    reach = 0  # the latest end of the notes started so far
    for note in sorted(notes, key=lambda n: n.tick):
        t = note.tick - origin
        if t > 0 and t >= reach and (not out or out[-1] != t):
            out.append(t)
        reach = max(reach, note.end - origin)
    if length > 0 and (not out or out[-1] < length):
        out.append(max(length, reach))
    return out


def cue_schedules(timeline: Timeline, midi_tuning: str = DEFAULT_MIDI_TUNING,
                  ) -> dict[str, CueSchedule]:
    """A schedule for every cue of the timeline (cues without notes get an empty one), the
    tuning carried as ``midi_tuning`` says (``mts`` or ``bend``)."""
    by_cue: dict[str, list[Note]] = defaultdict(list)
    for note in timeline.notes:
        by_cue[note.cue].append(note)
    return {span.cue: cue_schedule(timeline, span, by_cue.get(span.cue, []), midi_tuning)
            for span in timeline.spans}


def retimed(sched: CueSchedule, factor: Fraction) -> CueSchedule:
    """The schedule with every time stretched by ``factor`` from the cue's start, exactly: each
    time is its tick (``Fraction(tick, 960)``) times ``factor``, rounded to a float once."""
    def scale(t: float) -> float:  # a time of the compiled cue (tick / 960), stretched
        return float(Fraction(round(t / sched.scale * TICKS_PER_SECOND), TICKS_PER_SECOND)
                     * sched.scale * factor)

    return replace(
        sched, scale=sched.scale * factor,
        times=tuple(float(Fraction(t, TICKS_PER_SECOND) * sched.scale * factor)
                    for t in sched.ticks),
        length_s=scale(sched.length_s), rest_points=tuple(scale(p) for p in sched.rest_points),
        jie=tuple(replace(j, t=scale(j.t)) for j in sched.jie),
        cycle_s=None if sched.cycle_s is None else scale(sched.cycle_s),
        sections=tuple((title, scale(a), scale(b)) for title, a, b in sched.sections))

"""A cue's schedule as the sending process gets it, and what the output needs to know beforehand.

A 節 is a mark in the schedule: an empty message after the messages of its time, which the
sending process does not send but reports (``MarkPassed``) when it gets there — the time of the
節 in the show log.
"""

from __future__ import annotations

from typing import Any

from instruments.ports import parse_spec
from sequencer.outputs.cue_schedule import CueSchedule, JieMark
from sequencer.timeline.events import Timeline
from sequencer.timeline.timebase import seconds


def marked_schedule(sched: CueSchedule) -> tuple[list[float], list[bytes], dict[int, JieMark]]:
    """The schedule's times and messages with a mark (``b""``) after the messages of each 節's
    time, and the 節 at each mark's index."""
    times: list[float] = []
    messages: list[bytes] = []
    marks: dict[int, JieMark] = {}
    pending = list(sched.jie)
    m = 0
    for t, data in zip(sched.times, sched.messages, strict=True):
        while m < len(pending) and pending[m].t < t:
            marks[len(times)] = pending[m]
            times.append(pending[m].t)
            messages.append(b"")
            m += 1
        times.append(t)
        messages.append(data)
    for mark in pending[m:]:
        marks[len(times)] = mark
        times.append(mark.t)
        messages.append(b"")
    return times, messages, marks


def output_options(spec: str, timeline: Timeline,
                   loudness: float | None = None) -> dict[str, Any] | None:
    """What the output needs to know of the show beyond its messages: for ``pyo`` the notes
    to prepare tables for, each instrument's place in the hang (its first) and the show's
    loudness gain (its render's in the dry room, the pyo output's pan law, at ``loudness``
    LUFS, by default the render's: the show as loud as its file); else None."""
    if parse_spec(spec).kind != "pyo":
        return None
    from instruments.mix.mixer import Mastering, loudness_gain
    from instruments.ports.pyotables import LiveNote  # pyo only when asked for
    from sequencer.outputs.render import DEFAULT_LOUDNESS_LUFS, render_notes

    notes = sorted({LiveNote(n.instrument, n.hz, float(seconds(n.duration)), n.velocity)
                    for n in timeline.notes}, key=repr)
    places: dict[str, tuple[float, float]] = {}
    for n in timeline.notes:
        places.setdefault(n.instrument, (n.x, n.y))
    target = DEFAULT_LOUDNESS_LUFS if loudness is None else loudness
    gain = loudness_gain(render_notes(timeline), Mastering(room="dry", loudness=target))
    return {"notes": notes, "places": places, "gain": gain}

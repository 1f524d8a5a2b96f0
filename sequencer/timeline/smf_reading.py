"""Reading a Standard MIDI File's timing: its events in absolute ticks, and its tempo map.

Times come from integer ticks and the tempo map, segment by segment (``ticks · tempo /
(ticks_per_beat · 10⁶)`` — what ``mido.tick2second`` computes) with the sum kept in integers,
so no error accumulates message by message.
"""

from __future__ import annotations

import bisect
from fractions import Fraction
from typing import Any

DEFAULT_TEMPO = 500_000  # µs per quarter note, the SMF default (120 bpm)


def absolute_events(mid: Any) -> list[tuple[int, int, int, Any]]:
    """Every message of a ``mido.MidiFile`` as (absolute tick, track, position in track,
    message), in time order: by tick, then track, then position."""
    events: list[tuple[int, int, int, Any]] = []
    for track_no, track in enumerate(mid.tracks):
        tick = 0
        for pos, msg in enumerate(track):
            tick += int(msg.time)
            events.append((tick, track_no, pos, msg))
    events.sort(key=lambda e: e[:3])
    return events


class TempoMap:
    """Tick → seconds under the set_tempo events of a file (several on one tick: the last wins)."""

    def __init__(self, events: list[tuple[int, int, int, Any]], ticks_per_beat: int) -> None:
        self._starts: list[int] = [0]
        self._tempos: list[int] = [DEFAULT_TEMPO]
        self._numer: list[int] = [0]  # Σ ticks · tempo up to each segment start
        for tick, _, _, msg in events:
            if msg.type != "set_tempo":
                continue
            if tick == self._starts[-1]:
                self._tempos[-1] = msg.tempo
                continue
            self._numer.append(self._numer[-1] + (tick - self._starts[-1]) * self._tempos[-1])
            self._starts.append(tick)
            self._tempos.append(msg.tempo)
        self._denom = ticks_per_beat * 1_000_000

    def _numerator(self, tick: int) -> int:
        seg = bisect.bisect_right(self._starts, tick) - 1
        return self._numer[seg] + (tick - self._starts[seg]) * self._tempos[seg]

    def exact(self, tick: int) -> Fraction:
        """The time of ``tick`` in seconds, exactly."""
        return Fraction(self._numerator(tick), self._denom)

    def seconds(self, tick: int) -> float:
        """The time of ``tick`` in seconds (one correctly rounded division)."""
        return self._numerator(tick) / self._denom

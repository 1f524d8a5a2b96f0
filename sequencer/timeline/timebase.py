"""Exact time: integer ticks at a fixed rate, seconds derived as Fractions.

The timeline counts integer ticks of exactly 1/960 s: the MIDI files it writes use 960 ticks per
beat and a single tempo of 1,000,000 µs per beat (60 beats a minute), so a tick in the file is
the same tick as in the timeline, and every time in seconds is ``Fraction(tick, 960)`` — never a
sum of floats.  Musical tempo (syllables a minute, the length of a 節) is a setting of the
compiler, expressed as note lengths in ticks, not as MIDI tempo changes.
"""

from __future__ import annotations

from fractions import Fraction

TICKS_PER_SECOND = 960
TICKS_PER_BEAT = 960  # MIDI PPQ of the files written
US_PER_BEAT = 1_000_000  # MIDI tempo (µs per beat): one beat = one second


def seconds(tick: int) -> Fraction:
    """The exact time of a tick in seconds."""
    return Fraction(tick, TICKS_PER_SECOND)


def to_ticks(value: Fraction | float | int | str) -> int:
    """Seconds → the nearest tick (exact for any multiple of 1/960 s; halves round to even)."""
    return round(Fraction(value) * TICKS_PER_SECOND)


def split_evenly(total: int, parts: int) -> list[int]:
    """Start offsets of ``parts`` spans filling ``total`` ticks, as even as integers allow.

    Offset i is floor(i·total/parts): exact rational positions, each span within one tick of
    total/parts, and the spans always end exactly at ``total``.
    """
    if parts <= 0:
        raise ValueError("parts must be positive")
    return [i * total // parts for i in range(parts)]

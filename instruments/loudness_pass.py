"""The render's loudness, measured before it is mixed: a pass at the room's low rate.

The loudness target needs the integrated loudness of the whole mix before its one gain is
applied.  Mixing twice at the full rate doubled the render's cost, so the measuring pass runs at
1/``TAIL_DECIMATION`` of the sample rate, the rate of the courtyard's reflections and tail:
each note's K-weighted sound is decimated and scaled so that its energy is the full-rate
energy (``instruments.levels.k_weighted_low``: what lies above the low band — bell partials,
consonants, slaps — is short and adds in energy), the notes are summed per place at their gains,
heard through the same direct sound (its delay rounded to the low rate), reflections and tail
(``Room.new_wet``), and measured by a ``LoudnessMeter``.  The sound keeps its timing and its
low-frequency phases, so overlapping notes, reflections and tail interfere as in the render:
the measure stays within a few tenths of an LU of the rendered mix (tests/test_room.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from instruments.levels import k_weighted_low
from instruments.loudness import LoudnessMeter
from instruments.room import TAIL_DECIMATION, Room
from instruments.voice_models import NoteKey


class PlacedNote(Protocol):
    """What the measuring pass reads of a placed note (``instruments.mixer``'s plan)."""

    start: int
    key: NoteKey
    gain: float
    place: tuple[float, float]


def _place_sums(active: list[tuple[PlacedNote, np.ndarray]], b0: int, b1: int,
                ) -> dict[tuple[float, float], np.ndarray]:
    """The low-rate block [b0, b1) of the active notes, summed per place at their gains."""
    q = TAIL_DECIMATION
    groups: dict[tuple[float, float], np.ndarray] = {}
    for p, low in active:
        start = p.start // q
        lo, hi = max(b0, start), min(b1, start + low.size)
        if hi <= lo:
            continue
        buf = groups.get(p.place)
        if buf is None:
            buf = groups[p.place] = np.zeros(b1 - b0)
        buf[lo - b0:hi - b0] += low[lo - start:hi - start] * p.gain
    return groups


def measured_loudness(placed: Sequence[PlacedNote], total: int, block: int,
                      room: Room) -> float:
    """The integrated loudness (LUFS) of the placed notes' mix before any gain (``placed``
    sorted by start, ``total`` and ``block`` in full-rate samples); memory stays bounded."""
    q = TAIL_DECIMATION
    meter = LoudnessMeter(room.sample_rate / q)
    wet = room.new_wet() if room.has_tail else None
    span = room.max_delay // q + 1
    carry = np.zeros((2, span))
    active: list[tuple[PlacedNote, np.ndarray]] = []
    nxt = 0
    total_low, step = -(-total // q), max(1, block // q)
    for b0 in range(0, total_low, step):
        b1 = min(total_low, b0 + step)
        while nxt < len(placed) and placed[nxt].start // q < b1:
            active.append((placed[nxt], k_weighted_low(placed[nxt].key)))
            nxt += 1
        k = b1 - b0
        out = np.zeros((2, k + span))
        out[:, :span] += carry
        for place, buf in _place_sums(active, b0, b1).items():
            delay, left, right = room.taps(*place)[0]
            d = max(0, round(delay / q) - 1)  # the wet path's frame: one low sample early
            out[0, d:d + k] += buf * left
            out[1, d:d + k] += buf * right
            if wet is not None:
                wet.add(buf, place)
        if wet is not None:
            low = wet.low_block(k)
            if low is not None:
                out[:, :k] += low
        active = [(p, w) for p, w in active if p.start // q + w.size > b1]
        carry = out[:, k:].copy()
        meter.add(out[:, :k], weighted=True)
    return meter.integrated()

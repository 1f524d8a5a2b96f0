"""The sample tables a ``pyo`` output plays: the notes a show announces (``LiveNote``), their
rendering by the offline voices, and the choice of the nearest table for a note that has none.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cues.catalog import CATALOG
from instruments.voices import notes as voices

SUSTAIN_MARGIN_S = 0.5  # sustained tables run this much (and 25 %) past the longest note

#: one table: (pitch in Hz or None for a drum, velocity, samples, length in samples)
Table = tuple[float | None, int, Any, int]


@dataclass(frozen=True)
class LiveNote:
    """A note the show will play (what tables to prepare)."""

    instrument: str
    hz: float | None
    duration_s: float
    velocity: int


def channel_map() -> tuple[dict[int, str], dict[int, str]]:
    """(melodic instrument by channel, drum by GM key), as yuezheng's files lay them out."""
    melodic: dict[int, str] = {}
    drums: dict[int, str] = {}
    for inst in CATALOG.values():
        if inst.gm_key is not None:
            drums.setdefault(inst.gm_key, inst.name)
        else:
            melodic.setdefault(inst.channel, inst.name)
    return melodic, drums


def render_tables(notes: Iterable[LiveNote], sample_rate: int,
                  bell_interval: str) -> dict[str, list[Table]]:
    """Render every table the show needs, one per instrument at least (with numpy, before
    pyo's live server exists)."""
    longest: dict[tuple[str, float | None, int], float] = {}
    for n in notes:
        name = voices.voice_name(n.instrument)
        hz = round(n.hz, 6) if n.hz is not None and CATALOG[name].pitched else None
        which = (name, hz, int(n.velocity))
        longest[which] = max(longest.get(which, 0.0), float(n.duration_s))
    for name, inst in CATALOG.items():  # one table per instrument at least
        if not any(k[0] == name for k in longest):
            longest[(name, 261.63 if inst.pitched else None, 100)] = 2.0
    out: dict[str, list[Table]] = {}
    for (name, hz, velocity), dur in sorted(longest.items(), key=str):
        if voices.is_sustained(name):
            dur = dur * 1.25 + SUSTAIN_MARGIN_S
        key = voices.note_key(name, hz, dur, velocity, sample_rate,
                              bell_interval=bell_interval)
        arr = voices.render_key(key)
        out.setdefault(name, []).append((hz, velocity, arr, arr.size))
    return out


def nearest_table(tables: list[Table], hz: float | None, velocity: int) -> Table:
    """The table closest to ``hz`` (in cents), then to ``velocity``: what a sampler plays."""

    def distance(entry: Table) -> tuple[float, int]:
        t_hz, t_vel = entry[0], entry[1]
        cents = abs(1200 * math.log2(hz / t_hz)) if hz and t_hz else 0.0
        return (round(cents, 3), abs(t_vel - velocity))

    return min(tables, key=distance)


def fill_table(table: Any, arr: Any) -> None:
    """Copy ``arr`` into a pyo table in place (its buffer is writable)."""
    view = np.asarray(memoryview(table.getBuffer()))
    view[: arr.size] = arr

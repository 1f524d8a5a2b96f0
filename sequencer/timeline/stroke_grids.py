"""Where a compiled timeline has the drum strokes of each 射節: one equal grid per 射節 cue.

The drum pattern's strokes are spaced evenly across each 節 (:mod:`sequencer.timeline.she_jie`),
so every stroke of a 射節 cue lies on one grid: ``start_s + i · step_s``. ``check --rite`` looks
for a recording's strokes there, and every file written carries these grids in its provenance
(:mod:`sequencer.outputs.provenance`), so that ``check`` finds them without being told.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sequencer.timeline.events import Timeline
from sequencer.timeline.timebase import seconds


@dataclass(frozen=True)
class StrokeGrid:
    """Where a compiled timeline expects the strokes of one 射節 cue: its equal grid.

    Stroke ``i`` (0 ≤ i < ``count``) is due at ``start_s + i · step_s``; ``step_s`` is one 節
    (``jie_s``) divided by the strokes of a 節.
    """

    cue: str
    start_s: float
    end_s: float
    step_s: float
    count: int
    jie_s: float

    def expected(self) -> list[float]:
        return [self.start_s + i * self.step_s for i in range(self.count)]

    @property
    def per_jie(self) -> int:
        """Strokes in one 節."""
        return max(1, round(self.jie_s / self.step_s))

    def to_json(self) -> dict[str, Any]:
        return {"cue": self.cue, "start_s": self.start_s, "end_s": self.end_s,
                "step_s": self.step_s, "count": self.count, "jie_s": self.jie_s}

    @classmethod
    def from_json(cls, data: Any) -> StrokeGrid:
        """The grid a file's provenance gives (ValueError if it is not one)."""
        if not isinstance(data, dict):
            raise ValueError("a stroke grid must be an object")
        cue = data.get("cue")
        numbers = [data.get(k) for k in ("start_s", "end_s", "step_s", "jie_s")]
        count = data.get("count")
        if (not isinstance(cue, str)
                or not all(isinstance(v, int | float) and not isinstance(v, bool)
                           for v in numbers)
                or not isinstance(count, int) or isinstance(count, bool)):
            raise ValueError(f"not a stroke grid: {data!r}")
        start, end, step, jie = (float(v) for v in numbers if v is not None)
        if not (step > 0 and jie > 0 and 0 <= count <= 10_000_000 and end >= start >= 0):
            raise ValueError(f"not a stroke grid: {data!r}")
        return cls(cue, start, end, step, count, jie)


def stroke_grids(timeline: Timeline) -> list[StrokeGrid]:
    """The stroke grid of every 射節 cue of ``timeline`` that plays notes, in time order."""
    grids = []
    for span in timeline.spans:
        if span.kind != "射節" or not span.jie_ticks:
            continue
        jie = span.jie_ticks
        # the drum's strokes a 節 (the cue's unpitched notes, each on its own position of the
        # grid): counted, not read from their ticks, which a humanized drummer moves
        strokes = sum(1 for n in timeline.notes if n.cue == span.cue and n.semitones is None
                      and n.hz is None)
        per_jie = max(1, strokes // max(1, (span.end - span.start) // jie))
        grids.append(StrokeGrid(
            cue=span.cue, start_s=float(seconds(span.start)), end_s=float(seconds(span.end)),
            step_s=float(seconds(jie) / per_jie), jie_s=float(seconds(jie)),
            count=(span.end - span.start) // jie * per_jie,
        ))
    return grids

"""A "human" drummer for the hearing tests and benchmarks: the 鄉射's 射節 drum (its strokes as
the compiled timeline has them, on the built-in 鼓 voice, in the courtyard) struck by someone
whose spacing drifts and whose every stroke falls a little off.

The drummer's *grid* — where they mean each stroke — starts at ``LEAD_IN_S`` and its spacing
drifts linearly from the compiled one to ``1 + drift`` times it across the 射節 (a drummer who
slows down by 3 % over its six 耦 cycles); each stroke then falls a seeded uniform
``±jitter_s`` off the grid. The file holds the drum alone (the microphone is on it), rendered at
the strokes' exact times (``RenderNote.start_s``: seconds, not ticks). ``HumanDrum`` keeps both
the grid and the strokes, in the file's seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from cues.sheet.loader import load_rite
from instruments.mix.mixer import Mastering
from instruments.mix.render_files import write_audio
from sequencer.outputs.render import render_notes
from sequencer.timeline.compiler import compile_rite, make_settings, select_cues

LEAD_IN_S = 0.5  # silence before the first stroke
DRUM = "鼓"


@dataclass(frozen=True)
class HumanDrum:
    path: Path
    grid: np.ndarray  # where the drummer means each stroke (file seconds)
    strokes: np.ndarray  # where each stroke falls (file seconds)
    jie_s: float  # the compiled 節
    per_jie: int
    n: int  # 節 to a 耦 cycle

    @property
    def per_cycle(self) -> int:
        return self.n * self.per_jie

    def jie_grid(self) -> np.ndarray:
        """The drummer's grid at every 節 (its first stroke), in file seconds."""
        return self.grid[:: self.per_jie]


def she_jie_timeline(jie_seconds: str = "1", room: str | None = None):  # type: ignore[no-untyped-def]
    rite = select_cues(load_rite("xiang-she", ()), "she-jie", "she-jie")
    return compile_rite(rite, make_settings(rite.settings, {"jie_seconds": jie_seconds}))


def human_drum(path: Path, *, seed: int = 28, jitter_s: float = 0.020, drift: float = 0.03,
               jie_seconds: str = "1", room: str = "courtyard",
               pause: tuple[float, float] | None = None) -> HumanDrum:
    """Render the drummer (see the module docstring) to ``path`` (a 48 kHz WAV); ``pause``
    (from, to) in file seconds: the strokes meant then are not struck (the drum stops)."""
    timeline = she_jie_timeline(jie_seconds)
    span = timeline.span("she-jie")
    notes = [n for n in render_notes(timeline) if n.instrument == DRUM]
    notes.sort(key=lambda n: n.start_s)
    count = len(notes)
    spacing = float(jie_seconds) / 4
    steps = spacing * (1.0 + drift * np.arange(count) / max(1, count - 1))
    grid = LEAD_IN_S + np.concatenate([[0.0], np.cumsum(steps)[:-1]])
    rng = np.random.default_rng(seed)
    strokes = grid + rng.uniform(-jitter_s, jitter_s, count)
    human = [replace(n, start_s=float(t)) for n, t, g in zip(notes, strokes, grid, strict=True)
             if pause is None or not pause[0] <= g < pause[1]]
    write_audio(path, human, how=Mastering(room=room, loudness=-18.0))
    per_jie = count // (span.jie * span.cycles)
    return HumanDrum(path, grid, strokes, float(jie_seconds), per_jie, span.jie)

"""The drum's grid: where a 射節's strokes fall (``JieShape``), and the drummer's grid fitted to
the strokes heard and carried ahead (``DrumFit``) — pure arithmetic, no clock.

**The shape** of a 射節 is what the compiled timeline fixes: N 節 to a 耦's cycle, the first
``listen`` of them for listening, S strokes to a 節 spaced evenly across it (the drum pattern,
``sequencer.timeline.drums``), one 節 of ``jie_s`` seconds. Stroke ``s`` of 節 ``k`` of cycle
``c`` is the cue's stroke number ``(c·N + k − 1)·S + s``.

**The fit** places the drummer's strokes on ``t = a + b·i + c·i²`` (``i``: the stroke's number):
``b`` the stroke spacing, ``c`` its drift — a drummer slows down or hurries across a 射節. It is
the most probable grid given two things a human drum is known for: each stroke off its grid by
about ``JITTER_S`` (10 ms), and a spacing that drifts by up to ``DRIFT_PER_MINUTE`` (5 %) a
minute: ``c`` has a Gaussian prior of that size (a ridge), so a few strokes give a straight
grid and a long run shows its drift. Simulated on the 鄉射's 射節 (6 cycles of 5 節 of 4 strokes
a second, 300 drummers, each cycle placed 0.2 s ahead from the strokes heard 15 ms late),
against the drummer's own noiseless grid: with ±20 ms of uniform jitter and a 3 % drift across
the cycles, each cycle is off by 43, 37, 21, 15 and 15 ms (p99) in cycles 2 to 6; with ±5 ms, by
25, 14, 6, 4, 4 ms; with ±5 ms and no drift, by 7, 9, 6, 4, 4 ms — the drift a cycle cannot show
and the jitter of strokes not yet struck are what is left (docs/hearing.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

JITTER_S = 0.010  # how far a human stroke falls off its grid (one standard deviation)
DRIFT_PER_MINUTE = 0.05  # how much a human drum's spacing may drift in a minute (one sd)
RETURN_SPACING_SD = 0.005
"""When the drum comes back after a silence, the spacing it had is known from the strokes
before (its drift over a pause of seconds is a fraction of DRIFT_PER_MINUTE): the new fit
holds to it within 0.5 %, so that the two or three strokes heard when the held cycle is placed
do not set its 節 (two strokes ±5 ms apart put a 4 s cycle 0.1 s off)."""


@dataclass(frozen=True)
class JieShape:
    """A 射節 as the compiled timeline fixes it (see the module docstring)."""

    n: int  # 節 to a cycle
    listen: int  # listening 節 at the start of each cycle
    per_jie: int  # strokes to a 節
    jie_s: float  # one 節, compiled
    cycles: int
    fractions: tuple[float, ...]  # each stroke's place in its 節 (0 ≤ f < 1)

    @property
    def spacing_s(self) -> float:
        """The compiled stroke spacing (strokes are spaced evenly; the last to the next 節)."""
        return self.jie_s / self.per_jie

    @property
    def per_cycle(self) -> int:
        return self.n * self.per_jie

    @property
    def strokes(self) -> int:
        return self.cycles * self.per_cycle

    def place(self, index: int) -> tuple[int, int, int]:
        """(cycle, k, stroke in its 節) of the cue's stroke ``index``."""
        cycle, rest = divmod(index, self.per_cycle)
        k, s = divmod(rest, self.per_jie)
        return cycle, k + 1, s

    def index(self, cycle: int, k: int, stroke: int) -> int:
        return (cycle * self.n + k - 1) * self.per_jie + stroke

    def compiled_s(self, index: int) -> float:
        """The stroke's time in the compiled cue (seconds from its start)."""
        cycle, k, s = self.place(index)
        return (cycle * self.n + k - 1 + self.fractions[s]) * self.jie_s


@dataclass(frozen=True)
class Grid:
    """A fitted grid: the time of stroke ``i`` is ``a + b·(i − origin) + c·(i − origin)²``."""

    a: float
    b: float
    c: float
    origin: int
    count: int  # strokes it was fitted to

    def at(self, index: float) -> float:
        x = index - self.origin
        return self.a + self.b * x + self.c * x * x

    def spacing(self, index: float) -> float:
        """The stroke spacing at stroke ``index``."""
        return self.b + 2 * self.c * (index - self.origin)


class DrumFit:
    """Strokes heard, numbered, and the drummer's grid fitted to them (see the module
    docstring). ``add`` numbers a stroke by counting on from the last one at the spacing
    fitted so far; ``grid()`` fits."""

    def __init__(self, spacing_s: float, jitter_s: float = JITTER_S,
                 drift_per_minute: float = DRIFT_PER_MINUTE, spacing_sd: float = 0.25) -> None:
        self.prior_spacing = spacing_s
        self.spacing_sd = spacing_sd  # the prior spacing's uncertainty, a fraction of it
        self.jitter_s = jitter_s
        # the spacing's change per stroke that a drift of drift_per_minute means, halved: c
        strokes_a_minute = 60.0 / spacing_s
        self.curvature_sd = drift_per_minute * spacing_s / strokes_a_minute / 2.0
        self.indices: list[int] = []
        self.times: list[float] = []

    def __len__(self) -> int:
        return len(self.times)

    @property
    def last(self) -> tuple[int, float] | None:
        return (self.indices[-1], self.times[-1]) if self.times else None

    def number(self, t: float) -> int:
        """The number a stroke at ``t`` would get (the first is 0)."""
        if not self.times:
            return 0
        index, at = self.indices[-1], self.times[-1]
        grid = self.grid()
        spacing = grid.spacing(index) if grid is not None else self.prior_spacing
        return index + max(1, round((t - at) / spacing))

    def add(self, t: float, index: int | None = None) -> int:
        """Take a stroke at ``t`` (its number: counted on, unless given); its number."""
        number = self.number(t) if index is None else index
        self.indices.append(number)
        self.times.append(t)
        return number

    def grid(self, upto: float | None = None) -> Grid | None:
        """The most probable grid of the strokes heard (up to the time ``upto``): one stroke
        gives the compiled spacing from it; None before any."""
        pairs = [(i, t) for i, t in zip(self.indices, self.times, strict=True)
                 if upto is None or t <= upto]
        if not pairs:
            return None
        if len(pairs) == 1:
            return Grid(pairs[0][1], self.prior_spacing, 0.0, pairs[0][0], 1)
        idx = np.array([p[0] for p in pairs], dtype=np.float64)
        t = np.array([p[1] for p in pairs], dtype=np.float64)
        origin = int(idx[-1])
        x = idx - origin
        design = np.stack([np.ones_like(x), x, x * x], axis=1)
        # Gaussian priors in units of the jitter: the drift's size, and a pull of the spacing
        # towards the prior one — weak for the compiled spacing (a few strokes: a straight
        # grid at their spacing), firm for the drummer's own before a silence (RETURN_SPACING_SD)
        ridge = np.diag([0.0, (self.jitter_s / (self.spacing_sd * self.prior_spacing)) ** 2,
                         (self.jitter_s / self.curvature_sd) ** 2])
        target = design.T @ t + ridge @ np.array([0.0, self.prior_spacing, 0.0])
        a, b, c = np.linalg.solve(design.T @ design + ridge, target)
        return Grid(float(a), float(b), float(c), origin, len(pairs))


def cycle_line(grid: Grid, shape: JieShape, cycle: int) -> tuple[float, float]:
    """The straight grid a cycle keeps (「間若一」 inside it) closest to the drummer's: (its
    start, its 節) by least squares through the predicted start of each of its 節 and of the
    next cycle."""
    k = np.arange(shape.n + 1, dtype=np.float64)
    first = cycle * shape.per_cycle
    times = np.array([grid.at(first + j * shape.per_jie) for j in range(shape.n + 1)])
    slope, start = np.polyfit(k, times, 1)
    return float(start), float(slope)

"""Human timing for the drummers (the setting ``humanize_ms``, ``--humanize MS``): each drum's
strokes leave the tick by a measured kind of error.  Off by default: the strokes are then on
the tick, and 「間若一」 is exact.

What the error is like, measured: a professional drummer playing to a metronome is early or
late by 10–20 ms stroke by stroke, and the errors are not independent but long-range
correlated — their power spectrum falls as 1/f^β, the drummer drifts and comes back (Hennig et
al., "The Nature and Perception of Fluctuations in Human Musical Rhythms", PLoS ONE 6 (10):
e26457, 2011; listeners preferred such fluctuations to the independent ones of a sequencer's
"humanize").  Fujii et al. (Music Perception 28 (5): 491–503, 2011) measured professional
drummers' mean asynchrony with a metronome at 60–120 bpm within about 10 ms.

The model: a drum's stroke ``k`` is off by d_k = the sum of six first-order processes with
time constants of 1, 4, 16, 64, 256 and 1024 strokes, equal in variance — a spectrum that falls
as 1/f (β = 1, the flicker noise Hennig et al. name; the exponent of a given drummer is not
taken) over three decades of strokes — scaled so that its standard deviation is ``humanize_ms``
(10–20 ms: Hennig et al.'s drummer), clipped at ±3 standard deviations and rounded to the tick
(1/960 s).  Each drum is its own drummer (its own seed); the same timeline gives the same
errors.  No mean asynchrony is added: ``check`` fits the grid freely, and the rite's clock is
the drum.
"""

from __future__ import annotations

import math
import random
import zlib
from fractions import Fraction

from sequencer.timeline.timebase import TICKS_PER_SECOND

TIME_CONSTANTS = (1, 4, 16, 64, 256, 1024)  # strokes: the processes summed into 1/f noise
CLIP_SD = 3.0


class Drummer:
    """One drum's timing errors, stroke after stroke, in ticks (``humanize_ms`` its standard
    deviation; 0: every stroke on the tick)."""

    def __init__(self, instrument: str, humanize_ms: Fraction | float) -> None:
        self.sd_ms = float(humanize_ms)
        self._rng = random.Random(zlib.crc32(f"drummer {instrument}".encode()))
        self._poles = [math.exp(-1.0 / tau) for tau in TIME_CONSTANTS]
        share = 1.0 / math.sqrt(len(TIME_CONSTANTS))  # each process's standard deviation
        self._state = [self._rng.gauss(0.0, share) for _ in TIME_CONSTANTS]  # stationary start
        self._first = True

    def next_ms(self) -> float:
        """The next stroke's error in ms (unrounded)."""
        if self.sd_ms == 0:
            return 0.0
        share = 1.0 / math.sqrt(len(TIME_CONSTANTS))
        if self._first:
            self._first = False
        else:
            self._state = [a * x + math.sqrt(1.0 - a * a) * self._rng.gauss(0.0, share)
                           for a, x in zip(self._poles, self._state, strict=True)]
        unit = sum(self._state)  # standard deviation 1
        return self.sd_ms * max(-CLIP_SD, min(CLIP_SD, unit))

    def next_ticks(self) -> int:
        """The next stroke's error in ticks."""
        return round(self.next_ms() * TICKS_PER_SECOND / 1000.0)

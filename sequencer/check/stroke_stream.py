"""Strokes found as the sound comes in (``live --hear``): the onset detector of
:mod:`sequencer.check.onsets`, made to decide within a few milliseconds of each stroke.

The offline detector looks at 43 ms windows and decides on a stroke once its window has passed
(30–40 ms after it); a drummer's strip needs the stroke sooner. The stream keeps the offline
detector's two ideas and its fine stage:

1. **Detection: the stick's click rising.** The signal is high-passed at the fine stage's
   corners (1, 2, 4 and 8 kHz below a quarter of the rate,
   :func:`sequencer.check.onset_fine.fine_bands`, here filtered as the samples come); in the
   bands from ``DETECT_FROM_HZ`` up (2, 4 and 8 kHz: where a stick's click stands over a
   drum's ring, a 瑟's drone and a bell's hum) each millisecond's level is taken in dB (not
   below the band's loudest level less ``FLOOR_BELOW_DB``, that loudest level falling 3 dB a
   second: the hiss of a dying tail is no stroke, whatever the input's gain) and compared with
   the loudest level of the ``REFERENCE_S`` (100 ms) before it, up to ``GAP_S`` (2 ms) before
   it — as the offline rise curve does, less the band's own swing on noise. The sum over the
   bands of the dB above it is the stroke's strength: where it reaches ``THRESHOLD_DB`` (6) a
   stroke has come in. Measured on renders of the 射節 (the 鄉射's at 1 s 節 in the
   courtyard, the 大射's with 鼙, 建鼓 and 鑮 at 1.5 s, the 鄉射's dry at 2 s): every stroke
   scored 11.8 dB or more (the stroke after an accent, over its ring), and nothing else more
   than 1.1 — and with white noise added, every stroke still found at −70 dBFS (the 鄉射's
   drum; at −60 the 大射's), as the click in those bands is about −53 dBFS a millisecond.
2. **Timing: the fine stage.** ``LOOKAHEAD_S`` after the millisecond where the stroke came in,
   the band where it stands highest over the 15 ms before it is chosen and the stroke placed
   where that band's 0.25 ms envelope first rises 15 % of the way to its peak — the offline
   detector's own functions (:func:`clearest_band`, :func:`first_crossing`), on the same
   high-passed bands.
3. **Once.** After a stroke nothing counts for ``refractory_s`` (50 ms, or half the stroke
   spacing the caller expects): the rest of its attack, its echoes.

A stroke is decided ``LOOKAHEAD_S`` (3 ms) after the millisecond it came in: with JACK's
periods of 5.3 ms, within a period and a few milliseconds of the stroke. A gap in the input (a
period lost to an xrun) is passed over with ``gap``: the samples' count goes on, the levels
fall as they would have, and no stroke is found inside it (nor in the first milliseconds after
it, where a stroke that began in it would rise: its onset was not heard).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import signal

from sequencer.check.onset_fine import (
    FINE_HIGHPASS_HZ,
    FINE_WINDOW_S,
    clearest_band,
    first_crossing,
)

__all__ = ["DEFAULT_REFRACTORY_S", "THRESHOLD_DB", "Stroke", "StrokeStream"]

BIN_S = 0.001  # the detection's level is taken every millisecond
REFERENCE_S = 0.1  # a stroke rises over the loudest level of this long before it …
GAP_S = 0.002  # … which ends this long before it (a stroke's attack takes a millisecond or two)
THRESHOLD_DB = 6.0  # the least strength of a stroke (dB of rise, summed over the bands)
FLOOR_BELOW_DB = 50.0  # a band's level is not taken below its loudest (recently) less this
FLOOR_DECAY_DB_S = 3.0  # how fast that loudest level falls (a tail's last hiss stays under)
ABSOLUTE_FLOOR_DB = -120.0
DETECT_FROM_HZ = 2000.0  # the detection bands: the fine bands from this corner up
LOOKAHEAD_S = 0.003  # a stroke is placed this long after the millisecond it came in
DEFAULT_REFRACTORY_S = 0.05
_PRE_S = 0.015  # the level before a stroke (the fine stage), as offline
_BEFORE_S = 0.002  # the fine stage looks for the onset from this long before its millisecond
_KEEP_S = 0.08  # the high-passed samples kept for the fine stage


@dataclass(frozen=True)
class Stroke:
    """A stroke heard: where it starts (fractional samples from the stream's first sample),
    its strength (dB), and how many samples had come when it was decided."""

    at: float
    strength_db: float
    decided: int


class StrokeStream:
    """The strokes of a signal fed as it comes (see the module docstring)."""

    def __init__(self, rate: int, *, threshold_db: float = THRESHOLD_DB,
                 refractory_s: float = DEFAULT_REFRACTORY_S,
                 lookahead_s: float = LOOKAHEAD_S) -> None:
        if rate < 8000:
            raise ValueError(f"a sample rate of {rate} Hz is too low to hear a stroke's click")
        self.rate = rate
        self.threshold_db = threshold_db
        self.refractory = round(refractory_s * rate)
        self.lookahead = max(1, round(lookahead_s * rate))
        corners = [hz for hz in FINE_HIGHPASS_HZ if rate > 4 * hz]
        self.sos = [signal.butter(2, hz, btype="highpass", fs=rate, output="sos")
                    for hz in corners]
        self.zi = [np.zeros((s.shape[0], 2)) for s in self.sos]
        detect = [i for i, hz in enumerate(corners) if hz >= DETECT_FROM_HZ]
        self.detect = detect or [len(corners) - 1]
        self.bin = max(1, round(BIN_S * rate))
        # a band's level over noise swings by about this much (dB, one standard deviation: its
        # power in a bin averages bandwidth × bin independent values)
        width = np.array([rate / 2 - corners[i] for i in self.detect])
        self.noise_sd_db = 10.0 / np.log(10.0) * np.sqrt(rate / (width * self.bin))
        self.span = max(1, round(REFERENCE_S / BIN_S))
        self.gap_bins = max(1, round(GAP_S / BIN_S))
        self.recent: np.ndarray | None = None  # the last span + gap bins' levels, per band
        self.keep = round(_KEEP_S * rate)
        self.window = max(1, round(FINE_WINDOW_S * rate))
        self.pos = 0  # samples fed (and gaps passed over)
        self.kept = np.zeros((len(corners), 0))  # the last high-passed samples, per band
        self.kept_from = 0  # the sample index of kept[:, 0]
        self.partial = np.zeros((len(self.detect), 0))  # a bin's samples so far
        self.loud: np.ndarray | None = None  # each band's loudest level, falling slowly
        self.loud_decay = FLOOR_DECAY_DB_S * self.bin / rate
        self.quiet_until = 0  # no stroke before this sample (the last one's refractory)
        self.pending: tuple[int, float] | None = None  # (first sample of its bin, strength)

    def feed(self, samples: np.ndarray) -> list[Stroke]:
        """The strokes decided with these samples (mono, the next ones of the stream)."""
        x = np.asarray(samples, dtype=np.float64)
        if x.size == 0:
            return []
        bands = np.empty((len(self.sos), x.size))
        for i, sos in enumerate(self.sos):
            bands[i], self.zi[i] = signal.sosfilt(sos, x, zi=self.zi[i])
        self.kept = np.concatenate([self.kept, bands], axis=1)
        start = self.pos
        self.pos += x.size
        found: list[Stroke] = []
        det = np.concatenate([self.partial, bands[self.detect]], axis=1)
        whole = det.shape[1] // self.bin
        first_bin_at = start - self.partial.shape[1]
        self.partial = det[:, whole * self.bin:]
        if whole:
            power = (det[:, :whole * self.bin].reshape(len(self.detect), whole, self.bin) ** 2
                     ).mean(axis=2)
            levels = 10.0 * np.log10(power + 1e-30).T
            for j, level in enumerate(levels):
                self._bin(first_bin_at + j * self.bin, level)
                stroke = self._decide(first_bin_at + (j + 1) * self.bin)
                if stroke is not None:
                    found.append(stroke)
        stroke = self._decide(self.pos)
        if stroke is not None:
            found.append(stroke)
        if self.kept.shape[1] > self.keep:
            cut = self.kept.shape[1] - self.keep
            self.kept = self.kept[:, cut:]
            self.kept_from += cut
        return found

    def gap(self, frames: int) -> None:
        """``frames`` samples were lost (an xrun): pass over them (see the module docstring)."""
        if frames <= 0:
            return
        self.pending = None
        self.partial = self.partial[:, :0]
        self.pos += frames
        # the sound resumes mid-way: what rises over the level before the gap in the first
        # milliseconds after it came in during the gap (its onset was not heard)
        self.quiet_until = max(self.quiet_until, self.pos + (self.gap_bins + 1) * self.bin)
        self.kept = np.concatenate([self.kept, np.zeros((self.kept.shape[0], frames))],
                                   axis=1)[:, -self.keep:]
        self.kept_from = self.pos - self.kept.shape[1]
        if self.loud is not None:
            self.loud = self.loud - self.loud_decay * frames / self.bin

    def _bin(self, at: int, raw: np.ndarray) -> None:
        """One millisecond's levels (``at``: its first sample)."""
        loud = raw if self.loud is None else np.maximum(self.loud - self.loud_decay, raw)
        self.loud = loud
        level = np.maximum(raw, np.maximum(loud - FLOOR_BELOW_DB, ABSOLUTE_FLOOR_DB))
        if self.recent is None:
            self.recent = np.repeat(level[None, :], self.span + self.gap_bins, axis=0)
        reference = self.recent[: self.span].max(axis=0)
        self.recent = np.vstack([self.recent[1:], level[None, :]])
        strength = float(np.maximum(level - reference - self.noise_sd_db, 0.0).sum())
        if self.pending is not None:
            if strength > self.pending[1] and at < self.pending[0] + self.lookahead:
                self.pending = (self.pending[0], strength)
            return
        if strength >= self.threshold_db and at >= self.quiet_until:
            self.pending = (at, strength)

    def _decide(self, until: int) -> Stroke | None:
        """The pending stroke, placed, once its lookahead has come in (``until``: the
        samples come so far)."""
        if self.pending is None:
            return None
        at, strength = self.pending
        hi = at + self.bin + self.lookahead
        if until < hi:
            return None
        self.pending = None
        lo = at - round(_BEFORE_S * self.rate)
        pre = lo - round(_PRE_S * self.rate)
        base = self.kept_from
        w = self.window
        if pre - w < base:  # the stream's first moments: as much as there is
            pre = base + w
            lo = max(lo, pre + 1)
        bands = self.kept[:, : hi - base]
        band = clearest_band(bands, lo - base, hi - base, pre - base, w)
        onset = base + first_crossing(bands[band], lo - base, hi - base, pre - base, w,
                                      float(at - base))
        self.quiet_until = int(onset) + self.refractory
        return Stroke(float(onset), strength, self.pos)

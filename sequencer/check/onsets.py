"""Onset detection for the tempo checker: where do the strokes of a recording start?

The detector is built for struck and plucked material — 鼓 and 鼙 strokes, the 鼗's shake, 鐘,
鑮 and 磬 strikes, the 瑟's pluck — where the question is *when* each stroke begins, to within a
few milliseconds, and where each stroke must count **once**: a drum's pitch glide, the beating
of its membrane modes or the pellets of a 鼗 are not new strokes.  It works in three stages.

1. **Strength (decay-aware band rises).** The signal (mono, rumble removed by a 30 Hz
   high-pass) is cut into 43 ms Hann windows every 5.3 ms; each window's power is summed in
   octave bands (30–120 Hz, 120–250 Hz, then octaves up to the Nyquist) and taken in dB, with a
   floor at −100 dB (it was −80: at EBU R128's −23 LUFS the stick's click of a weak stroke in
   the 2–8 kHz bands sank to it, and a 1 s 節 lost 5 of 120 strokes in the courtyard).
   Each band keeps a *held peak*: the loudest level it reached, falling by
   ``HOLD_DECAY_DB_S`` (40 dB) a second.  A frame's onset strength is the sum over bands of the
   dB by which the band exceeds its held peak.  A sound's own decay — however it ripples, beats
   or glides — stays under its held peak (the envelope of decaying partials only falls), so it
   adds nothing; a new stroke rises above it.  A stroke Δt after an equal one rises by up to
   40·Δt dB a band.  Measured on each built-in struck voice alone, four strokes to a 1 s 節
   (0.25 s apart, the shortest spacing claimed): every stroke scores 20 dB or more (鑮 20.5, the
   rest 25 or more), a 鼗 pellet at most 13.6 (thin under the 14 dB threshold) and anything
   else between the strokes at most 4.
   The held peak is a running maximum of ``level + decay·t``, so the stage is vectorized.
   **The rise curve** (grid mode, below) is computed alongside: per band, the dB by which the
   level exceeds the loudest it was over the 0.11 s ending one window (43 ms) before, less the
   band's own swing on noise (one standard deviation: 4.3 dB·√(1.5 / its FFT bins), 2.7 dB in
   the lowest band, 0.3 in the highest), summed over bands.  In a full mix a stroke 0.25 s
   after an accented one hardly rises over the held peak that the accent's ring keeps up — in
   the 鄉射's 射節 of 1 s 節 the stroke after the accented 節 stroke (velocity 127 vs 88), over
   the drum's ring (its (1,1) mode, τ 0.45 s) and the 瑟 chord plucked with the accent, scored
   as little as 2.0–4.1 dB, and 1 s and 1.2 s 節 lost up to 30 of 120 strokes — but it does
   rise over the level just before it, where its stick's click is heard above 2 kHz (its rise
   is all in the 2–8 kHz bands; below, the ring and the 瑟 hide it): measured on real renders
   of that 射節 at 節 of 1, 1.2, 1.5, 2 and 4 s in both rooms, every stroke's rise is 9.1 dB or
   more (dry 14.5), anything else at most 2.9 (a courtyard reflection); a lone voice's strokes
   at 0.25 s 22 or more (the 鼗), its pellets 0; a minute or two of steady noise at most 3.9
   (white) and 5.9 (weighted to the lowest bands), where the strength curve reaches 8.8–9.2.
2. **Peak picking.** A frame is an onset where its strength reaches ``threshold_db`` (14 dB) and
   is the largest within ``min_gap_s`` (a refractory period: 50 ms by default).  Where the
   stroke spacing is known — from the timeline (``check --rite``), or from a first pass
   (:meth:`OnsetStrength.grid_onsets`) — the grid mode (:meth:`OnsetStrength.strokes`) picks
   peaks of the rise curve instead, at ``GRID_THRESHOLD_DB`` (7 dB), with half the spacing as
   the refractory period: nothing but the strongest onset of each half-spacing counts.  The
   rise peaks up to a window after the stroke came in; the fine stage starts from the frame of
   the largest strength in that window, where the stroke entered.  The rise curve compares
   with up to 0.15 s before its frame, so the grid mode serves strokes 0.25 s apart or more
   (a 1 s 節 of four); 0.2 s apart (a 0.8 s 節) it lost 15–30 of the 120 strokes.
3. **Fine (sample level).** Around each peak the signal is high-passed at 1, 2, 4 and 8 kHz
   (the corners below a quarter of the rate), and in each band a fine envelope is computed —
   the RMS over a centred 0.25 ms window.  The band where the stroke's peak stands highest
   over the level just before it (the 99th percentile over 15 ms, since an earlier stroke's
   tail swings) is used (the lowest of equals): a ringing string or drum fills the lower bands
   while a stick's click is broadband.  The onset is where that envelope first crosses 15 % of
   the way from that level to the stroke's peak, interpolated between samples.  On the renders
   above the worst stroke is 0.09 ms off.  Above 1 kHz only, as before, the stroke after the
   accent was read up to 11.4 ms off (1.5 s and 2 s 節: the 瑟 chord's envelope spikes, every
   15.3 ms, crossed the threshold before the stroke, or left it too little rise to be measured
   and the window's middle was taken).

Memory stays bounded for long files: :func:`onset_strength_of_file` streams the file in blocks
(soundfile), keeps only the two curves (two numbers per 5.3 ms: 22 MB for two
hours), and the fine stage reads back a few hundred milliseconds around each onset.  Time stays
within the limit's budget: a block's windows are transformed in chunks of 256 on one thread per
core, each band summed over its run of bins, the next block read and filtered meanwhile (2 hours
of 48 kHz mono in 16–18 s on 2 cores; 31 s before, on one thread).  A
constant bias (the same for every stroke) would not matter to the grid check, which looks only
at spacing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import ArrayLike
from scipy import fft, signal

from cues.errors import UserError
from instruments.processes.heap import keep_heap
from sequencer.check.onset_fine import (
    FINE_WINDOW_S,
    PREROLL_S,
    clearest_band,
    fine_bands,
    first_crossing,
)

__all__ = [
    "HOLD_DECAY_DB_S",
    "GRID_THRESHOLD_DB",
    "MIN_TIMED_SPACING_S",
    "THRESHOLD_DB",
    "OnsetStrength",
    "detect_onsets",
    "onset_strength",
    "onset_strength_of_file",
]

HOLD_DECAY_DB_S = 40.0  # how fast a band's held peak falls
THRESHOLD_DB = 14.0  # the least onset strength (dB of rise summed over bands) of a stroke
GRID_THRESHOLD_DB = 7.0  # the least rise (the rise curve, dB summed over bands): grid mode
MIN_TIMED_SPACING_S = 0.25  # the closest strokes the grid mode is measured to find (a 1 s 節)
DEFAULT_MIN_GAP_S = 0.05  # the refractory period when nothing better is known
_WINDOW_S = 0.0427  # analysis window (2048 samples at 48 kHz)
_HOPS_PER_WINDOW = 8
_BAND_EDGES_HZ = (30.0, 120.0, 250.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0, 16000.0)
_FLOOR_DB = -100.0  # under the quietest stroke's click at −23 LUFS, over 24-bit's noise
_BACKGROUND_S = 0.5  # the level before the signal: its first 0.5 s but its loudest quarter
_HIGHPASS_HZ = 30.0
_BLOCK_HOPS = 2048  # hops per streamed block (about 11 s at 48 kHz)
_AFTER_WINDOW_START_S = 0.010  # a stroke starts no earlier than this into its peak window
_LOOKAHEAD_S = 0.006  # … and peaks no later than this after the window's end
_PRE_S = 0.015  # the level before the stroke is measured over this long (two low periods)
_CAME_IN_DB = 3.0  # a stroke's strength at least this where it came in, else its rise tells
_RISE_LAG = _HOPS_PER_WINDOW  # the rise curve compares a frame with the levels one window
_RISE_SPAN = 20  # … and up to this many hops more before it (0.11 s at 48 kHz)
_HANN_NOISE_BINS = 1.5  # the Hann window's equivalent noise bandwidth, in bins
_SPECTRUM_FRAMES = 256  # frames a thread transforms at a time (2 MB of windows: in cache)

Reader = Callable[[int, int], np.ndarray]  # samples [start, stop) of the mono signal, one
# row per fine band (:func:`sequencer.check.onset_fine.fine_bands`)


@dataclass(frozen=True)
class OnsetStrength:
    """The onset strength of a whole signal, and how to read its samples back for the fine stage.

    ``strength[k]`` and ``rise[k]`` belong to the window starting at sample ``k * hop``.
    """

    strength: np.ndarray
    rise: np.ndarray
    hop: int
    n_fft: int
    sample_rate: int
    frames: int  # samples in the signal
    read: Reader

    @property
    def duration_s(self) -> float:
        return self.frames / self.sample_rate

    def onsets(self, start_s: float = 0.0, stop_s: float = float("inf"), *,
               min_gap_s: float = DEFAULT_MIN_GAP_S,
               threshold_db: float = THRESHOLD_DB) -> list[float]:
        """The onset times (seconds, ascending) in ``[start_s, stop_s)``."""
        if not min_gap_s >= 0:
            raise ValueError(f"min_gap_s must be >= 0, got {min_gap_s!r}")
        return self._picked(False, start_s, stop_s, min_gap_s, threshold_db)

    def strokes(self, start_s: float = 0.0, stop_s: float = float("inf"), *,
                spacing_s: float) -> list[float]:
        """The onsets (seconds, ascending) in ``[start_s, stop_s)`` of strokes that keep about
        ``spacing_s`` apart: the rise curve, ``GRID_THRESHOLD_DB``, refractory ``spacing_s / 2``.
        """
        if not spacing_s > 0:
            raise ValueError(f"spacing_s must be > 0, got {spacing_s!r}")
        return self._picked(True, start_s, stop_s, spacing_s / 2, GRID_THRESHOLD_DB)

    def _picked(self, grid: bool, start_s: float, stop_s: float, min_gap_s: float,
                threshold_db: float) -> list[float]:
        """The peaks of the strength curve (of the rise curve if ``grid``), refined."""
        curve = self.rise if grid else self.strength
        first = max(0, int((start_s * self.sample_rate - self.n_fft) // self.hop))
        last = min(curve.size, int(stop_s * self.sample_rate / self.hop) + 1) \
            if stop_s != float("inf") else curve.size
        if last - first < 1:
            return []
        s = curve[first:last]
        distance = max(1, round(min_gap_s * self.sample_rate / self.hop))
        peaks, _ = signal.find_peaks(np.concatenate([[0.0], s, [0.0]]), height=threshold_db,
                                     distance=distance)
        frames = [first + int(p) - 1 for p in peaks]
        if grid:
            frames = [self._came_in(f) for f in frames]
        times = sorted(self._refine(f) / self.sample_rate for f in frames)
        kept: list[float] = []
        for t in times:  # the fine stage may move two close peaks together: keep the first
            if start_s <= t < stop_s and (not kept or t - kept[-1] >= min_gap_s * 0.5):
                kept.append(t)
        return kept

    def grid_onsets(self) -> list[float]:
        """The onsets of a recording whose strokes keep one spacing, found in two passes.

        The first pass (``THRESHOLD_DB``, 50 ms) gives the spacing (the lower quartile of its
        intervals, as a missed stroke leaves a longer one); the second finds the strokes at
        that spacing (:meth:`strokes`: a quick stroke over the ring of the last one rises
        above the level just before it, if not above that ring's held peak).
        """
        first = self.onsets()
        if len(first) < 3:
            return first
        spacing = float(np.percentile(np.diff(first), 25))  # missed strokes leave longer gaps
        return self.strokes(spacing_s=max(2 * DEFAULT_MIN_GAP_S, spacing))

    def _came_in(self, frame: int) -> int:
        """The frame where the stroke whose rise peaks at ``frame`` came in: the rise peaks up
        to a window after it, the strength (a hop's rise) where it entered the window."""
        lo = max(0, frame - _RISE_LAG)
        came = lo + int(np.argmax(self.strength[lo:frame + 1]))
        if self.strength[came] >= _CAME_IN_DB:
            return came
        # it hardly rose over the held peak (a weak stroke in an accent's ring: its strength is
        # noise, whose largest frame may be anywhere): the frame where its rise reached half
        return lo + int(np.argmax(self.rise[lo:frame + 1] >= self.rise[frame] / 2))

    def _refine(self, frame: int) -> float:
        """The onset (fractional samples) of the stroke whose strength peaks at ``frame``."""
        # the strength peaks when the attack has entered the window's end: a stroke starts
        # 15–40 ms after the start of the window of its peak (measured on every voice)
        start = frame * self.hop
        sr = self.sample_rate
        lo = min(self.frames, start + round(_AFTER_WINDOW_START_S * sr)) if frame else 0
        hi = min(self.frames, start + self.n_fft + round(_LOOKAHEAD_S * sr))
        estimate = start + self.n_fft // 2
        pre_lo = max(0, lo - round(_PRE_S * sr))
        w = max(1, round(FINE_WINDOW_S * sr))
        offset = max(0, pre_lo - w)
        bands = self.read(offset, min(self.frames, hi + w))
        seg = bands[clearest_band(bands, lo - offset, hi - offset, pre_lo - offset, w)]
        return offset + first_crossing(seg, lo - offset, hi - offset, pre_lo - offset, w,
                                        float(estimate - offset))


class _StrengthStream:
    """The onset strength computed block by block: band levels, held peaks, rises."""

    def __init__(self, sample_rate: int, pool: Executor | None = None) -> None:
        self.pool = pool  # the windows' transforms shared out in chunks, if given
        self.n_fft = 1 << max(6, int(round(np.log2(sample_rate * _WINDOW_S))))
        self.hop = self.n_fft // _HOPS_PER_WINDOW
        self.window = np.hanning(self.n_fft).astype(np.float32)
        freqs = np.fft.rfftfreq(self.n_fft, 1.0 / sample_rate)
        edges = [e for e in _BAND_EDGES_HZ if e < sample_rate / 2] + [sample_rate / 2 + 1.0]
        band_of = np.digitize(freqs, edges) - 1  # -1: below the first band; ascending
        counts = np.bincount(band_of[band_of >= 0], minlength=len(edges) - 1)
        # each band is a run of bins (never empty: a band is 90 Hz wide or more, bins 33 Hz
        # apart at most, and the last holds the Nyquist bin): its first bin, and the last's end
        self.band_starts = np.flatnonzero(band_of >= 0)[0] + np.concatenate(
            [[0], np.cumsum(counts)[:-1]])
        self.bands_end = int(self.band_starts[0] + counts.sum())
        self.power_scale = 1.0 / (float(np.sum(self.window**2)) * self.n_fft / 2)
        # a band's level over noise swings by about this much (dB, one standard deviation: its
        # power sums ``bins`` / 1.5 independent values, the Hann window's noise bandwidth)
        bins = np.maximum(counts, 1.0)
        self.noise_sd_db = 10.0 / np.log(10.0) * np.sqrt(_HANN_NOISE_BINS / bins)
        self.sample_rate = sample_rate
        self.decay = HOLD_DECAY_DB_S * self.hop / sample_rate  # dB per hop
        self.sos = (signal.butter(2, _HIGHPASS_HZ, btype="highpass", fs=sample_rate,
                                  output="sos") if sample_rate > 4 * _HIGHPASS_HZ else None)
        self.zi = None if self.sos is None else np.zeros((self.sos.shape[0], 2))
        self.carry = np.zeros(0)
        self.frame = 0  # index of the next frame
        self.held: np.ndarray | None = None  # running max of level + decay·frame, per band
        self.recent: np.ndarray | None = None  # the last _RISE_LAG + _RISE_SPAN levels

    def feed(self, mono: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The strengths and the rises of the frames completed by ``mono`` (the next
        samples)."""
        return self.feed_filtered(self.highpass(mono))

    def highpass(self, mono: np.ndarray) -> np.ndarray:
        """The next samples with the rumble removed (the filter's state kept between calls)."""
        if self.sos is not None:
            mono, self.zi = signal.sosfilt(self.sos, mono, zi=self.zi)
        return mono

    def feed_filtered(self, mono: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`feed` of samples :meth:`highpass` has filtered."""
        x = np.concatenate([self.carry, mono])
        n = max(0, (x.size - self.n_fft) // self.hop + 1)
        self.carry = x[n * self.hop:]
        if n == 0:
            return np.zeros(0), np.zeros(0)
        # each sample made float32 once, not once in each of the 8 windows that hold it
        x32 = x[: (n - 1) * self.hop + self.n_fft].astype(np.float32)
        windows = sliding_window_view(x32, self.n_fft)[:: self.hop]
        chunks = [windows[i:i + _SPECTRUM_FRAMES] for i in range(0, n, _SPECTRUM_FRAMES)]
        done = self.pool.map(self._band_power, chunks) if self.pool else map(
            self._band_power, chunks)
        bands = np.vstack(list(done)).astype(np.float64) * self.power_scale
        level = np.maximum(10.0 * np.log10(bands + 1e-30), _FLOOR_DB)
        t = (self.frame + np.arange(n))[:, None] * self.decay
        lifted = np.maximum.accumulate(level + t, axis=0)
        if self.held is None:  # before the first frame: the background of the first 0.5 s
            head = level[: max(1, round(_BACKGROUND_S * self.sample_rate / self.hop))]
            self.held = np.percentile(head, 75, axis=0)
            self.recent = np.repeat(self.held[None, :], _RISE_LAG + _RISE_SPAN, axis=0)
        lifted = np.maximum(lifted, self.held)
        before = np.vstack([self.held[None, :], lifted[:-1]])
        self.held = lifted[-1]
        self.frame += n
        # the held peak at the previous frame, seen from this frame: lifted − decay·t
        strength = np.maximum(level + t - before, 0.0).sum(axis=1)
        return strength, self._rise(level)

    def _band_power(self, windows: np.ndarray) -> np.ndarray:
        """Each window's power (unscaled) summed in each band: (frames, bands), float32."""
        spectrum = fft.rfft(windows * self.window, axis=1)
        power = np.square(spectrum.real)
        power += np.square(spectrum.imag)
        return np.add.reduceat(power[:, : self.bands_end], self.band_starts, axis=1)

    def _rise(self, level: np.ndarray) -> np.ndarray:
        """Per frame, the dB summed over bands by which each band exceeds its loudest level
        over the ``_RISE_SPAN + 1`` frames ending ``_RISE_LAG`` frames before, less the band's
        noise swing (on noise the lowest bands, of a few bins, would rise by several dB)."""
        assert self.recent is not None
        both = np.vstack([self.recent, level])
        self.recent = both[-(_RISE_LAG + _RISE_SPAN):]
        reference = sliding_window_view(both, _RISE_SPAN + 1, axis=0)[: len(level)].max(axis=-1)
        return np.maximum(level - reference - self.noise_sd_db, 0.0).sum(axis=1)


def _strength(blocks: Iterable[np.ndarray],
              sample_rate: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The strength and rise curves of the signal in ``blocks``, its hop and window."""
    keep_heap()  # each block's arrays not page-faulted in afresh (a tenth of the time)
    with ThreadPoolExecutor(_threads()) as pool:
        stream = _StrengthStream(sample_rate, pool)
        filtered = (stream.highpass(block) for block in blocks)
        parts = []
        # the next block read and filtered on a thread while this one's windows are transformed
        coming = pool.submit(next, filtered, None)
        try:
            while (block := coming.result()) is not None:
                coming = pool.submit(next, filtered, None)
                parts.append(stream.feed_filtered(block))
        finally:
            if not coming.cancel():
                wait([coming])  # a generator is closed only when no thread runs it
            filtered.close()
    strength = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0)
    rise = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
    return strength, rise, stream.hop, stream.n_fft


def _threads() -> int:
    """The transforms' threads: one per core this process may run on."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)


def _mono(block: np.ndarray) -> np.ndarray:
    if block.ndim == 2 and block.shape[1] == 2:  # the mean's own numbers, five times faster
        return (block[:, 0] + block[:, 1]) / 2
    if block.ndim == 2 and block.shape[1] == 1:  # the mean of one is itself
        return block[:, 0]
    return block.mean(axis=1) if block.ndim == 2 else block


def onset_strength(samples: ArrayLike, sample_rate: float) -> OnsetStrength:
    """The onset strength of ``samples`` (1-D mono, or ``(frames, channels)`` mixed to mono)."""
    if not sample_rate > 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate!r}")
    x = np.asarray(samples, dtype=np.float64)
    x = _mono(x) if x.ndim == 2 else x
    if x.ndim != 1:
        raise ValueError(f"samples must be 1-D or (frames, channels), got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("samples contain NaN or infinite values")
    rate = int(round(sample_rate))
    step = _BLOCK_HOPS * 256
    strength, rise, hop, n_fft = _strength((x[i:i + step] for i in range(0, x.size, step)),
                                           rate)
    return OnsetStrength(strength, rise, hop, n_fft, rate, x.size,
                         lambda start, stop: fine_bands(x, start, stop, rate))


def onset_strength_of_file(path: str | Path) -> OnsetStrength:
    """The onset strength of an audio file, streamed in blocks (any format libsndfile reads).

    The file is read twice at most: once in blocks here, and a few hundred milliseconds around
    each onset by the fine stage.  Raises what soundfile raises for an unreadable file.
    """
    import soundfile

    with soundfile.SoundFile(str(path)) as f:
        rate, frames = int(f.samplerate), int(f.frames)

    def blocks() -> Iterator[np.ndarray]:
        done = 0
        with soundfile.SoundFile(str(path)) as f:
            for block in f.blocks(blocksize=_BLOCK_HOPS * 256, dtype="float64", always_2d=True):
                bad = np.flatnonzero(~np.isfinite(block).all(axis=1))
                if bad.size:  # one would make the whole strength curve NaN
                    at = done + int(bad[0])
                    raise UserError(f"{path}: sample {at:,} (at {at / rate:.3f} s) is not a "
                                    f"finite number (NaN or infinity)")
                done += len(block)
                yield _mono(block)

    def read(start: int, stop: int) -> np.ndarray:
        pre = max(0, start - round(PREROLL_S * rate))
        with soundfile.SoundFile(str(path)) as f:
            f.seek(pre)
            x = _mono(f.read(stop - pre, dtype="float64", always_2d=True))
        return fine_bands(x, start - pre, stop - pre, rate)

    strength, rise, hop, n_fft = _strength(blocks(), rate)
    return OnsetStrength(strength, rise, hop, n_fft, rate, frames, read)


def detect_onsets(
    samples: ArrayLike,
    sample_rate: float,
    *,
    min_gap_s: float = DEFAULT_MIN_GAP_S,
    threshold_db: float = THRESHOLD_DB,
    spacing_s: float | None = None,
) -> list[float]:
    """Return the onset times (seconds from the first sample, ascending) of ``samples``.

    ``samples`` is a 1-D array (mono) or a 2-D array ``(frames, channels)``, which is mixed to
    mono. ``min_gap_s`` is the refractory period (the shortest distance between two reported
    onsets); ``threshold_db`` the least onset strength (see the module docstring).  Given
    ``spacing_s`` (strokes that keep that spacing) the grid mode applies instead, and the other
    two are not used (:meth:`OnsetStrength.strokes`).
    """
    if not min_gap_s >= 0:
        raise ValueError(f"min_gap_s must be >= 0, got {min_gap_s!r}")
    strength = onset_strength(samples, sample_rate)
    if spacing_s is not None:
        return strength.strokes(spacing_s=spacing_s)
    return strength.onsets(min_gap_s=min_gap_s, threshold_db=threshold_db)

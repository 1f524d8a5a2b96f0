"""Onset detection for the tempo checker: where do the strokes of a recording start?

The detector is built for struck and plucked material — 鼓 and 鼙 strokes, the 鼗's shake, 鐘,
鑮 and 磬 strikes, the 瑟's pluck — where the question is *when* each stroke begins, to within a
few milliseconds, and where each stroke must count **once**: a drum's pitch glide, the beating
of its membrane modes or the pellets of a 鼗 are not new strokes.  It works in three stages.

1. **Strength (decay-aware band rises).** The signal (mono, rumble removed by a 30 Hz
   high-pass) is cut into 43 ms Hann windows every 5.3 ms; each window's power is summed in
   octave bands (30–120 Hz, 120–250 Hz, then octaves up to the Nyquist) and taken in dB, with a
   floor at −80 dB.  Each band keeps a *held peak*: the loudest level it reached, falling by
   ``HOLD_DECAY_DB_S`` (40 dB) a second.  A frame's onset strength is the sum over bands of the
   dB by which the band exceeds its held peak.  A sound's own decay — however it ripples, beats
   or glides — stays under its held peak (the envelope of decaying partials only falls), so it
   adds nothing; a new stroke rises above it.  A stroke Δt after an equal one rises by up to
   40·Δt dB a band: at the shortest stroke spacing (a 1 s 節 of four strokes, 0.25 s) a stroke of
   every built-in voice scores 17 dB or more, a 鼗 pellet at most 11 and a decay ripple about 1.
   The held peak is a running maximum of ``level + decay·t``, so the stage is vectorized.
2. **Peak picking.** A frame is an onset where its strength reaches ``threshold_db`` (14 dB) and
   is the largest within ``min_gap_s`` (a refractory period: 50 ms by default).  Where the
   stroke spacing is known — from the timeline (``check --rite``), or from a first pass
   (:meth:`OnsetStrength.grid_onsets`) — the refractory period is half of it and the threshold
   ``GRID_THRESHOLD_DB`` (7 dB): a quick stroke over the ring of the last one in a full mix
   rises less, and nothing but the strongest onset of each half-spacing counts.
3. **Fine (sample level).** Around each peak a fine envelope is computed — the RMS over a
   centred 0.25 ms window — and the onset is where that envelope, coming up from the level just
   before the stroke (its 90th percentile over 6 ms, since an earlier stroke's low tail swings),
   first crosses 15 % of the way to the stroke's peak, interpolated between samples.

Memory stays bounded for long files: :func:`onset_strength_of_file` streams the file in blocks
(soundfile), keeps only the strength curve (one number per 5.3 ms: 11 MB for two hours), and the
fine stage reads back a few hundred milliseconds around each onset.  A constant bias (the same
for every stroke) would not matter to the grid check, which looks only at spacing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import ArrayLike
from scipy import fft, signal

from cues.errors import UserError

__all__ = [
    "HOLD_DECAY_DB_S",
    "GRID_THRESHOLD_DB",
    "THRESHOLD_DB",
    "OnsetStrength",
    "detect_onsets",
    "onset_strength",
    "onset_strength_of_file",
]

HOLD_DECAY_DB_S = 40.0  # how fast a band's held peak falls
THRESHOLD_DB = 14.0  # the least onset strength (dB of rise summed over bands) of a stroke
GRID_THRESHOLD_DB = 7.0  # … where the refractory period is half the expected stroke spacing
DEFAULT_MIN_GAP_S = 0.05  # the refractory period when nothing better is known
_WINDOW_S = 0.0427  # analysis window (2048 samples at 48 kHz)
_HOPS_PER_WINDOW = 8
_BAND_EDGES_HZ = (30.0, 120.0, 250.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0, 16000.0)
_FLOOR_DB = -80.0
_BACKGROUND_S = 0.5  # the level before the signal: its first 0.5 s but its loudest quarter
_HIGHPASS_HZ = 30.0
_FINE_HIGHPASS_HZ = 1000.0  # the fine stage listens above the low tails of earlier strokes
_BLOCK_HOPS = 2048  # hops per streamed block (about 11 s at 48 kHz)
_PREROLL_S = 0.2  # the high-pass settles over this much audio before a fine window
_FINE_WINDOW_S = 0.00025  # fine RMS window
_RISE_FRACTION = 0.15  # where on the way from pre-level to peak the onset is placed
_AFTER_WINDOW_START_S = 0.010  # a stroke starts no earlier than this into its peak window
_LOOKAHEAD_S = 0.006  # … and peaks no later than this after the window's end
_PRE_S = 0.015  # the level before the stroke is measured over this long (two low periods)
_PRE_PERCENTILE = 99.0  # … as nearly its top: the tail of an earlier stroke swings

Reader = Callable[[int, int], np.ndarray]  # samples [start, stop) of the mono signal


@dataclass(frozen=True)
class OnsetStrength:
    """The onset strength of a whole signal, and how to read its samples back for the fine stage.

    ``strength[k]`` belongs to the window starting at sample ``k * hop``.
    """

    strength: np.ndarray
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
        first = max(0, int((start_s * self.sample_rate - self.n_fft) // self.hop))
        last = min(self.strength.size, int(stop_s * self.sample_rate / self.hop) + 1) \
            if stop_s != float("inf") else self.strength.size
        if last - first < 1:
            return []
        s = self.strength[first:last]
        distance = max(1, round(min_gap_s * self.sample_rate / self.hop))
        peaks, _ = signal.find_peaks(np.concatenate([[0.0], s, [0.0]]), height=threshold_db,
                                     distance=distance)
        times = sorted(self._refine(first + p - 1) / self.sample_rate for p in peaks)
        kept: list[float] = []
        for t in times:  # the fine stage may move two close peaks together: keep the first
            if start_s <= t < stop_s and (not kept or t - kept[-1] >= min_gap_s * 0.5):
                kept.append(t)
        return kept

    def grid_onsets(self) -> list[float]:
        """The onsets of a recording whose strokes keep one spacing, found in two passes.

        The first pass (``THRESHOLD_DB``, 50 ms) gives the spacing (the lower quartile of its
        intervals, as a missed stroke leaves a longer one); the
        second ties the refractory period to half of it, which allows the lower
        ``GRID_THRESHOLD_DB`` (a quick stroke over the ring of the last one rises less).
        """
        first = self.onsets()
        if len(first) < 3:
            return first
        spacing = float(np.percentile(np.diff(first), 25))  # missed strokes leave longer gaps
        return self.onsets(min_gap_s=max(DEFAULT_MIN_GAP_S, spacing / 2),
                           threshold_db=GRID_THRESHOLD_DB)

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
        w = max(1, round(_FINE_WINDOW_S * sr))
        offset = max(0, pre_lo - w)
        seg = self.read(offset, min(self.frames, hi + w))
        return offset + _first_crossing(seg, lo - offset, hi - offset, pre_lo - offset, w,
                                        float(estimate - offset))


def _first_crossing(seg: np.ndarray, a: int, b: int, pre: int, w: int, fallback: float) -> float:
    """Where the fine envelope of ``seg`` first crosses the rise threshold in ``[a, b)``."""
    if b - a < 2:
        return fallback
    env = np.sqrt(np.convolve(seg * seg, np.ones(w) / w, mode="same"))
    pre_level = float(np.percentile(env[pre:a], _PRE_PERCENTILE)) if a > pre else 0.0
    peak_at = a + int(np.argmax(env[a:b]))
    peak = float(env[peak_at])
    if peak <= pre_level * 1.5 or peak <= 0.0:
        return fallback
    threshold = pre_level + _RISE_FRACTION * (peak - pre_level)
    # the first crossing after a, not the last one before the peak: a low drum's envelope
    # swings with its waveform, dipping below the threshold between cycles after the stroke
    above = np.nonzero(env[a : peak_at + 1] >= threshold)[0]
    if above.size and above[0] == 0 and peak_at > a and a > pre:
        # already above at a: an earlier stroke still rings (none can at the signal's first
        # sample: a stroke there starts there). The stroke starts after the
        # quietest moment (2 ms RMS) before its peak; measure the rise from there
        smooth = np.sqrt(np.convolve(seg * seg, np.ones(8 * w) / (8 * w), mode="same"))
        a = a + int(np.argmin(smooth[a:peak_at]))
        threshold = float(smooth[a]) + _RISE_FRACTION * (peak - float(smooth[a]))
        above = np.nonzero(env[a : peak_at + 1] >= threshold)[0]
    if above.size == 0 or above[0] == 0:  # still above threshold at a: the best is a
        return float(a)
    j = a + int(above[0]) - 1  # the last sample below threshold before the first crossing
    e0, e1 = float(env[j]), float(env[j + 1])
    frac = (threshold - e0) / (e1 - e0) if e1 > e0 else 0.0
    return j + min(max(frac, 0.0), 1.0)


class _StrengthStream:
    """The onset strength computed block by block: band levels, held peaks, rises."""

    def __init__(self, sample_rate: int) -> None:
        self.n_fft = 1 << max(6, int(round(np.log2(sample_rate * _WINDOW_S))))
        self.hop = self.n_fft // _HOPS_PER_WINDOW
        self.window = np.hanning(self.n_fft).astype(np.float32)
        freqs = np.fft.rfftfreq(self.n_fft, 1.0 / sample_rate)
        edges = [e for e in _BAND_EDGES_HZ if e < sample_rate / 2] + [sample_rate / 2 + 1.0]
        band_of = np.digitize(freqs, edges) - 1  # -1: below the first band
        self.bands_matrix = (band_of[:, None] == np.arange(len(edges) - 1)[None, :]).astype(
            np.float32)
        self.power_scale = 1.0 / (float(np.sum(self.window**2)) * self.n_fft / 2)
        self.sample_rate = sample_rate
        self.decay = HOLD_DECAY_DB_S * self.hop / sample_rate  # dB per hop
        self.sos = (signal.butter(2, _HIGHPASS_HZ, btype="highpass", fs=sample_rate,
                                  output="sos") if sample_rate > 4 * _HIGHPASS_HZ else None)
        self.zi = None if self.sos is None else np.zeros((self.sos.shape[0], 2))
        self.carry = np.zeros(0)
        self.frame = 0  # index of the next frame
        self.held: np.ndarray | None = None  # running max of level + decay·frame, per band

    def feed(self, mono: np.ndarray) -> np.ndarray:
        """The strengths of the frames completed by ``mono`` (the next samples)."""
        if self.sos is not None:
            mono, self.zi = signal.sosfilt(self.sos, mono, zi=self.zi)
        x = np.concatenate([self.carry, mono])
        n = max(0, (x.size - self.n_fft) // self.hop + 1)
        self.carry = x[n * self.hop:]
        if n == 0:
            return np.zeros(0)
        windows = sliding_window_view(x[: (n - 1) * self.hop + self.n_fft], self.n_fft)
        spectrum = fft.rfft(windows[:: self.hop].astype(np.float32) * self.window, axis=1)
        power = spectrum.real**2 + spectrum.imag**2
        bands = (power @ self.bands_matrix).astype(np.float64) * self.power_scale
        level = np.maximum(10.0 * np.log10(bands + 1e-30), _FLOOR_DB)
        t = (self.frame + np.arange(n))[:, None] * self.decay
        lifted = np.maximum.accumulate(level + t, axis=0)
        if self.held is None:  # before the first frame: the background of the first 0.5 s
            head = level[: max(1, round(_BACKGROUND_S * self.sample_rate / self.hop))]
            self.held = np.percentile(head, 75, axis=0)
        lifted = np.maximum(lifted, self.held)
        before = np.vstack([self.held[None, :], lifted[:-1]])
        self.held = lifted[-1]
        self.frame += n
        # the held peak at the previous frame, seen from this frame: lifted − decay·t
        return np.maximum(level + t - before, 0.0).sum(axis=1)


def _strength(blocks: Iterable[np.ndarray], sample_rate: int) -> tuple[np.ndarray, int, int]:
    stream = _StrengthStream(sample_rate)
    parts = [stream.feed(block) for block in blocks]
    strength = np.concatenate(parts) if parts else np.zeros(0)
    return strength, stream.hop, stream.n_fft


def _mono(block: np.ndarray) -> np.ndarray:
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
    strength, hop, n_fft = _strength((x[i:i + step] for i in range(0, x.size, step)), rate)
    return OnsetStrength(strength, hop, n_fft, rate, x.size,
                         lambda start, stop: _highpassed(x, start, stop, rate))


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
        pre = max(0, start - round(_PREROLL_S * rate))
        with soundfile.SoundFile(str(path)) as f:
            f.seek(pre)
            x = _mono(f.read(stop - pre, dtype="float64", always_2d=True))
        return _highpassed(x, start - pre, stop - pre, rate)

    strength, hop, n_fft = _strength(blocks(), rate)
    return OnsetStrength(strength, hop, n_fft, rate, frames, read)


def _highpassed(x: np.ndarray, start: int, stop: int, rate: int) -> np.ndarray:
    """Samples [start, stop) of ``x`` high-passed for the fine stage (``_FINE_HIGHPASS_HZ``),
    the filter settled on up to 0.2 s before."""
    pre = max(0, start - round(_PREROLL_S * rate))
    seg = x[pre:stop]
    if rate > 4 * _FINE_HIGHPASS_HZ and seg.size:
        sos = signal.butter(2, _FINE_HIGHPASS_HZ, btype="highpass", fs=rate, output="sos")
        seg = signal.sosfilt(sos, seg - seg[: max(1, start - pre)].mean())
    return seg[start - pre:]


def detect_onsets(
    samples: ArrayLike,
    sample_rate: float,
    *,
    min_gap_s: float = DEFAULT_MIN_GAP_S,
    threshold_db: float = THRESHOLD_DB,
) -> list[float]:
    """Return the onset times (seconds from the first sample, ascending) of ``samples``.

    ``samples`` is a 1-D array (mono) or a 2-D array ``(frames, channels)``, which is mixed to
    mono. ``min_gap_s`` is the refractory period (the shortest distance between two reported
    onsets); ``threshold_db`` the least onset strength (see the module docstring).
    """
    if not min_gap_s >= 0:
        raise ValueError(f"min_gap_s must be >= 0, got {min_gap_s!r}")
    return onset_strength(samples, sample_rate).onsets(min_gap_s=min_gap_s,
                                                      threshold_db=threshold_db)

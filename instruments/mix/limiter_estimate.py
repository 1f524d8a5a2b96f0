"""The master limiter's work, predicted before the mix: the gain that meets the loudness target
in the written file, limiting included.

The loudness target is the integrated loudness (BS.1770) of the written file, after the
limiter (ceiling −1 dBTP true peak, ``instruments.mix.limiter``), as EBU R128 normalisers with a
limiter measure it.  Where the limiter works — the 射節's drums at −18 LUFS peak ~6 dB over the
ceiling, the whole 鄉射's loudest chords ~10 dB — it takes loudness off (0.5–1.4 LU); so the
gain is raised until the limited mix meets the target, predicted on cheap arrays instead of
mixing twice:

* the mix's peak per limiter chunk and ear (``PeakEstimate``): every note's largest sample²
  per chunk (``chunk_squares``, measured with its energies; sample peaks, where the limiter
  reads true peaks: a few tenths of a dB under them) at its direct path's and its ground
  reflection's gains, added as independent sounds add, √(Σ peak²) (the sum of the peaks, a
  strict bound, is 1.2–1.3× the mixed peak on the loudest chunks of a 射節 and predicted twice
  the loss; √(Σ peak²) is 0.9–0.97× it, median);
* the limiter's own node arithmetic (``PeakLimiter.nodes``) on the requirements those peaks
  give at a trial gain; its mean gain² per chunk, spread over the estimate's 10 ms energy
  frames, takes the loudness off those frames;
* a few rounds of gain ← gain · 10^((target − predicted) / 20) (``limited_gain``).

Where the peaks never reach the ceiling nothing changes.  Memory: one number per chunk
(5.3 ms) and per frame (10 ms), float32: about 4 MB an hour.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from instruments.mix.limiter import LIMITER_CEILING, LIMITER_CHUNK, PeakLimiter, chunk_peaks

ROUNDS = 8
TOLERANCE_LU = 0.05


def chunk_squares(wave: np.ndarray) -> np.ndarray:
    """A note's largest sample² per ``LIMITER_CHUNK`` samples from its first one (float32;
    the peaks as the limiter takes them, ``instruments.mix.limiter.chunk_peaks``)."""
    peaks = chunk_peaks(wave).astype(np.float32)
    return peaks * peaks


class PeakEstimate:
    """The mix's expected peak per limiter chunk (the larger ear's √(Σ peak²)), open over a
    window of chunks that slides forward as the energy frames' does; finished chunks are kept
    (float32)."""

    def __init__(self) -> None:
        self.first = 0
        self.open = np.zeros((2, 4096))  # per ear: Σ peak²
        self.done: list[np.ndarray] = []

    def add(self, squares: np.ndarray, left: float, right: float, at_sample: int) -> None:
        """A note's ``chunk_squares`` (its peaks²) at the gains ``left`` and ``right`` from
        ``at_sample`` on (its chunks straddle two of the mix's unless they fall on the
        grid)."""
        j, offset = divmod(at_sample, LIMITER_CHUNK)
        if offset:
            spread = np.empty(squares.size + 1, dtype=np.float32)
            spread[0] = squares[0]
            np.maximum(squares[1:], squares[:-1], out=spread[1:-1])
            spread[-1] = squares[-1]
            squares = spread
        i = j - self.first
        if i + squares.size > self.open.shape[1]:
            grown = np.zeros((2, max(i + squares.size, 2 * self.open.shape[1])))
            grown[:, :self.open.shape[1]] = self.open
            self.open = grown
        self.open[0, i:i + squares.size] += squares * (left * left)
        self.open[1, i:i + squares.size] += squares * (right * right)

    def finish_before(self, sample: int) -> None:
        """Every chunk before ``sample`` is complete: keep it and drop it from the window."""
        todo = sample // LIMITER_CHUNK - self.first
        while todo > 0:  # a window at a time (a long silence is stepped through, not held)
            count = min(todo, self.open.shape[1])
            self.done.append(np.sqrt(self.open[:, :count].max(axis=0)).astype(np.float32))
            self.open = np.concatenate([self.open[:, count:], np.zeros((2, count))], axis=1)
            self.first += count
            todo -= count

    def peaks(self, chunks: int) -> np.ndarray:
        """The peaks of the first ``chunks`` chunks (all of them finished first)."""
        self.finish_before((self.first + self.open.shape[1]) * LIMITER_CHUNK)
        out = np.concatenate(self.done) if self.done else np.zeros(0, dtype=np.float32)
        if out.size < chunks:
            out = np.concatenate([out, np.zeros(chunks - out.size, dtype=np.float32)])
        return out[:chunks]


def frame_gain_squared(peaks: np.ndarray, gain: float, sample_rate: int, frame: int,
                       frames: int) -> np.ndarray | None:
    """The limiter's mean gain² over each ``frame``-sample frame when the mix (whose peak per
    chunk is ``peaks``) is played at ``gain``; None where it does not limit at all."""
    over = np.flatnonzero(peaks > LIMITER_CEILING / gain)
    if over.size == 0:
        return None
    release = PeakLimiter(sample_rate).release
    settle = math.ceil(math.log(1e-9) / math.log(release))  # chunks to release fully
    per_chunk = np.ones(max(peaks.size, -(-frames * frame // LIMITER_CHUNK)))
    # the limiter where it works: each run of limited chunks (runs closer than ``settle``
    # joined) from the chunk before it to ``settle`` after it, from unity gain
    for run in np.split(over, np.flatnonzero(np.diff(over) > settle) + 1):
        lo, hi = max(0, int(run[0]) - 1), min(peaks.size, int(run[-1]) + settle)
        peak = peaks[lo:hi].astype(np.float64) * gain
        with np.errstate(divide="ignore"):
            req = np.minimum(1.0, np.where(peak > 0, LIMITER_CEILING / peak, 1.0))
        nodes = PeakLimiter(sample_rate).nodes(req, 1.0)
        if nodes is not None:
            a, b = nodes[:-1], nodes[1:]
            per_chunk[lo:hi] = (a * a + a * b + b * b) / 3.0  # the linear ramp's mean square
    csum = np.concatenate([[0.0], np.cumsum(per_chunk) * LIMITER_CHUNK])
    at = np.interp(np.arange(frames + 1) * frame, np.arange(csum.size) * LIMITER_CHUNK, csum)
    return np.diff(at) / frame


def limited_gain(loudness_of: Callable[[np.ndarray | None], float], peaks: np.ndarray,
                 gain: float, target: float, sample_rate: int, frame: int,
                 frames: int) -> float:
    """The gain whose limited mix meets ``target``: ``loudness_of(g²)`` is the mix's
    loudness at unity gain with the frames weighted by g² (None: unweighted), ``gain`` the
    gain the unlimited mix would take."""
    for _ in range(ROUNDS):
        weights = frame_gain_squared(peaks, gain, sample_rate, frame, frames)
        if weights is None:
            return gain
        predicted = loudness_of(weights) + 20.0 * np.log10(gain)
        if abs(target - predicted) < TOLERANCE_LU:
            break
        gain *= 10.0 ** ((target - predicted) / 20.0)
    return gain

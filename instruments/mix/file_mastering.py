"""A finished stereo file brought to a loudness target the way a render is mastered: another
engine's output (FluidSynth's) meets ``--loudness`` like the built-in voices.

Two passes over the file, block by block (memory bounded by a block):

1. measure: its BS.1770 K-weighted energy per 10 ms frame (``LoudnessMeter``) and its sample
   peak per limiter chunk;
2. write: each block through the DC blocker (``DC_BLOCK_HZ``; the built-in voices' notes are
   made without DC instead, ``instruments.voices.synthesis``), times
   the gain that brings the *limited* file to the target (``limited_gain``: the limiter
   predicted from the peaks, as for a render), through the true-peak limiter
   (``instruments.mix.limiter``, one block of look-ahead), to ``write``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from instruments.mix.limiter import LIMITER_CHUNK, PeakLimiter, chunk_peaks
from instruments.mix.limiter_estimate import limited_gain
from instruments.mix.loudness import FRAME_S, LoudnessMeter, loudness_of_frames

DC_BLOCK_HZ = 5.0
"""the DC blocker's corner: a one-pole high-pass (−0.01 dB at 40 Hz)"""

Blocks = Callable[[], Iterable[np.ndarray]]
"""a fresh pass over the file: (n, channels) float64 blocks, n a multiple of LIMITER_CHUNK but
for the last"""


def file_gain(blocks: Blocks, sample_rate: int, target: float) -> float | None:
    """The gain that brings the file, limited, to ``target`` LUFS; None for a silent file."""
    meter = LoudnessMeter(sample_rate)
    peaks = []
    for block in blocks():
        meter.add(block.T)
        peaks.append(chunk_peaks(block.T))
    frames = np.concatenate(meter.frames + [np.array([meter.pending.sum()])])
    loud = loudness_of_frames(frames, sample_rate)
    if not math.isfinite(loud):
        return None
    chunk = np.concatenate(peaks) if peaks else np.zeros(0)
    frame = round(FRAME_S * sample_rate)
    return limited_gain(lambda w: loudness_of_frames(frames if w is None else frames * w,
                                                     sample_rate),
                        chunk, 10.0 ** ((target - loud) / 20.0), target, sample_rate, frame,
                        frames.size)


def mastered(blocks: Blocks, sample_rate: int, gain: float) -> Iterator[np.ndarray]:
    """The file's blocks (n, channels) float64, DC-blocked, at ``gain``, true-peak limited."""
    from scipy.signal import lfilter

    pole = math.exp(-2.0 * math.pi * DC_BLOCK_HZ / sample_rate)
    b, a = np.array([(1 + pole) / 2, -(1 + pole) / 2]), np.array([1.0, -pole])
    limiter = PeakLimiter(sample_rate)
    state: np.ndarray | None = None
    pending: tuple[np.ndarray, np.ndarray] | None = None
    for block in blocks():
        x = block.T
        if state is None:
            state = np.zeros((x.shape[0], 1))
        y, state = lfilter(b, a, x, axis=1, zi=state)
        y *= gain
        req = PeakLimiter.required(y, 1.0)
        req = np.ones(-(-y.shape[1] // LIMITER_CHUNK)) if req is None else req
        if pending is not None:
            yield _limited(limiter, *pending, float(req[0]))
        pending = (y, req)
    if pending is not None:
        yield _limited(limiter, *pending, 1.0)


def _limited(limiter: PeakLimiter, y: np.ndarray, req: np.ndarray, next_req: float,
             ) -> np.ndarray:
    g = limiter.gains(req, next_req, y.shape[1])
    return (y if g is None else y * g).T

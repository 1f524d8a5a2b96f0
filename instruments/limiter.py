"""The master limiter: a deterministic, chunked look-ahead peak limiter.

It works on chunks of ``LIMITER_CHUNK`` (256) samples with ceiling ``LIMITER_CEILING`` (0.98):
the required gain of chunk j is r_j = min(1, ceiling / peak_j); the gain at the boundary before
chunk j is g_j = min(r_{j−1}, r_j, 1 − (1 − g_{j−1})·e^(−256/(0.25·sr))) (instant attack one
chunk ahead, 250 ms exponential release) and it is interpolated linearly inside each chunk.
Both ends of every chunk are ≤ its r_j, so no output sample exceeds the ceiling.  The mixer
(``instruments.mixer``) takes peak_j over the mix and every stem and applies one gain curve to
all of them.
"""

from __future__ import annotations

import math

import numpy as np

LIMITER_CEILING = 0.98
LIMITER_CHUNK = 256
LIMITER_RELEASE_S = 0.25


class PeakLimiter:
    """The chunked look-ahead peak limiter described in the module docstring: ``required``
    gives a block's per-chunk requirements, ``gains`` turns them, block after block in order,
    into per-sample gains."""

    def __init__(self, sample_rate: int) -> None:
        self.release = math.exp(-LIMITER_CHUNK / (LIMITER_RELEASE_S * sample_rate))
        self.gain = 1.0  # the gain at the boundary before the next chunk to be processed
        self.started = False
        self.limited_chunks = 0
        self.min_gain = 1.0

    @staticmethod
    def required(x: np.ndarray, scale: float) -> np.ndarray | None:
        """Per-chunk gains r_j that keep ``x·scale`` (shape (2, n)) under the ceiling; None
        when no chunk needs any reduction."""
        peaks = np.maximum(np.abs(x[0]), np.abs(x[1]))
        if float(peaks.max(initial=0.0)) * scale <= LIMITER_CEILING:
            return None
        n = peaks.size
        m = -(-n // LIMITER_CHUNK)
        padded = np.zeros(m * LIMITER_CHUNK)
        padded[:n] = peaks
        peak = padded.reshape(m, LIMITER_CHUNK).max(axis=1) * scale
        with np.errstate(divide="ignore"):
            return np.minimum(1.0, np.where(peak > 0, LIMITER_CEILING / peak, 1.0))

    def gains(self, req: np.ndarray, next_req: float, n: int) -> np.ndarray | None:
        """Per-sample gains for ``n`` samples whose chunks require ``req``; ``next_req`` is the
        requirement of the chunk after them (1.0 at the end of the stream).  None means
        unity gain throughout."""
        m = req.size
        reqs = np.append(req, next_req)
        first = self.gain if self.started else min(1.0, float(req[0]))
        self.started = True
        if first == 1.0 and bool(np.all(reqs == 1.0)):
            self.gain = 1.0
            return None
        nodes = np.empty(m + 1)
        nodes[0] = g = first
        for j in range(1, m + 1):
            g = min(float(reqs[j - 1]), float(reqs[j]), 1.0 - (1.0 - g) * self.release)
            nodes[j] = g
        self.gain = g
        self.limited_chunks += int(np.count_nonzero(np.minimum(nodes[:-1], nodes[1:]) < 1.0))
        self.min_gain = min(self.min_gain, float(nodes.min()))
        frac = np.arange(LIMITER_CHUNK, dtype=np.float64) / LIMITER_CHUNK
        curve = nodes[:-1, None] + (nodes[1:, None] - nodes[:-1, None]) * frac[None, :]
        return curve.reshape(-1)[:n]

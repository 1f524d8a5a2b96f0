"""The master limiter: a deterministic, chunked look-ahead true-peak limiter.

It works on chunks of ``LIMITER_CHUNK`` (256) samples with the ceiling ``LIMITER_CEILING_DBTP``
(−1 dBTP, EBU R128's maximum true peak), held ``TRUE_PEAK_MARGIN_DB`` under it: peak_j is the
chunk's *true* peak, its largest |sample| 4× oversampled (``chunk_true_peaks``: ITU-R BS.1770-4
Annex 2 measures a true peak so; a chunk whose samples stay 3 dB under the ceiling does not
reach it between them and is not oversampled); the required gain of chunk j is
r_j = min(1, ceiling / peak_j); the gain at the boundary before
chunk j is g_j = min(r_{j−1}, r_j, 1 − (1 − g_{j−1})·e^(−256/(0.25·sr))) (instant attack one
chunk ahead, 250 ms exponential release) and it is interpolated linearly inside each chunk.
Both ends of every chunk are ≤ its r_j, so no output sample exceeds the ceiling.  The mixer
(``instruments.mix.mixer``) takes peak_j over the mix and every stem and applies one gain curve to
all of them.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

LIMITER_CEILING_DBTP = -1.0
TRUE_PEAK_MARGIN_DB = 0.1
"""what the limiter keeps under the ceiling: the gain's ramp inside a chunk and a chunk's edge
(its true peak read from its own block's samples) move a true peak by less"""
LIMITER_CEILING = 10.0 ** ((LIMITER_CEILING_DBTP - TRUE_PEAK_MARGIN_DB) / 20.0)
"""the true peak the limiter holds the mix under (linear: 0.881)"""
TRUE_PEAK_OVERSAMPLING = 4
OVERSHOOT_BOUND = 10.0 ** (3.0 / 20.0)
"""a chunk whose samples stay 3 dB under the ceiling is not oversampled (a true peak of real
audio at 48 kHz is within ~1 dB of its sample peak: the renders' largest overshoot measured
0.3 dB)"""
_CONTEXT = 16  # samples either side of a chunk that its oversampling reads
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
        peak = chunk_true_peaks(x, LIMITER_CEILING / scale) * scale
        if float(peak.max(initial=0.0)) <= LIMITER_CEILING:
            return None
        with np.errstate(divide="ignore"):
            return np.minimum(1.0, np.where(peak > 0, LIMITER_CEILING / peak, 1.0))

    def gains(self, req: np.ndarray, next_req: float, n: int) -> np.ndarray | None:
        """Per-sample gains for ``n`` samples whose chunks require ``req``; ``next_req`` is the
        requirement of the chunk after them (1.0 at the end of the stream).  None means
        unity gain throughout."""
        nodes = self.nodes(req, next_req)
        return None if nodes is None else curve(nodes, n)

    def nodes(self, req: np.ndarray, next_req: float) -> np.ndarray | None:
        """The gains at the chunk boundaries of a block whose chunks require ``req`` (m + 1 of
        them, ``curve`` interpolates them), block after block in order; None: unity gain."""
        m = req.size
        reqs = np.append(req, next_req)
        first = self.gain if self.started else min(1.0, float(req[0]))
        self.started = True
        if first == 1.0 and bool(np.all(reqs == 1.0)):
            self.gain = 1.0
            return None
        # g_j = min(r_{j-1}, r_j, 1 - (1 - g_{j-1})·release), in depths h = 1 - g:
        # h_j = max(c_j, h_{j-1}·release) with c_j = 1 - min(r_{j-1}, r_j), a running maximum
        # of c_i·release^(j-i), computed at once in logarithms
        c = np.concatenate([[1.0 - first], 1.0 - np.minimum(reqs[:-1], reqs[1:])])
        slope = np.arange(m + 1) * math.log(self.release)
        with np.errstate(divide="ignore"):
            peak = np.maximum.accumulate(np.log(np.maximum(c, 0.0)) - slope)
        nodes = np.minimum(1.0, 1.0 - np.exp(peak + slope))
        nodes[0] = first
        self.gain = float(nodes[-1])
        self.limited_chunks += int(np.count_nonzero(np.minimum(nodes[:-1], nodes[1:]) < 1.0))
        self.min_gain = min(self.min_gain, float(nodes.min()))
        return nodes


def chunk_peaks(x: np.ndarray) -> np.ndarray:
    """The largest |sample| of each ``LIMITER_CHUNK`` of ``x`` (shape (n,), or (channels, n):
    over all channels), from its first sample on (float64, the last chunk possibly short)."""
    x = x.reshape(-1, x.shape[-1])
    n = x.shape[1]
    whole = n // LIMITER_CHUNK * LIMITER_CHUNK
    peak = np.zeros(-(-n // LIMITER_CHUNK))
    if whole:
        chunks = x[:, :whole].reshape(x.shape[0], -1, LIMITER_CHUNK)
        peak[:whole // LIMITER_CHUNK] = np.maximum(chunks.max(axis=(0, 2)),
                                                   -chunks.min(axis=(0, 2)))
    if whole < n:
        peak[-1] = float(np.abs(x[:, whole:]).max())
    return peak


_RESAMPLER_TAPS = [
    -1.4319646207876959e-18, -0.001130597579184462, -0.0021031678617178763,
    -0.0019016679348927714, 3.709041094023897e-18, 0.002926514108961888, 0.005018530923471822,
    0.004252319066855107, -6.989122304361602e-18, -0.005932051843783716,
    -0.009790833971198894, -0.008026125461265495, 1.1214237028997423e-17,
    0.010605090076805452, 0.017115155028976117, 0.013753959070631754,
    -1.6183952382363033e-17, -0.017579165251157446, -0.027983277010958117,
    -0.02221988556769976, 2.1564830647503023e-17, 0.02786691635952088, 0.044051484099836266,
    0.034795254750361125, -2.6922559134588193e-17, -0.04342308644211485,
    -0.06868853498568138, -0.05442549106878252, 3.1772982945983186e-17, 0.06897233879817498,
    0.11058973007292547, 0.08928334853204617, -3.564465655764782e-17, -0.12013435015454692,
    -0.20188442282305535, -0.17397774297154053, 3.8143133424221195e-17, 0.2965428196043752,
    0.6334760868798734, 0.8996325710102085, 1.000636565089112]
"""The first half and the middle of the oversampling's low-pass (it is symmetric): scipy's
``resample_poly(x, 4, 1)`` filter, ``firwin(81, 1/4, window=("kaiser", 5.0))`` × 4, written
out so that a render imports no ``scipy.signal`` (1.1 CPU-s); ``tests/test_limiter.py`` holds
them and ``_oversampled`` equal to scipy's."""
_RESAMPLER_DELAY = 41  # resample_poly's: half the filter and its one sample of pre-padding


@cache
def _resampler_phases() -> np.ndarray:
    """(up, taps per phase) float64: the filter (after resample_poly's one zero) split into
    its phases, each reversed — upfirdn's arrangement."""
    up = TRUE_PEAK_OVERSAMPLING
    h = np.array([0.0, *_RESAMPLER_TAPS, *_RESAMPLER_TAPS[-2::-1]])
    padded = np.zeros(h.size + (-h.size % up))
    padded[:h.size] = h
    return np.ascontiguousarray(padded.reshape(-1, up).T[:, ::-1])


def _oversampled(windows: np.ndarray) -> np.ndarray:
    """``resample_poly(windows, 4, 1, axis=-1)`` over each window's middle ``LIMITER_CHUNK``
    samples (``_CONTEXT`` either side are read; float64, ``TRUE_PEAK_OVERSAMPLING`` × 256
    samples): the same numbers — each output the sum of its phase's taps times the samples
    under them, added oldest first from zero, as upfirdn adds them."""
    up = TRUE_PEAK_OVERSAMPLING
    phases = _resampler_phases()
    per = phases.shape[1]
    count = windows.shape[-1] - (per - 1)  # the inputs under a whole filter, from per − 1 on
    acc = np.zeros((*windows.shape[:-1], count, up))
    for j in range(per):
        acc += windows[..., j:j + count, None] * phases[:, j]
    start = _RESAMPLER_DELAY + up * _CONTEXT - up * (per - 1)
    return acc.reshape(*windows.shape[:-1], count * up)[..., start:start + up * LIMITER_CHUNK]


def chunk_true_peaks(x: np.ndarray, level: float) -> np.ndarray:
    """The true peak of each ``LIMITER_CHUNK`` of ``x`` ((n,) or (channels, n)): its largest
    |sample| 4× oversampled (``TRUE_PEAK_OVERSAMPLING``, scipy's polyphase resampling with its
    Kaiser window) where its sample peak reaches ``level`` / ``OVERSHOOT_BOUND``, its sample
    peak elsewhere (under ``level`` either way).  A chunk is oversampled with ``_CONTEXT``
    samples of its neighbours in ``x`` (zeros past its ends)."""
    peak = chunk_peaks(x)
    hot = np.flatnonzero(peak > level / OVERSHOOT_BOUND)
    if hot.size == 0:
        return peak
    x = x.reshape(-1, x.shape[-1])
    c, n = _CONTEXT, x.shape[1]
    width = LIMITER_CHUNK + 2 * c
    windows = np.zeros((x.shape[0], hot.size, width))
    for row, j in enumerate(hot.tolist()):  # chunk j with c samples either side
        lo, hi = j * LIMITER_CHUNK - c, min(n, (j + 1) * LIMITER_CHUNK + c)
        windows[:, row, max(0, -lo):hi - lo] = x[:, max(0, lo):hi]
    fine = _oversampled(windows)
    peak[hot] = np.maximum(peak[hot], np.abs(fine).max(axis=(0, 2)))
    return peak


def true_peak(x: np.ndarray) -> float:
    """The true peak of ``x`` ((n,) or (channels, n)): its largest |sample| 4× oversampled."""
    from scipy.signal import resample_poly

    x = np.asarray(x, dtype=np.float64).reshape(-1, np.shape(x)[-1])
    return float(np.abs(resample_poly(x, TRUE_PEAK_OVERSAMPLING, 1, axis=1)).max(initial=0.0))


def curve(nodes: np.ndarray, n: int) -> np.ndarray:
    """Per-sample float32 gains for ``n`` samples from a block's boundary gains (``nodes``),
    linear inside each chunk."""
    frac = np.arange(LIMITER_CHUNK, dtype=np.float64) / LIMITER_CHUNK
    ramp = nodes[:-1, None] + (nodes[1:, None] - nodes[:-1, None]) * frac[None, :]
    return ramp.reshape(-1)[:n].astype(np.float32)

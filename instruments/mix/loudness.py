"""Loudness as ITU-R BS.1770-4 measures it: K-weighting, 400 ms gated blocks, LUFS.

``integrated_loudness(x, sr)`` is the standard measurement of a whole signal (mono or (n, ch)),
checked against pyloudnorm in the tests; ``LoudnessMeter`` measures the same, block by block
(K-filter state carried over, energies kept per ``FRAME_S`` frame), so that the mixer can
measure a render of any length in bounded memory.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

ABSOLUTE_GATE_LUFS = -70.0
RELATIVE_GATE_LU = -10.0
BLOCK_S = 0.4
STEP_S = 0.1  # 75 % overlap
FRAME_S = 0.01  # the mixer's energy frames: ten to a step
SILENCE_LUFS = -math.inf


@cache
def k_weighting(sample_rate: int) -> np.ndarray:
    """The K-weighting filter as second-order sections at ``sample_rate``: a +4 dB high shelf
    at 1500 Hz (Q 1/√2), then a 38 Hz high-pass (Q 0.5), as biquads of the audio-EQ cookbook —
    pyloudnorm's parameters (the tests compare the two meters)."""
    sections = []
    for kind, fc, q, gain_db in (("shelf", 1500.0, 1 / math.sqrt(2), 4.0),
                                 ("highpass", 38.0, 0.5, 0.0)):
        a_gain = 10.0 ** (gain_db / 40.0)
        w0 = 2.0 * math.pi * fc / sample_rate
        alpha = math.sin(w0) / (2.0 * q)
        cos = math.cos(w0)
        if kind == "shelf":
            sq = 2.0 * math.sqrt(a_gain) * alpha
            b = [a_gain * ((a_gain + 1) + (a_gain - 1) * cos + sq),
                 -2 * a_gain * ((a_gain - 1) + (a_gain + 1) * cos),
                 a_gain * ((a_gain + 1) + (a_gain - 1) * cos - sq)]
            a = [(a_gain + 1) - (a_gain - 1) * cos + sq, 2 * ((a_gain - 1) - (a_gain + 1) * cos),
                 (a_gain + 1) - (a_gain - 1) * cos - sq]
        else:
            b = [(1 + cos) / 2, -(1 + cos), (1 + cos) / 2]
            a = [1 + alpha, -2 * cos, 1 - alpha]
        sections.append([v / a[0] for v in b] + [1.0] + [v / a[0] for v in a[1:]])
    return np.array(sections)


def k_power_response(freqs: np.ndarray, sample_rate: int) -> np.ndarray:
    """|H(f)|² of the K-weighting filter (``k_weighting``) at the frequencies ``freqs`` (Hz)."""
    z = np.exp(-1j * 2.0 * np.pi * np.asarray(freqs, dtype=np.float64) / sample_rate)
    power = np.ones(z.shape)
    for b0, b1, b2, _, a1, a2 in k_weighting(sample_rate):
        h = (b0 + b1 * z + b2 * z * z) / (1.0 + a1 * z + a2 * z * z)
        power *= h.real ** 2 + h.imag ** 2
    return power


def k_weighted(x: np.ndarray, sample_rate: int) -> np.ndarray:
    """``x`` (samples along axis 0) through the K-weighting filter, as float64."""
    from scipy.signal import sosfilt

    return sosfilt(k_weighting(sample_rate), np.asarray(x, dtype=np.float64), axis=0)


def _to_lufs(power: float) -> float:
    return -0.691 + 10.0 * math.log10(power) if power > 0 else SILENCE_LUFS


def gated_loudness(block_powers: np.ndarray) -> float:
    """Integrated loudness (LUFS) of 400 ms blocks of the given mean-square powers (summed over
    the channels): the absolute gate at −70 LUFS, then the relative gate 10 LU under the rest."""
    p = np.asarray(block_powers, dtype=np.float64)
    p = p[p > 10.0 ** ((ABSOLUTE_GATE_LUFS + 0.691) / 10.0)]
    if p.size == 0:
        return SILENCE_LUFS
    relative = _to_lufs(float(p.mean())) + RELATIVE_GATE_LU
    p = p[p > 10.0 ** ((relative + 0.691) / 10.0)]
    return _to_lufs(float(p.mean())) if p.size else SILENCE_LUFS


def integrated_loudness(x: np.ndarray, sample_rate: int) -> float:
    """BS.1770-4 integrated loudness (LUFS) of ``x``: mono (n,) or (n, channels), channel
    weights 1 (left, right, centre)."""
    y = k_weighted(x, sample_rate)
    if y.ndim == 1:
        y = y[:, None]
    block, step = round(BLOCK_S * sample_rate), round(STEP_S * sample_rate)
    if y.shape[0] < block:
        return SILENCE_LUFS
    sq = np.concatenate([np.zeros((1, y.shape[1])), np.cumsum(y * y, axis=0)])
    starts = np.arange(0, y.shape[0] - block + 1, step)
    powers = ((sq[starts + block] - sq[starts]) / block).sum(axis=1)
    return gated_loudness(powers)


class LoudnessMeter:
    """BS.1770 integrated loudness of a stream of (channels, n) blocks."""

    def __init__(self, sample_rate: int, channels: int = 2) -> None:
        from scipy.signal import sosfilt_zi

        self.sample_rate = sample_rate
        self.sos = k_weighting(sample_rate)
        self.state = np.repeat(sosfilt_zi(self.sos)[:, None, :] * 0.0, channels, axis=1)
        self.frame = round(FRAME_S * sample_rate)
        self.pending = np.zeros(0)
        self.frames: list[np.ndarray] = []

    def add(self, block: np.ndarray, weighted: bool = False) -> None:
        """The next (channels, n) samples (``weighted``: already K-weighted)."""
        from scipy.signal import sosfilt

        if weighted:
            y = block
        else:
            y, self.state = sosfilt(self.sos, block, axis=1, zi=self.state)
        energy = np.concatenate([self.pending, (y * y).sum(axis=0)])
        whole = energy.size // self.frame * self.frame
        self.frames.append(energy[:whole].reshape(-1, self.frame).sum(axis=1))
        self.pending = energy[whole:]

    def integrated(self) -> float:
        """The integrated loudness (LUFS) of everything added so far."""
        frames = np.concatenate(self.frames + [np.array([self.pending.sum()])])
        return loudness_of_frames(frames, self.sample_rate)


def loudness_of_frames(frames: np.ndarray, sample_rate: int) -> float:
    """Integrated loudness of a signal given as its K-weighted energy per FRAME_S frame
    (summed over the channels)."""
    per_step = round(STEP_S / FRAME_S)
    per_block = round(BLOCK_S / FRAME_S)
    if frames.size < per_block:
        frames = np.concatenate([frames, np.zeros(per_block - frames.size)])
    csum = np.concatenate([[0.0], np.cumsum(frames)])
    starts = np.arange(0, frames.size - per_block + 1, per_step)
    block = round(BLOCK_S * sample_rate)
    return gated_loudness((csum[starts + per_block] - csum[starts]) / block)

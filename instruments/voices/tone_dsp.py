"""numpy building blocks of the sustained and plucked voices (歌 笙 和 管 瑟).

These voices are computed directly with numpy (as all voices are): a note of them is a
few vector operations on cached parts (a harmonic wavetable read at a vibrato phase, shaped
noise, envelopes), which is what keeps a rite with hundreds of distinct sung syllables fast.
Everything here is deterministic: noise comes from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
from scipy.fft import next_fast_len

TABLE_SIZE = 1 << 14  # samples of one period of a harmonic wavetable, read without
# interpolation: the phase error (≤ 2π/16384) leaves the error noise ≥ 70 dB under the tone


def seed_of(*parts: object) -> int:
    """A stable seed from the parts' text (the same in any process)."""
    return zlib.crc32(repr(parts).encode("utf-8"))


def wavetable(amps: np.ndarray) -> np.ndarray:
    """One period (``TABLE_SIZE`` samples, float32) of Σ amps[h−1]·sin(2π h x)."""
    spec = np.zeros(TABLE_SIZE // 2 + 1, dtype=np.complex128)
    spec[1:len(amps) + 1] = -0.5j * TABLE_SIZE * np.asarray(amps, dtype=np.float64)
    return np.fft.irfft(spec, TABLE_SIZE).astype(np.float32)


def loop_length(f: float, sr: int, periods_multiple: int = 1) -> tuple[int, float]:
    """(L, f′): a loop of L samples (sr ≤ L < 2 sr) holding a whole number of periods of f′,
    that number a multiple of ``periods_multiple``, with f′ the nearest such frequency to
    ``f`` (L is chosen among all candidates to make |f′ − f| smallest: well under 0.01
    cent).  A held tone without vibrato is then its loop repeated."""
    lengths = np.arange(sr, 2 * sr, dtype=np.float64)
    cycles = f * lengths / sr / periods_multiple
    best = int(np.argmin(np.abs(cycles - np.round(cycles))))
    length = int(lengths[best])
    return length, round(float(cycles[best])) * periods_multiple * sr / length


def unit_rms(amps: np.ndarray) -> np.ndarray:
    """Harmonic amplitudes scaled so their tone has an RMS of 1."""
    power = float(np.sum(np.square(amps))) / 2.0
    return amps / math.sqrt(power) if power > 0 else amps


def table_index(phase: np.ndarray) -> np.ndarray:
    """The wavetable sample nearest to each ``phase`` (in periods, ≥ 0)."""
    index = (phase * TABLE_SIZE).astype(np.int64)
    index &= TABLE_SIZE - 1
    return index


def read_table(table: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """The wavetable read at ``phase`` (in periods, ≥ 0), nearest sample."""
    return table[table_index(phase)]


def vibrato_phase(f0: float, n: int, sr: int, rate: float, depth: float, t0: float
                  ) -> np.ndarray:
    """Phase (in periods) of a tone at ``f0`` whose frequency is f0·(1 + depth·sin(2π·rate·t))
    with t the absolute time (the note starts at ``t0``): the integral in closed form, so a
    phrase's consecutive notes share one unbroken vibrato."""
    k = np.arange(n, dtype=np.float64)
    w = np.float32(2 * math.pi * rate / sr)
    swing = np.cos(k.astype(np.float32) * w + np.float32(2 * math.pi * rate * t0))
    swing -= np.float32(math.cos(2 * math.pi * rate * t0))
    swing *= np.float32(f0 * depth / (2 * math.pi * rate))
    k *= f0 / sr
    k -= swing
    return k


def shaped_noise(n: int, sr: int, gain: Callable[[np.ndarray], np.ndarray], seed: int
                 ) -> np.ndarray:
    """``n`` samples of white noise whose spectrum is shaped by ``gain(freqs)`` (FFT filter),
    scaled to an RMS of 1; when ``n`` is a fast FFT size the result loops seamlessly."""
    size = next_fast_len(n, real=True)
    rng = np.random.default_rng(seed)
    spec = np.fft.rfft(rng.standard_normal(size))
    spec *= gain(np.fft.rfftfreq(size, 1.0 / sr))
    out = np.fft.irfft(spec, size)[:n]
    rms = float(np.sqrt(np.mean(np.square(out))))
    return out / rms if rms > 0 else out


def resonance(freqs: np.ndarray, fc: float, bw: float) -> np.ndarray:
    """|H| of a two-pole resonance at ``fc`` (bandwidth ``bw``), 1 at 0 Hz: one formant of a
    cascade (all-pole) vocal-tract or pipe model."""
    pole = complex(-math.pi * bw, 2 * math.pi * fc)
    s = 2j * math.pi * np.asarray(freqs, dtype=np.float64)
    return abs(pole) ** 2 / np.abs((s - pole) * (s - pole.conjugate()))


def cascade(freqs: np.ndarray, formants: Sequence[tuple[float, float]]) -> np.ndarray:
    """The product of ``resonance`` over ``formants`` ((Hz, bandwidth Hz) pairs)."""
    out = np.ones_like(np.asarray(freqs, dtype=np.float64))
    for fc, bw in formants:
        out *= resonance(freqs, fc, bw)
    return out


def apply_hold(part: np.ndarray, sr: int, start_s: float, attack_s: float, hold_s: float,
               release_s: float) -> None:
    """Shape ``part`` in place: silence before ``start_s``, a raised-cosine attack over
    ``attack_s``, held until ``hold_s``, a raised-cosine release over ``release_s``, then
    silence; only the samples that change are touched."""
    n = part.size
    a0 = min(n, int(start_s * sr))
    a1 = min(n, a0 + int(attack_s * sr))
    r0 = max(a0, min(n, int(hold_s * sr)))
    r1 = min(n, r0 + int(release_s * sr))
    part[:a0] = 0.0
    part[a0:a1] *= fade_curve(a1 - a0, rising=True)
    part[r0:r1] *= fade_curve(r1 - r0, rising=False)
    part[r1:] = 0.0


@lru_cache(maxsize=64)
def fade_curve(n: int, rising: bool) -> np.ndarray:
    """A raised-cosine fade of ``n`` samples (float32, read-only): 0→1 or 1→0."""
    x = np.linspace(0.0, math.pi, n)
    out = (0.5 - 0.5 * np.cos(x) if rising else 0.5 + 0.5 * np.cos(x)).astype(np.float32)
    out.setflags(write=False)
    return out

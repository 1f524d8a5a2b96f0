"""The struck voices' samples in closed form (numpy): sums of damped sinusoids, the drum's pitch
glide, and filtered noise bursts — the computation of an
``instruments.voices.struck_models.StruckNote``.

A sum of damped sinusoids Σ_p Im(A_p·e^(λ_p·(t − s_p))) (λ_p = (−1/τ_p + 2πi·f_p)/sr, each
starting at its sample s_p) is computed by blocks: with t = c·L + j, e^(λ·t) = e^(λ·cL)·e^(λ·j),
so the whole note is one matrix product W @ E of W[c, p] = A_p·e^(λ_p·(cL − s_p)) (blocks ×
modes) and E[p, j] = e^(λ_p·j) (modes × L) — no exp or sin per sample of the note.  A noise
burst is filtered by the exact frequency response of pyo's second-order Butterworth biquads
(the bilinear transform), applied by FFT with room for the filter's ring to die out (< −180 dB),
so it is the causal IIR's output.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from instruments.voices.struck_models import (
    NOISE_CUT_TIME_CONSTANTS,
    ModeGroup,
    NoiseBurst,
    StruckNote,
)

BLOCK = 1024  # L: samples per block of the matrix product
GLIDE_TIME_CONSTANTS = 8.0  # a drum's glide is computed sample by sample for 8 of its τ (it is then
# 3·10⁻⁴ of its depth: under 0.1 cent)
_SINGLE_THREAD_MNK = 1 << 18  # OpenBLAS runs a GEMM up to this size on one thread
_GONE = -40.0  # a component whose envelope fell below e^−40 (−347 dB) is left out


def damped_sum(n: int, sr: int, starts: np.ndarray, amps: np.ndarray, freqs: np.ndarray,
               taus: np.ndarray) -> np.ndarray:
    """Σ_p Im(amps[p]·e^((−1/taus[p] + 2πi·freqs[p])·(t − starts[p])/sr)) for t ≥ starts[p]
    (0 before), for t = 0 … n − 1, float64.  Components of one mode (the same frequency and τ:
    one resonator struck several times) share a column of the product."""
    keep = (starts < n) & (np.abs(amps) > 0)
    if not keep.any():
        return np.zeros(n)
    starts, amps = starts[keep].astype(np.int64), amps[keep].astype(np.complex128)
    lam_all = (-1.0 / taus[keep] + 2j * math.pi * freqs[keep]) / sr
    lam, mode = np.unique(lam_all, return_inverse=True)
    length = min(BLOCK, n)
    blocks = -(-n // length)
    e = np.exp(np.outer(lam, np.arange(length)))  # modes × L
    offset = np.arange(blocks)[:, None] * length - starts[None, :]  # C × P, samples from start
    expo = offset * lam_all[None, :]
    live = (offset > -length) & (expo.real > _GONE)
    parts = np.zeros(expo.shape, dtype=np.complex128)
    parts[live] = np.exp(expo[live]) * np.broadcast_to(amps, expo.shape)[live]
    w = np.zeros((blocks, lam.size), dtype=np.complex128)
    np.add.at(w.T, mode, parts.T)
    out = _product(np.hstack([w.real, w.imag]), np.vstack([e.imag, e.real])).reshape(-1)[:n]
    # the block where a component starts holds it from its start only
    for p in np.flatnonzero(starts % length):
        c0, s = divmod(int(starts[p]), length)
        out[c0 * length: c0 * length + s] -= (parts[c0, p] * e[mode[p], :s]).imag
    return out


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b a few rows at a time: each product small enough (M·N·K ≤ 2^18) that OpenBLAS
    keeps it on the calling thread — on a busy machine its thread pool made one note's product
    10–100× slower, and the notes are already rendered two at a time."""
    rows = max(1, _SINGLE_THREAD_MNK // (b.shape[0] * b.shape[1]))
    out = np.empty((a.shape[0], b.shape[1]))
    for i in range(0, a.shape[0], rows):
        np.matmul(a[i:i + rows], b, out=out[i:i + rows])
    return out


def _strike_components(group: ModeGroup, sr: int) -> tuple[np.ndarray, ...]:
    """(starts, amps, freqs, taus) of every (strike, mode) pair of a group without a glide."""
    rows = [(round(t * sr), g * m.amp, m.hz, m.tau_s)
            for t, g in group.strikes for m in group.modes]
    starts, amps, freqs, taus = (np.array(col, dtype=np.float64) for col in zip(*rows,
                                                                                strict=True))
    return starts.astype(np.int64), amps.astype(np.complex128), freqs, taus


def _glide(group: ModeGroup, n: int, sr: int) -> np.ndarray:
    """A group whose modes glide, hz·(1 + g·e^(−t/τg)), struck once at t = 0: the phase
    2π·hz·(t + g·τg·(1 − e^(−t/τg))) (the integral of the frequency) sample by sample while the
    glide lasts (GLIDE_TIME_CONSTANTS τg), then each mode as a damped sinusoid from where it is."""
    (t0, strength), = group.strikes
    assert group.glide is not None and t0 == 0.0, "a gliding group is struck once, at its start"
    depth, tau_g = group.glide
    hz = np.array([m.hz for m in group.modes])
    amps = strength * np.array([m.amp for m in group.modes])
    taus = np.array([m.tau_s for m in group.modes])
    cut = min(n, int(round(GLIDE_TIME_CONSTANTS * tau_g * sr)))
    t = np.arange(cut) / sr
    # ∫(1 + g·e^(−t/τg)) dt
    warp = t + depth * tau_g * (1.0 - _decays(np.array([tau_g]), cut, sr)[0])
    cycles = np.outer(hz, warp)  # modes × samples
    cycles -= np.floor(cycles)  # the phase's whole turns dropped in float64: float32 for sin
    ring = cycles.astype(np.float32)
    ring *= np.float32(2.0 * math.pi)
    np.sin(ring, out=ring)
    ring *= _decays(taus, cut, sr)
    out = np.zeros(n)
    out[:cut] = amps.astype(np.float32) @ ring
    if cut < n:
        end = cut / sr
        phase = 2.0 * math.pi * hz * (end + depth * tau_g * (1.0 - math.exp(-end / tau_g)))
        rest = amps * np.exp(-end / taus) * np.exp(1j * phase)
        out[cut:] = damped_sum(n - cut, sr, np.zeros(hz.size, dtype=np.int64), rest, hz, taus)
    return out


def _decays(taus: np.ndarray, n: int, sr: int) -> np.ndarray:
    """e^(−t/τ) for each of ``taus`` over ``n`` samples (modes × n, float32), by blocks: the
    outer product of e^(−cL/τ) and e^(−j/τ), no exp per sample."""
    length = min(BLOCK, n)
    blocks = -(-n // length)
    rate = (-1.0 / (taus * sr))[:, None]
    coarse = np.exp(rate * (np.arange(blocks) * length)).astype(np.float32)
    fine = np.exp(rate * np.arange(length)).astype(np.float32)
    return (coarse[:, :, None] * fine[:, None, :]).reshape(taus.size, -1)[:, :n]


def biquad(burst: NoiseBurst, sr: int) -> tuple[tuple[float, float, float], tuple[float, float]]:
    """((b0, b1, b2), (a1, a2)) of pyo's ButLP / ButBP for the burst's filter:
    y = b0·x + b1·x₁ + b2·x₂ − a1·y₁ − a2·y₂."""
    if burst.bandpass is not None:
        fc, q = burst.bandpass
        c = 1.0 / math.tan(math.pi * (fc / q) / sr)
        a0 = 1.0 / (1.0 + c)
        return (a0, 0.0, -a0), (-c * 2.0 * math.cos(2.0 * math.pi * fc / sr) * a0, (c - 1.0) * a0)
    assert burst.lowpass_hz is not None
    c = 1.0 / math.tan(math.pi * burst.lowpass_hz / sr)
    a0 = 1.0 / (1.0 + math.sqrt(2.0) * c + c * c)
    return (a0, 2.0 * a0, a0), (2.0 * (1.0 - c * c) * a0, (1.0 - math.sqrt(2.0) * c + c * c) * a0)


def noise_burst(burst: NoiseBurst, n: int, sr: int, seed: int) -> np.ndarray:
    """The burst's ``n`` samples (float64): seeded uniform noise in ±1 under its envelope,
    through its biquad."""
    m = min(n, int(math.ceil((burst.attack_s + NOISE_CUT_TIME_CONSTANTS * burst.tau_s) * sr)))
    return shaped_burst(burst, np.random.default_rng(seed).uniform(-1.0, 1.0, m), n, sr)


def shaped_burst(burst: NoiseBurst, noise: np.ndarray, n: int, sr: int) -> np.ndarray:
    """``n`` samples (float64): ``noise`` (as long as the burst lasts) under the burst's
    envelope, through its biquad."""
    m = noise.size
    t = np.arange(m) / sr
    x = noise * (burst.amp * np.minimum(t / burst.attack_s, 1.0) * np.exp(-t / burst.tau_s))
    coefficients = biquad(burst, sr)
    a2 = coefficients[1][1]
    radius = math.sqrt(a2) if 0.0 < a2 < 1.0 else 0.5  # the poles' radius: the ring's decay
    ring = int(math.ceil(math.log(1e-9) / math.log(radius))) + 2
    size = _fft_size(m + ring)
    y = np.fft.irfft(np.fft.rfft(x, size) * _response(coefficients, size), size)
    k = min(n, m + ring)
    if k == n:
        return y[:n]
    out = np.zeros(n)
    out[:k] = y[:k]
    return out


def _add_burst(out: np.ndarray, burst: NoiseBurst, sr: int, seed: int) -> None:
    """Add the burst into ``out`` where it sounds (its noise and its filter's ring only)."""
    n = out.size
    m = min(n, int(math.ceil((burst.attack_s + NOISE_CUT_TIME_CONSTANTS * burst.tau_s) * sr)))
    noise = np.random.default_rng(seed).uniform(-1.0, 1.0, m)
    a2 = biquad(burst, sr)[1][1]
    radius = math.sqrt(a2) if 0.0 < a2 < 1.0 else 0.5
    k = min(n, m + int(math.ceil(math.log(1e-9) / math.log(radius))) + 2)
    out[:k] += shaped_burst(burst, noise, k, sr)


def _fft_size(n: int) -> int:
    """The least 2^p or 3·2^p that holds ``n`` samples."""
    power = 1 << (n - 1).bit_length()
    return 3 * power // 4 if 3 * power // 4 >= n else power


@lru_cache(maxsize=64)
def _response(coefficients: tuple[tuple[float, float, float], tuple[float, float]], size: int
              ) -> np.ndarray:
    """The biquad's frequency response on the grid of an FFT of ``size`` (read-only)."""
    (b0, b1, b2), (a1, a2) = coefficients
    z = np.exp(-2j * math.pi * np.arange(size // 2 + 1) / size)  # z⁻¹ on the FFT's grid
    response = (b0 + z * (b1 + z * b2)) / (1.0 + z * (a1 + z * a2))
    response.setflags(write=False)
    return response


def modes_only(note: StruckNote, n: int, sr: int) -> np.ndarray:
    """The ``n`` samples of the note's resonating modes (float64), without the strike noise."""
    out = np.zeros(n)
    for group in note.groups:
        if not group.modes:
            continue
        if group.glide is not None:
            out += _glide(group, n, sr)
        else:
            out += damped_sum(n, sr, *_strike_components(group, sr))
    return out


def render(note: StruckNote, n: int, sr: int, seed: int) -> np.ndarray:
    """The ``n`` samples of a struck note (float64): its modes and its strike noise (``seed``
    seeds the noise)."""
    out = modes_only(note, n, sr)
    if note.noise is not None:
        _add_burst(out, note.noise, sr, seed)
    if note.contact is not None:  # its own noise: the same draw as the slap would be heard twice
        _add_burst(out, note.contact, sr, (seed * 2654435761 + 1) % 2 ** 32)
    return out

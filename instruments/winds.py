"""The winds: 笙 (and 和, the small 笙) chords of free-reed pipes, and the 管's paired pipes
(numpy; see ``instruments.tone_dsp``).

笙: each pipe is a free reed coupled to a bamboo pipe closed at the reed and open at the top,
whose resonances fall at the odd multiples of its first one; the pipe is cut so that its first
resonance lies a little above the reed (Cottingham, "Acoustics of free-reed instruments",
Physics Today 64 (3), 2011: the sheng's pipe resonance is set slightly above the reed
frequency, which keeps the reed speaking at its own pitch).  So the reed's harmonics
(amplitude 1/h, rolled off above a few kHz, brighter when blown harder) are weighted by the
pipe's input response |1/cos(π f / 2 f_p)| with losses: odd harmonics strong, even ones
weaker.  A note sounds as a chord of three pipes — the note, the fifth above (3:2) and the
octave (2:1), the 笙's customary doubling in fifths and octaves (a documented choice: which
pipes a Zhou player closed is not known) — entering a few milliseconds apart, with a little
breath noise.  The 和 is the same instrument an octave higher.

管: two bamboo flute pipes blown together (並兩而吹之), unequal: the second pipe 6 cents above
the first and 15 dB under it, so they beat gently (a swing of the level under 3 dB) rather than
in a 12 dB tremolo; band-limited breath noise around the pitch and a short chiff at the start.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from instruments import tone_dsp as dsp

SHENG_PIPES = ((1.0, 1.0, 0.0), (1.5, 0.5, 0.012), (2.0, 0.55, 0.02))
"""(ratio to the note, level, entry delay s) of the pipes of a 笙 chord."""
SHENG_PIPE_ABOVE_REED = 1.02  # the pipe's first resonance : the reed frequency
SHENG_ATTACK_S = 0.05
SHENG_BREATH = 10 ** (-32 / 20)
BREATH_LOOP = 1 << 16  # samples of the breath-noise loop

GUAN_PIPES = ((0.0, 1.0, ((1, 1.0), (2, 0.35), (3, 0.14), (4, 0.05))),
              (6.0, 10 ** (-15 / 20), ((1, 1.0), (2, 0.22), (3, 0.2), (4, 0.04))))
"""(cents, level, ((harmonic, amplitude), …)) of the 管's two pipes."""
GUAN_ATTACK_S = 0.07
GUAN_BREATH = 10 ** (-26 / 20)


@lru_cache(maxsize=256)
def _reed_table(f: float, sr: int, brightness: float) -> np.ndarray:
    n_harm = max(1, int(0.45 * sr / f))
    h = np.arange(1, n_harm + 1, dtype=np.float64)
    fh = h * f
    fp = f * SHENG_PIPE_ABOVE_REED
    loss = 0.25 + 0.08 * np.sqrt(fh / fp)
    pipe = 1.0 / np.sqrt(np.cos(math.pi * fh / (2 * fp)) ** 2 + loss ** 2)
    reed = (1.0 / h) * np.exp(-fh / (2500.0 + 3500.0 * brightness))
    return dsp.wavetable(dsp.unit_rms(reed * pipe))


@lru_cache(maxsize=32)
def _sheng_loop(f0: float, sr: int, brightness: float
                ) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """One loop (a whole number of periods of every pipe) of each pipe of the chord on
    ``f0``, and of the breath noise (float32, read-only)."""
    length, f_loop = dsp.loop_length(f0, sr, periods_multiple=2)  # 2: the fifth fits too
    t = np.arange(length, dtype=np.float64) / sr
    pipes = []
    for ratio, level, _ in SHENG_PIPES:
        f = f_loop * ratio
        if f * 1.01 >= 0.45 * sr:
            pipes.append(np.zeros(length, dtype=np.float32))
            continue
        pipes.append(dsp.read_table(_reed_table(round(f, 6), sr, brightness), f * t)
                     * np.float32(level))

    def breath_band(fr: np.ndarray) -> np.ndarray:
        return dsp.resonance(fr, min(2 * f0, 0.4 * sr), f0) / (1 + fr / 4000.0)

    breath = dsp.shaped_noise(BREATH_LOOP, sr, breath_band, dsp.seed_of("sheng", f0, sr))
    breath = (breath * SHENG_BREATH).astype(np.float32)
    for arr in (*pipes, breath):
        arr.setflags(write=False)
    return tuple(pipes), breath


def sheng(f0: float, dur: float, release: float, n: int, sr: int, amp: float,
          brightness: float) -> np.ndarray:
    """A 笙 chord on ``f0`` held ``dur`` s, released over ``release`` s (``n`` samples): the
    chord's loop repeated, the pipes entering one by one."""
    pipes, breath = _sheng_loop(round(f0, 6), sr, round(brightness, 3))
    out = np.resize(sum(pipes), n)
    out += np.resize(breath, n)
    entry = min(n, int((max(d for _, _, d in SHENG_PIPES) + SHENG_ATTACK_S) * sr))
    head = np.resize(breath, entry).copy()
    dsp.apply_hold(head, sr, 0.0, SHENG_ATTACK_S, dur, release)
    for pipe, (_, _, delay) in zip(pipes, SHENG_PIPES, strict=True):
        part = np.resize(pipe, entry).copy()
        dsp.apply_hold(part, sr, delay, SHENG_ATTACK_S, dur, release)
        head += part
    dsp.apply_hold(out, sr, 0.0, 0.0, dur, release)
    out[:entry] = head
    return out * np.float32(amp)


def guan(f0: float, dur: float, release: float, n: int, sr: int, amp: float,
         brightness: float, seed: int) -> np.ndarray:
    """The 管's two pipes on ``f0`` held ``dur`` s, released over ``release`` s."""
    t = np.arange(n, dtype=np.float64) / sr
    out = np.zeros(n, dtype=np.float32)
    for cents, level, harmonics in GUAN_PIPES:
        f = f0 * 2 ** (cents / 1200)
        amps = np.array([a if h * f < 0.45 * sr else 0.0 for h, a in harmonics])
        out += dsp.read_table(dsp.wavetable(dsp.unit_rms(amps)), f * t) * np.float32(level)
    nyq = 0.45 * sr

    def breath_band(fr: np.ndarray) -> np.ndarray:
        return dsp.resonance(fr, f0, f0 / 6) * 0.6 + (fr < nyq) * 0.08

    out += (dsp.shaped_noise(n, sr, breath_band, seed) * GUAN_BREATH).astype(np.float32)
    dsp.apply_hold(out, sr, 0.0, GUAN_ATTACK_S, dur, release)
    k = min(n, int(0.03 * sr))

    def chiff_band(fr: np.ndarray) -> np.ndarray:
        return np.exp(-0.5 * ((fr - min(3 * f0, 0.4 * sr)) / (1.5 * f0)) ** 2)

    chiff = dsp.shaped_noise(k, sr, chiff_band, seed + 1)
    out[:k] += (chiff * np.exp(-np.arange(k) / (0.012 * sr)) * 0.25 * brightness).astype(
        np.float32)
    return out * np.float32(amp)

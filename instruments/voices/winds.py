"""The winds: 笙 (and 和, the small 笙) chords of free-reed pipes, and the 管's paired pipes
(numpy; see ``instruments.voices.tone_dsp``).

笙: each pipe is a free reed coupled to a bamboo pipe closed at the reed and open at the top,
whose resonances fall at the odd multiples of its first one; the pipe is cut so that its first
resonance lies a little above the reed (Cottingham, "Acoustics of free-reed instruments",
Physics Today 64 (3), 2011: the sheng's pipe resonance is set slightly above the reed
frequency, which keeps the reed speaking at its own pitch).  So the reed's harmonics
(amplitude 1/h, rolled off above a few kHz, brighter when blown harder) are weighted by the
pipe's input response |1/cos(π f / 2 f_p)| with losses: odd harmonics strong, even ones
weaker.  A note sounds as a chord of three pipes — the note, the fifth above (3:2) and the
octave (2:1), the 笙's customary doubling in fifths and octaves (a documented choice: which
pipes a Zhou player closed is not known) — entering a few milliseconds apart, with breath
noise.  The 和 is the same instrument an octave higher.

The breath moves (``breath_motion``): the player's pressure drifts slowly (four slow
sinusoids of 2.9–11.9 s, seeded by the note), heard as the level and as the brightness (the
chord is a blend of its soft and hard spectra); a 笙 speaks blown and drawn, and where the
breath turns (every 3–5 s) it dips for a quarter of a second.  The breath noise is two loops of
coprime lengths (1.37 and 1.63 s) summed, so it repeats only after 29 hours (it was one 1.37 s
loop), under the moving pressure; the reed chord repeats its period, as a reed does, but never
the same from one breath to the next.

管: two pipes blown together (並兩而吹之; 鄭玄: 「管如篴而小，併兩而吹之」 — like a 篴, a flute,
but smaller), so an edge-blown pipe, not a reed: the jet drives the pipe's resonances, all
harmonics (an open pipe) falling with frequency and brighter when blown harder; edge noise —
the jet's turbulence — shaped by the pipe's resonances (noise at the harmonics, the breathy
part of a flute's tone) with a hiss above it; a chiff at the start where the second harmonic
speaks first.  Unequal: the second pipe 6 cents above the first and 15 dB under it, so they
beat gently.  The breath moves as the 笙's (without the turns: the pipe is only blown).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from instruments.voices import tone_dsp as dsp

SHENG_PIPES = ((1.0, 1.0, 0.0), (1.5, 0.5, 0.012), (2.0, 0.55, 0.02))
"""(ratio to the note, level, entry delay s) of the pipes of a 笙 chord."""
SHENG_PIPE_ABOVE_REED = 1.02  # the pipe's first resonance : the reed frequency
SHENG_ATTACK_S = 0.05
SHENG_BREATH = 10 ** (-32 / 20)
MOTION_PERIODS_S = (2.9, 4.7, 7.3, 11.9)  # the breath's slow drift
SHENG_MOTION_DB = 1.2  # its level moves within about ± this (PROJECT CHOICE)
GUAN_MOTION_DB = 0.8
TURN_S = (3.0, 5.0)  # a 笙's breath turns (blown, drawn) every 3–5 s …
TURN_DIP_DB = -3.0  # … dipping this much …
TURN_DIP_S = 0.25  # … for this long (PROJECT CHOICE)
BRIGHTNESS_SWING = 0.3  # soft and hard breath: the brightness × (1 ∓ this)
_MOTION_STEP = 256  # the motion is computed every this many samples and interpolated
BREATH_LOOPS = (1 << 16, 5 ** 7)  # 65,536 and 78,125 samples: coprime fast FFT sizes (1.37, 1.63 s)

GUAN_PIPES = ((0.0, 1.0, 1.6), (6.0, 10 ** (-15 / 20), 1.9))
"""(cents, level, harmonic roll-off power: amplitude h^−power) of the 管's two pipes."""
GUAN_ATTACK_S = 0.07
GUAN_EDGE = 10 ** (-20 / 20)  # the edge noise at the harmonics, under the tone
GUAN_HISS = 10 ** (-34 / 20)  # the jet's hiss above 1 kHz
GUAN_CHIFF_S = 0.04


def breath_motion(n: int, sr: int, seed: int, depth_db: float, turns: bool) -> np.ndarray:
    """The breath's pressure for a note of ``n`` samples (float32, about 1): a slow drift within
    about ±``depth_db``, and (``turns``) a dip wherever the breath turns."""
    rng = np.random.default_rng(seed)
    coarse = np.arange(0, n + _MOTION_STEP, _MOTION_STEP, dtype=np.float64) / sr
    drift = np.zeros_like(coarse)
    for period in MOTION_PERIODS_S:
        drift += np.sin(2.0 * math.pi * (coarse / period + rng.uniform()))
    db = depth_db * drift / math.sqrt(len(MOTION_PERIODS_S) / 2.0) / 2.0
    if turns:
        t = float(rng.uniform(*TURN_S))
        end = coarse[-1]
        while t < end:
            near = np.abs(coarse - t) < TURN_DIP_S / 2
            db[near] += TURN_DIP_DB * 0.5 * (1 + np.cos(2 * math.pi * (coarse[near] - t)
                                                         / TURN_DIP_S))
            t += float(rng.uniform(*TURN_S))
    pressure = (10.0 ** (db / 20.0)).astype(np.float32)
    # held for each step of 5.3 ms: the drift moves ~0.01 dB and a turn ~0.06 dB a step
    return np.repeat(pressure, _MOTION_STEP)[:n]


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
def _sheng_loop(f0: float, sr: int, brightness: float) -> tuple[np.ndarray, ...]:
    """One loop (a whole number of periods of every pipe) of each pipe of the chord on
    ``f0`` blown with ``brightness`` (float32, read-only)."""
    length, f_loop = dsp.loop_length(f0, sr, periods_multiple=2)  # 2: the fifth fits too
    t = np.arange(length, dtype=np.float64) / sr
    pipes = []
    for ratio, level, _ in SHENG_PIPES:
        f = f_loop * ratio
        if f * 1.01 >= 0.45 * sr:
            pipes.append(np.zeros(length, dtype=np.float32))
            continue
        pipe = dsp.read_table(_reed_table(round(f, 6), sr, brightness), f * t) * np.float32(level)
        pipe.setflags(write=False)
        pipes.append(pipe)
    return tuple(pipes)


def _blend(soft: np.ndarray, hard: np.ndarray, weight: np.ndarray, n: int) -> np.ndarray:
    """``soft`` and ``hard`` (loops, repeated to ``n``) mixed by ``weight`` (0: soft)."""
    a = np.resize(soft, n)
    a += (np.resize(hard, n) - a) * weight
    return a


def _chord(pipes: tuple[np.ndarray, ...]) -> np.ndarray:
    """The pipes of a chord sounding together."""
    out = pipes[0].copy()
    for pipe in pipes[1:]:
        out += pipe
    return out


def _weight(pressure: np.ndarray) -> np.ndarray:
    """How hard the breath is (0 soft … 1 hard) from its pressure: the brightness follows it."""
    return np.clip(0.5 + 4.0 * (pressure - 1.0), 0.0, 1.0).astype(np.float32)


@lru_cache(maxsize=32)
def _breath_loops(f0: float, sr: int) -> tuple[np.ndarray, np.ndarray]:
    """The 笙's breath noise on ``f0`` as two loops of coprime lengths (``BREATH_LOOPS``), each
    of RMS 1/√2 (float32, read-only): summed, they repeat only after hours."""

    def breath_band(fr: np.ndarray) -> np.ndarray:
        return dsp.resonance(fr, min(2 * f0, 0.4 * sr), f0) / (1 + fr / 4000.0)

    out = []
    for k, length in enumerate(BREATH_LOOPS):
        noise = dsp.shaped_noise(length, sr, breath_band, dsp.seed_of("sheng breath", f0, sr, k))
        loop = (noise / math.sqrt(2.0)).astype(np.float32)
        loop.setflags(write=False)
        out.append(loop)
    return out[0], out[1]


def sheng(f0: float, dur: float, release: float, n: int, sr: int, amp: float,
          brightness: float, seed: int) -> np.ndarray:
    """A 笙 chord on ``f0`` held ``dur`` s, released over ``release`` s (``n`` samples): the
    chord's loops blended by the moving breath, the pipes entering one by one."""
    f0 = round(f0, 6)
    soft = _sheng_loop(f0, sr, round(brightness * (1 - BRIGHTNESS_SWING), 3))
    hard = _sheng_loop(f0, sr, round(min(1.0, brightness * (1 + BRIGHTNESS_SWING)), 3))
    pressure = breath_motion(n, sr, seed, SHENG_MOTION_DB, turns=True)
    weight = _weight(pressure)
    entry = min(n, int((max(d for _, _, d in SHENG_PIPES) + SHENG_ATTACK_S) * sr))
    out = _blend(_chord(soft), _chord(hard), weight, n)
    head = np.zeros(entry, dtype=np.float32)
    for a, b, (_, _, delay) in zip(soft, hard, SHENG_PIPES, strict=True):
        part = _blend(a, b, weight[:entry], entry)
        dsp.apply_hold(part, sr, delay, SHENG_ATTACK_S, dur, release)
        head += part
    dsp.apply_hold(out, sr, 0.0, 0.0, dur, release)
    out[:entry] = head

    a, b = _breath_loops(f0, sr)
    breath = np.resize(a, n)
    breath += np.resize(b, n)
    breath *= np.float32(SHENG_BREATH) * pressure * pressure  # noise grows faster than tone
    dsp.apply_hold(breath, sr, 0.0, SHENG_ATTACK_S, dur, release)
    out += breath
    out *= pressure
    return out * np.float32(amp)


@lru_cache(maxsize=256)
def _pipe_table(f: float, sr: int, power: float, brightness: float) -> np.ndarray:
    """One period of a jet-driven open pipe at ``f``: all harmonics, h^−power, rolled off above
    1.5 kHz + 2.5 kHz × brightness (RMS 1)."""
    h = np.arange(1, max(2, int(0.45 * sr / f)) + 1, dtype=np.float64)
    amps = h ** -power * np.exp(-h * f / (1500.0 + 2500.0 * brightness))
    amps[h * f >= 0.45 * sr] = 0.0
    return dsp.wavetable(dsp.unit_rms(amps))


def guan(f0: float, dur: float, release: float, n: int, sr: int, amp: float,
         brightness: float, seed: int) -> np.ndarray:
    """The 管's two pipes on ``f0`` held ``dur`` s, released over ``release`` s."""
    t = np.arange(n, dtype=np.float64) / sr
    pressure = breath_motion(n, sr, seed + 2, GUAN_MOTION_DB, turns=False)
    weight = _weight(pressure)
    soft_b = round(brightness * (1 - BRIGHTNESS_SWING), 3)
    hard_b = round(min(1.0, brightness * (1 + BRIGHTNESS_SWING)), 3)
    out = np.zeros(n, dtype=np.float32)
    for cents, level, power in GUAN_PIPES:
        f = f0 * 2 ** (cents / 1200)
        index = dsp.table_index(f * t)
        soft = _pipe_table(round(f, 6), sr, power, soft_b)[index]
        soft += (_pipe_table(round(f, 6), sr, power, hard_b)[index] - soft) * weight
        out += soft * np.float32(level)
    nyq = 0.45 * sr

    def edge_band(fr: np.ndarray) -> np.ndarray:  # the jet's turbulence through the pipe
        comb = sum(dsp.resonance(fr, k * f0, f0 / 12) * k ** -1.2
                   for k in range(1, int(min(8, nyq / f0)) + 1))
        return comb + (fr > 1000.0) * (fr < nyq) * GUAN_HISS / GUAN_EDGE

    edge = dsp.shaped_noise(n, sr, edge_band, seed).astype(np.float32)
    out += edge * np.float32(GUAN_EDGE) * pressure
    dsp.apply_hold(out, sr, 0.0, GUAN_ATTACK_S, dur, release)
    k = min(n, int(GUAN_CHIFF_S * sr))
    if k > 0:  # the chiff: the second harmonic speaks first, in a burst of edge noise
        decay = np.exp(-np.arange(k) / (0.012 * sr))
        octave = np.sin(2 * math.pi * 2 * f0 * t[:k]) * decay * 0.3 * brightness
        out[:k] += (octave + edge[:k] * decay * 0.25 * brightness).astype(np.float32)
    out *= pressure
    return out * np.float32(amp)

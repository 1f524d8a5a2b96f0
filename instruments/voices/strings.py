"""The 瑟: a plucked silk string on a wooden box (numpy modal synthesis), and the re-pluck rule.

A pluck is a sum of the string's modes, each a damped sinusoid:

* mode h at h·f·√(1 + B h²) (B = 1e-4: a slightly stiff silk string);
* its amplitude sin(π h β)/h: a string plucked at β = 0.13 of its length from the bridge (the
  pluck-position comb: modes with a node at the plucking point are missing), rolled off above
  1.5 kHz + 3.5 kHz × velocity (a harder pluck is brighter);
* its 40 dB decay time ``se_decay_s(f)`` for the fundamental and shorter above, by
  1 / (1 + (f_h − f)/700 Hz): highs die first;
* weighted by the body: four resonances of the wooden box (PROJECT MODEL, typical of long
  box zithers: air and top-plate modes near 110, 240, 460 and 820 Hz, +4 to +8 dB), which also
  ring briefly on their own at the pluck (a 40 ms knock).

Re-pluck damping: a string plucked again is stopped first — the old note ends SE_DAMP_S after
the new pluck (``repluck_stops`` finds, for every 瑟 note, the next pluck of the same string:
the same pitch from the same place).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from instruments.voices.models import SE_DAMP_S

STIFFNESS = 1e-4
PLUCK_POINT = 0.13  # the middle of where the 瑟 is plucked (fraction of the string)
PLUCKS: tuple[tuple[float, float], ...] = ((0.09, 1.12), (0.13, 0.88), (0.17, 1.05),
                                           (0.21, 0.92))
"""(pluck point β, force × the velocity's brightness) of a 瑟 note's variants: a player never
plucks two notes at the same point with the same force.  The note's seed picks one; its level
varies within ±``SE_LEVEL_DB`` besides (``models.stroke_gain``).  PROJECT CHOICE of the
figures around the model's β 0.13 (0.09–0.21: between a tenth and a fifth of the string)."""
HIGH_DECAY_HZ = 700.0
BODY_MODES = ((110.0, 8.0, 2.5), (240.0, 10.0, 2.0), (460.0, 12.0, 1.6), (820.0, 12.0, 1.4))
"""(Hz, Q, linear peak gain) of the body resonances."""
BODY_KNOCK_TAU_S = 0.04
_BLOCK = 4096


def _damped_sine(freq: float, tau: float, amp: float, n: int, sr: int) -> np.ndarray:
    """amp·e^(−t/τ)·sin(2π f t) for ``n`` samples, by blocks of complex powers (one complex
    multiply a sample)."""
    s = complex(-1.0 / tau, 2 * math.pi * freq) / sr
    base = (amp * np.exp(s * np.arange(_BLOCK))).astype(np.complex64)
    blocks = -(-n // _BLOCK)
    steps = np.exp(s * _BLOCK * np.arange(blocks)).astype(np.complex64)
    return (steps[:, None] * base[None, :]).ravel()[:n].imag


def body_gain(freqs: np.ndarray) -> np.ndarray:
    """The box's response: 1 plus a bump at each body mode."""
    out = np.ones_like(freqs, dtype=np.float64)
    for fc, q, g in BODY_MODES:
        x = q * (freqs / fc - fc / np.maximum(freqs, 1e-9))
        out += (g - 1.0) / (1.0 + x * x)
    return out


@lru_cache(maxsize=128)
def pluck(f0: float, n: int, sr: int, decay_40db_s: float, brightness: float,
          point: float = PLUCK_POINT) -> np.ndarray:
    """The free ring of one pluck at ``point`` (``n`` samples, peak ≈ 1, read-only)."""
    tau1 = decay_40db_s / math.log(100.0)
    out = np.zeros(n, dtype=np.float32)
    h_max = int(0.45 * sr / f0)
    modes = []  # (h, its frequency) up to 0.45 of the rate
    for h in range(1, h_max + 1):
        fh = h * f0 * math.sqrt(1.0 + STIFFNESS * h * h)
        if fh >= 0.45 * sr:
            break
        modes.append((h, fh))
    body = body_gain(np.array([fh for _, fh in modes])).tolist()  # all modes at once
    for (h, fh), gain in zip(modes, body, strict=True):
        a = math.sin(math.pi * h * point) / h * math.exp(-fh / (1500 + 3500 * brightness))
        a *= gain
        if abs(a) < 2e-3:  # −54 dB under a full-scale pluck: not heard over the rest
            continue
        tau = tau1 / (1.0 + (fh - f0) / HIGH_DECAY_HZ)
        # until it is 10⁻⁴ of a full-scale pluck (−80 dB; at most 7 τ, as it was for all)
        m = min(n, int(min(7.0, math.log(abs(a) / 1e-4)) * tau * sr))
        out[:m] += _damped_sine(fh, tau, a, m, sr)
    for fc, _, g in BODY_MODES:
        m = min(n, int(7 * BODY_KNOCK_TAU_S * sr))
        out[:m] += _damped_sine(fc, BODY_KNOCK_TAU_S, 0.08 * g * brightness, m, sr)
    out /= max(1e-9, float(np.abs(out).max()))
    out.setflags(write=False)
    return out


def damped(ring: np.ndarray, stop_s: float, n: int, sr: int) -> np.ndarray:
    """The first ``n`` samples of ``ring`` with the string stopped at ``stop_s``."""
    out = np.array(ring[:n], dtype=np.float32)
    k = int(stop_s * sr)
    if k < n:
        out[k:] *= np.exp(-np.arange(n - k, dtype=np.float32) / np.float32(SE_DAMP_S / 4 * sr))
    return out


def repluck_stops(notes: Sequence[tuple[str, float | None, float, float, float]]
                  ) -> dict[int, float]:
    """For notes (instrument, Hz, start s, x, y): index → seconds from the 瑟 note's pluck to
    the next pluck of the same string (same pitch, same place); notes never plucked again are
    absent."""
    last: dict[tuple[float, float, float], int] = {}
    stops: dict[int, float] = {}
    order = sorted((start, i) for i, (inst, _, start, _, _) in enumerate(notes) if inst == "瑟")
    for start, i in order:
        _, hz, _, x, y = notes[i]
        if hz is None:
            continue
        string = (round(hz, 3), x, y)
        prev = last.get(string)
        if prev is not None and start > notes[prev][2]:
            stops[prev] = start - notes[prev][2]
        last[string] = i
    return stops

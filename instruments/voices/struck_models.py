"""Each struck note (編鐘 鑮 編磬, the drums, 鼗) as a modal description: which modes ring, at what
frequency, amplitude and time constant, struck when and how hard, and the strike noise.

``struck_note(key)`` turns a ``NoteKey`` into a ``StruckNote`` from the numbers of
``instruments.voices.models``; ``instruments.voices.modal`` computes its samples in closed form.  A
mode struck by a unit impulse rings as amp·e^(−t/τ)·sin(2π·f·t) — exactly what pyo's ``ComplexRes``
(the voices' former offline pyo graphs) answered, so the description is the same model.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from instruments.tuning import cents_ratio
from instruments.voices.models import (
    BELL_DOUBLET_OTHER_DB,
    BELL_DOUBLET_SPLIT,
    BELL_GU_OCTAVE,
    BELL_INTERVAL_SPREAD_CENTS,
    BELL_INTERVALS,
    BELL_PAIR_CENTRE,
    BELL_TRACE_DB,
    BELL_UPPER,
    BELL_UPPER_DECAY_POWER,
    DRUM_CONTACT,
    DRUM_GLIDE_TAU_S,
    DRUMS,
    MEMBRANE_MODES,
    QING_MODE_AMPS,
    QING_MODE_RATIOS,
    STRIKE_NOISE,
    STROKE_VARIANTS,
    TAO_CLICKS,
    TAO_HEAD_MODES,
    TAO_HEADS_HZ,
    TAO_STRIKES,
    NoteKey,
    bianzhong_tau_s,
    bo_tau_s,
    drum_stroke,
    qing_tau_s,
    velocity_amp,
)

NYQUIST_GUARD = 0.45  # modes at or above this fraction of the sample rate are left out
NOISE_CUT_TIME_CONSTANTS = 12.0  # a noise burst stops after 12 τ (−104 dB)
DRUM_LEVEL_WINDOW_S = 0.1  # a drum stroke's level: its energy over its first 100 ms
DRUM_REFERENCE_RADIUS = 0.4  # the stroke whose level every other stroke of a drum has


@dataclass(frozen=True)
class Mode:
    """One resonance: amp·e^(−t/τ)·sin(2π·hz·t) after a unit strike at t = 0."""

    hz: float
    amp: float
    tau_s: float


@dataclass(frozen=True)
class ModeGroup:
    """Modes struck together: each (time s, strength) of ``strikes`` is an impulse into all of
    them.  ``glide`` (g, τ) makes every mode's frequency hz·(1 + g·e^(−t/τ)) (one strike)."""

    modes: tuple[Mode, ...]
    strikes: tuple[tuple[float, float], ...] = ((0.0, 1.0),)
    glide: tuple[float, float] | None = None


@dataclass(frozen=True)
class NoiseBurst:
    """White noise (uniform in ±1) under amp·(linear 0.5 ms attack)·e^(−t/τ), cut after
    ``NOISE_CUT_TIME_CONSTANTS`` τ, through a Butterworth low-pass (``lowpass_hz``) or
    band-pass (``bandpass``: centre Hz, Q)."""

    tau_s: float
    amp: float
    lowpass_hz: float | None = None
    bandpass: tuple[float, float] | None = None
    attack_s: float = 0.0005


@dataclass(frozen=True)
class StruckNote:
    """A struck note: its resonating mode groups and its strike noise."""

    groups: tuple[ModeGroup, ...]
    noise: NoiseBurst | None
    contact: NoiseBurst | None = None  # a drum stick's contact click (``DRUM_CONTACT``)


def _modes(base_hz: float, partials: Iterable[tuple[float, float, float]], sr: int,
           guard_hz: float | None = None) -> tuple[Mode, ...]:
    """Modes at base_hz·ratio of ``partials`` ((ratio, amp, τ)); those whose (highest)
    frequency ``guard_hz``·ratio reaches NYQUIST_GUARD·sr, and silent ones, are left out."""
    top = base_hz if guard_hz is None else guard_hz
    return tuple(Mode(base_hz * r, a, tau) for r, a, tau in partials
                 if top * r < NYQUIST_GUARD * sr and a > 0)


def _burst(name: str, amp: float, b: float, *, lowpass_hz: float | None = None,
           bandpass: tuple[float, float] | None = None) -> NoiseBurst:
    tau, level, power = STRIKE_NOISE[name]
    return NoiseBurst(tau, amp * level * b ** power, lowpass_hz=lowpass_hz, bandpass=bandpass)


def _hz(key: NoteKey) -> float:
    """The pitch of a struck note (a bell, a stone or a drum note always has one)."""
    if key.freq_hz is None:
        raise ValueError(f"{key.instrument}: a struck note needs a pitch")
    return float(key.freq_hz)


def bell_tones(key: NoteKey) -> tuple[float, float, np.random.Generator]:
    """(正鼓 Hz, this bell's 側鼓 : 正鼓 ratio, the bell's own random generator) of the bell a
    編鐘 or 鑮 note strikes.  The bell is named by its nominal 正鼓 pitch, so the same bell has
    the same interval and partials whichever tone is struck and in any render."""
    f = _hz(key)
    nominal = BELL_INTERVALS[key.bell_interval or "minor"]
    zheng_nominal = f if key.strike != "側鼓" else f / nominal
    bell = np.random.default_rng(zlib.crc32(f"{key.instrument} {zheng_nominal:.2f}".encode()))
    ratio = nominal * cents_ratio(float(bell.uniform(-1.0, 1.0)) * BELL_INTERVAL_SPREAD_CENTS)
    zheng = f if key.strike != "側鼓" else f / ratio
    return zheng, ratio, bell


def _doublet(centre: float, split: float, strong: float, struck_low: bool
             ) -> list[tuple[float, float]]:
    """The two members (ratio, amplitude) of a pair centred on ``centre`` and ``split`` apart:
    the struck point's member ``strong``, the other ``BELL_DOUBLET_OTHER_DB`` under it; on a
    正鼓 stroke the lower member is the struck point's, on a 側鼓 stroke the upper (as the
    (2,0) pair's)."""
    low, high = centre * (1.0 - split / 2.0), centre * (1.0 + split / 2.0)
    weak = strong * 10.0 ** (BELL_DOUBLET_OTHER_DB / 20.0)
    return [(low, strong if struck_low else weak), (high, weak if struck_low else strong)]


def _two_tone(key: NoteKey, tau: float, brightness: float, amp: float,
              upper: tuple[tuple[float, float], ...]) -> list[tuple[float, float, float]]:
    """(ratio to the struck tone, amplitude, τ) of a two-tone bell's partials: the struck (2,0)
    tone, its partner a trace BELL_TRACE_DB under it (the variant's strike position), the
    octave of the 側鼓音, the (3,0) pair and the ``upper`` pairs — each pair split 3–10 %
    (``BELL_DOUBLET_SPLIT``), its members' levels by the strike point, all seeded by the
    bell."""
    f = _hz(key)
    zheng, ratio, bell = bell_tones(key)
    lo, hi = BELL_TRACE_DB
    trace_db = lo + (hi - lo) * key.variant / max(1, STROKE_VARIANTS - 1)
    trace = 10.0 ** (trace_db / 20.0)
    ce_struck = key.strike == "側鼓"
    to_f = zheng / f  # ratios below are to the 正鼓音
    partials = [(1.0, amp, tau),
                (to_f if ce_struck else ratio, amp * trace, tau),
                (2.0 * ratio * to_f, amp * brightness * BELL_GU_OCTAVE * (1.0 if ce_struck
                                                                          else 0.5),
                 tau / (2.0 * ratio) ** 0.9)]
    split_lo, split_hi = BELL_DOUBLET_SPLIT
    centre_lo, centre_hi = BELL_PAIR_CENTRE
    pairs = [(float(bell.uniform(centre_lo, centre_hi)), 0.45, 0.9)]
    pairs += [(r, a * brightness, BELL_UPPER_DECAY_POWER) for r, a in upper]
    for centre, strong, power in pairs:
        split = float(bell.uniform(split_lo, split_hi))
        for r, a in _doublet(centre, split, amp * brightness * strong, not ce_struck):
            partials.append((r * to_f, a, tau / r ** power))
    return partials


def _bell(key: NoteKey) -> StruckNote:
    f, sr = _hz(key), key.sample_rate
    amp, b = velocity_amp(key)
    partials = _two_tone(key, bianzhong_tau_s(f), 0.55 + 0.45 * b, amp, BELL_UPPER)
    return StruckNote((ModeGroup(_modes(f, partials, sr)),),
                      _burst("編鐘", amp, b, bandpass=(min(3500.0, 0.4 * sr), 1.0)))


def _bo(key: NoteKey) -> StruckNote:
    f, sr = _hz(key), key.sample_rate
    amp, b = velocity_amp(key)
    partials = _two_tone(key, bo_tau_s(f), 0.4 + 0.4 * b, amp, BELL_UPPER[:4])
    return StruckNote((ModeGroup(_modes(f, partials, sr)),),
                      _burst("鑮", amp, b, lowpass_hz=min(2.0 * f, 600.0)))


def _qing(key: NoteKey) -> StruckNote:
    f, sr = _hz(key), key.sample_rate
    amp, b = velocity_amp(key)
    tau1, bright = qing_tau_s(f), 0.6 + 0.4 * b
    # the strike position weights the modes a little differently in each variant; the stone
    # damps high modes: τ/ratio
    partials = [(r, amp * a * (0.8 + 0.4 * ((key.variant * 0.618 * (k + 1)) % 1.0)) * bright ** k,
                 tau1 / r) for k, (r, a) in enumerate(zip(QING_MODE_RATIOS, QING_MODE_AMPS,
                                                          strict=True))]
    return StruckNote((ModeGroup(_modes(f, partials, sr)),),
                      _burst("編磬", amp, b, lowpass_hz=min(4000.0, 0.4 * sr)))


def bessel_j(m: int, x: float) -> float:
    """The Bessel function J_m(x) by its power series (exact to ~1e-12 for the membrane's
    arguments, |x| < 10; no scipy import on the render path)."""
    term = (x / 2.0) ** m / math.factorial(m)
    total = 0.0
    for k in range(60):
        total += term
        term *= -(x * x / 4.0) / ((k + 1) * (k + 1 + m))
    return total


def drum_mode_amplitudes(radius: float, tau11_s: float | None = None) -> list[float]:
    """|J_m(j_mn·r)| of each of ``MEMBRANE_MODES`` for a stroke at ``radius`` (fraction of the
    head's radius), scaled so that every stroke rings with the same energy (Σ a²·τ = 1).  Given
    the (1,1) mode's time constant ``tau11_s``, the energy that is the same is that of the first
    ``DRUM_LEVEL_WINDOW_S`` (what is heard as the stroke's level), the level of a stroke at
    ``DRUM_REFERENCE_RADIUS`` rescaled so: the strike point changes the colour of a stroke, its
    level is the player's."""
    amps = _ring_normalised(radius)
    if tau11_s is None:
        return amps
    return [a * (_window_energy(_ring_normalised(DRUM_REFERENCE_RADIUS), tau11_s)
                 / _window_energy(amps, tau11_s)) ** 0.5 for a in amps]


def _ring_normalised(radius: float) -> list[float]:
    amps = [abs(bessel_j(int(mode[1]), j * radius)) for mode, _, _, j in MEMBRANE_MODES]
    energy = sum(a * a * rel for a, (_, _, rel, _) in zip(amps, MEMBRANE_MODES, strict=True))
    return [a / energy ** 0.5 for a in amps]


def _window_energy(amps: list[float], tau11_s: float) -> float:
    """Σ a²·τ·(1 − e^(−2T/τ)): the modes' energy over their first T = DRUM_LEVEL_WINDOW_S."""
    return sum(a * a * rel * tau11_s * (1.0 - math.exp(-2.0 * DRUM_LEVEL_WINDOW_S
                                                       / (rel * tau11_s)))
               for a, (_, _, rel, _) in zip(amps, MEMBRANE_MODES, strict=True))


def _drum(key: NoteKey) -> StruckNote:
    """A drum stroke, its own in every note (``drum_stroke``: strike point, force, pitch, slap,
    click); its force is heard as a velocity that much harder would be (the level itself is
    the mixer's: ``stroke_gain``)."""
    f_nominal, tau11, depth, cutoff = DRUMS[key.instrument]
    stroke = drum_stroke(key.variant)
    f0, sr = f_nominal * cents_ratio(stroke.cents), key.sample_rate
    amp, b = velocity_amp(key)
    b = min(1.0, b * 10.0 ** (stroke.force_db / 30.0))  # amp ∝ v^1.5: Δ dB is v × 10^(Δ/30)
    strike = drum_mode_amplitudes(stroke.radius, tau11)
    bright = 0.6 + 0.4 * b
    tau = tau11 * stroke.damping
    partials = [(ratio, amp * a * bright ** k, tau * rel)
                for k, ((_, ratio, rel, _), a) in enumerate(zip(MEMBRANE_MODES, strike,
                                                                strict=True))]
    # a harder stroke starts sharper: f0·(1 + depth·b·e^(−t/50 ms))
    group = ModeGroup(_modes(f0, partials, sr, f0 * (1 + depth)),
                      glide=(depth * b, DRUM_GLIDE_TAU_S))
    tau_c, level_c, centre_c, q_c = DRUM_CONTACT
    contact = NoiseBurst(tau_c, amp * level_c * b * stroke.click,
                         bandpass=(min(centre_c, 0.4 * sr), q_c), attack_s=0.0001)
    slap = cutoff * (0.6 + 0.8 * b) * stroke.slap
    slap = min(2.0 ** (round(24.0 * math.log2(slap)) / 24.0), 0.4 * sr)  # 1/24 octave: cached
    return StruckNote((group,), _burst("drum", amp, b, lowpass_hz=slap), contact)


def _tao(key: NoteKey) -> StruckNote:
    amp, b = velocity_amp(key)
    heads: list[list[tuple[float, float]]] = [[], []]
    for i, (t, base) in enumerate(TAO_STRIKES):
        # each shake's pellets land a little differently (the variant): never louder than the
        # pattern's, within 0.7 dB of it (one shake stays one stroke: no pellet stands out)
        heads[i % 2].append((t, base * (1.0 - 0.08 * ((key.variant + 1) * 0.618 * i % 1.0))))
    groups = []
    for f, strikes in zip(TAO_HEADS_HZ, heads, strict=True):
        modes = _modes(f, [(r, amp * a, tau) for r, a, tau in TAO_HEAD_MODES], key.sample_rate)
        modes += _modes(1.0, [(hz, amp * a * b, tau) for hz, a, tau in TAO_CLICKS],
                        key.sample_rate)
        groups.append(ModeGroup(modes, tuple(strikes)))
    return StruckNote(tuple(groups), None)


_DESCRIBERS = {"編鐘": _bell, "鑮": _bo, "編磬": _qing, "建鼓": _drum, "鼓": _drum,
               "朔鼙": _drum, "應鼙": _drum, "鼙": _drum, "鼗": _tao}
STRUCK_VOICES = frozenset(_DESCRIBERS)


def struck_note(key: NoteKey) -> StruckNote:
    """The modal description of the struck note ``key``."""
    return _DESCRIBERS[key.instrument](key)

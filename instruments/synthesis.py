"""The sound of each voice, built as a pyo graph and rendered offline into a numpy array.

``synthesize(key)`` boots an offline pyo server (``Server(audio="offline")``), builds the graph
of the key's voice (one builder per voice below: modal resonators for the bells, the stone and
the drums), records it into a table and returns it as float32, ending in a 50 ms raised-cosine
fade to exactly zero.  The sustained and plucked voices (歌 笙 和 管 瑟) are computed with numpy
instead (``instruments.sustained``), with the same fade.  The numbers come from
``instruments.voice_models``.

Rendering is deterministic: each note's noise generators are seeded from a CRC of the note's
key, so the same note gives the same samples in any process and whatever was rendered before.
pyo is imported lazily, inside ``synthesize``, never at module import, and with
``PYO_GUI_WX=0`` so that it prints no WxPython banner.  Only one pyo server may exist in a
process at a time: ``PYO_LOCK`` serializes the renders, which must not be mixed with a live pyo
server in the same process.
"""

from __future__ import annotations

import math
import os
import tempfile
import threading
import zlib
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from instruments.sustained import NUMPY_VOICES
from instruments.tuning import cents_ratio
from instruments.voice_models import (
    BELL_INTERVAL_SPREAD_CENTS,
    BELL_INTERVALS,
    BELL_PAIR_RANGE,
    BELL_TRACE_DB,
    BELL_UPPER,
    DRUM_STRIKE_RADII,
    DRUMS,
    FADE_S,
    MEMBRANE_MODES,
    QING_MODE_RATIOS,
    STROKE_PITCH_CENTS,
    STROKE_VARIANTS,
    NoteKey,
    bianzhong_tau_s,
    bo_tau_s,
    key_length,
    qing_tau_s,
    velocity_amp,
)

PYO_LOCK = threading.RLock()


def _seed(key: NoteKey) -> int:
    return zlib.crc32(repr(key).encode("utf-8")) % 2_000_000_000 + 1


def synthesize(key: NoteKey) -> np.ndarray:
    """The samples of the note ``key`` (``key_length(key)`` of them, the last one 0), rendered
    by an offline pyo server of its own (the caller holds ``PYO_LOCK``), or by numpy for the
    ``NUMPY_VOICES`` (thread-safe: no lock needed)."""
    n = key_length(key)
    sr = key.sample_rate
    if key.instrument in NUMPY_VOICES:  # the sustained and plucked voices: no pyo server
        return _faded(np.asarray(NUMPY_VOICES[key.instrument](key, n), dtype=np.float32), sr)
    os.environ.setdefault("PYO_GUI_WX", "0")
    import pyo  # lazy on purpose: never import pyo at module import
    length_s = n / sr
    with tempfile.TemporaryDirectory(prefix="yuezheng-voice-") as tmp:
        server = pyo.Server(sr=sr, nchnls=1, duplex=0, audio="offline", buffersize=256)
        server.setVerbosity(0)
        server.boot()
        try:
            server.setGlobalSeed(_seed(key))
            # run a few blocks longer than the note so the table is surely full
            server.recordOptions(dur=length_s + 2048 / sr, filename=os.path.join(tmp, "o.wav"),
                                 fileformat=0, sampletype=3)
            table = pyo.NewTable(length=length_s + 1024 / sr, chnls=1)
            keep: list[Any] = []
            sig = _BUILDERS[key.instrument](pyo, key, length_s, keep)
            rec = pyo.TableRec(sig, table=table).play()
            keep += [sig, rec]
            server.start()
            data = np.array(memoryview(table.getBuffer()), dtype=np.float64)
        finally:
            server.stop()
            server.shutdown()
    arr = np.zeros(n, dtype=np.float32)
    m = min(n, data.size)
    arr[:m] = data[:m]
    return _faded(arr, sr)


def _faded(arr: np.ndarray, sr: int) -> np.ndarray:
    """``arr`` with the raised-cosine end: exactly zero at the last sample whatever the voice's
    own ramp did."""
    n = arr.size
    k = min(n, int(FADE_S * sr))
    if k > 1:
        arr[n - k:] *= (0.5 + 0.5 * np.cos(np.linspace(0.0, math.pi, k))).astype(np.float32)
    return arr


# ── voice builders (each receives the pyo module, the key, the length and a keep-alive list) ─

Builder = Callable[[Any, NoteKey, float, list[Any]], Any]


def _vel(key: NoteKey) -> tuple[float, float]:
    """(amplitude scale, brightness 0…1) for the key's velocity."""
    return velocity_amp(key)


def _decay(P: Any, tau: float, amp: float, keep: list[Any], attack: float = 0.0005,
           delay: float = 0.0) -> tuple[Any, float]:
    """amp · (linear attack) · exp(−t/τ) as a pyo stream that starts at ``delay`` and is cut
    (to 0) after 12 τ (−104 dB), so it costs nothing afterwards; returns (stream, active s)."""
    active = attack + 12.0 * tau
    att = P.Linseg([(0.0, 0.0), (attack, amp), (active, amp)])
    ramp = P.Linseg([(0.0, 0.0), (active, -active / tau)])
    env = P.Pow(math.e, ramp, mul=att)
    for obj in (att, ramp, env):
        obj.play(dur=active, delay=delay)
    keep += [att, ramp, env]
    return env, active


# pyo's ComplexRes answers a unit impulse with 0.01·e^(−t/decay)·sin(2πft), whatever f and decay
_RES_GAIN = 100.0


def _modal(P: Any, freq: Any, partials: list[tuple[float, float, float]], nyquist_guard: float,
           keep: list[Any], base_hz: float, strike: Any = None) -> list[Any]:
    """Modal synthesis: a unit impulse (``strike``, default one at t = 0) into one complex
    resonator per partial, so each partial is exactly amp·e^(−t/τ)·sin(2π·f·ratio·t).
    Partials at or above ``nyquist_guard`` are left out."""
    if strike is None:
        strike = P.Trig().play()
        keep.append(strike)
    outs = []
    for ratio, amp, tau in partials:
        if base_hz * ratio >= nyquist_guard or amp <= 0:
            continue
        f = freq * ratio
        res = P.ComplexRes(strike, freq=f, decay=tau, mul=amp * _RES_GAIN)
        keep += [f, res]
        outs.append(res)
    return outs


def _noise_burst(P: Any, tau: float, amp: float, keep: list[Any],
                 lowpass: float | None = None, bandpass: tuple[float, float] | None = None,
                 delay: float = 0.0) -> Any:
    """A filtered noise burst with an exponential envelope (pyo's Noise is costly, so it only
    runs while the envelope is above −104 dB)."""
    env, active = _decay(P, tau, amp, keep, delay=delay)
    noise = P.Noise(mul=env).play(dur=active, delay=delay)
    keep.append(noise)
    if bandpass is not None:
        filt = P.ButBP(noise, freq=bandpass[0], q=bandpass[1])
    elif lowpass is not None:
        filt = P.ButLP(noise, freq=lowpass)
    else:
        return noise
    keep.append(filt)
    return filt


def _partials(spec: Iterable[tuple[float, float]], amp: float, brightness: float, tau: float,
              tau_power: float, first_bright: int = 0) -> list[tuple[float, float, float]]:
    """(ratio, amplitude, τ) of each partial of ``spec`` ((ratio, relative amplitude), lowest
    first) for ``_modal``: the amplitudes scaled by ``amp`` and by ``brightness`` once per rank
    above ``first_bright``, the time constants ``tau`` / ratio^``tau_power``."""
    return [(r, amp * a * brightness ** max(0, k - first_bright), tau / r ** tau_power)
            for k, (r, a) in enumerate(spec)]


def _mixed(P: Any, parts: list[Any], keep: list[Any]) -> Any:
    """The parts summed into one mono stream."""
    mix = P.Mix(parts, voices=1)
    keep.append(mix)
    return mix


def _bell_tones(key: NoteKey) -> tuple[float, float, np.random.Generator]:
    """(正鼓 Hz, this bell's 側鼓 : 正鼓 ratio, the bell's own random generator) of the bell a
    編鐘 or 鑮 note strikes.  The bell is named by its nominal 正鼓 pitch, so the same bell has
    the same interval and partials whichever tone is struck and in any render."""
    f = float(key.freq_hz)  # type: ignore[arg-type]
    nominal = BELL_INTERVALS[key.bell_interval or "minor"]
    zheng_nominal = f if key.strike != "側鼓" else f / nominal
    bell = np.random.default_rng(zlib.crc32(f"{key.instrument} {zheng_nominal:.2f}".encode()))
    ratio = nominal * cents_ratio(float(bell.uniform(-1.0, 1.0)) * BELL_INTERVAL_SPREAD_CENTS)
    zheng = f if key.strike != "側鼓" else f / ratio
    return zheng, ratio, bell


def _two_tone(key: NoteKey, tau: float, brightness: float, amp: float, pair: tuple[float, float],
              upper: tuple[tuple[float, float], ...]) -> list[tuple[float, float, float]]:
    """(ratio to the struck tone, amplitude, τ) of a two-tone bell's partials: the struck (2,0)
    tone, its partner a trace BELL_TRACE_DB under it (the variant's strike position), the (3,0)
    ``pair`` (ratios to the 正鼓) and the ``upper`` partials."""
    f = float(key.freq_hz)  # type: ignore[arg-type]
    zheng, ratio, _ = _bell_tones(key)
    lo, hi = BELL_TRACE_DB
    trace_db = lo + (hi - lo) * key.variant / max(1, STROKE_VARIANTS - 1)
    trace = 10.0 ** (trace_db / 20.0)
    ce_struck = key.strike == "側鼓"
    partials = [(1.0, amp, tau),
                (zheng / f if ce_struck else ratio, amp * trace, tau)]
    for k, r in enumerate(pair):  # one member of the pair answers each strike point
        strong = (k == 1) == ce_struck
        partials.append((r * zheng / f, amp * brightness * (0.3 if strong else 0.15),
                         tau / r ** 0.9))
    for r, a in upper:
        partials.append((r * zheng / f, amp * a * brightness ** 2, tau / r ** 1.6))
    return partials


def _bell(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    f = float(key.freq_hz)  # type: ignore[arg-type]
    amp, b = _vel(key)
    _, _, bell = _bell_tones(key)
    low, high = BELL_PAIR_RANGE
    pair = (float(bell.uniform(low, 2.8)), float(bell.uniform(2.8, high)))
    partials = _two_tone(key, bianzhong_tau_s(f), 0.55 + 0.45 * b, amp, pair, BELL_UPPER)
    parts = _modal(P, f, partials, 0.45 * key.sample_rate, keep, f)
    parts.append(_noise_burst(P, 0.003, amp * 0.5 * b * b, keep,
                              bandpass=(min(5.0 * f, 0.4 * key.sample_rate), 2.0)))
    return _mixed(P, parts, keep)


def _bo(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    f = float(key.freq_hz)  # type: ignore[arg-type]
    amp, b = _vel(key)
    partials = _two_tone(key, bo_tau_s(f), 0.4 + 0.4 * b, amp, BELL_PAIR_RANGE, BELL_UPPER[:2])
    parts = _modal(P, f, partials, 0.45 * key.sample_rate, keep, f)
    parts.append(_noise_burst(P, 0.02, amp * 0.6 * b, keep, lowpass=min(2.0 * f, 600.0)))
    return _mixed(P, parts, keep)


def _qing(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    f = float(key.freq_hz)  # type: ignore[arg-type]
    amp, b = _vel(key)
    tau1 = qing_tau_s(f)
    # the strike position weights the modes a little differently in each variant
    amps = [a * (0.8 + 0.4 * ((key.variant * 0.618 * (k + 1)) % 1.0))
            for k, a in enumerate((1.0, 0.4, 0.2, 0.08))]
    partials = _partials(zip(QING_MODE_RATIOS, amps, strict=True), amp, 0.6 + 0.4 * b, tau1,
                         1.0)  # stone damps high modes: τ/ratio
    parts = _modal(P, f, partials, 0.45 * key.sample_rate, keep, f)
    parts.append(_noise_burst(P, 0.003, amp * 0.35 * b, keep,
                              lowpass=min(4000.0, 0.4 * key.sample_rate)))
    return _mixed(P, parts, keep)


def bessel_j(m: int, x: float) -> float:
    """The Bessel function J_m(x) by its power series (exact to ~1e-12 for the membrane's
    arguments, |x| < 10; no scipy import on the render path)."""
    term = (x / 2.0) ** m / math.factorial(m)
    total = 0.0
    for k in range(60):
        total += term
        term *= -(x * x / 4.0) / ((k + 1) * (k + 1 + m))
    return total


def drum_mode_amplitudes(radius: float) -> list[float]:
    """|J_m(j_mn·r)| of each of ``MEMBRANE_MODES`` for a stroke at ``radius`` (fraction of the
    head's radius), scaled so that every stroke rings with the same energy (Σ a²·τ = 1): the
    strike point changes the colour of a stroke, its level is the player's."""
    amps = [abs(bessel_j(int(mode[1]), j * radius)) for mode, _, _, j in MEMBRANE_MODES]
    energy = sum(a * a * rel for a, (_, _, rel, _) in zip(amps, MEMBRANE_MODES, strict=True))
    return [a / energy ** 0.5 for a in amps]


def _drum_pitch_cents(variant: int) -> float:
    """The variant's pitch offset within ±STROKE_PITCH_CENTS (a fixed scramble of the
    variants, so that pitch and strike position do not move together)."""
    k = (variant * 5 + 2) % STROKE_VARIANTS
    return STROKE_PITCH_CENTS * (2.0 * k / max(1, STROKE_VARIANTS - 1) - 1.0)


def _drum(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    f_nominal, tau11, depth, cutoff = DRUMS[key.instrument]
    f0 = f_nominal * cents_ratio(_drum_pitch_cents(key.variant))
    amp, b = _vel(key)
    drop, _ = _decay(P, 0.05, f0 * depth * b, keep, attack=0.0001)
    glide = drop + f0  # f0·(1 + depth·b·e^(−t/50 ms)): a harder stroke starts sharper
    keep.append(glide)
    strike = drum_mode_amplitudes(DRUM_STRIKE_RADII[key.variant])
    spec = [(ratio, a, rel_tau) for (_, ratio, rel_tau, _), a in zip(MEMBRANE_MODES, strike,
                                                                       strict=True)]
    bright = 0.6 + 0.4 * b
    partials = [(r, amp * a * bright ** k, tau11 * rel) for k, (r, a, rel) in enumerate(spec)]
    parts = _modal(P, glide, partials, 0.45 * key.sample_rate, keep, f0 * (1 + depth))
    parts.append(_noise_burst(P, 0.03, amp * 0.7 * b, keep,
                              lowpass=min(cutoff * (0.6 + 0.8 * b), 0.4 * key.sample_rate)))
    return _mixed(P, parts, keep)


# strike times (s) and relative strengths of the 鼗's pellets: a fixed, deterministic pattern
_TAO_STRIKES: tuple[tuple[float, float], ...] = (
    (0.000, 1.00), (0.036, 0.92), (0.081, 0.95), (0.119, 0.85), (0.163, 0.86), (0.203, 0.74),
    (0.251, 0.72), (0.293, 0.60), (0.345, 0.55), (0.390, 0.43), (0.447, 0.36), (0.500, 0.25),
)


def _tao(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    amp, b = _vel(key)
    heads: list[list[Any]] = [[], []]
    for i, (t, base) in enumerate(_TAO_STRIKES):
        # each shake's pellets land a little differently (the variant): never louder than the
        # pattern's, within 0.7 dB of it (one shake stays one stroke: no pellet stands out)
        strength = base * (1.0 - 0.08 * ((key.variant + 1) * 0.618 * i % 1.0))
        trig = P.Trig()
        if t > 0:
            trig.play(delay=t)
        else:
            trig.play()
        scaled = trig * strength
        keep.append(trig)
        heads[i % 2].append(scaled)
    keep += heads[0] + heads[1]
    parts = []
    for f, trigs in ((340.0, heads[0]), (362.0, heads[1])):
        strikes = P.Mix(trigs, voices=1)
        keep.append(strikes)
        # the small heads' (0,1), (1,1), (2,1) modes at the ideal membrane's ratios (the (0,1)
        # rings longest on a head this small and taut: it fills the gaps between the pellets,
        # so that one shake stays one stroke)
        parts += _modal(P, f, [(1.0, amp, 0.035), (1.594, amp * 0.45, 0.021),
                               (2.136, amp * 0.3, 0.016)],
                        0.45 * key.sample_rate, keep, f, strike=strikes)
        # the pellet's click: two short high resonances
        parts += _modal(P, 1.0, [(3000.0, amp * 0.5 * b, 0.004), (4700.0, amp * 0.3 * b, 0.003)],
                        0.45 * key.sample_rate, keep, 1.0, strike=strikes)
    return _mixed(P, parts, keep)


_BUILDERS: dict[str, Builder] = {
    "編鐘": _bell, "鑮": _bo, "編磬": _qing, "建鼓": _drum, "鼓": _drum, "朔鼙": _drum,
    "應鼙": _drum, "鼙": _drum, "鼗": _tao,
}

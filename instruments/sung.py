"""The 歌: two singers singing the lyric, one syllable a note (numpy; numbers in
``instruments.vowels``, readings in ``instruments.lyric_readings``).

A note of the 歌 is, for each of the two singers:

* a glottal source with a spectral tilt: harmonic h has amplitude h⁻² (−12 dB/octave, the
  glottal pulse) × h (+6 dB/octave, radiation at the lips), shaped by the cascade formant
  envelope of the vowel target (``instruments.vowels``) at that harmonic, the harmonics kept
  below 0.45 × the sample rate;
* vowel targets in turn — the medial glide (60 ms), the nucleus, and a coda or off-glide over
  the last 35 % of the held part — crossfaded on one unbroken phase, each target's wavetable
  scaled to RMS 1 (so the level is the same at every pitch and on every vowel; murmurs
  (m n l, the nasal codas) at ``MURMUR_GAIN``);
* vibrato whose phase is the absolute time (``onset_s`` is part of the note's identity), so
  consecutive syllables of a phrase share one unbroken vibrato;
* breath: noise shaped by the same formants, 24 dB under the voiced part; the consonant of the
  initial: a band of noise before the voice starts (``vowels.CONSONANTS``).

The singers differ (decorrelated): singer 2 is 7 cents above singer 1 (−3 and +4 cents), starts
18 ms later, has formants 4 % higher (a shorter vocal tract), another vibrato rate and depth
and its own breath noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from instruments import tone_dsp as dsp
from instruments.lyric_readings import reading
from instruments.voice_models import RELEASE_S
from instruments.vowels import CONSONANTS, MURMUR_GAIN, MURMURS, formants, syllable_targets

ATTACK_S = 0.06
GLIDE_S = 0.06
CODA_FROM = 0.65  # the coda or off-glide takes the last 35 % of the held part
BREATH_GAIN = 10 ** (-24 / 20)
BREATH_S = 1.5


@dataclass(frozen=True)
class Singer:
    cents: float
    delay_s: float
    formant_scale: float
    vibrato_hz: float
    vibrato_depth: float  # relative frequency deviation
    vibrato_phase: float  # at the onset, in cycles
    level: float


SINGERS = (
    Singer(-3.0, 0.0, 1.0, 5.5, 0.006, 0.0, 1.0),
    Singer(4.0, 0.018, 1.04, 5.1, 0.005, 0.5, 0.85),
)


def syllable_key(lyric: str | None) -> str:
    """The part of a lyric the voice sings: ``initial.final`` of its reading (notes whose
    syllables read alike share their sound)."""
    initial, final = reading(lyric)
    return f"{initial}.{final}"


def voice_envelope(freqs: np.ndarray, target: str, scale: float) -> np.ndarray:
    """The vocal tract's gain: the cascade of the target's five formants, and above F5 no
    steeper than 6 dB/octave (the formants above F5, left out of the cascade, keep the
    spectrum from falling off a cliff)."""
    shape = formants(target, scale)
    env = dsp.cascade(freqs, shape)
    top = shape[-1][0]
    tail = dsp.cascade(np.array([top]), shape)[0] * top / np.maximum(freqs, top)
    return np.where(freqs > top, np.maximum(env, tail), env)


@lru_cache(maxsize=512)
def _vowel_table(target: str, f0: float, sr: int, scale: float, gain: float) -> np.ndarray:
    """One period of ``target`` sung at ``f0`` (RMS ``gain``; a murmur ``MURMUR_GAIN`` under)."""
    n_harm = max(1, int(0.45 * sr / (f0 * 1.02)))
    h = np.arange(1, n_harm + 1, dtype=np.float64)
    amps = (1.0 / h) * voice_envelope(h * f0, target, scale)
    amps = dsp.unit_rms(amps) * gain
    if target in MURMURS:
        amps = amps * MURMUR_GAIN
    return dsp.wavetable(amps)


@lru_cache(maxsize=64)
def _breath(target: str, sr: int, scale: float, singer: int, gain: float) -> np.ndarray:
    """Breath noise shaped by ``target``'s formants, ``BREATH_GAIN`` under a voice of RMS
    ``gain`` (float32, ``BREATH_S`` long, repeated for longer notes)."""
    noise = dsp.shaped_noise(int(BREATH_S * sr), sr,
                             lambda f: voice_envelope(f, target, scale),
                             dsp.seed_of("breath", target, singer))
    out = (noise * (BREATH_GAIN * gain)).astype(np.float32)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=64)
def _burst(initial: str, sr: int, singer: int) -> np.ndarray:
    c = CONSONANTS[initial]
    n = max(1, int(c.noise_s * sr))

    def band(f: np.ndarray) -> np.ndarray:
        return np.exp(-0.5 * ((f - c.centre_hz) / (0.5 * c.bandwidth_hz)) ** 2)

    noise = dsp.shaped_noise(n, sr, band, dsp.seed_of("burst", initial, singer))
    t = np.arange(n) / sr
    # a sharp release then a decay over the consonant's length
    env = np.minimum(1.0, t / 0.002) * np.exp(-t / max(c.noise_s / 2.5, 0.004))
    return noise * env * c.level


def _segments(initial: str, final: str, voice_on: float, hold: float
              ) -> list[tuple[str, float, float]]:
    """(target, from s, to s) with crossfades between neighbours: murmur onset, medial glide,
    nucleus, coda."""
    medial, nucleus, coda = syllable_targets(initial, final)
    murmur = CONSONANTS[initial].murmur
    order: list[tuple[str, float]] = []
    t = voice_on
    for target in (murmur, medial):
        if target is not None:
            order.append((target, t))
            t += GLIDE_S
    order.append((nucleus, t))
    if coda is not None:
        order.append((coda, max(t + GLIDE_S, voice_on + CODA_FROM * (hold - voice_on))))
    return [(target, start, order[i + 1][1] if i + 1 < len(order) else math.inf)
            for i, (target, start) in enumerate(order)]


@lru_cache(maxsize=64)
def _table_index(f0: float, duration_s: float, n: int, sr: int, index: int) -> np.ndarray:
    """Where singer ``index`` reads a vowel wavetable for a note of ``n`` samples (int64,
    read-only): a vibrato of a whole number of cycles in the note's held part, starting at the
    singer's phase at the onset (so the vibrato runs on unbroken from syllable to syllable)."""
    singer = SINGERS[index]
    cycles = max(1, round(duration_s * singer.vibrato_hz))
    rate = cycles / duration_s if duration_s > 0 else singer.vibrato_hz
    phase = dsp.vibrato_phase(f0, n, sr, rate, singer.vibrato_depth,
                              singer.vibrato_phase / rate)
    out = dsp.table_index(phase)
    out.setflags(write=False)
    return out


def _voiced(index: int, f0: float, duration_s: float, n: int, sr: int,
            segments: list[tuple[str, float, float]], gain: float) -> np.ndarray:
    """Singer ``index``'s voiced sound: the targets' wavetables in turn, crossfaded (raised
    cosine, ``GLIDE_S``) where one gives way to the next."""
    where = _table_index(f0, duration_s, n, sr, index)
    scale = SINGERS[index].formant_scale
    if len(segments) == 1:
        return _vowel_table(segments[0][0], f0, sr, scale, gain)[where]
    out = np.zeros(n, dtype=np.float32)
    fade = int(GLIDE_S * sr)
    for i, (target, start, end) in enumerate(segments):
        table = _vowel_table(target, f0, sr, scale, gain)
        lo = max(0, int(start * sr) - (fade if i else 0))
        hi = n if math.isinf(end) else min(n, int(end * sr))
        mid_lo = min(hi, lo + fade) if i else lo
        mid_hi = hi if math.isinf(end) else max(mid_lo, hi - fade)
        if i and mid_lo > lo:
            out[lo:mid_lo] += table[where[lo:mid_lo]] * dsp.fade_curve(fade, True)[:mid_lo - lo]
        out[mid_lo:mid_hi] += table[where[mid_lo:mid_hi]]
        if hi > mid_hi:
            out[mid_hi:hi] += table[where[mid_hi:hi]] * dsp.fade_curve(fade, False)[:hi - mid_hi]
    return out


def sing(f0: float, duration_s: float, n: int, sr: int, syllable: str, amp: float
         ) -> np.ndarray:
    """``n`` samples of the two singers on ``syllable`` (``syllable_key`` form) at ``f0``, held
    for ``duration_s`` then released; each held vowel has an RMS of ``amp`` × the singer's
    level."""
    initial, final = syllable.split(".")
    if initial not in CONSONANTS:
        initial = ""
    cons = CONSONANTS[initial]
    segs = _segments(initial, final, cons.voice_s, duration_s)
    nucleus = syllable_targets(initial, final)[1]
    out = np.zeros(n, dtype=np.float32)
    for index, singer in enumerate(SINGERS):
        start = int(round(singer.delay_s * sr))
        m = n - start
        f = round(f0 * 2 ** (singer.cents / 1200), 6)
        gain = round(singer.level * amp, 9)
        part = _voiced(index, f, duration_s, m, sr, segs, gain)
        loop = _breath(nucleus, sr, singer.formant_scale, index, gain)
        part += loop[:m] if m <= loop.size else np.resize(loop, m)
        dsp.apply_hold(part, sr, cons.voice_s, ATTACK_S, duration_s, RELEASE_S["歌"])
        if cons.noise_s > 0:
            burst = _burst(initial, sr, index)
            k = min(m, burst.size)
            part[:k] += burst[:k] * np.float32(gain)
        out[start:] += part
    return out

"""The 歌: two singers singing the lyric, one syllable a note (numpy; numbers in
``instruments.voices.vowels``, readings in ``instruments.voices.lyric_readings``).

A note of the 歌 is, for each of the two singers:

* a glottal source with a spectral tilt: harmonic h has amplitude h⁻² (−12 dB/octave, the
  glottal pulse) × h (+6 dB/octave, radiation at the lips), shaped by the cascade formant
  envelope of the target (``instruments.voices.vowels``) at that harmonic — the formants stay
  where the vowel has them whatever the pitch: the harmonics sample them — below 0.45 × the
  sample rate; each target's wavetable has an RMS of 1 (the same level at every pitch and on
  every vowel), murmurs (m n ŋ l) ``MURMUR_GAIN`` under, the nasals with their anti-resonance;
* the syllable's targets in turn, read on one unbroken phase, each moving into the next by a
  raised-cosine crossfade of their wavetables (a formant transition): a consonant's locus into
  the vowel (``TRANSITION_S``), a medial glide, the nucleus, and a coda or off-glide at the end
  of the held part (``CODA_S``, at most ``CODA_SHARE`` of it);
* the consonant in its parts (``vowels.Consonant``): a stop's closure (no voice) and burst,
  aspiration or frication, a nasal's murmur, released quickly;
* vibrato of a whole number of cycles in the held part, from the singer's phase at the onset,
  so consecutive syllables share one unbroken vibrato;
* breath: noise shaped by the nucleus's formants, 24 dB under the voiced part, from the
  vowel's onset (a nasal's or liquid's murmur has none: the mouth is closed).

**Legato and glides.**  A syllable sung straight after another (the mixer finds them:
``legato_links``) glides from the last one's pitch to its own over ``GLIDE_S`` (a raised
cosine), on a phase that continues the last one's: every sung note's phase is 0 at its onset,
and a note that flows into the next has a whole number of cycles by the next onset (the
fraction left is absorbed by the glide where there is one, else spread over the note: at most
half a cycle, 4.4 cents for one second at G3), so the two meet in phase, at one pitch, and
cross over ``LEGATO_S`` without the dip or beating of two unrelated waves — where the next
syllable begins with its voice (a vowel, nasal or liquid); where its consonant begins with a
closure or noise, the voice stops ``STOP_S`` before it, and the closure is silent.

The singers differ (decorrelated): singer 2 is 7 cents above singer 1 (−3 and +4 cents), starts
18 ms later, has formants 4 % higher (a shorter vocal tract), another vibrato rate and depth
and its own breath noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from instruments.voices import tone_dsp as dsp
from instruments.voices.lyric_readings import reading
from instruments.voices.models import RELEASE_S
from instruments.voices.vowels import (
    CONSONANTS,
    MURMUR_GAIN,
    MURMURS,
    NASAL_ZEROS,
    Consonant,
    formants,
    syllable_targets,
)

ATTACK_S = 0.06  # a phrase's first voice
VOICED_ATTACK_S = 0.02  # the voice after a consonant inside a phrase
LEGATO_S = 0.03  # two legato syllables cross over this long (in phase, at one pitch)
GLIDE_S = 0.09  # the pitch glide from the last syllable's pitch into this one's
GLIDE_MIN_CENTS = 30.0  # a smaller glide does not carry the phase correction
TRANSITION_S = 0.04  # formants from a consonant's locus or a murmur into the vowel
RELEASE_MURMUR_S = 0.015  # a nasal or lateral murmur is released this quickly
MEDIAL_S = 0.06  # a medial glide (i u ü) before the nucleus, and its move into it
CODA_S = 0.12  # a coda takes the end of the held part: this long …
CODA_SHARE = 0.3  # … or this share of the held part if that is less
CODA_MOVE_S = 0.05  # … and moves into it over this long
STOP_S = 0.02  # the voice stops this quickly before the next syllable's consonant
LEGATO_JOINS = ("", "voiced", "stopped")
BREATH_GAIN = 10 ** (-24 / 20)
BREATH_S = 1.5
NASAL_NOTCH_BANDWIDTH = 1500.0  # the pole that keeps a nasal zero a notch (unity far from it)


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
    spectrum from falling off a cliff); a nasal's anti-resonance notches it."""
    shape = formants(target, scale)
    env = dsp.cascade(freqs, shape)
    top = shape[-1][0]
    tail = dsp.cascade(np.array([top]), shape)[0] * top / np.maximum(freqs, top)
    env = np.where(freqs > top, np.maximum(env, tail), env)
    if target in NASAL_ZEROS:
        centre, bandwidth = NASAL_ZEROS[target]
        env = env * (dsp.resonance(freqs, centre, NASAL_NOTCH_BANDWIDTH)
                     / dsp.resonance(freqs, centre, bandwidth))
    return env


@lru_cache(maxsize=1024)
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
def _breath(target: str, sr: int, scale: float, singer: int) -> np.ndarray:
    """Breath noise shaped by ``target``'s formants, RMS 1 (float32, ``BREATH_S`` long,
    repeated for longer notes)."""
    noise = dsp.shaped_noise(int(BREATH_S * sr), sr,
                             lambda f: voice_envelope(f, target, scale),
                             dsp.seed_of("breath", target, singer))
    out = noise.astype(np.float32)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=256)
def _consonant_noise(initial: str, target: str, sr: int, scale: float, singer: int
                     ) -> np.ndarray:
    """The consonant's noise at unit gain (its burst or frication, then its aspiration),
    from the note's onset (float32, read-only)."""
    c = CONSONANTS[initial]
    n = max(1, int(round(c.noise_s * sr)))
    out = np.zeros(n)
    at = int(round(c.closure_s * sr))
    if c.burst is not None:
        centre, width, level, length = c.burst
        k = max(1, int(round(length * sr)))

        def band(f: np.ndarray) -> np.ndarray:
            return np.exp(-0.5 * ((f - centre) / (0.5 * width)) ** 2)

        noise = dsp.shaped_noise(k, sr, band, dsp.seed_of("burst", initial, singer))
        t = np.arange(k) / sr
        env = np.minimum(1.0, t / 0.001) * np.exp(-t / max(length / 2.5, 0.002))
        out[at:at + k] += (noise * env * level)[: n - at]
        at += k
    if c.aspiration_s > 0:
        k = max(1, min(n - at, int(round(c.aspiration_s * sr))))
        # breath through the vowel's own formants (h: with its velar band, in its burst)
        noise = dsp.shaped_noise(k, sr, lambda f: voice_envelope(f, target, scale),
                                 dsp.seed_of("aspiration", initial, target, singer))
        rise, fall = int(0.005 * sr), int(0.02 * sr)
        env = np.ones(k)
        env[:rise] = np.linspace(0.0, 1.0, rise)[: k]
        env[max(0, k - fall):] *= np.linspace(1.0, 0.3, min(k, fall))
        start = int(round(c.closure_s * sr)) if initial == "h" else at
        out[start:start + k] += (noise * env * c.aspiration_level)[: n - start]
    result = out.astype(np.float32)
    result.setflags(write=False)
    return result


def _breakpoints(initial: str, final: str, duration: float) -> list[tuple[float, str]]:
    """(time s, target) where the voice's spectrum is that target; between two of them it
    moves from one to the next (a raised-cosine crossfade of their wavetables)."""
    medial, nucleus, coda = syllable_targets(initial, final)
    c = CONSONANTS[initial]
    points: list[tuple[float, str]] = []
    t = c.voice_s
    if c.murmur is not None:
        points += [(t, c.murmur), (t + c.murmur_s, c.murmur)]
        t += c.murmur_s + RELEASE_MURMUR_S
    first = medial or nucleus
    if c.locus is not None:
        points.append((t, c.locus))
        t += TRANSITION_S
    if medial is not None:
        points += [(t, medial), (t + MEDIAL_S, medial)]
        t += 2 * MEDIAL_S
    else:
        points.append((t, first))
    points.append((t, nucleus))
    if coda is not None:
        held = max(0.0, duration - t)
        start = duration - min(CODA_S, CODA_SHARE * held)
        points += [(max(t, start - CODA_MOVE_S), nucleus), (max(t, start), coda)]
    return points


@lru_cache(maxsize=16)
def _vibrato_phase(f: float, duration_s: float, n: int, sr: int, index: int) -> np.ndarray:
    """Singer ``index``'s phase (in periods, float64, read-only) for a note of ``n`` samples at
    ``f``: 0 at the onset, a vibrato of a whole number of cycles in the held part, starting at
    the singer's phase (so the vibrato runs on unbroken from syllable to syllable)."""
    singer = SINGERS[index]
    cycles = max(1, round(duration_s * singer.vibrato_hz))
    rate = cycles / duration_s if duration_s > 0 else singer.vibrato_hz
    out = dsp.vibrato_phase(f, n, sr, rate, singer.vibrato_depth, singer.vibrato_phase / rate)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=96)
def _phase_index(f: float, glide_from: float | None, duration_s: float, n: int, sr: int,
                 index: int, legato: bool) -> np.ndarray:
    """Where singer ``index`` reads a wavetable for a note of ``n`` samples (int32, read-only:
    the syllables sung on one pitch, glide and length share it): its phase
    (``_vibrato_phase``) gliding in from ``glide_from``; a note that flows into the next
    (``legato``: the voice goes on) has a whole number of cycles at ``duration_s``."""
    index_ = _phase(f, glide_from, duration_s, n, sr, index, legato).astype(np.int32)
    index_.setflags(write=False)
    return index_


def _phase(f: float, glide_from: float | None, duration_s: float, n: int, sr: int,
           index: int, legato: bool) -> np.ndarray:
    """``_phase_index``'s table positions (int64)."""
    base = _vibrato_phase(f, duration_s, n, sr, index)
    k = min(n - 1, int(round(duration_s * sr)))
    glide = min(n, int(round(GLIDE_S * sr)))
    if glide_from is None or glide == 0:
        scale = 1.0
        if legato and duration_s > 0 and base[k] > 0:  # ≤ ½ cycle over the note: ≤ 4.4 cents
            scale = round(float(base[k])) / float(base[k])
        index_ = (base * (dsp.TABLE_SIZE * scale)).astype(np.int64)
        index_ &= dsp.TABLE_SIZE - 1
        return index_
    u = np.arange(glide, dtype=np.float64) / sr
    offset = (glide_from - f) * 0.5 * GLIDE_S
    phase = np.empty(n)
    phase[:glide] = base[:glide] + (glide_from - f) * 0.5 * (
        u + GLIDE_S / math.pi * np.sin(math.pi * u / GLIDE_S))
    np.add(base[glide:], offset, out=phase[glide:])
    if legato and duration_s > 0:
        correction = round(float(phase[k])) - float(phase[k])  # at most half a cycle
        if abs(1200.0 * math.log2(glide_from / f)) >= GLIDE_MIN_CENTS:
            # within the glide: a raised-cosine bump of its frequency
            phase[:glide] += correction * 0.5 * (1.0 - np.cos(math.pi * u / GLIDE_S))
            phase[glide:] += correction
        else:  # a glide too small to hide it: spread over the note (≤ 4.4 cents at 1 s)
            phase += correction * np.minimum(np.arange(n), k) / max(1, k)
    phase += 4096.0  # kept positive: the same samples, modulo a period
    return dsp.table_index(phase)


def _voiced(index: int, f: float, glide_from: float | None, duration_s: float, n: int, sr: int,
            points: Sequence[tuple[float, str]], gain: float, legato: str) -> np.ndarray:
    """Singer ``index``'s voiced sound: the breakpoints' wavetables, crossfaded between them."""
    where = _phase_index(f, glide_from, duration_s, n, sr, index, legato == "voiced")
    scale = SINGERS[index].formant_scale
    out = np.empty(n, dtype=np.float32)
    first = min(n, int(round(points[0][0] * sr)))
    out[:first] = 0.0
    for (t0, a), (t1, b) in zip(points, [*points[1:], (math.inf, points[-1][1])], strict=True):
        lo = min(n, int(round(t0 * sr)))
        hi = n if math.isinf(t1) else min(n, int(round(t1 * sr)))
        if hi <= lo:
            continue
        table = _vowel_table(a, f, sr, scale, gain)
        at = where[lo:hi]  # (np.take: the samples of table[at], gathered without a copy)
        if a == b:
            np.take(table, at, out=out[lo:hi], mode="clip")
        else:
            rise = dsp.fade_curve(hi - lo, True)
            out[lo:hi] = np.take(table, at, mode="clip") * (1.0 - rise)
            out[lo:hi] += np.take(_vowel_table(b, f, sr, scale, gain), at, mode="clip") * rise
    return out


def _envelope(part: np.ndarray, sr: int, c: Consonant, duration_s: float, glide_in: bool,
              legato: str) -> None:
    """The voice's envelope in place: from the consonant's voice onset (a phrase's first
    syllable: ``ATTACK_S``; inside a phrase: ``VOICED_ATTACK_S``, or the legato crossover),
    held to the next onset, then the legato crossover, or stopped by the next syllable's
    consonant (``STOP_S`` before it), or the release."""
    if glide_in:
        attack = LEGATO_S if c.voice_s == 0 else VOICED_ATTACK_S
    else:
        attack = ATTACK_S
    if legato == "voiced":
        dsp.apply_hold(part, sr, c.voice_s, attack, duration_s, LEGATO_S)
    elif legato == "stopped":
        dsp.apply_hold(part, sr, c.voice_s, attack, max(c.voice_s, duration_s - STOP_S), STOP_S)
    else:
        dsp.apply_hold(part, sr, c.voice_s, attack, duration_s, RELEASE_S["歌"])


def sing(f0: float, duration_s: float, n: int, sr: int, syllable: str, amp: float,
         glide_from: float | None = None, legato: str = "") -> np.ndarray:
    """``n`` samples of the two singers on ``syllable`` (``syllable_key`` form) at ``f0``, held
    for ``duration_s`` then released (or joined to the next syllable: ``legato`` "voiced",
    crossing into it; "stopped", ending where its consonant begins);
    ``glide_from`` is the pitch of the syllable sung straight before it.  Each held vowel has
    an RMS of ``amp`` × the singer's level."""
    initial, final = syllable.split(".")
    if initial not in CONSONANTS:
        initial = ""
    c = CONSONANTS[initial]
    points = _breakpoints(initial, final, duration_s)
    medial, nucleus, _ = syllable_targets(initial, final)
    vowel_on = next((t for t, target in points if target not in MURMURS), c.voice_s)
    out = np.zeros(n, dtype=np.float32)
    for index, singer in enumerate(SINGERS):
        start = int(round(singer.delay_s * sr))
        m = n - start
        ratio = 2 ** (singer.cents / 1200)
        f = round(f0 * ratio, 6)
        fp = None if glide_from is None else round(glide_from * ratio, 6)
        gain = round(singer.level * amp, 9)
        part = _voiced(index, f, fp, duration_s, m, sr, points, gain, legato)
        loop = _breath(nucleus, sr, singer.formant_scale, index)
        breath = (loop[:m] if m <= loop.size else np.resize(loop, m)) * np.float32(
            BREATH_GAIN * gain)
        # through the open mouth only: not under a nasal's or a liquid's murmur
        on = min(m, int(round(vowel_on * sr)))
        ramp = min(m - on, int(TRANSITION_S * sr))
        breath[:on] = 0.0
        breath[on:on + ramp] *= dsp.fade_curve(ramp, True)
        part += breath
        _envelope(part, sr, c, duration_s, glide_from is not None, legato)
        if c.noise_s > 0:
            noise = _consonant_noise(initial, medial or nucleus, sr, singer.formant_scale, index)
            k = min(m, noise.size)
            part[:k] += noise[:k] * np.float32(gain)
        out[start:] += part
    return out


def join_into(syllable: str) -> str:
    """How a syllable sung straight before ``syllable`` (``syllable_key`` form) joins it:
    "voiced" where it begins with its voice (a vowel, a nasal, l, r), "stopped" where its
    consonant stops the voice first."""
    initial = syllable.split(".")[0]
    return "voiced" if CONSONANTS.get(initial, CONSONANTS[""]).voice_s == 0 else "stopped"


def legato_links(notes: Sequence[tuple[str, float | None, float, float, float, float,
                                       str | None]]) -> dict[int, tuple[float | None, str]]:
    """For notes (instrument, Hz, start s, duration s, x, y, lyric): index → (the pitch it
    glides from, how it joins the next: ``join_into``) of every 歌 note sung straight after
    another from the same place (its start where the other ends) or straight before one; the
    others are absent."""
    by_place: dict[tuple[float, float], list[int]] = {}
    for i, (inst, hz, _, _, x, y, _) in enumerate(notes):
        if inst == "歌" and hz is not None:
            by_place.setdefault((x, y), []).append(i)
    links: dict[int, tuple[float | None, str]] = {}
    for indices in by_place.values():
        indices.sort(key=lambda i: notes[i][2])
        for a, b in zip(indices, indices[1:], strict=False):
            end = notes[a][2] + notes[a][3]
            if abs(notes[b][2] - end) < 1e-6:
                links[a] = (links.get(a, (None, ""))[0], join_into(syllable_key(notes[b][6])))
                links[b] = (notes[a][1], links.get(b, (None, ""))[1])
    return links

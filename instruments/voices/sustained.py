"""The voices computed with numpy, by instrument: 歌 (``instruments.voices.sung``), 笙 和 管
(``instruments.voices.winds``) and 瑟 (``instruments.voices.strings``).
``instruments.voices.synthesis`` calls ``NUMPY_VOICES[name](key, n)`` for them (the struck voices
are ``instruments.voices.modal``'s); each returns ``n`` float64 samples, and synthesis adds the
common 50 ms end fade."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from instruments.voices import strings, sung, tone_dsp, winds
from instruments.voices.models import RELEASE_S, NoteKey, se_decay_s, velocity_amp


def _ge(key: NoteKey, n: int) -> np.ndarray:
    amp, _ = velocity_amp(key)
    return sung.sing(float(key.freq_hz or 0.0), key.duration_s or 0.0, n, key.sample_rate,
                     key.syllable or sung.syllable_key(None), amp, key.glide_from, key.legato)


def _sheng(key: NoteKey, n: int) -> np.ndarray:
    amp, bright = velocity_amp(key)
    f = float(key.freq_hz or 0.0) * (2.0 if key.instrument == "和" else 1.0)
    return winds.sheng(f, key.duration_s or 0.0, RELEASE_S[key.instrument], n,
                       key.sample_rate, amp, bright, tone_dsp.seed_of(key))


def _guan(key: NoteKey, n: int) -> np.ndarray:
    amp, bright = velocity_amp(key)
    return winds.guan(float(key.freq_hz or 0.0), key.duration_s or 0.0, RELEASE_S["管"], n,
                      key.sample_rate, amp, bright, tone_dsp.seed_of(key))


def _se(key: NoteKey, n: int) -> np.ndarray:
    amp, bright = velocity_amp(key)
    f = float(key.freq_hz or 0.0)
    free = int(round(1.5 * se_decay_s(f) * key.sample_rate))
    point, force = strings.PLUCKS[key.variant % len(strings.PLUCKS)]
    ring = strings.pluck(f, free, key.sample_rate, se_decay_s(f), round(min(1.0, bright * force),
                                                                         3), point)
    if key.duration_s is None:
        return ring[:n] * np.float32(amp)
    return strings.damped(ring, key.duration_s, n, key.sample_rate) * np.float32(amp)


NUMPY_VOICES: dict[str, Callable[[NoteKey, int], np.ndarray]] = {
    "歌": _ge, "笙": _sheng, "和": _sheng, "管": _guan, "瑟": _se,
}

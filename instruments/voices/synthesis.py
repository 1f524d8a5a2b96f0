"""The sound of a note as a float32 numpy array: ``synthesize(key)``.

Every voice is computed with numpy, in the calling thread (thread-safe, no audio server): the
struck voices (編鐘 鑮 編磬, the drums, 鼗) as a modal description
(``instruments.voices.struck_models``) computed in closed form (``instruments.voices.modal``: sums
of damped sinusoids by blocks, the drum's pitch glide, Butterworth-filtered noise bursts); the
sustained and plucked voices (歌 笙 和 管 瑟) by ``instruments.voices.sustained``.  Each note has
exactly ``key_length(key)`` samples and ends in a 50 ms raised-cosine fade to exactly zero.  The
numbers come from ``instruments.voices.models``.

Rendering is deterministic: each note's noise is seeded from the note's key
(``instruments.voices.tone_dsp.seed_of``), so the same note gives the same samples in any process
and whatever was rendered before.
"""

from __future__ import annotations

import math

import numpy as np

from instruments.voices import modal
from instruments.voices.models import FADE_S, NoteKey, key_length
from instruments.voices.struck_models import struck_note
from instruments.voices.sustained import NUMPY_VOICES
from instruments.voices.tone_dsp import seed_of

"""Every voice ``synthesize`` computes."""


def synthesize(key: NoteKey) -> np.ndarray:
    """The samples of the note ``key`` (``key_length(key)`` of them, float32, the last one 0)."""
    n = key_length(key)
    sr = key.sample_rate
    if key.instrument in NUMPY_VOICES:  # the sustained and plucked voices
        return _without_dc(_faded(np.asarray(NUMPY_VOICES[key.instrument](key, n),
                                             dtype=np.float32), sr))
    samples = modal.render(struck_note(key), n, sr, seed_of(key))
    return _without_dc(_faded(samples.astype(np.float32), sr))


def _without_dc(arr: np.ndarray) -> np.ndarray:
    """``arr`` less its mean, taken off as a parabola 4t(1 − t) over the whole note (sum zero,
    still zero at both ends; the bump lies under 1/length Hz: 2 Hz for a 0.5 s note): a mix of
    such notes has no DC, through the courtyard too (it is linear) — where a DC blocker on
    the mix cost a filter pass over every block."""
    n = arr.size
    if n < 3:
        return arr
    total = float(arr.sum(dtype=np.float64))
    if total == 0.0:
        return arr
    t = np.arange(n, dtype=np.float32)
    t *= np.float32(1.0 / (n - 1))
    bump = t * (np.float32(1.0) - t)
    bump[0] = bump[-1] = 0.0  # exactly (float32's t at the end may miss 1 by an ulp)
    bump *= np.float32(total / float(bump.sum(dtype=np.float64)))
    arr -= bump
    return arr


def _faded(arr: np.ndarray, sr: int) -> np.ndarray:
    """``arr`` with the raised-cosine end: exactly zero at the last sample whatever the voice's
    own ramp did."""
    n = arr.size
    k = min(n, int(FADE_S * sr))
    if k > 1:
        arr[n - k:] *= (0.5 + 0.5 * np.cos(np.linspace(0.0, math.pi, k))).astype(np.float32)
    return arr

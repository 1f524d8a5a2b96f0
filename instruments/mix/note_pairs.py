"""Notes struck together: their cross terms, which do not average out.

The loudness estimate adds notes in energy.  Two notes struck at the same sample at the same
place — the 瑟 an octave under the 歌, the 和 an octave over the 笙 — share partials with a
fixed phase from their first sample on, so their sum is louder than their energies' sum
(+0.16 dB over the 升歌's pairs, up to +0.9 dB for one pair); so are two notes heard at once
from two places (dry, every place is heard at once: the 歌 and the 笙 in unison).
``pair_energy`` measures a pair's cross term 2·⟨a, b⟩ per frame once per pair of notes; the
estimate adds it as one more sound, at gain g_a·g_b: through the room at the pair's place,
or, from two places, on the direct path at the product of their pan gains.

The K-filter is not run on the pair: the shared partials are the upper note's, so the cross
term is weighted by the upper note's own K-weighting (its K-weighted direct energy over its
raw energy) and heard through the room as the upper note is (its reflections' and tail's
share of its energy).  Measured on the 升歌's pairs: their sum within 12 % of the K-filtered
cross terms' sum, one pair (a 瑟 and a 歌 an octave over it) within 20 %.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from instruments.voices.models import NoteKey

PairEnergies = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(direct, low, tail) cross energies per frame of a pair at unit gains."""

Shares = tuple[float, float, float]
"""A note's (direct, low, tail) K-weighted energies over its raw energy (``shares``)."""


def shares(energies: tuple[np.ndarray, ...]) -> Shares:
    """How a note's raw energy is weighted: its (direct, low, tail) energies over its raw
    energy (``note_energy``'s first three and its last)."""
    raw = float(energies[-1].sum())
    if raw <= 0:
        return 0.0, 0.0, 0.0
    direct, low, tail = (float(e.sum()) / raw for e in energies[:3])
    return direct, low, tail


def pair_energy(a: np.ndarray, b: np.ndarray, frame: int, upper: Shares) -> PairEnergies:
    """The cross energies 2·⟨a, b⟩ per ``frame`` samples of two notes that start together,
    weighted by the ``upper`` note's ``shares``."""
    n = min(a.size, b.size)
    frames = -(-n // frame)
    whole = n // frame * frame
    cross = np.empty(frames)
    # float32 sums of a frame: a cross term needs no more
    cross[:whole // frame] = np.einsum("ij,ij->i", a[:whole].reshape(-1, frame),
                                       b[:whole].reshape(-1, frame))
    if whole < n:
        cross[-1] = float(np.einsum("i,i->", a[whole:n], b[whole:n]))
    cross *= 2.0
    direct, low, tail = upper
    return cross * direct, cross * low, cross * tail


MEASURED_PER_CLASS = 16
"""Pairs measured per class (their instruments and interval); the others take its ratio."""


class PairTerms:
    """The cross energies of notes struck together, per pair of notes (cached): the first
    ``MEASURED_PER_CLASS`` pairs of each class — the two instruments and the interval between
    them — are measured (``pair_energy``); the others are their class's correlation so far
    (Σ cross over Σ 2·√(E_a·E_b), per frame of K-weighted direct energy) times their own
    2·√(E_a·E_b): a pair's own phase is its own, a class's (the 瑟's octave under the 歌:
    +7 % of the pair's energy) is shared."""

    def __init__(self, frame: int) -> None:
        self.frame = frame
        self.found: dict[tuple[NoteKey, NoteKey], PairEnergies] = {}
        self.classes: dict[tuple[str, str, int | None], list[float]] = {}

    def terms(self, a: NoteKey, b: NoteKey, a_energies: tuple[np.ndarray, ...],
              b_energies: tuple[np.ndarray, ...], waves: Callable[[NoteKey], np.ndarray],
              ) -> PairEnergies:
        """The cross energies of the notes ``a`` and ``b`` (their ``note_energy``; ``waves``
        gives a note's sound when the pair is measured)."""
        found = self.found.get((a, b))
        if found is not None:
            return found
        upper_is_b = (b.freq_hz or 0.0) >= (a.freq_hz or 0.0)
        weights = shares(b_energies if upper_is_b else a_energies)
        n = min(a_energies[0].size, b_energies[0].size)
        scale = 2.0 * np.sqrt(np.maximum(a_energies[0][:n] * b_energies[0][:n], 0.0))
        sums = self.classes.setdefault((a.instrument, b.instrument, _interval(a, b)),
                                       [0.0, 0.0, 0])
        if sums[2] < MEASURED_PER_CLASS:
            found = pair_energy(waves(a), waves(b), self.frame, weights)
            sums[0] += float(found[0].sum())
            sums[1] += float(scale.sum())
            sums[2] += 1
        else:
            cross = scale * (sums[0] / sums[1] if sums[1] > 0 else 0.0)
            direct = weights[0]
            ratio = (weights[1] / direct, weights[2] / direct) if direct > 0 else (0.0, 0.0)
            found = cross, cross * ratio[0], cross * ratio[1]
        if len(self.found) > 4096:
            self.found.clear()
        self.found[(a, b)] = found
        return found


def _interval(a: NoteKey, b: NoteKey) -> int | None:
    """Semitones from ``a`` up to ``b`` (None for an unpitched note)."""
    if not a.freq_hz or not b.freq_hz:
        return None
    return round(12.0 * math.log2(b.freq_hz / a.freq_hz))

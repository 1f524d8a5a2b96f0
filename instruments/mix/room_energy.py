"""A note's K-weighted energy through the courtyard's reflections and tail, its cross terms with
the direct sound included: the low band, where a sound and its echoes add in amplitude.

The loudness estimate (``instruments.mix.loudness_estimate``) adds a note's direct sound, its
reflections and its tail in energy.  That holds for a broad sound, whose cross terms average
out; a narrow one — a drum's low mode, a low string — meets its own echoes with a fixed phase
(a mode rings far longer than the echoes are late), and the sum is up to 1.3 dB louder or
0.6 dB softer than the energies' sum, the same for every stroke of the same drum.

So ``wet_energy`` computes, once per (note, place), what the room adds to the note's direct
sound besides the ground's reflection's own energy, exactly in the frequency domain at the low
rate (``instruments.mix.room``: the note low-passed and decimated, its reflections and its
tail sends at the low rate, low-passed again on the way back, ``PATH_PHASE_TAPS`` low-rate
samples late; the ground's reflection at the full rate): per ear
Σ_f K(f)·|U(f)|²·(2·Re((D + G)*·W) + A²·|W|² + 2·Re(D*·G)/A²), with U the decimated note
(|U|² = |X|²·A², A the path filter's gain), D the direct path, G the ground's, W the
reflections and the tail with the path's delay; the ground's cross term with the direct sound
is counted where the path passes (A² ≥ 0.1: below ~4.6 kHz at 48 kHz; above, a comb's cross
terms average out over a sound's partials).  One FFT of the decimated note per note; the
room's responses are cached per (place, FFT size).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import cache

import numpy as np

from instruments.mix.loudness import k_power_response
from instruments.mix.room import (
    PATH_PHASE_TAPS,
    TAIL_DECIMATION,
    Room,
    decimated,
    path_gain,
    tail_length,
    tail_spectrum,
)


@cache
def _band(sample_rate: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a ``size``-point rfft at the low rate: the bins' frequencies (Hz), the K-filter's
    power response times the Parseval weights (back to full-rate energy), the path filter's
    gain A (``path_gain``)."""
    q = TAIL_DECIMATION
    f = np.fft.rfftfreq(size, q / sample_rate)
    weight = np.full(f.size, 2.0)
    weight[0] = 1.0
    if size % 2 == 0:
        weight[-1] = 1.0
    # the decimated note is the low-passed note's every q-th sample: 1/q of its energy
    return f, weight * k_power_response(f, sample_rate) * q / size, path_gain(f, sample_rate)


class RoomEnergy:
    """``wet_energy`` for one render's room, its per-place responses cached."""

    def __init__(self, room: Room) -> None:
        self.room = room
        self._responses: dict[tuple[tuple[float, float], int], np.ndarray] = {}

    def size(self, samples: int) -> int:
        """The FFT size at the low rate for a note of ``samples`` (full-rate) samples: room
        for the note, its latest reflection and the tail (linear, not circular)."""
        room = self.room
        q = TAIL_DECIMATION
        n = (-(-samples // q) + tail_length(room.sample_rate) + room.max_delay // q
             + 2 * PATH_PHASE_TAPS + 4)
        return 1 << (n - 1).bit_length()  # (few sizes: few responses to compute)

    def _response(self, place: tuple[float, float], size: int) -> np.ndarray:
        """Σ over the ears of the module docstring's per-bin factor."""
        found = self._responses.get((place, size))
        if found is not None:
            return found
        room = self.room
        q = TAIL_DECIMATION
        sr = room.sample_rate
        f, _, gain = _band(sr, size)
        turn = (-2j * np.pi / sr) * f  # phase per full-rate sample of delay
        d0, *direct = room.taps(*place)[0]
        ground = room.ground(*place)
        dg, *grounds = ground if ground is not None else (d0, 0.0, 0.0)
        late = q * PATH_PHASE_TAPS  # the path's two filters' delay, full-rate samples
        to_direct = np.exp(turn * (late - d0)).astype(np.complex64)
        to_ground = np.exp(turn * (late - dg)).astype(np.complex64)
        comb = np.cos(2.0 * np.pi * f * (dg - d0) / sr)
        with np.errstate(divide="ignore"):
            comb = np.where(gain ** 2 >= 0.1, comb / gain ** 2, 0.0)
        reflections = [(np.exp(turn * (q * low_delay)).astype(np.complex64), gains)
                       for low_delay, *gains in room.low_reflections(*place)]
        a2 = (gain ** 2).astype(np.float32)
        tails = tail_spectrum(sr, size)
        out = np.zeros(f.size)
        for ear, send in enumerate(room.send(*place)):
            wet = tails[ear] * np.float32(send)  # complex64: energies to 1e-6
            for phasor, gains in reflections:
                wet += np.float32(gains[ear]) * phasor
            heard = (np.float32(direct[ear]) * to_direct
                     + np.float32(grounds[ear]) * to_ground)
            out += (np.float32(2.0) * (heard * wet).real
                    + (wet.real ** 2 + wet.imag ** 2) * a2
                    + 2.0 * direct[ear] * grounds[ear] * comb)
        if len(self._responses) > 256:
            self._responses.clear()
        self._responses[(place, size)] = out
        return out

    def wet_energy(self, wave: np.ndarray, places: Iterable[tuple[float, float]],
                   ) -> dict[tuple[float, float], float]:
        """The K-weighted energy the reflections, the tail and the ground's cross terms add to
        ``wave``'s direct sound and its ground reflection's energy at each of ``places``
        (cross terms included; it can be below zero)."""
        size = self.size(wave.size)
        u = np.zeros(size)
        low = decimated(np.asarray(wave, dtype=np.float32), self.room.sample_rate)
        u[:low.size] = low
        spectrum = np.fft.rfft(u)
        _, weight, _ = _band(self.room.sample_rate, size)
        power = weight * (spectrum.real ** 2 + spectrum.imag ** 2)
        # (einsum, not BLAS: a BLAS dot may wake its threads, milliseconds on a busy machine)
        return {place: float(np.einsum("i,i->", power, self._response(place, size)))
                for place in places}


MEASURED_PER_CLASS = 16
"""Notes measured exactly per (instrument, place); the others take their class's ratio."""


class WetFactors:
    """Per (note, place), the factor that brings the estimate's energies (direct, reflections
    and tail summed in energy) to what the room gives (``RoomEnergy.wet_energy``).  The first
    ``MEASURED_PER_CLASS`` notes of each (instrument, place) are measured; the others take
    the ratio of their class's sums so far: a single note's error (±1.5 dB for a sung one) is
    its own and averages out over many, a class's (−0.2 dB for the 升歌's 歌, +1 dB for a
    drum's stroke) does not — and a drum has fewer strokes than that, each measured."""

    def __init__(self, room: Room) -> None:
        self.room = room
        self.energy = RoomEnergy(room)
        self.classes: dict[tuple[str, tuple[float, float]], list[float]] = {}

    def factors(self, instrument: str, wave: np.ndarray, energies: tuple[np.ndarray, ...],
                places: Iterable[tuple[float, float]]) -> dict[tuple[float, float], float]:
        """The factor of a note of ``instrument`` (its sound and its (direct, low, tail)
        energies, the first three of ``energies``) at each of ``places``."""
        direct, low, tail = (float(e.sum()) for e in energies[:3])
        classes = {place: self.classes.setdefault((instrument, place), [0.0, 0.0, 0])
                   for place in places}
        todo = [place for place, sums in classes.items() if sums[2] < MEASURED_PER_CLASS]
        exact = self.energy.wet_energy(wave, todo) if todo else {}
        out = {}
        for place, sums in classes.items():
            (_, left, right), *reflections = self.room.taps(*place)
            to_left, to_right = self.room.send(*place)
            ground = self.room.ground(*place)
            if ground is not None:
                left, right = math.hypot(left, ground[1]), math.hypot(right, ground[2])
            heard = direct * (left * left + right * right)
            summed = heard + (low * sum(a * a + b * b for _, a, b in reflections)
                              + tail * (to_left * to_left + to_right * to_right))
            if place in exact:
                out[place] = corrected(summed, heard + exact[place])
                sums[0] += heard + exact[place]
                sums[1] += summed
                sums[2] += 1
            else:
                out[place] = corrected(sums[1], sums[0])
        return out


def corrected(estimated: float, measured: float) -> float:
    """The factor that brings an ``estimated`` energy to the ``measured`` one (never below a
    tenth: a deep cancellation stays a bound, not a silence)."""
    if estimated <= 0 or not math.isfinite(measured):
        return 1.0
    return max(0.1, measured / estimated)

"""A note's K-weighted energy through the courtyard's reflections and tail, its cross terms with
the direct sound included: the low band, where a sound and its echoes add in amplitude.

The loudness estimate (``instruments.loudness_estimate``) adds a note's direct sound, its
reflections and its tail in energy.  That holds for a broad sound, whose cross terms average
out; a narrow one — a drum's low mode, a low string — meets its own echoes with a fixed phase
(a mode rings far longer than the echoes are late), and the sum is up to 1.3 dB louder or
0.6 dB softer than the energies' sum, the same for every stroke of the same drum.

So ``wet_energy`` computes, once per (note, place), what the room's low-rate path
(``instruments.room``: the note decimated by ``TAIL_DECIMATION``, its reflections and its tail
sends at the low rate, brought back by linear interpolation one low-rate sample late) adds to
the note's direct sound, exactly in the frequency domain at the low rate:
Σ_f K(f)·|U(f)|²·(2·Re(D*·W)·A + |W|²·A⁴) per ear, with U the decimated note, D the direct
path, W the reflections and the tail, A the decimation's box response (the path's amplitude
is A³; |U|² holds A² already).  One FFT of the decimated note per note; the room's responses
are cached per (place, FFT size).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import cache

import numpy as np

from instruments.loudness import k_power_response
from instruments.room import (
    TAIL_DECIMATION,
    Room,
    decimated,
    fft_size,
    tail_length,
    tail_spectrum,
)


@cache
def _band(sample_rate: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a ``size``-point rfft at the low rate: the bins' frequencies (Hz), the K-filter's
    power response times the Parseval weights (back to full-rate energy), the decimation's
    box response."""
    q = TAIL_DECIMATION
    f = np.fft.rfftfreq(size, q / sample_rate)
    x = np.pi * f / sample_rate
    with np.errstate(invalid="ignore", divide="ignore"):
        box = np.where(x > 0, np.sin(q * x) / (q * np.sin(x)), 1.0)
    weight = np.full(f.size, 2.0)
    weight[0] = 1.0
    if size % 2 == 0:
        weight[-1] = 1.0
    # the decimated note is a mean of q samples: its energy is 1/q of the full-rate one's
    return f, weight * k_power_response(f, sample_rate) * q / size, box


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
        return fft_size(-(-samples // q) + tail_length(room.sample_rate) + room.max_delay // q + 4)

    def _response(self, place: tuple[float, float], size: int) -> np.ndarray:
        """Σ over the ears of 2·Re(D*·W)·A + |W|²·A⁴ per bin (see the module docstring)."""
        found = self._responses.get((place, size))
        if found is not None:
            return found
        room = self.room
        q = TAIL_DECIMATION
        sr = room.sample_rate
        f, _, box = _band(sr, size)
        turn = -2j * np.pi * f / sr  # phase per full-rate sample of delay
        d0, *direct = room.taps(*place)[0]
        late = np.exp(turn * (q - (q - 1) / 2))  # one low-rate sample, less the mean's centre
        tails = tail_spectrum(sr, size)
        out = np.zeros(f.size)
        for ear, send in enumerate(room.send(*place)):
            wet = send * tails[ear].astype(np.complex128)
            for low_delay, left, right in room.low_reflections(*place):
                wet += (left, right)[ear] * np.exp(turn * (q * low_delay))
            wet *= late
            d = direct[ear] * np.exp(turn * d0)
            out += 2.0 * (np.conj(d) * wet).real * box + (wet.real ** 2 + wet.imag ** 2) * box ** 4
        if len(self._responses) > 256:
            self._responses.clear()
        self._responses[(place, size)] = out
        return out

    def wet_energy(self, wave: np.ndarray, places: Iterable[tuple[float, float]],
                   ) -> dict[tuple[float, float], float]:
        """The K-weighted energy the reflections and the tail add to ``wave``'s direct sound
        at each of ``places`` (cross terms included; it can be below zero)."""
        u = decimated(np.asarray(wave, dtype=np.float32))
        size = self.size(wave.size)
        spectrum = np.fft.rfft(u, size)
        _, weight, _ = _band(self.room.sample_rate, size)
        power = weight * (spectrum.real ** 2 + spectrum.imag ** 2)
        # (einsum, not BLAS: a BLAS dot may wake its threads, milliseconds on a busy machine)
        return {place: float(np.einsum("i,i->", power, self._response(place, size)))
                for place in places}


def corrected(direct: float, estimated_wet: float, wet: float) -> float:
    """The factor that brings a note's energies (``direct`` + ``estimated_wet`` summed as the
    estimate sums them) to ``direct`` + ``wet`` (never below a tenth: a deep cancellation
    stays a bound, not a silence)."""
    total = direct + estimated_wet
    return max(0.1, (direct + wet) / total) if total > 0 and math.isfinite(wet) else 1.0

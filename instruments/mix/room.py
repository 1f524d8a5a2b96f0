"""The courtyard as the listener hears it: direct sound, early reflections and a short tail.

``Room("courtyard")`` (the default of render and audition) places a source at (x, y) by:

* the direct sound: the pan law and 1/d attenuation of ``instruments.mix.placement``, delayed by
  its travel time d / 343 m/s less the nearest source's (``start_at_nearest``: time zero is
  when the instruments that mark the 節 are heard (``start_at_nearest``); they are heard
  together, with the nearest one's delay, and nothing is heard before them (PROJECT CHOICE:
  the strokes of a 射節 that several drums and a 鑮 share keep one grid, 「間若一」, and
  ``yuezheng check`` holds on a courtyard render);
* the ground's reflection (``ground``), at the full rate: the direct sound's pan, factor
  ``GROUND_REFLECTION``, later by the path over the ground (source ``SOURCE_HEIGHT_M``, ear
  ``EAR_HEIGHT_M`` above it);
* the walls' reflections, image sources (``_images``) in the hall's facade (``HALL_FACADE_Y``
  north of the hall's front edge, ``FACADE_REFLECTION``), the east and west walls
  (x = ±``COURT_HALF_WIDTH_M``, ``WALL_REFLECTION``), the south wall with its gate
  (``SOUTH_WALL_Y``, ``SOUTH_REFLECTION``) and the side walls' flutter (the images of up to
  ``FLUTTER_ORDERS`` bounces between them): each with its own pan, 1/d attenuation and delay;
* a decorrelated tail: two independent decaying noises (T60 ``TAIL_T60_S``, spectra
  flattened), one per ear, each fed by every source at ``TAIL_SEND`` × its direct gain to
  that ear (the tail keeps the source's side);
* the courtyard's air (``room_tone``), added by the mixer (``instruments.mix.blocks``).

Reflections and tail are one low-rate path per stem (``Wet``) at 1/``TAIL_DECIMATION`` of the
sample rate: each place's block is low-passed and decimated once (``decimated``) and the
stem's sum interpolated back once, both through ``path_filter`` (no aliases, no images:
PROJECT CHOICE, the earth walls and the open colonnade return little above ~4 kHz), which
keeps the render fast.

Each frame (堵) of a hang is spread over ``FRAME_WIDTH_M``: a piece of a 編鐘 or 編磬 sounds from
its own place along the frame, the low pieces at its west end, by pitch (``spread``).

``Room("dry")`` is the old placement: one tap, no delay, no reflections, no tail, no spread.
All of it is linear and fixed, so renders stay deterministic; memory is bounded by the longest
delay and the tail, whatever the length of the rite.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import cache

import numpy as np
from scipy import fft as scipy_fft

from instruments.mix.placement import DEFAULT_LISTENER, pan_gains

ROOMS = ("courtyard", "dry")
DEFAULT_ROOM = "courtyard"
SPEED_OF_SOUND = 343.0
HALL_FACADE_Y = 3.0  # the reflecting face of the hall, metres north of its front edge (y = 0)
COURT_HALF_WIDTH_M = 14.0  # the east and west walls of the courtyard
SOUTH_WALL_Y = -30.0  # the south wall with the gate (門) in it
FACADE_REFLECTION = 0.15  # an open colonnade (楹) before timber walls: little comes back
WALL_REFLECTION = 0.55  # rammed earth (夯土): hard, but rough and broken by the side buildings
SOUTH_REFLECTION = 0.35  # the south wall, open where the gate stands
FLUTTER_ORDERS = 3  # side wall to side wall: the images of up to three bounces
GROUND_REFLECTION = 0.5  # the courtyard's packed earth at grazing incidence
SOURCE_HEIGHT_M = 1.2  # a drum's head, a bell's mouth, a seated player's instrument
EAR_HEIGHT_M = 1.6  # a standing listener
TAIL_T60_S = 0.7
TAIL_LENGTH_S = 0.72  # the tail's response is cut 62 dB under its start (a 2¹⁵-point FFT a block)
TAIL_ONSET_S = 0.02  # the diffuse tail builds up over the first reflections
TAIL_FLATTENING = 2  # rounds that flatten the tail's spectrum (``_tail_response``)
TAIL_SEND = 1.0  # the tail as loud as the direct sound in its band (docs/voices.md: EDT, T30)
TAIL_DECIMATION = 4  # the low rate of the reflections and the tail: 12 kHz at 48 kHz
PATH_PHASE_TAPS = 12  # the low-rate path's filter: 4·12 + 1 taps, one per full-rate sample
PATH_CUTOFF = 4350.0 / 48000.0  # its −6 dB point, a fraction of the sample rate
PATH_KAISER_BETA = 6.5
ROOM_TONE_DBFS = -78.0  # the courtyard's air, RMS of each ear
ROOM_TONE_SAMPLES = 1 << 19  # its loop: 10.9 s at 48 kHz
FRAME_WIDTH_M = 2.4
SPREAD_INSTRUMENTS = frozenset({"編鐘", "編磬"})
SPREAD_OCTAVES = 3.0  # a frame's pieces span about this much pitch, centred on REFERENCE_HZ

Tap = tuple[int, float, float]
"""(delay in samples, left gain, right gain)"""


def spread(instrument: str, x: float, y: float, hz: float | None, reference_hz: float,
           ) -> tuple[float, float]:
    """Where in its frame a piece of a hung set sounds: (x, y) moved along the frame (east–west)
    by its pitch, lowest at the west end; other instruments stay at (x, y)."""
    if instrument not in SPREAD_INSTRUMENTS or hz is None:
        return x, y
    frac = math.log2(hz / reference_hz) / SPREAD_OCTAVES + 0.5
    return x + (min(1.0, max(0.0, frac)) - 0.5) * FRAME_WIDTH_M, y


def _images(x: float, y: float) -> list[tuple[float, float, float]]:
    """(x, y, reflection factor) of the image sources of a source at (x, y): the hall's
    facade, the east and the west wall, the south wall, then the side walls' flutter (the
    images of two to ``FLUTTER_ORDERS`` bounces between them)."""
    w = COURT_HALF_WIDTH_M
    out = [(x, 2 * HALL_FACADE_Y - y, FACADE_REFLECTION),
           (2 * w - x, y, WALL_REFLECTION), (-2 * w - x, y, WALL_REFLECTION),
           (x, 2 * SOUTH_WALL_Y - y, SOUTH_REFLECTION)]
    for order in range(2, FLUTTER_ORDERS + 1):
        sign = 1.0 if order % 2 == 0 else -1.0
        for side in (1, -1):
            out.append((sign * x + side * 2 * order * w, y, WALL_REFLECTION ** order))
    return out


class Room:
    """The taps of each place and the tail for one render (see the module docstring)."""

    def __init__(self, mode: str, sample_rate: int,
                 listener: tuple[float, float] = DEFAULT_LISTENER) -> None:
        if mode not in ROOMS:
            raise ValueError(f"unknown room {mode!r}")
        self.mode = mode
        self.sample_rate = sample_rate
        self.listener = listener
        self._taps: dict[tuple[float, float], tuple[Tap, ...]] = {}
        self._low: dict[tuple[float, float], tuple[Tap, ...]] = {}
        self._send: dict[tuple[float, float], tuple[float, float]] = {}
        self._ground: dict[tuple[float, float], Tap | None] = {}
        self.lead = 0  # samples every path is shortened by (``start_at_nearest``)
        self._together: dict[tuple[float, float], int] = {}  # place: its direct path's delay
        self.has_tail = mode == "courtyard"
        self.tone = self.has_tail
        """whether the mix carries the room tone (``room_tone``; a part of a render does not:
        the whole render carries it once)"""
        lx, ly = abs(listener[0]), abs(listener[1])
        w = COURT_HALF_WIDTH_M
        far = (lx + 2 * (FLUTTER_ORDERS + 1) * w + ly + 2 * abs(SOUTH_WALL_Y)
               + 2 * HALL_FACADE_Y + 2 * (SOURCE_HEIGHT_M + EAR_HEIGHT_M))
        self.max_delay = int(far / SPEED_OF_SOUND * sample_rate) + 1 if self.has_tail else 0
        """the longest path (a reflection's) in samples; the full-rate paths (the direct
        sound and the ground's) are held under ``max_direct``"""
        near = math.hypot(lx + w, ly + abs(SOUTH_WALL_Y) + 2 * HALL_FACADE_Y) + 2 * (
            SOURCE_HEIGHT_M + EAR_HEIGHT_M)
        self.max_direct = int(near / SPEED_OF_SOUND * sample_rate) + 1 if self.has_tail else 0
        self._ground_room = int(2 * (SOURCE_HEIGHT_M + EAR_HEIGHT_M) / SPEED_OF_SOUND
                                * sample_rate) + 1  # the ground's path is at most this longer
        tail = (_tail_response(sample_rate).shape[1] + 2 * PATH_PHASE_TAPS) * TAIL_DECIMATION
        self.extra = self.max_delay + (tail if self.has_tail else 0)
        """samples the room adds after the last note (its longest delay and the tail)"""

    def new_wet(self) -> Wet:
        """Reflections and a tail of its own for one stem."""
        return Wet(self)

    def start_at_nearest(self, places: Iterable[tuple[float, float]],
                         together: Iterable[tuple[float, float]] = ()) -> None:
        """Time zero is when the sources at the ``together`` places (the instruments that mark
        the 節) are heard, all at once, else when the nearest of ``places`` is: every path is
        shortened by that delay (a source nearer than the group is heard with it, none before
        it), so the strokes of a 射節 stay on one grid (「間若一」) and the render does not open
        with silence."""
        places = set(places)
        together = set(together)
        group = min((self._path_delay(x, y) for x, y in together), default=None)
        nearest = min((self._path_delay(x, y) for x, y in places), default=0)
        self.lead = nearest if group is None else group
        self._together = {place: self.lead for place in together}
        self._taps.clear()
        self._low.clear()
        self._ground.clear()

    def _path_delay(self, x: float, y: float) -> int:
        if not self.has_tail:
            return 0
        d = math.hypot(x - self.listener[0], y - self.listener[1])
        return int(round(d / SPEED_OF_SOUND * self.sample_rate))

    def taps(self, x: float, y: float) -> tuple[Tap, ...]:
        """The direct sound and the reflections of a source at (x, y) (the ground's is
        ``ground``)."""
        found = self._taps.get((x, y))
        if found is None:
            found = self._taps[(x, y)] = self._make_taps(x, y)
        return found

    def _make_taps(self, x: float, y: float) -> tuple[Tap, ...]:
        if not self.has_tail:
            left, right = pan_gains(x, y, self.listener)
            return ((0, left, right),)
        out: list[tuple[int, float, float]] = []  # (delay in samples, left, right)
        for ix, iy, factor in [(x, y, 1.0), *_images(x, y)]:
            d = math.hypot(ix - self.listener[0], iy - self.listener[1])
            left, right = pan_gains(ix, iy, self.listener)
            delay = int(round(d / SPEED_OF_SOUND * self.sample_rate)) - self.lead
            if not out and (x, y) in self._together:
                delay = self._together[(x, y)] - self.lead
            longest = self.max_delay if out else self.max_direct - self._ground_room
            out.append((min(max(0, delay), longest), left * factor, right * factor))
        return tuple(out)

    def ground(self, x: float, y: float) -> Tap | None:
        """The ground's reflection of a source at (x, y), at the full rate: the direct sound's
        pan, ``GROUND_REFLECTION`` × its 1/d, later by the longer path over the ground (the
        source ``SOURCE_HEIGHT_M`` and the ear ``EAR_HEIGHT_M`` above it); None when dry."""
        if (x, y) in self._ground:
            return self._ground[(x, y)]
        found: Tap | None = None
        if self.has_tail:
            d = math.hypot(x - self.listener[0], y - self.listener[1])
            up = math.hypot(d, SOURCE_HEIGHT_M - EAR_HEIGHT_M)
            down = math.hypot(d, SOURCE_HEIGHT_M + EAR_HEIGHT_M)
            later = max(1, int(round((down - up) / SPEED_OF_SOUND * self.sample_rate)))
            delay, left, right = self.taps(x, y)[0]
            factor = GROUND_REFLECTION * up / down
            found = (min(delay + later, self.max_direct), left * factor, right * factor)
        self._ground[(x, y)] = found
        return found

    def low_reflections(self, x: float, y: float) -> tuple[Tap, ...]:
        """The reflections of a source at (x, y) with their delays at the low rate, less the
        low-rate path's own delay (its two filters': ``PATH_PHASE_TAPS`` low-rate samples)."""
        found = self._low.get((x, y))
        if found is None:
            found = self._low[(x, y)] = tuple(
                (max(0, round(delay / TAIL_DECIMATION) - PATH_PHASE_TAPS), left, right)
                for delay, left, right in self.taps(x, y)[1:])
        return found

    def send(self, x: float, y: float) -> tuple[float, float]:
        """How much of a source at (x, y) feeds the left and the right ear's tail: its direct
        gains, so that the tail keeps the side it comes from."""
        found = self._send.get((x, y))
        if found is None:
            left, right = pan_gains(x, y, self.listener)
            found = self._send[(x, y)] = (TAIL_SEND * left, TAIL_SEND * right)
        return found


@cache
def _tail_response(sample_rate: int) -> np.ndarray:
    """The two ears' tail responses (2, m) at sample_rate / TAIL_DECIMATION, unit energy each:
    independent noises decaying by 60 dB in ``TAIL_T60_S``, built up over ``TAIL_ONSET_S``,
    their spectra flattened (``TAIL_FLATTENING`` rounds of: every frequency's magnitude set
    to one, then the envelope set back, over 5 ms).  A decaying noise's spectrum swings
    ±6 dB from frequency to frequency (5.6 dB standard deviation: a sustained note's partials
    each meet their own gain, and the loudness estimate's class of notes missed the 升歌 by
    0.45 LU); two rounds bring it to 1.5 dB (more would flatten it further but leave narrow
    lines ringing in the late tail)."""
    rate = sample_rate / TAIL_DECIMATION
    m = int(TAIL_LENGTH_S * rate)
    t = np.arange(m) / rate
    rng = np.random.default_rng(1770)
    envelope = np.exp(-6.91 * t / TAIL_T60_S) * np.minimum(1.0, t / TAIL_ONSET_S)
    ir = rng.standard_normal((2, m)) * envelope
    size = 1 << (4 * m - 1).bit_length()
    window = np.ones(max(1, round(0.005 * rate))) / max(1, round(0.005 * rate))
    for _ in range(TAIL_FLATTENING):
        spectrum = np.fft.rfft(ir, size, axis=1)
        flat = np.fft.irfft(spectrum / np.maximum(np.abs(spectrum), 1e-30), size, axis=1)[:, :m]
        for ear in range(2):
            local = np.sqrt(np.convolve(flat[ear] ** 2, window, "same"))
            ir[ear] = flat[ear] / np.maximum(local, 1e-30) * envelope
    ir /= np.sqrt((ir ** 2).sum(axis=1, keepdims=True))
    return ir


@cache
def tail_energy_frames(sample_rate: int, frame: int) -> np.ndarray:
    """How the tail spreads a send's energy over time: the share of either ear's response's
    energy in each ``frame``-sample frame after the send (the shares sum to 1)."""
    ir = _tail_response(sample_rate)[0]
    per = frame / TAIL_DECIMATION  # low-rate samples per frame
    edges = np.round(np.arange(0, ir.size / per + 1) * per).astype(int)
    energy = np.add.reduceat(ir * ir, edges[edges < ir.size])
    return energy / energy.sum()


def tail_power_response(sample_rate: int, n: int) -> np.ndarray:
    """The tail's power gain (the two ears' mean |H|²) over each bin of an ``n``-point rfft at
    ``sample_rate``, averaged over the bin's width (a narrow sound — a drum's low mode — is
    heard through this one response's peaks and dips, not through its mean); 0 above the
    tail's band."""
    return _tail_power(sample_rate, n)


@cache
def _tail_power(sample_rate: int, n: int) -> np.ndarray:
    ir = _tail_response(sample_rate)
    fine = 1 << 17
    power = (np.abs(np.fft.rfft(ir, fine, axis=1)) ** 2).mean(axis=0)
    low_rate = sample_rate / TAIL_DECIMATION
    fine_hz = np.fft.rfftfreq(fine, 1.0 / low_rate)
    edges = (np.arange(n // 2 + 2) - 0.5) * sample_rate / n
    csum = np.concatenate([[0.0], np.cumsum(power)])
    lo = np.searchsorted(fine_hz, edges[:-1])
    hi = np.maximum(np.searchsorted(fine_hz, edges[1:]), lo + 1)
    inside = edges[1:] <= low_rate / 2
    out = np.zeros(n // 2 + 1)
    lo, hi = lo[inside], np.minimum(hi[inside], power.size)
    out[inside] = (csum[hi] - csum[lo]) / np.maximum(hi - lo, 1)  # a bin past the fine grid: 0
    return out


def tail_length(sample_rate: int) -> int:
    """The tail's response's length in samples at the low rate."""
    return _tail_response(sample_rate).shape[1]


def tail_spectrum(sample_rate: int, size: int) -> np.ndarray:
    """The two ears' tail responses' ``size``-point rfft at the low rate ((2, size // 2 + 1),
    complex64)."""
    return _tail_spectrum(sample_rate, size)


@cache
def _tail_spectrum(sample_rate: int, size: int) -> np.ndarray:
    return np.fft.rfft(_tail_response(sample_rate).astype(np.float32), size)  # complex64


@cache
def room_tone(sample_rate: int) -> np.ndarray:
    """The courtyard's air (2, ``ROOM_TONE_SAMPLES``) float32, played in a loop from the
    render's first sample: two independent noises, their spectrum falling 3 dB an octave (as
    wind and a distant town do) from 40 Hz and steeper above 2 kHz, no DC, each ear at
    ``ROOM_TONE_DBFS`` RMS.  Made in the frequency domain, so the loop has no seam."""
    n = ROOM_TONE_SAMPLES
    rng = np.random.default_rng(1771)
    f = np.fft.rfftfreq(n, 1.0 / sample_rate)
    shape = np.zeros(f.size)
    inside = f > 0
    shape[inside] = (1.0 / np.sqrt(np.maximum(f[inside], 40.0))
                     / (1.0 + (f[inside] / 2000.0) ** 2) / (1.0 + (20.0 / f[inside]) ** 2))
    spectrum = (rng.standard_normal((2, f.size)) + 1j * rng.standard_normal((2, f.size))) * shape
    tone = np.fft.irfft(spectrum, n, axis=1)
    tone *= 10.0 ** (ROOM_TONE_DBFS / 20.0) / np.sqrt((tone ** 2).mean(axis=1, keepdims=True))
    return tone.astype(np.float32)


@cache
def path_filter(sample_rate: int) -> np.ndarray:
    """The low-rate path's low-pass (float64, ``TAIL_DECIMATION`` · ``PATH_PHASE_TAPS`` + 1
    taps, linear phase, unit gain at 0 Hz): the anti-alias filter before the decimation and the
    interpolation filter after it (a Kaiser window, β ``PATH_KAISER_BETA``, −6 dB at
    ``PATH_CUTOFF`` of the rate: 4.35 kHz at 48 kHz; flat within 1 dB to 3.36 kHz).  A tone
    above the low rate's Nyquist frequency is gone before the decimation folds it, and the
    interpolation's images are gone after it: what the path passes of a tone at f and of its
    alias or image together is ≥ 75 dB down."""
    del sample_rate  # the filter is a fraction of the rate: the same taps at every rate
    return np.array(_PATH_TAPS + _PATH_TAPS[-2::-1])


_PATH_TAPS = [
    0.00011120593865530133, 0.00013607897847805193, -1.8960583159916124e-05,
    -0.0004486814392578626, -0.0011042460880304062, -0.0017109812237090444,
    -0.0017914077620484281, -0.0008406197551270765, 0.0013722684413754324,
    0.004492828130017283, 0.007436031757100561, 0.0085669808190459, 0.006258968672253438,
    -0.00029342721346380443, -0.01029709608931916, -0.020987564004749066,
    -0.027954700024978456, -0.02623351199369685, -0.01191755959634183, 0.016215169518817005,
    0.05567590407728293, 0.10031716111525318, 0.14159890032870232, 0.17076882195262455,
    0.18129687208855189]
"""The first half of ``path_filter``'s taps and its middle one (it is symmetric): scipy's
``firwin(TAIL_DECIMATION · PATH_PHASE_TAPS + 1, PATH_CUTOFF, window=("kaiser",
PATH_KAISER_BETA), fs=1.0)``, written out so that a render's planning does not import
``scipy.signal`` (1.1 CPU-s, a single-process step before the notes' processes fork;
``tests/test_room.py`` holds them equal)."""


def path_gain(freqs: np.ndarray, sample_rate: int) -> np.ndarray:
    """|H(f)| of ``path_filter`` at the frequencies ``freqs`` (Hz): what the decimation keeps
    of a tone, and again what the interpolation keeps of it (read off a 2¹⁸-point transform,
    0.09 Hz apart at 48 kHz)."""
    fine = _fine_gain(sample_rate)
    grid = np.arange(fine.size) * (sample_rate / (2.0 * (fine.size - 1)))
    return np.interp(np.abs(np.asarray(freqs, dtype=np.float64)), grid, fine)


@cache
def _fine_gain(sample_rate: int) -> np.ndarray:
    return np.abs(np.fft.rfft(path_filter(sample_rate), 1 << 18))


@cache
def _decimation(sample_rate: int) -> np.ndarray:
    """(M + 1, q) float32: row m, column r holds h[q·m − r] (0 outside the filter)."""
    h = path_filter(sample_rate)
    q, m = TAIL_DECIMATION, PATH_PHASE_TAPS
    out = np.zeros((m + 1, q))
    for i in range(m + 1):
        for r in range(q):
            if 0 <= q * i - r < h.size:
                out[i, r] = h[q * i - r]
    return out.astype(np.float32)


@cache
def _interpolation(sample_rate: int) -> np.ndarray:
    """(q, M + 1) float32: row r, column m holds q·h[q·m + r] (0 past the filter's end)."""
    h = path_filter(sample_rate)
    q, m = TAIL_DECIMATION, PATH_PHASE_TAPS
    padded = np.zeros(q * (m + 1))
    padded[:h.size] = h * q
    return np.ascontiguousarray(padded.reshape(m + 1, q).T).astype(np.float32)


def decimated(buf: np.ndarray, sample_rate: int) -> np.ndarray:
    """``buf`` (n,) low-passed by ``path_filter`` and taken every ``TAIL_DECIMATION``-th
    sample: all k + ``PATH_PHASE_TAPS`` low-rate samples it reaches (k = ⌈n / q⌉; the last
    ones ring on past the block: linear, so the next blocks' add to them), float32.  Sample i
    is Σ_j h[j]·buf[q·i − j]: a polyphase matrix product."""
    q, m = TAIL_DECIMATION, PATH_PHASE_TAPS
    k = -(-buf.size // q)
    if k * q != buf.size:
        buf = np.concatenate([buf, np.zeros(k * q - buf.size, dtype=buf.dtype)])
    frames = buf.astype(np.float32, copy=False).reshape(k, q)
    parts = _decimation(sample_rate) @ frames.T  # (M + 1, k)
    out = np.zeros(k + m, dtype=np.float32)
    for i in range(m + 1):
        out[i:i + k] += parts[i]
    return out


class Wet:
    """One stem's reflections and tail, computed at 1/``TAIL_DECIMATION`` of the sample rate:
    each place's mono block is low-passed and decimated once (``decimated``), its reflections
    and its tail sends added at the low rate, the sends convolved with the tail (overlap-add),
    and the sum brought back to the full rate once per stem through the same low-pass
    (``interpolated``).  The two filters delay the path by ``PATH_PHASE_TAPS`` low-rate
    samples, which the reflections' delays subtract.  Its state (what rings past the block and
    the last low-rate samples the interpolation reads) runs from block to block."""

    def __init__(self, room: Room) -> None:
        self.room = room
        self.m = _tail_response(room.sample_rate).shape[1]
        self.span = room.max_delay // TAIL_DECIMATION + 1
        self.overlap = np.zeros((2, self.m + self.span + PATH_PHASE_TAPS), dtype=np.float32)
        self.last = np.zeros((2, PATH_PHASE_TAPS), dtype=np.float32)  # the interpolation's past
        self.active = False
        self.refl: np.ndarray | None = None
        self.send: np.ndarray | None = None

    def add(self, low: np.ndarray, place: tuple[float, float]) -> None:
        """A place's decimated block (``decimated``): its reflections and its sends to the two
        ears' tails (each fed from the source's side)."""
        k = low.size
        if self.refl is None:
            self.refl = np.zeros((2, k + self.span), dtype=np.float32)
            self.send = np.zeros((2, k), dtype=np.float32)
        assert self.send is not None
        both = np.empty((2, k), dtype=np.float32)
        for delay, left, right in self.room.low_reflections(*place):
            np.multiply(_gains(left, right), low, out=both)
            self.refl[:, delay:delay + k] += both
        self.send += np.multiply(_gains(*self.room.send(*place)), low, out=both)

    def low_block(self, k: int) -> np.ndarray | None:
        """The block's (2, k) reflections and tail at the low rate (what ``add`` gave them,
        and what rings on from earlier blocks); None once nothing rings."""
        refl, send = self.refl, self.send
        self.refl = self.send = None
        if send is None and not self.active:
            return None
        m, width = self.m, self.overlap.shape[1]
        wet = np.zeros((2, k + width), dtype=np.float32)
        if send is not None and refl is not None:
            s = send.shape[1]
            size = _fft_size(s + m - 1)
            # scipy's transforms of a zero-padded float32 block: ~2× / 1.25× numpy's, the same bytes
            spectrum = scipy_fft.rfft(send, size, axis=1) * _tail_spectrum(self.room.sample_rate,
                                                                         size)
            wet[:, :s + m - 1] += scipy_fft.irfft(spectrum, size)[:, :s + m - 1]
            wet[:, :refl.shape[1]] += refl
        wet[:, :width] += self.overlap
        self.overlap = wet[:, k:k + width]
        self.active = send is not None or bool(np.abs(self.overlap).max() > 1e-9)
        return wet[:, :k]

    def add_to(self, out: np.ndarray, n: int) -> bool:
        """Add the block's reflections and tail, brought back to the full rate, to the first
        ``n`` samples of ``out`` ((2, ≥ n) float32); False once nothing rings any more."""
        q, mm = TAIL_DECIMATION, PATH_PHASE_TAPS
        k = -(-n // q)
        out_low = self.low_block(k)
        if out_low is None:
            return False
        seq = np.empty((2, mm + k), dtype=np.float32)
        seq[:, :mm] = self.last
        seq[:, mm:] = out_low
        self.last = seq[:, k:].copy()
        # full-rate sample q·a + r is Σ_m q·h[q·m + r]·low[a − m]: the two ears' (M + 1)
        # shifted copies times the (q, M + 1) polyphase matrix, one matrix product
        shifted = np.empty((mm + 1, 2, k), dtype=np.float32)
        for i in range(mm + 1):
            shifted[i] = seq[:, mm - i:mm - i + k]
        # (2k, q) = shiftedᵀ · Pᵀ: the products land in the output's order, no transpose copy
        up = shifted.reshape(mm + 1, 2 * k).T @ _interpolation(self.room.sample_rate).T
        out[:, :n] += up.reshape(2, k * q)[:, :n]
        return True


@cache
def _gains(left: float, right: float) -> np.ndarray:
    """(2, 1) float32: the two ears' gains, to multiply a (k,) block by at once."""
    return np.array([[left], [right]], dtype=np.float32)


def _fft_size(n: int) -> int:
    """The smallest 2^p or 3·2^p of at least ``n`` (3·2^p costs little more than 2^p)."""
    p = max(1, (n - 1).bit_length())
    return min(1 << p, 3 << max(0, p - 2) if 3 << max(0, p - 2) >= n else 1 << p)

"""The render's loudness, estimated before it is mixed: K-weighted energy per 10 ms frame.

The loudness target needs the integrated loudness (BS.1770) of the whole mix before its one
gain is applied; mixing twice doubled the render's cost.  So the mix's loudness is estimated
from its notes' energies instead:

* each note's K-weighted energy per ``FRAME_S`` frame (``note_energy``): its samples' energy
  per frame, weighted by the K-filter's power response as the spectrum of the note's
  surroundings shows it (Parseval on 0.1 s chunks: chunks 0–4, then every doubling, held in
  between — a note's colour changes slowly after its attack), once by the K-filter alone (the
  direct sound), once with the low-pass of the room's low-rate path (the reflections: the
  low-pass before the decimation and after the interpolation, ``instruments.mix.room``) and
  once more through
  the tail's own power response (a low drum mode meets its peaks and dips); cached per note;
* the room adds them in energy (``estimated_gain``): the direct sound at its pan gains and
  delay, each reflection at its own, the tail sends spread over the frames as the tail's
  energy decays; every note scaled by its gain² and, in the courtyard, by its (note, place)'s
  factor (``instruments.mix.room_energy``: a low mode adds to its own echoes in amplitude);
* notes struck together add their cross terms (``instruments.mix.note_pairs``: an octave, a
  unison share partials in phase from their first sample);
* the frames, summed per 0.1 s step, are gated as BS.1770 gates 400 ms blocks
  (``instruments.mix.loudness.gated_loudness``);
* the gain is the one that meets the target in the written file, after the limiter
  (``instruments.mix.limiter_estimate``: the limiter predicted from the notes' peaks).

Other notes are added in energy, not in amplitude: the voices of an ensemble are independent
sounds, so their cross terms average out over a 400 ms block (the tests measure the written
render against pyloudnorm: within ±0.5 LU of the target).  Memory stays bounded: frames are
finished (stepped and dropped) once no later note can reach them; what is kept is one float32
per 10 ms frame and one per limiter chunk (5.3 ms): about 4 MB an hour.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from functools import cache

import numpy as np
from scipy import fft as scipy_fft

from instruments.mix.limiter import LIMITER_CHUNK
from instruments.mix.limiter_estimate import PeakEstimate, chunk_squares, limited_gain
from instruments.mix.loudness import (
    BLOCK_S,
    FRAME_S,
    SILENCE_LUFS,
    STEP_S,
    gated_loudness,
    k_power_response,
)
from instruments.mix.note_pairs import PairEnergies, PairTerms
from instruments.mix.placement import PlacedNote
from instruments.mix.room import (
    Room,
    path_gain,
    tail_energy_frames,
    tail_power_response,
)
from instruments.mix.room_energy import WetFactors
from instruments.voices import notes as voices
from instruments.voices.models import NoteKey

CHUNK_FRAMES = 10  # the spectral weighting is measured on 0.1 s chunks
_CHUNK_WINDOW = 4096  # … over the first 4096 samples of each (a fast FFT size)
_WINDOW_FRAMES = 6000  # frames kept open at once (60 s) before they are stepped

Energies = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""(direct, low, tail) energies per frame of one note, its peaks per limiter chunk and its
raw energy Σ x² (one number) (``note_energy``)."""


def _measured_chunks(chunks: int) -> np.ndarray:
    """The chunks whose spectrum is measured: 0–4, then 6, 8, 12, 16, 24, 32 … (each held
    until the next)."""
    picks = {c for c in range(min(chunks, 5))}
    c = 4
    while c < chunks:
        picks.update({c, c + c // 2} & set(range(chunks)))
        c *= 2
    return np.array(sorted(picks))


@cache
def _weights(sample_rate: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The power weights of an ``n``-point rfft's bins: the K-filter; the K-filter through
    the room's low-rate path (its low-pass before the decimation and again after the
    interpolation: ``path_gain`` to the fourth); the same through the tail."""
    f = np.fft.rfftfreq(n, 1.0 / sample_rate)
    k = k_power_response(f, sample_rate)
    low = k * path_gain(f, sample_rate) ** 4
    return k, low, low * tail_power_response(sample_rate, n)


def note_energy(wave: np.ndarray, sample_rate: int) -> Energies:
    """(direct, low, tail, peaks, raw): a note's K-weighted energy per FRAME_S frame, the
    same through the room's low-rate path, and through it and the tail (float64, one per frame
    from the note's first sample); its largest sample² per limiter chunk (``chunk_squares``);
    its raw energy Σ x² (an array of one)."""
    frame = round(FRAME_S * sample_rate)
    n = wave.size
    frames = -(-n // frame)
    whole = n // frame * frame
    body = wave[:whole].reshape(-1, frame)
    raw = np.empty(frames)
    raw[:whole // frame] = np.einsum("ij,ij->i", body, body, dtype=np.float64)
    if whole < n:
        rest = wave[whole:].astype(np.float64)
        raw[-1] = float(rest @ rest)
    chunk = CHUNK_FRAMES * frame
    chunks = -(-frames // CHUNK_FRAMES)
    picks = _measured_chunks(chunks)
    width = min(_CHUNK_WINDOW, chunk)
    segs = np.zeros((picks.size, width), dtype=np.float32)
    for row, c in enumerate(picks):
        part = wave[c * chunk: c * chunk + width]
        segs[row, :part.size] = part
    power = np.abs(scipy_fft.rfft(segs, axis=1)) ** 2  # scipy's: ~2× numpy's here
    total = power.sum(axis=1)
    safe = np.where(total > 0, total, 1.0)
    held = np.searchsorted(picks, np.arange(chunks), side="right") - 1  # chunk → its pick
    per_frame = np.repeat(held, CHUNK_FRAMES)[:frames]
    direct, low, tail = (raw * np.where(total > 0, power @ w / safe, 1.0)[per_frame]
                         for w in _weights(sample_rate, width))
    return direct, low, tail, chunk_squares(wave), np.array([raw.sum()])


_ENERGY: dict[NoteKey, Energies] = {}


def keep_energy(key: NoteKey, energies: Energies) -> None:
    """Cache the energies of ``key`` measured elsewhere (``instruments.mix.voice_processes``)."""
    if len(_ENERGY) > 8192:
        _ENERGY.clear()
    _ENERGY[key] = energies


def cached_note_energy(key: NoteKey, wave: np.ndarray) -> Energies:
    """``note_energy`` of the note ``key`` (whose sound is ``wave``), cached per key."""
    found = _ENERGY.get(key)
    if found is None:
        if len(_ENERGY) > 8192:
            _ENERGY.clear()
        found = _ENERGY[key] = note_energy(wave, key.sample_rate)
    return found


def _energy_of(key: NoteKey) -> Energies:
    """``note_energy`` of ``key``, from the cache (its sound rendered only if it is not)."""
    found = _ENERGY.get(key)
    return found if found is not None else cached_note_energy(key, voices.render_key(key))


class _Frames:
    """The mix's energy per frame, open over a window of frames that slides forward: frames
    before ``first`` are finished (kept as float32, one number per 10 ms)."""

    def __init__(self, sample_rate: int) -> None:
        self.frame = round(FRAME_S * sample_rate)
        self.first = 0
        self.direct = np.zeros(_WINDOW_FRAMES)
        self.tail_in = np.zeros(_WINDOW_FRAMES)
        self.tail = tail_energy_frames(sample_rate, self.frame)
        self.tail_carry = np.zeros(self.tail.size - 1)
        self.kept: list[np.ndarray] = []  # the finished frames (float32)

    def add(self, tail: bool, energy: np.ndarray, at_sample: float) -> None:
        """``energy`` per frame from ``at_sample`` on, into the direct sum or the tail's input,
        from the frame nearest its start (half a frame, 5 ms, is nothing to a 400 ms block's
        loudness; one add instead of a split into two, thousands of times a render)."""
        i = int(math.floor(at_sample / self.frame + 0.5)) - self.first
        if i + energy.size > self.direct.size:
            self._grow(i + energy.size)
        into = self.tail_in if tail else self.direct
        into[i:i + energy.size] += energy

    def _grow(self, size: int) -> None:
        new = max(size, 2 * self.direct.size)
        self.direct = np.concatenate([self.direct, np.zeros(new - self.direct.size)])
        self.tail_in = np.concatenate([self.tail_in, np.zeros(new - self.tail_in.size)])

    def finish_before(self, sample: int, last: bool = False) -> None:
        """Every frame before ``sample`` is complete: step it and drop it (once there are
        half a window of them, or at the ``last`` call)."""
        todo = sample // self.frame - self.first
        if todo <= 0 or (todo < _WINDOW_FRAMES // 2 and not last):
            return
        while todo > 0:  # a window at a time (a long silence is stepped through, not held)
            count = min(self.direct.size, todo)
            self._step(count)
            todo -= count

    def _step(self, count: int) -> None:
        """Finish the first ``count`` open frames."""
        tail = np.convolve(self.tail_in[:count], self.tail)
        tail[:self.tail_carry.size] += self.tail_carry
        carry = np.zeros(self.tail.size - 1)
        rest = tail[count:]
        carry[:rest.size] = rest
        self.tail_carry = carry
        done = self.direct[:count] + tail[:count]
        self.direct = np.concatenate([self.direct[count:], np.zeros(count)])
        self.tail_in = np.concatenate([self.tail_in[count:], np.zeros(count)])
        self.first += count
        self.kept.append(done.astype(np.float32))


class _Estimate:
    """One render's running estimate: the frames' energies, the mix's peaks per chunk and,
    in the courtyard, each (note, place)'s exact low band (``instruments.mix.room_energy``)."""

    def __init__(self, placed: Sequence[PlacedNote], room: Room) -> None:
        self.room = room
        self.frames = _Frames(room.sample_rate)
        self.peaks = PeakEstimate()
        self.wet = WetFactors(room) if room.has_tail else None
        self.places: dict[NoteKey, dict[tuple[float, float], None]] = {}
        for p in placed:
            self.places.setdefault(p.key, {})[p.place] = None
        self.factors: dict[tuple[NoteKey, tuple[float, float]], float] = {}
        self.together: list[PlacedNote] = []  # the notes so far that start at the last start
        self.pairs = PairTerms(self.frames.frame)

    def measure(self, key: NoteKey, wave: np.ndarray) -> Energies:
        """The note's energies; in the courtyard, the factor that corrects them at each of
        its places for what its reflections and tail add in amplitude."""
        energies = cached_note_energy(key, wave)
        if self.wet is not None:
            for place, factor in self.wet.factors(key.instrument, wave, energies,
                                                  self.places[key]).items():
                self.factors[(key, place)] = factor
        return energies

    def add(self, p: PlacedNote, energies: Energies) -> None:
        """One placed note's energies and peaks through the room, with its cross terms with
        the notes that start with it (``instruments.mix.note_pairs``): at its place they join
        its own energies, from another place heard at once its direct sound."""
        direct, low, tail, peaks, _ = energies
        own = [direct, low, tail]
        if self.together and self.together[0].start != p.start:
            self.together = []
        d_delay, d_left, d_right = self.room.taps(*p.place)[0]
        for q in self.together:
            q_delay, q_left, q_right = self.room.taps(*q.place)[0]
            if q.place == p.place:
                scale = q.gain / p.gain if p.gain else 0.0  # (g_q·g_p over g_p²)
                for i, cross in enumerate(self._pair(q.key, p.key)):
                    own[i] = own[i].copy() if own[i] is energies[i] else own[i]
                    own[i][:cross.size] += cross * scale
            elif q_delay == d_delay:  # heard at once from two places (dry: always)
                pans = q_left * d_left + q_right * d_right
                self.frames.add(False, self._pair(q.key, p.key)[0] * (q.gain * p.gain * pans),
                                p.start + d_delay)
        self.together.append(p)
        self._through_room(own, p.gain * p.gain, p)
        self.peaks.add(peaks, p.gain * d_left, p.gain * d_right, p.start + d_delay)
        ground = self.room.ground(*p.place)
        if ground is not None:
            g_delay, g_left, g_right = ground
            self.peaks.add(peaks, p.gain * g_left, p.gain * g_right, p.start + g_delay)

    def _through_room(self, energies: list[np.ndarray], g2: float, p: PlacedNote) -> None:
        """(direct, low, tail) energies at gain² ``g2`` at ``p``'s place and start."""
        direct, low, tail = energies
        g2 *= self.factors.get((p.key, p.place), 1.0)
        for n, (delay, left, right) in enumerate(self.room.taps(*p.place)):
            self.frames.add(False, (low if n else direct) * (g2 * (left * left + right * right)),
                            p.start + delay)
        ground = self.room.ground(*p.place)
        if ground is not None:  # the full band, heard with the direct sound
            delay, left, right = ground
            self.frames.add(False, direct * (g2 * (left * left + right * right)), p.start + delay)
        if self.room.has_tail:
            to_left, to_right = self.room.send(*p.place)
            self.frames.add(True, tail * (g2 * (to_left * to_left + to_right * to_right)),
                            p.start)

    def _pair(self, a: NoteKey, b: NoteKey) -> PairEnergies:
        """The cross energies of two notes that start together."""
        return self.pairs.terms(a, b, _energy_of(a), _energy_of(b), voices.render_key)

    def finish_before(self, sample: int, last: bool = False) -> None:
        self.frames.finish_before(sample, last)
        if self.frames.first * self.frames.frame > self.peaks.first * LIMITER_CHUNK:
            self.peaks.finish_before(self.frames.first * self.frames.frame)


def estimated_gain(placed: Sequence[PlacedNote], total: int, room: Room, target: float,
                   rendered: Iterator[tuple[NoteKey, np.ndarray]] | None = None,
                   ) -> float | None:
    """The gain that brings the mix of the placed notes (sorted by start, ``total`` samples
    long) to ``target`` LUFS as it is written, after the limiter (``limited_gain``); None for
    a silent mix.  The notes are rendered (and cached) on the way, several at a time
    (``instruments.voices.notes.render_keys``)."""
    sr = room.sample_rate
    est = _Estimate(placed, room)
    if rendered is None:  # (key, sound) in the order of first use
        rendered = voices.render_keys(dict.fromkeys(p.key for p in placed))
    last_use = {p.key: i for i, p in enumerate(placed)}
    energies: dict[NoteKey, Energies] = {}
    for i, p in enumerate(placed):
        est.finish_before(p.start - est.frames.frame)
        while p.key not in energies:
            key, wave = next(rendered)
            energies[key] = est.measure(key, wave)
        est.add(p, energies.pop(p.key) if last_use[p.key] == i else energies[p.key])
    frame = est.frames.frame
    est.finish_before(total + (est.frames.tail.size + 1) * frame, last=True)
    frames = np.concatenate(est.frames.kept)
    loud = _frames_loudness(frames, total, sr)
    if not math.isfinite(loud):
        return None
    peaks = est.peaks.peaks(-(-total // LIMITER_CHUNK))
    return limited_gain(lambda w: _frames_loudness(frames if w is None else frames * w,
                                                   total, sr),
                        peaks, 10.0 ** ((target - loud) / 20.0), target, sr, frame, frames.size)


def _frames_loudness(frames: np.ndarray, total: int, sample_rate: int) -> float:
    """The gated loudness (LUFS) of a mix ``total`` samples long whose K-weighted energy per
    FRAME_S frame is ``frames``."""
    whole = -(-frames.size // CHUNK_FRAMES) * CHUNK_FRAMES
    padded = np.zeros(whole)
    padded[:frames.size] = frames
    return _gated(padded.reshape(-1, CHUNK_FRAMES).sum(axis=1), total, sample_rate)


def _gated(steps: np.ndarray, total: int, sample_rate: int) -> float:
    """BS.1770's gating over 400 ms blocks (every 100 ms) of a signal ``total`` samples long
    whose K-weighted energy per 0.1 s step is ``steps``."""
    per_block = round(BLOCK_S / STEP_S)
    frame = round(FRAME_S * sample_rate)
    n_frames = max(-(-total // frame), per_block * CHUNK_FRAMES)
    blocks = (n_frames - per_block * CHUNK_FRAMES) // CHUNK_FRAMES + 1
    if steps.size < blocks + per_block - 1:
        steps = np.concatenate([steps, np.zeros(blocks + per_block - 1 - steps.size)])
    csum = np.concatenate([[0.0], np.cumsum(steps)])
    starts = np.arange(blocks)
    power = (csum[starts + per_block] - csum[starts]) / round(BLOCK_S * sample_rate)
    loud = gated_loudness(power)
    return loud if math.isfinite(loud) else SILENCE_LUFS


def wave_loudness(wave: np.ndarray, sample_rate: int) -> float:
    """The integrated loudness (LUFS) of one mono sound, estimated as the render's is."""
    direct, *_ = note_energy(np.asarray(wave, dtype=np.float32), sample_rate)
    return _frames_loudness(direct, wave.size, sample_rate)

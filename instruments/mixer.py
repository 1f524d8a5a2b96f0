"""The offline mixer: place rendered notes in the courtyard, mix them in blocks, master them.

Each note is placed by ``instruments.placement.pan_gains`` (constant-power pan and 1/d distance
attenuation, heard from the listener in the courtyard).

Mixing (``render``) is block by block: notes are sorted by onset, each note's cached waveform
(``instruments.voices.render_key``) is added only into the blocks it overlaps, and a note's
waveform is released once its last block is done, so memory is bounded by the polyphony, not by
the length of the piece.  The sum is computed in a fixed order (float32 per place, float64 per
stem), so the same notes always give the same bytes.

Mastering: a fixed master gain of ``HEADROOM_DB`` (+14 dB: a courtyard listener 15 m from the
hang hears it at about 1/3 of the 5 m reference level, so a rite sits near −24 dBFS RMS with peaks
near −3 dBFS) and then the look-ahead peak limiter of ``instruments.limiter`` (ceiling 0.98).
The limiter's peak for a chunk is the largest |sample| of the mix *and of every stem* in the
chunk (stems that cancel in the mix can be louder than it), and the same gain curve is applied
to every stem, so the stems still sum to the mix and none of them clips either.  Without stems
the notes are summed per place only (no per-stem arrays, about a third less work), so a mix
rendered without ``--stems`` may differ from one rendered with them in the last bits and where a
stem alone would have needed limiting.  ``instruments.audio_files`` writes the blocks to files.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from cues.errors import UserError
from instruments import voices
from instruments.limiter import LIMITER_CHUNK, PeakLimiter
from instruments.placement import DEFAULT_LISTENER, pan_gains
from instruments.strings import repluck_stops
from instruments.voice_models import key_length

DEFAULT_SAMPLE_RATE = 48000
HEADROOM_DB = 14.0
HEADROOM_GAIN = 10.0 ** (HEADROOM_DB / 20.0)
DEFAULT_BLOCK_S = 1.0

Progress = Callable[[float, float], None]
"""progress(seconds rendered, total seconds)"""

MasteredBlock = tuple[np.ndarray, dict[str, np.ndarray]]
"""(mix float32 (n, 2), {stem: float32 (n, 2)}) after headroom and limiter."""


@dataclass(frozen=True)
class RenderNote:
    """One note to render: when, what, where (metres east, north) and which stem it goes to."""

    start_s: float
    instrument: str
    freq_hz: float | None
    duration_s: float
    velocity: int
    x: float
    y: float
    stem: str
    bell_interval: str = "minor"
    lyric: str | None = None  # the syllable a 歌 note sings

    def __post_init__(self) -> None:
        for name in ("start_s", "x", "y"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise UserError(f"note {name} must be a finite number, got {value!r}")
        if self.start_s < 0:
            raise UserError(f"note start_s must be ≥ 0, got {self.start_s!r}")
        if not isinstance(self.stem, str) or not self.stem.strip():
            raise UserError(f"note stem must be a non-empty string, got {self.stem!r}")


# ── planning ────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class _Placed:
    start: int  # first sample
    length: int
    key: voices.NoteKey
    left: float
    right: float
    stem: str

    @property
    def end(self) -> int:
        return self.start + self.length


def _plan(notes: Iterable[RenderNote], sample_rate: int,
          listener: tuple[float, float]) -> list[_Placed]:
    placed = []
    notes = list(notes)
    for i, n in enumerate(notes):
        if not isinstance(n, RenderNote):
            raise UserError(f"note {i}: expected a RenderNote, got {type(n).__name__}")
    stops = repluck_stops([(n.instrument, n.freq_hz, n.start_s, n.x, n.y) for n in notes])
    for i, n in enumerate(notes):
        try:
            key = voices.note_key(n.instrument, n.freq_hz, n.duration_s, n.velocity, sample_rate,
                                  bell_interval=n.bell_interval, lyric=n.lyric,
                                  stop_s=stops.get(i))
        except UserError as exc:
            raise UserError(f"note {i} (at {n.start_s:g} s, {n.instrument}): {exc}") from None
        left, right = pan_gains(n.x, n.y, listener)
        placed.append(_Placed(int(round(n.start_s * sample_rate)), key_length(key), key,
                              left, right, n.stem))
    # stable: notes with equal onsets keep their input order
    placed.sort(key=lambda p: p.start)
    return placed


def stem_names(notes: Iterable[RenderNote]) -> tuple[str, ...]:
    """The stems of ``notes``, sorted (the order stems are summed and written in)."""
    return tuple(sorted({n.stem for n in notes}))


# ── mixing ──────────────────────────────────────────────────────────────────────────────────


def _raw_blocks(
    placed: Sequence[_Placed], total: int, block: int, merged: bool = False,
) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """Per block: (n, {stem: float64 (2, n)}) before headroom and limiter (silent stems are
    absent from the dict); ``merged``: one stem "" holding everything (no stems are wanted)."""
    active: list[tuple[_Placed, np.ndarray]] = []
    nxt = 0
    for b0 in range(0, total, block):
        b1 = min(total, b0 + block)
        n = b1 - b0
        while nxt < len(placed) and placed[nxt].start < b1:
            p = placed[nxt]
            active.append((p, voices.render_key(p.key)))
            nxt += 1
        # group by (stem, gains): notes at one place are summed in mono (float32, like the
        # waveforms: half the memory traffic), then panned once into float64 stems
        groups: dict[tuple[str, float, float], np.ndarray] = {}
        for p, wave in active:
            lo = max(b0, p.start)
            hi = min(b1, p.end)
            if hi <= lo:
                continue
            gkey = ("" if merged else p.stem, p.left, p.right)
            buf = groups.get(gkey)
            if buf is None:
                buf = groups[gkey] = np.zeros(n, dtype=np.float32)
            buf[lo - b0:hi - b0] += wave[lo - p.start:hi - p.start]
        out: dict[str, np.ndarray] = {}
        tmp = np.empty(n, dtype=np.float64)
        for (stem, left, right), buf in groups.items():
            st = out.get(stem)
            if st is None:
                st = out[stem] = np.zeros((2, n), dtype=np.float64)
            st[0] += np.multiply(buf, left, out=tmp)
            st[1] += np.multiply(buf, right, out=tmp)
        active = [(p, w) for p, w in active if p.end > b1]
        yield n, out


def _frames(x: np.ndarray) -> np.ndarray:
    """(2, n) float64 → (n, 2) float32 frames (column copies: ~8× faster than a strided cast)."""
    out = np.empty((x.shape[1], 2), dtype=np.float32)
    out[:, 0] = x[0]
    out[:, 1] = x[1]
    return out


class _Mastering:
    """Headroom and limiter for one render: turns the raw blocks into mastered blocks."""

    def __init__(self, sample_rate: int, stems: tuple[str, ...], with_stems: bool) -> None:
        self.limiter = PeakLimiter(sample_rate)
        self.stems = stems
        self.with_stems = with_stems

    def mix(self, raw: dict[str, np.ndarray], n: int) -> np.ndarray:
        """The block's mix (2, n) after headroom; without stems ``raw``'s one merged entry is
        taken out of it."""
        if self.with_stems:
            mix = np.zeros((2, n), dtype=np.float64)
            for s in self.stems:
                if s in raw:
                    mix += raw[s]
            mix *= HEADROOM_GAIN
            return mix
        merged = raw.pop("", None)
        return np.zeros((2, n), dtype=np.float64) if merged is None else merged * HEADROOM_GAIN

    def required(self, raw: dict[str, np.ndarray], mix: np.ndarray) -> np.ndarray:
        """Per-chunk gains that keep the mix and, when they are written, every stem under the
        ceiling (stems can exceed the mix where they cancel each other)."""
        m = -(-mix.shape[1] // LIMITER_CHUNK)
        req = np.ones(m)
        for x, scale in [(mix, 1.0)] + [(raw[s], HEADROOM_GAIN) for s in self.stems if s in raw]:
            r = PeakLimiter.required(x, scale)
            if r is not None:
                np.minimum(req, r, out=req)
        return req

    def finish(self, raw: dict[str, np.ndarray], mix: np.ndarray, req: np.ndarray,
               next_req: float) -> MasteredBlock:
        """The block limited, as frames; ``next_req`` is the next block's first requirement."""
        n = mix.shape[1]
        g = self.limiter.gains(req, next_req, n)
        out_mix = _frames(mix if g is None else mix * g)
        out_stems: dict[str, np.ndarray] = {}
        if self.with_stems:
            scale = HEADROOM_GAIN if g is None else HEADROOM_GAIN * g
            for s in self.stems:
                st = raw.get(s)
                out_stems[s] = (np.zeros((n, 2), dtype=np.float32) if st is None else
                                _frames(st * scale))
        return out_mix, out_stems

    def blocks(self, raw_blocks: Iterable[tuple[int, dict[str, np.ndarray]]]
               ) -> Iterator[MasteredBlock]:
        """Master the raw blocks in order, each once the next one's peaks are known."""
        pending: tuple[dict[str, np.ndarray], np.ndarray, np.ndarray] | None = None
        for n, raw in raw_blocks:
            mix = self.mix(raw, n)
            req = self.required(raw, mix)
            if pending is not None:
                yield self.finish(*pending, float(req[0]))
            pending = (raw, mix, req)
        if pending is not None:
            yield self.finish(*pending, 1.0)


def _check_render_settings(sample_rate: int, block_s: float) -> None:
    voices.check_sample_rate(sample_rate)
    if not isinstance(block_s, int | float) or not 0.01 <= block_s <= 60:
        raise UserError(f"block_s must be from 0.01 to 60 seconds, got {block_s!r}")


def mastered_blocks(
    notes: Iterable[RenderNote], sample_rate: int, block_s: float,
    listener: tuple[float, float], progress: Progress | None, stats: dict[str, float] | None,
    with_stems: bool = False,
) -> Iterator[MasteredBlock]:
    """Per block: (mix, {stem: frames}) after headroom and limiter; the stem dict is empty
    unless ``with_stems``.  ``stats``, when given, receives the frame and note counts and the
    limiter's work."""
    _check_render_settings(sample_rate, block_s)
    note_list = list(notes)
    placed = _plan(note_list, sample_rate, listener)
    total = max((p.end for p in placed), default=0)
    block = max(1, round(block_s * sample_rate / LIMITER_CHUNK)) * LIMITER_CHUNK
    if stats is not None:
        stats["frames"] = total
        stats["notes"] = len(placed)
        stats["unique_notes"] = len({p.key for p in placed})
    mastering = _Mastering(sample_rate, stem_names(note_list), with_stems)
    done = 0
    for out in mastering.blocks(_raw_blocks(placed, total, block, merged=not with_stems)):
        done += out[0].shape[0]
        if progress is not None:
            progress(done / sample_rate, total / sample_rate)
        yield out
    if stats is not None:
        stats["limited_s"] = mastering.limiter.limited_chunks * LIMITER_CHUNK / sample_rate
        stats["min_gain"] = mastering.limiter.min_gain


def render(
    notes: Iterable[RenderNote], *, sample_rate: int = DEFAULT_SAMPLE_RATE,
    block_s: float = DEFAULT_BLOCK_S, listener: tuple[float, float] = DEFAULT_LISTENER,
    progress: Progress | None = None,
) -> Iterator[np.ndarray]:
    """Yield the mastered stereo mix as float32 blocks of shape (n, 2), |sample| ≤ 0.98.

    The notes are validated (UserError) and planned up front; synthesis and mixing happen
    lazily, block by block, as the iterator is consumed.

    Blocks are ``block_s`` long (rounded to 256 samples) except the last; the mix runs from 0 s
    to the end of the last note's tail.  These are the samples ``write_audio`` writes.
    """
    for mix, _ in mastered_blocks(notes, sample_rate, block_s, listener, progress, None):
        yield mix

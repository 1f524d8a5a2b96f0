"""The offline mixer: place rendered notes in the courtyard, mix them in blocks, master them.

Each note plays at its voice's catalog level (``instruments.mix.levels.voice_gain``) times its
stroke level (a drum stroke's force, a bell's or stone's ±0.75 dB, seeded by the note:
``stroke_gain``), and is heard through ``instruments.mix.room``: in the courtyard its direct
sound, the ground's and the walls' reflections and a share of the tail, each delayed by its
path, over the room tone; dry, the old constant-power pan and 1/d attenuation
(``instruments.mix.placement``) only.

Mixing (``render``) is block by block: notes are sorted by onset, each note's cached waveform
(``instruments.voices.notes.render_key``) is added only into the blocks it overlaps, and a note's
waveform is released once its last block is done, so memory is bounded by the polyphony, the
room's longest delay and its tail, not by the length of the piece.  The sum is computed in a
fixed order (float32 per place, float64 per stem), so the same notes always give the same bytes.

Mastering: with a ``loudness`` target the whole render is scaled so that the BS.1770 integrated
loudness of the written file, after the limiter, is the target — estimated from the notes
before the one mixing pass (``instruments.mix.loudness_estimate``) — without one it plays at the
catalog level; then the look-ahead true-peak limiter of ``instruments.mix.limiter`` (−1 dBTP).
The limiter's peak for a chunk is the largest |sample| of the mix *and of every stem* in the
chunk (stems that cancel in the mix can be louder than it), and the same gain curve is applied
to every stem, so the stems still sum to the mix and none of them clips either. Without stems
the notes are summed per place only (no per-stem arrays), so a mix rendered without ``--stems``
may differ from one rendered with them in the last bits and where a stem alone would have needed
limiting.
``instruments.mix.render_files`` writes the blocks to files.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, replace

import numpy as np

from cues.errors import UserError
from instruments.mix import processes as mix_processes
from instruments.mix import voice_processes
from instruments.mix.blocks import RawBlock, as_frames, parallel_raw_blocks
from instruments.mix.levels import voice_gain
from instruments.mix.limiter import LIMITER_CHUNK, PeakLimiter
from instruments.mix.loudness_estimate import estimated_gain
from instruments.mix.placement import DEFAULT_LISTENER
from instruments.mix.room import DEFAULT_ROOM, ROOMS, Room, room_tone, spread
from instruments.processes.blas_threads import one_blas_thread
from instruments.processes.heap import keep_heap
from instruments.voices import notes as voices
from instruments.voices.models import DRUMS, REFERENCE_HZ, NoteKey, key_length, stroke_gain
from instruments.voices.strings import repluck_stops
from instruments.voices.sung import legato_links

DEFAULT_SAMPLE_RATE = 48000
SUNG_KEY_VELOCITY = 100  # the velocity a 歌 note is synthesized at (its own is its gain)
MARKS_THE_JIE = frozenset(DRUMS) | {"編鐘", "鑮"}
MIN_LOUDNESS, MAX_LOUDNESS = -60.0, -6.0
"""the integrated loudness (LUFS) a render may be normalised to"""
"""The instruments a 射節 strikes on its grid (its drums; a 編鐘 or 鑮 on each 節's first
tick): the courtyard hears them with one delay (``Room.start_at_nearest``)."""
DEFAULT_BLOCK_S = 2.0
Rendered = Generator[tuple[NoteKey, np.ndarray], None, None]
"""(key, sound) of notes as they are rendered (``voice_processes.rendered``)"""

Progress = Callable[[float, float], None]
"""progress(seconds rendered, total seconds)"""

MasteredBlock = tuple["np.ndarray | mix_processes.Packed", dict[str, np.ndarray]]
"""(mix float32 (n, 2) or its 24-bit bytes, {stem: float32 (n, 2)}) after loudness gain and
limiter."""


@dataclass(frozen=True)
class RenderNote:
    """One note to render: when, what, where (metres east, north) and which stem it goes to;
    ``strike`` is the tone a 編鐘 or 鑮 note strikes, ``seed`` varies a struck voice's stroke
    (strike position, pitch, level) — the same seed, the same stroke."""

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
    strike: str = "正鼓"
    seed: int = 0

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
    key: NoteKey
    gain: float  # catalog level × stroke level
    place: tuple[float, float]
    stem: str
    end: int = 0  # one past the last sample (start + length: set by __post_init__)

    def __post_init__(self) -> None:
        object.__setattr__(self, "end", self.start + self.length)


def _valid_velocity(v: object) -> bool:
    return not isinstance(v, bool) and isinstance(v, int) and 1 <= v <= 127


def _place(i: int, n: RenderNote, sample_rate: int, room: Room,
           stop_s: float | None, link: tuple[float | None, str],
           keys: dict[NoteKey, NoteKey]) -> _Placed:
    # the 歌's velocity scales it and nothing else: its sound is cached at one velocity and
    # the velocity is its gain (the syllables' stress and phrasing vary it note by note)
    velocity = n.velocity
    try:
        if voices.voice_name(n.instrument) == "歌" and _valid_velocity(n.velocity):
            velocity = SUNG_KEY_VELOCITY
        key = voices.note_key(n.instrument, n.freq_hz, n.duration_s, velocity, sample_rate,
                              bell_interval=n.bell_interval, lyric=n.lyric, stop_s=stop_s,
                              strike=n.strike, variant=n.seed, glide_from=link[0],
                              legato=link[1])
    except UserError as exc:
        raise UserError(f"note {i} (at {n.start_s:g} s, {n.instrument}): {exc}") from None
    key = keys.setdefault(key, key)  # one object per sound: the caches find it by identity
    gain = voice_gain(key.instrument, sample_rate)
    gain *= stroke_gain(key.instrument, n.seed)
    if velocity != n.velocity:
        gain *= (n.velocity / SUNG_KEY_VELOCITY) ** 1.5  # velocity_amp's law
    place = (n.x, n.y) if room.mode == "dry" else spread(key.instrument, n.x, n.y, key.freq_hz,
                                                          REFERENCE_HZ)
    return _Placed(int(round(n.start_s * sample_rate)), key_length(key), key, gain, place,
                   n.stem)


def _plan(notes: Iterable[RenderNote], sample_rate: int, room: Room) -> list[_Placed]:
    placed = []
    notes = list(notes)
    for i, n in enumerate(notes):
        if not isinstance(n, RenderNote):
            raise UserError(f"note {i}: expected a RenderNote, got {type(n).__name__}")
    stops = repluck_stops([(n.instrument, n.freq_hz, n.start_s, n.x, n.y) for n in notes])
    links = legato_links([(n.instrument, n.freq_hz, n.start_s, n.duration_s, n.x, n.y, n.lyric)
                          for n in notes])
    keys: dict[NoteKey, NoteKey] = {}
    for i, n in enumerate(notes):
        placed.append(_place(i, n, sample_rate, room, stops.get(i), links.get(i, (None, "")),
                             keys))
    # stable: notes with equal onsets keep their input order
    placed.sort(key=lambda p: p.start)
    return placed


def stem_names(notes: Iterable[RenderNote]) -> tuple[str, ...]:
    """The stems of ``notes``, sorted (the order stems are summed and written in)."""
    return tuple(sorted({n.stem for n in notes}))


# ── mixing ──────────────────────────────────────────────────────────────────────────────────


class _Mastering:
    """Headroom and limiter for one render: turns the raw blocks into mastered blocks."""

    def __init__(self, sample_rate: int, stems: tuple[str, ...], with_stems: bool) -> None:
        self.limiter = PeakLimiter(sample_rate)
        self.stems = stems
        self.with_stems = with_stems

    def mix(self, raw: dict[str, np.ndarray], n: int) -> np.ndarray:
        """The block's mix (2, n) (the loudness gain is in the notes' gains already); without
        stems ``raw``'s one merged entry is taken out of it."""
        if self.with_stems:
            mix = np.zeros((2, n), dtype=np.float32)
            for s in self.stems:
                if s in raw:
                    mix += raw[s]
        else:
            merged = raw.pop("", None)
            mix = np.zeros((2, n), dtype=np.float32) if merged is None else merged
        return mix

    def required(self, raw: dict[str, np.ndarray], mix: np.ndarray) -> np.ndarray:
        """Per-chunk gains that keep the mix and, when they are written, every stem under the
        ceiling (stems can exceed the mix where they cancel each other)."""
        m = -(-mix.shape[1] // LIMITER_CHUNK)
        req = np.ones(m)
        for x in [mix] + [raw[s] for s in self.stems if s in raw]:
            r = PeakLimiter.required(x, 1.0)
            if r is not None:
                np.minimum(req, r, out=req)
        return req

    def finish(self, raw: dict[str, np.ndarray], mix: np.ndarray, req: np.ndarray,
               next_req: float) -> MasteredBlock:
        """The block limited, as frames; ``next_req`` is the next block's first requirement."""
        n = mix.shape[1]
        g = self.limiter.gains(req, next_req, n)
        out_mix = as_frames(mix if g is None else mix * g)
        out_stems: dict[str, np.ndarray] = {}
        if self.with_stems:
            for s in self.stems:
                st = raw.get(s)
                out_stems[s] = (np.zeros((n, 2), dtype=np.float32) if st is None else
                                as_frames(st if g is None else st * g))
        return out_mix, out_stems

    def blocks(self, raw_blocks: Iterable[RawBlock]
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


@dataclass(frozen=True)
class Mastering:
    """How a render is heard and mastered: the listener, the room ("courtyard" or "dry") and
    the integrated loudness to normalise to (LUFS; None: play at the catalog level)."""

    listener: tuple[float, float] = DEFAULT_LISTENER
    room: str = DEFAULT_ROOM
    loudness: float | None = None

    def __post_init__(self) -> None:
        if self.room not in ROOMS:
            raise UserError(f"room must be one of {', '.join(ROOMS)}, got {self.room!r}")
        lufs = self.loudness
        if lufs is not None and (not isinstance(lufs, int | float)
                                 or not MIN_LOUDNESS <= lufs <= MAX_LOUDNESS):
            raise UserError(f"loudness must be from {MIN_LOUDNESS:g} to {MAX_LOUDNESS:g} LUFS, "
                            f"got {lufs!r}")


def _check_render_settings(sample_rate: int, block_s: float) -> None:
    voices.check_sample_rate(sample_rate)
    if not isinstance(block_s, int | float) or not 0.01 <= block_s <= 60:
        raise UserError(f"block_s must be from 0.01 to 60 seconds, got {block_s!r}")


def _heard(notes: list[RenderNote], reference: Iterable[RenderNote] | None, sample_rate: int,
           how: Mastering) -> tuple[Room, list[_Placed], list[_Placed]]:
    """The room as ``how`` has it, the notes placed in it, and the whole they are heard in
    (``reference``'s notes when given, else the same): the room's time zero is the whole's."""
    room = Room(how.room, sample_rate, how.listener)
    placed = _plan(notes, sample_rate, room)
    whole = placed if reference is None else _plan(reference, sample_rate, room)
    room.start_at_nearest({p.place for p in whole},
                          {p.place for p in whole if p.key.instrument in MARKS_THE_JIE})
    room.tone = room.has_tail and reference is None  # a part of a render carries no room tone
    return room, placed, whole


def _loudness_gain(whole: list[_Placed], room: Room, target: float,
                   rendered: Callable[[Iterable[NoteKey]], Rendered | None] | None = None,
                   ) -> float:
    """The gain that brings the mix of ``whole`` in ``room`` to ``target`` LUFS (1.0 for a
    silent mix); ``rendered(keys)`` gives the notes' sounds (None, or None from it: on
    threads)."""
    if not whole:
        return 1.0
    total = max(p.end for p in whole) + room.extra
    stream = rendered(p.key for p in whole) if rendered is not None else None
    try:
        found = estimated_gain(whole, total, room, target, stream)
    finally:
        if stream is not None:
            stream.close()
    return 1.0 if found is None else found


def loudness_gain(notes: Iterable[RenderNote], how: Mastering,
                  sample_rate: int = DEFAULT_SAMPLE_RATE) -> float:
    """The gain a render of ``notes`` as ``how`` has them would get to meet ``how.loudness``
    (1.0 without a target or for silence), estimated without mixing (on threads: no process
    is forked) — the live ``pyo`` output plays a show at its render's level with it."""
    if how.loudness is None:
        return 1.0
    one_blas_thread()
    room, _, whole = _heard(list(notes), None, sample_rate, how)
    return _loudness_gain(whole, room, how.loudness)


def mastered_blocks(
    notes: Iterable[RenderNote], sample_rate: int, block_s: float, how: Mastering,
    progress: Progress | None, stats: dict[str, float] | None, with_stems: bool = False,
    pack: bool = False, reference: Iterable[RenderNote] | None = None,
) -> Iterator[MasteredBlock]:
    """Per block: (mix, {stem: frames}) after loudness gain and limiter; the stem dict is empty
    unless ``with_stems``.  ``stats``, when given, receives the frame and note counts, the
    planned loudness and the limiter's work.  With ``pack`` (a WAV file is written) a long
    render without stems may give its mix as ``mix_processes.Packed`` 24-bit bytes (mixed and
    mastered on processes: the same bytes).  With ``reference`` (the whole of which ``notes``
    are a part) the courtyard's time zero and the loudness gain are the reference's."""
    _check_render_settings(sample_rate, block_s)
    one_blas_thread()  # the room's small products: no BLAS threads waiting for a core
    keep_heap()  # the notes' and the blocks' arrays not page-faulted in afresh each time
    note_list = list(notes)
    room, placed, whole = _heard(note_list, reference, sample_rate, how)

    def meanwhile() -> None:
        """The room tone, made once before the mixing processes fork and share it (while the
        notes' processes render, if they do)."""
        if room.tone:
            room_tone(sample_rate)

    total = max((p.end for p in placed), default=0)
    total += room.extra if placed else 0
    block = max(1, round(block_s * sample_rate / LIMITER_CHUNK)) * LIMITER_CHUNK
    gain = 1.0
    if how.loudness is not None and placed:
        # the notes rendered on processes where it is worth it, measured as they come
        gain = _loudness_gain(whole, room, how.loudness,
                              lambda keys: voice_processes.rendered(keys, meanwhile=meanwhile))
    if stats is not None:
        stats.update(frames=total, notes=len(placed), unique_notes=len({p.key for p in placed}))
    if gain != 1.0:  # the loudness gain is folded into the notes' gains
        placed = [replace(p, gain=p.gain * gain) for p in placed]
    mastering = _Mastering(sample_rate, stem_names(note_list), with_stems)
    done = 0
    meanwhile()  # (done already if the notes were rendered on processes)
    if not with_stems and mix_processes.usable(-(-total // block)):
        outs: Iterable[MasteredBlock] = (
            (mix, {}) for _, mix in mix_processes.mastered(placed, total, block, room,
                                                            mastering.limiter, pack))
    else:
        outs = mastering.blocks(parallel_raw_blocks(placed, total, block, room,
                                                    merged=not with_stems))
    for out in outs:
        done += out[0].frames if isinstance(out[0], mix_processes.Packed) else out[0].shape[0]
        if progress is not None:
            progress(done / sample_rate, total / sample_rate)
        yield out
    if stats is not None:
        stats["limited_s"] = mastering.limiter.limited_chunks * LIMITER_CHUNK / sample_rate
        stats["min_gain"] = mastering.limiter.min_gain


def render(
    notes: Iterable[RenderNote], *, sample_rate: int = DEFAULT_SAMPLE_RATE,
    block_s: float = DEFAULT_BLOCK_S, how: Mastering | None = None,
    progress: Progress | None = None,
) -> Iterator[np.ndarray]:
    """Yield the mastered stereo mix as float32 blocks of shape (n, 2), true peak ≤ −1 dBTP.

    The notes are validated (UserError) and planned up front; synthesis and mixing happen
    lazily, block by block, as the iterator is consumed.

    Blocks are ``block_s`` long (rounded to 256 samples) except the last; the mix runs from 0 s
    to the end of the last note's tail and the room's.  These are the samples ``write_audio``
    writes.
    """
    how = Mastering() if how is None else how
    for mix, _ in mastered_blocks(notes, sample_rate, block_s, how, progress, None):
        assert isinstance(mix, np.ndarray)  # only a render written to a file is packed
        yield mix

"""The offline mixer: place rendered notes in the courtyard, mix them in blocks, write audio.

Coordinates are the cue sheets' (metres; x grows to the east, y to the north; the hall is north,
facing south).  The listener stands in the courtyard, by default at (0, −15), facing north, so
east is on the listener's right.

Placement law (``pan_gains``):

* azimuth θ = atan2(x − lx, y − ly), 0 straight ahead (north), +90° due east (right); the pan
  position is p = sin θ (a source behind the listener folds onto the same side);
* constant-power pan: left = cos((p + 1)·π/4), right = sin((p + 1)·π/4), so left² + right² = 1;
* distance attenuation 1/d relative to ``REFERENCE_DISTANCE_M`` (5 m): gain = 5 / max(d, 5),
  i.e. clamped to 1 inside 5 m (no boost for close sources).

Mixing (``render``) is block by block: notes are sorted by onset, each note's cached waveform
(``instruments.voices.render_note``) is added only into the blocks it overlaps, and a note's
waveform is released once its last block is done, so memory is bounded by the polyphony, not by
the length of the piece.  The sum is computed in a fixed order (float32 per place, float64 per
stem), so the same notes always give the same bytes.

Mastering: a fixed master gain of ``HEADROOM_DB`` (+14 dB: a courtyard listener 15 m from the
hang hears it at about 1/3 of the 5 m reference level, so a rite sits near −24 dBFS RMS with peaks
near −3 dBFS) and then a deterministic look-ahead peak
limiter with ceiling ``LIMITER_CEILING`` (0.98).  The limiter works on chunks of 256 samples:
the required gain of chunk j is r_j = min(1, ceiling / peak_j); the gain at the boundary before
chunk j is g_j = min(r_{j−1}, r_j, 1 − (1 − g_{j−1})·e^(−256/(0.25·sr))) (instant attack one
chunk ahead, 250 ms exponential release) and it is interpolated linearly inside each chunk.
Both ends of every chunk are ≤ its r_j, so no output sample exceeds the ceiling.  peak_j is the
largest |sample| of the mix *and of every stem* in the chunk (stems that cancel in the mix can be
louder than it), and the same gain curve is applied to every stem, so the stems still sum to the
mix and none of them clips either.  Without stems the notes are summed per place only (no
per-stem arrays, about a third less work), so a mix rendered without ``--stems`` may differ from
one rendered with them in the last bits and where a stem alone would have needed limiting.
"""

from __future__ import annotations

import contextlib
import math
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cues.errors import UserError
from instruments import voices
from instruments.wavfile import Wav24Writer

DEFAULT_SAMPLE_RATE = 48000
DEFAULT_LISTENER: tuple[float, float] = (0.0, -15.0)
REFERENCE_DISTANCE_M = 5.0
HEADROOM_DB = 14.0
LIMITER_CEILING = 0.98
LIMITER_CHUNK = 256
LIMITER_RELEASE_S = 0.25
DEFAULT_BLOCK_S = 1.0
AUDIO_FORMATS: dict[str, str] = {".wav": "WAV", ".flac": "FLAC"}
AUDIO_SUBTYPE = "PCM_24"
STEM_SUM_TOLERANCE_LSB = 1.0
"""Stems written as PCM_24 sum to the written mix within (number of stems + 1) × this many LSB
(1 LSB = 2⁻²³): each file is rounded to 24 bits independently; there is no dither."""

Progress = Callable[[float, float], None]
"""progress(seconds rendered, total seconds)"""


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

    def __post_init__(self) -> None:
        for name in ("start_s", "x", "y"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise UserError(f"note {name} must be a finite number, got {value!r}")
        if self.start_s < 0:
            raise UserError(f"note start_s must be ≥ 0, got {self.start_s!r}")
        if not isinstance(self.stem, str) or not self.stem.strip():
            raise UserError(f"note stem must be a non-empty string, got {self.stem!r}")


@dataclass(frozen=True)
class AudioReport:
    """What ``write_audio`` wrote and how fast."""

    path: str
    sample_rate: int
    channels: int
    frames: int
    duration_s: float
    peak: float  # largest |sample| written to the mix (before 24-bit rounding)
    limited_s: float  # seconds during which the limiter reduced the gain
    min_gain_db: float  # deepest limiter gain reduction (0.0 if it never acted)
    notes: int
    unique_notes: int
    compute_s: float
    realtime_factor: float  # seconds of audio per second of compute
    stems: tuple[str, ...] = field(default=())


# ── placement ───────────────────────────────────────────────────────────────────────────────


def pan_gains(
    x: float, y: float, listener: tuple[float, float] = DEFAULT_LISTENER
) -> tuple[float, float]:
    """(left, right) gains for a source at (x, y) heard from ``listener`` facing north.

    Constant-power pan on p = sin(azimuth), times 1/d distance attenuation relative to 5 m
    (clamped to 1 inside 5 m).  See the module docstring for the exact law.
    """
    dx = float(x) - float(listener[0])
    dy = float(y) - float(listener[1])
    d = math.hypot(dx, dy)
    p = dx / d if d > 0 else 0.0  # sin(atan2(dx, dy))
    angle = (p + 1.0) * math.pi / 4.0
    att = REFERENCE_DISTANCE_M / max(d, REFERENCE_DISTANCE_M)
    return math.cos(angle) * att, math.sin(angle) * att


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
    for i, n in enumerate(notes):
        if not isinstance(n, RenderNote):
            raise UserError(f"note {i}: expected a RenderNote, got {type(n).__name__}")
        try:
            key = voices.note_key(n.instrument, n.freq_hz, n.duration_s, n.velocity, sample_rate,
                                  bell_interval=n.bell_interval)
        except UserError as exc:
            raise UserError(f"note {i} (at {n.start_s:g} s, {n.instrument}): {exc}") from None
        left, right = pan_gains(n.x, n.y, listener)
        placed.append(_Placed(int(round(n.start_s * sample_rate)), voices._key_length(key), key,
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


class _Limiter:
    """The chunked look-ahead peak limiter described in the module docstring."""

    def __init__(self, sample_rate: int) -> None:
        self.release = math.exp(-LIMITER_CHUNK / (LIMITER_RELEASE_S * sample_rate))
        self.gain = 1.0  # the gain at the boundary before the next chunk to be processed
        self.started = False
        self.limited_chunks = 0
        self.min_gain = 1.0

    @staticmethod
    def required(x: np.ndarray, scale: float) -> np.ndarray | None:
        """Per-chunk gains r_j that keep ``x·scale`` (shape (2, n)) under the ceiling; None
        when no chunk needs any reduction."""
        peaks = np.maximum(np.abs(x[0]), np.abs(x[1]))
        if float(peaks.max(initial=0.0)) * scale <= LIMITER_CEILING:
            return None
        n = peaks.size
        m = -(-n // LIMITER_CHUNK)
        padded = np.zeros(m * LIMITER_CHUNK)
        padded[:n] = peaks
        peak = padded.reshape(m, LIMITER_CHUNK).max(axis=1) * scale
        with np.errstate(divide="ignore"):
            return np.minimum(1.0, np.where(peak > 0, LIMITER_CEILING / peak, 1.0))

    def gains(self, req: np.ndarray, next_req: float, n: int) -> np.ndarray | None:
        """Per-sample gains for ``n`` samples whose chunks require ``req``; ``next_req`` is the
        requirement of the chunk after them (1.0 at the end of the stream).  None means
        unity gain throughout."""
        m = req.size
        reqs = np.append(req, next_req)
        first = self.gain if self.started else min(1.0, float(req[0]))
        self.started = True
        if first == 1.0 and bool(np.all(reqs == 1.0)):
            self.gain = 1.0
            return None
        nodes = np.empty(m + 1)
        nodes[0] = g = first
        for j in range(1, m + 1):
            g = min(float(reqs[j - 1]), float(reqs[j]), 1.0 - (1.0 - g) * self.release)
            nodes[j] = g
        self.gain = g
        self.limited_chunks += int(np.count_nonzero(np.minimum(nodes[:-1], nodes[1:]) < 1.0))
        self.min_gain = min(self.min_gain, float(nodes.min()))
        frac = np.arange(LIMITER_CHUNK, dtype=np.float64) / LIMITER_CHUNK
        curve = nodes[:-1, None] + (nodes[1:, None] - nodes[:-1, None]) * frac[None, :]
        return curve.reshape(-1)[:n]


def _frames(x: np.ndarray) -> np.ndarray:
    """(2, n) float64 → (n, 2) float32 frames (column copies: ~8× faster than a strided cast)."""
    out = np.empty((x.shape[1], 2), dtype=np.float32)
    out[:, 0] = x[0]
    out[:, 1] = x[1]
    return out


def _mastered(
    notes: Iterable[RenderNote], sample_rate: int, block_s: float,
    listener: tuple[float, float], progress: Progress | None, stats: dict[str, float] | None,
    with_stems: bool = False,
) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Per block: (mix float32 (n, 2), {stem: float32 (n, 2)}) after headroom and limiter;
    the stem dict is empty unless ``with_stems``."""
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, int) or not (
        voices.MIN_SAMPLE_RATE <= sample_rate <= voices.MAX_SAMPLE_RATE
    ):
        raise UserError(f"sample rate must be an integer from {voices.MIN_SAMPLE_RATE} to "
                        f"{voices.MAX_SAMPLE_RATE} Hz, got {sample_rate!r}")
    if not isinstance(block_s, int | float) or not 0.01 <= block_s <= 60:
        raise UserError(f"block_s must be from 0.01 to 60 seconds, got {block_s!r}")
    note_list = list(notes)
    placed = _plan(note_list, sample_rate, listener)
    stems = stem_names(note_list)
    total = max((p.end for p in placed), default=0)
    block = max(1, round(block_s * sample_rate / LIMITER_CHUNK)) * LIMITER_CHUNK
    if stats is not None:
        stats["frames"] = total
        stats["notes"] = len(placed)
        stats["unique_notes"] = len({p.key for p in placed})
    headroom = 10.0 ** (HEADROOM_DB / 20.0)
    limiter = _Limiter(sample_rate)
    pending: tuple[dict[str, np.ndarray], np.ndarray, np.ndarray] | None = None
    done = 0

    def finish(raw: dict[str, np.ndarray], mix: np.ndarray, req: np.ndarray,
               next_req: float) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        n = mix.shape[1]
        g = limiter.gains(req, next_req, n)
        out_mix = _frames(mix if g is None else mix * g)
        out_stems: dict[str, np.ndarray] = {}
        if with_stems:
            scale = headroom if g is None else headroom * g
            for s in stems:
                st = raw.get(s)
                out_stems[s] = (np.zeros((n, 2), dtype=np.float32) if st is None else
                                _frames(st * scale))
        return out_mix, out_stems

    for n, raw in _raw_blocks(placed, total, block, merged=not with_stems):
        if with_stems:
            mix = np.zeros((2, n), dtype=np.float64)
            for s in stems:
                if s in raw:
                    mix += raw[s]
            mix *= headroom
        else:
            mix = raw.pop("", None)
            mix = np.zeros((2, n), dtype=np.float64) if mix is None else mix * headroom
        # the limiter keeps the mix and, when they are written, every stem under the ceiling
        # (stems can exceed the mix where they cancel each other)
        m = -(-n // LIMITER_CHUNK)
        req = np.ones(m)
        for x, scale in [(mix, 1.0)] + [(raw[s], headroom) for s in stems if s in raw]:
            r = _Limiter.required(x, scale)
            if r is not None:
                np.minimum(req, r, out=req)
        if pending is not None:
            out = finish(*pending, float(req[0]))
            done += out[0].shape[0]
            if progress is not None:
                progress(done / sample_rate, total / sample_rate)
            yield out
        pending = (raw, mix, req)
    if pending is not None:
        out = finish(*pending, 1.0)
        done += out[0].shape[0]
        if progress is not None:
            progress(done / sample_rate, total / sample_rate)
        yield out
    if stats is not None:
        stats["limited_s"] = limiter.limited_chunks * LIMITER_CHUNK / sample_rate
        stats["min_gain"] = limiter.min_gain


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
    for mix, _ in _mastered(notes, sample_rate, block_s, listener, progress, None):
        yield mix


_UNSAFE = re.compile(r"[\\/:*?\"<>|\x00-\x1f]")


def _format_for(path: Path) -> str:
    fmt = AUDIO_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise UserError(f"{path}: unsupported audio file type {path.suffix or '(none)'!r}; "
                        f"use one of {', '.join(AUDIO_FORMATS)}")
    return fmt


def stem_path(stems_dir: str | Path, stem: str, suffix: str = ".wav") -> Path:
    """The file a stem is written to: the stem name made safe for file systems, plus suffix."""
    safe = _UNSAFE.sub("_", stem).strip().strip(".") or "stem"
    return Path(stems_dir) / f"{safe}{suffix}"


def write_audio(
    path: str | Path, notes: Iterable[RenderNote], *, sample_rate: int = DEFAULT_SAMPLE_RATE,
    stems_dir: str | Path | None = None, listener: tuple[float, float] = DEFAULT_LISTENER,
    block_s: float = DEFAULT_BLOCK_S, progress: Progress | None = None,
) -> AudioReport:
    """Render ``notes`` to a 24-bit stereo WAV or FLAC (by extension) and report on it.

    With ``stems_dir`` also write one file per stem (same format; names from ``stem_path``);
    the stems sum to the mix within ``STEM_SUM_TOLERANCE_LSB`` × (stems + 1) LSB of 24 bits.
    """
    import soundfile as sf  # noqa: PLC0415 - keep `yuezheng --help` fast

    out_path = Path(path)
    fmt = _format_for(out_path)
    note_list = list(notes)
    if not note_list:
        raise UserError("nothing to render: no notes")
    if not out_path.parent.exists():
        raise UserError(f"{out_path}: directory {out_path.parent} does not exist")
    stems = stem_names(note_list)
    stem_files: dict[str, Path] = {}
    if stems_dir is not None:
        sdir = Path(stems_dir)
        sdir.mkdir(parents=True, exist_ok=True)
        for s in stems:
            p = stem_path(sdir, s, out_path.suffix.lower())
            if p in stem_files.values():
                raise UserError(f"stems {s!r} and another stem map to the same file {p}")
            stem_files[s] = p
    stats: dict[str, float] = {}
    t0 = time.perf_counter()
    peak = 0.0
    frames = 0
    handles = {}
    # the 24-bit conversion and the disk take about as long as the mixing; numpy and libsndfile
    # release the GIL, so one writer thread overlaps them with the next blocks' mixing
    # (bounded queue: memory stays bounded)
    blocks: queue.Queue = queue.Queue(maxsize=4)
    failure: list[BaseException] = []

    def writer(mix_file: sf.SoundFile | Wav24Writer) -> None:
        try:
            while (item := blocks.get()) is not None:
                mix, stem_blocks = item
                mix_file.write(mix)
                for s, h in handles.items():
                    h.write(stem_blocks[s])
        except BaseException as exc:  # noqa: BLE001 - handed to the mixing thread
            failure.append(exc)
            while blocks.get() is not None:  # drain so that the producer never blocks
                pass

    # WAV is packed by numpy (instruments.wavfile: libsndfile's 24-bit conversion cost more
    # than all the mixing); FLAC goes through libsndfile, handed a Python file object: closing
    # a path-opened SoundFile fsyncs it (0.4 s per 10 minutes here), which a render has no
    # need of
    with contextlib.ExitStack() as files:
        def sound_file(path: Path) -> sf.SoundFile | Wav24Writer:
            raw = files.enter_context(path.open("wb"))
            if fmt == "WAV":
                return files.enter_context(Wav24Writer(raw, sample_rate, 2))
            return files.enter_context(sf.SoundFile(
                raw, "w", samplerate=sample_rate, channels=2, subtype=AUDIO_SUBTYPE, format=fmt))

        mix_file = sound_file(out_path)
        for s, p in stem_files.items():
            handles[s] = sound_file(p)
        thread = threading.Thread(target=writer, args=(mix_file,), name="yuezheng-writer")
        thread.start()
        try:
            for mix, stem_blocks in _mastered(note_list, sample_rate, block_s, listener,
                                              progress, stats, with_stems=bool(handles)):
                if failure:
                    break
                frames += mix.shape[0]
                peak = max(peak, float(np.abs(mix).max(initial=0.0)))
                blocks.put((mix, stem_blocks))
        finally:
            blocks.put(None)
            thread.join()
        if failure:
            raise failure[0]
    compute = time.perf_counter() - t0
    duration = frames / sample_rate
    return AudioReport(
        path=str(out_path), sample_rate=sample_rate, channels=2, frames=frames,
        duration_s=duration, peak=peak, limited_s=float(stats.get("limited_s", 0.0)),
        min_gain_db=20.0 * math.log10(max(float(stats.get("min_gain", 1.0)), 1e-12)),
        notes=int(stats.get("notes", 0)), unique_notes=int(stats.get("unique_notes", 0)),
        compute_s=compute, realtime_factor=duration / compute if compute > 0 else math.inf,
        stems=tuple(str(p) for p in stem_files.values()),
    )


# ── audition ────────────────────────────────────────────────────────────────────────────────

PENTATONIC_SEMITONES: tuple[int, ...] = (0, 2, 4, 7, 9, 12)  # 宮 商 角 徵 羽 清宮
DEFAULT_HUANGZHONG_HZ = 261.63


def audition_notes(
    instrument: str, huangzhong_hz: float = DEFAULT_HUANGZHONG_HZ, *,
    bell_interval: str = "minor", pitch_hz: Callable[[int], float] | None = None,
) -> list[RenderNote]:
    """A short demonstration: for pitched instruments the pentatonic 宮 商 角 徵 羽 清宮 on 黃鍾
    (``pitch_hz(semitones above 黃鍾)`` gives the frequencies, e.g. ``Tuning.hz``; default
    equal temperament on ``huangzhong_hz``), five strokes for drums, three shakes for the 鼗;
    placed 5 m in front of the listener."""
    from cues.catalog import CATALOG, canonical_instrument  # noqa: PLC0415

    canon = canonical_instrument(instrument)
    if canon is None:
        raise UserError(f"unknown instrument {instrument!r}; known: {', '.join(CATALOG)}")
    if not isinstance(huangzhong_hz, int | float) or not 20.0 <= huangzhong_hz <= 2000.0:
        raise UserError(f"黃鍾 must be from 20 to 2000 Hz, got {huangzhong_hz!r}")
    x, y = 0.0, DEFAULT_LISTENER[1] + REFERENCE_DISTANCE_M
    if pitch_hz is None:
        def pitch_hz(st: int) -> float:
            return huangzhong_hz * 2 ** (st / 12)
    if CATALOG[canon].pitched:
        step = 0.8 if voices.is_sustained(canon) else 0.9
        return [
            RenderNote(i * step, canon, pitch_hz(st), step * 0.85, 100,
                       x, y, canon, bell_interval)
            for i, st in enumerate(PENTATONIC_SEMITONES)
        ]
    if canon == "鼗":
        return [RenderNote(i * 1.0, canon, None, 0.5, 100, x, y, canon) for i in range(3)]
    vels = (100, 80, 90, 80, 120)
    return [RenderNote(i * 0.75, canon, None, 0.5, v, x, y, canon) for i, v in enumerate(vels)]

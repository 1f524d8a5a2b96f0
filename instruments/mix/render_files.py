"""Writing a render to audio files: the mix and, on request, one file per stem.

24-bit stereo WAV or FLAC, chosen by the file's extension, with the text tags given (title,
comment, software: a WAV's ``LIST``/``INFO`` chunk, a FLAC's Vorbis comments).  WAV is packed
by numpy (``instruments.files.wav24``: libsndfile's 24-bit conversion cost more than all the
mixing); FLAC goes through libsndfile, handed a Python file object: closing a path-opened
SoundFile fsyncs it (0.4 s per 10 minutes here), which a render has no need of.  The 24-bit
conversion and the disk take about as long as the mixing; numpy and libsndfile release the GIL,
so one writer thread overlaps them with the next blocks' mixing (through a bounded queue: memory
stays bounded).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cues.errors import UserError
from instruments.files.atomic import atomic_files, open_write_behind
from instruments.files.riff_info import INFO_IDS, info_chunk
from instruments.files.targets import output_suffix
from instruments.files.wav24 import Wav24Writer
from instruments.mix.mixer import (
    DEFAULT_BLOCK_S,
    DEFAULT_SAMPLE_RATE,
    MasteredBlock,
    Mastering,
    Progress,
    RenderNote,
    mastered_blocks,
    stem_names,
)
from instruments.mix.processes import Packed

CATALOG_LEVEL = Mastering()
"""The default: the courtyard, from the default listener, at the catalog level."""

AUDIO_FORMATS: dict[str, str] = {".wav": "WAV", ".flac": "FLAC"}
AUDIO_SUBTYPE = "PCM_24"
STEM_SUM_TOLERANCE_LSB = 1.0
"""Stems written as PCM_24 sum to the written mix within (number of stems + 1) × this many LSB
(1 LSB = 2⁻²³): each file is rounded to 24 bits independently; there is no dither."""

_UNSAFE = re.compile(r"[\\/:*?\"<>|\x00-\x1f]")


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


def audio_suffix(path: str | Path) -> str:
    """``.wav`` or ``.flac``, as ``path`` asks (a stream without an extension: ``.wav``);
    UserError for any other name (``instruments.files.targets.output_suffix``)."""
    return output_suffix(path, tuple(AUDIO_FORMATS), "audio")


def _format_for(path: Path) -> str:
    return AUDIO_FORMATS[audio_suffix(path)]


def stem_path(stems_dir: str | Path, stem: str, suffix: str = ".wav") -> Path:
    """The file a stem is written to: the stem name made safe for file systems, plus suffix."""
    safe = _UNSAFE.sub("_", stem).strip().strip(".") or "stem"
    return Path(stems_dir) / f"{safe}{suffix}"


def _stem_files(stems_dir: str | Path, stems: tuple[str, ...], suffix: str) -> dict[str, Path]:
    """{stem: its file} in ``stems_dir`` (created); two stems may not share a file."""
    sdir = Path(stems_dir)
    sdir.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for s in stems:
        p = stem_path(sdir, s, suffix)
        if p in files.values():
            raise UserError(f"stems {s!r} and another stem map to the same file {p}")
        files[s] = p
    return files


def _check_mix_is_no_stem(mix: Path, stem_paths: dict[str, Path]) -> None:
    """The mix may not be written where a stem goes (one would silently replace the other)."""
    for stem, p in stem_paths.items():
        if p.resolve() == mix.resolve():
            raise UserError(f"-o {mix} is where the stem {stem!r} goes in the stems folder: "
                            "write the mix outside it or under another name")


def _open_audio(files: contextlib.ExitStack, path: Path, fmt: str, sample_rate: int,
                tags: Mapping[str, str]) -> Any:
    """A writer of float frames to ``path`` (a Wav24Writer or a soundfile.SoundFile) with the
    text ``tags``, closed with ``files``."""
    raw = files.enter_context(open_write_behind(path))
    if fmt == "WAV":
        return files.enter_context(Wav24Writer(raw, sample_rate, 2, info=info_chunk(tags)))
    import soundfile as sf  # keep `yuezheng --help` and a WAV render fast (0.2 CPU-s)

    out = files.enter_context(sf.SoundFile(
        raw, "w", samplerate=sample_rate, channels=2, subtype=AUDIO_SUBTYPE, format=fmt))
    set_tags(out, tags)
    return out


def set_tags(sound_file: Any, tags: Mapping[str, str]) -> None:
    """Set ``tags`` (names of ``INFO_IDS``) on a soundfile.SoundFile open for writing, before
    its first frame (FLAC: Vorbis comments TITLE, COMMENT, SOFTWARE)."""
    for name, text in tags.items():
        if name not in INFO_IDS:
            raise ValueError(f"unknown tag {name!r}: expected one of {', '.join(INFO_IDS)}")
        if text:
            setattr(sound_file, name, text)


def _write_blocks(blocks: Iterator[MasteredBlock], mix_file: Any,
                  stem_files: dict[str, Any]) -> tuple[int, float]:
    """Write the blocks (the mix and each stem) on a writer thread, or here when they come
    packed already (``Packed``: made on the mixing processes); return (frames, peak)."""
    todo: queue.Queue = queue.Queue(maxsize=4)
    failure: list[BaseException] = []

    def writer() -> None:
        try:
            while (item := todo.get()) is not None:
                mix, stem_blocks = item
                mix_file.write(mix)
                for s, h in stem_files.items():
                    h.write(stem_blocks[s])
        except BaseException as exc:  # handed to the mixing thread
            failure.append(exc)
            while todo.get() is not None:  # drain so that the producer never blocks
                pass

    peak = 0.0
    frames = 0
    blocks = iter(blocks)
    first = next(blocks, None)
    if first is None:
        return 0, 0.0
    if isinstance(first[0], Packed):  # bytes made on the mixing processes: written here
        for packed, _ in itertools.chain([first], blocks):
            assert isinstance(packed, Packed)
            mix_file.write_packed(packed.data, packed.frames)
            frames += packed.frames
            peak = max(peak, packed.peak)
        return frames, peak
    blocks = itertools.chain([first], blocks)
    thread = threading.Thread(target=writer, name="yuezheng-writer")
    thread.start()
    try:
        for mix, stem_blocks in blocks:
            assert isinstance(mix, np.ndarray)
            if failure:
                break
            frames += mix.shape[0]
            peak = max(peak, float(np.abs(mix).max(initial=0.0)))
            todo.put((mix, stem_blocks))
    finally:
        todo.put(None)
        thread.join()
    if failure:
        raise failure[0]
    return frames, peak


def write_audio(
    path: str | Path, notes: Iterable[RenderNote], *, sample_rate: int = DEFAULT_SAMPLE_RATE,
    stems_dir: str | Path | None = None, how: Mastering = CATALOG_LEVEL,
    block_s: float = DEFAULT_BLOCK_S, progress: Progress | None = None,
    reference: Iterable[RenderNote] | None = None, tags: Mapping[str, str] | None = None,
    stem_tags: Callable[[str], Mapping[str, str]] | None = None,
) -> AudioReport:
    """Render ``notes`` to a 24-bit stereo WAV or FLAC (by extension) and report on it.

    ``tags``: text the file carries (``title``, ``comment``, ``software``); a stem carries
    ``stem_tags(stem)``, by default the same with its title followed by the stem's name.

    ``how`` says where the listener stands, in which room, and the loudness to normalise to
    (by default: the courtyard, at the catalog level, not normalised).

    With ``stems_dir`` also write one file per stem (same format; names from ``stem_path``);
    the stems sum to the mix within ``STEM_SUM_TOLERANCE_LSB`` × (stems + 1) LSB of 24 bits.

    With ``reference`` (the notes of the whole, when ``notes`` are a part of it) the courtyard's
    time zero and the loudness gain are those of the reference's render.
    """
    out_path = Path(path)
    fmt = _format_for(out_path)
    note_list = list(notes)
    if not note_list:
        raise UserError("nothing to render: no notes")
    if not out_path.parent.exists():
        raise UserError(f"{out_path}: directory {out_path.parent} does not exist")
    stem_paths = ({} if stems_dir is None else
                  _stem_files(stems_dir, stem_names(note_list), audio_suffix(out_path)))
    _check_mix_is_no_stem(out_path, stem_paths)
    stats: dict[str, float] = {}
    t0 = time.perf_counter()
    with atomic_files() as staged, contextlib.ExitStack() as files:
        tags = dict(tags or {})
        mix_file = _open_audio(files, staged.temp_for(out_path), fmt, sample_rate, tags)
        handles = {s: _open_audio(files, staged.temp_for(p), fmt, sample_rate,
                                  stem_tags(s) if stem_tags else
                                  {**tags, "title": f"{tags.get('title', '')} — stem {s}"})
                   for s, p in stem_paths.items()}
        blocks = mastered_blocks(note_list, sample_rate, block_s, how, progress, stats,
                                 with_stems=bool(handles), pack=fmt == "WAV",
                                 reference=reference)
        frames, peak = _write_blocks(blocks, mix_file, handles)
    compute = time.perf_counter() - t0
    duration = frames / sample_rate
    return AudioReport(
        path=str(out_path), sample_rate=sample_rate, channels=2, frames=frames,
        duration_s=duration, peak=peak, limited_s=float(stats.get("limited_s", 0.0)),
        min_gain_db=20.0 * math.log10(max(float(stats.get("min_gain", 1.0)), 1e-12)),
        notes=int(stats.get("notes", 0)), unique_notes=int(stats.get("unique_notes", 0)),
        compute_s=compute, realtime_factor=duration / compute if compute > 0 else math.inf,
        stems=tuple(str(p) for p in stem_paths.values()),
    )

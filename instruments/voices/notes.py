"""Synthesis voices: one physical-ish model per instrument of the catalog, and a note cache.

Every note is synthesized once, with numpy (``instruments.voices.synthesis``), and kept as a
float32 numpy array in a bounded cache; the mixer (``instruments.mix.mixer``) places the cached
waveforms with numpy.  The models' numbers and descriptions are ``instruments.voices.models``.

What a note is:

* struck and plucked voices (編鐘 鑮 編磬, the drums, 瑟) are not damped by the player in this
  model: the returned array is the whole natural ring, whatever ``duration_s`` says (the cache
  key ignores the duration for them).  Tails are cut 52 dB below the slowest partial's start
  (six time constants) with a 50 ms raised-cosine fade, so every array ends at exactly zero.
  One exception: a 瑟 string plucked again is stopped (``stop_s``, which the mixer finds).
* sustained voices (笙 和 管 歌) hold for ``duration_s`` and then release; the array is
  ``duration_s`` plus the release tail.  The 歌 sings its ``lyric`` (part of its key as the
  syllable's reading).

``note_length_samples`` gives the exact length of the array ``render_note`` returns without
rendering it, so that the mixer can plan a render before synthesizing anything.  Rendering is
deterministic (see ``instruments.voices.synthesis``).
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator

import numpy as np

from cues.catalog import CATALOG, canonical_instrument
from cues.errors import UserError
from instruments.voices.models import (
    BELL_INTERVALS,
    DRUM_STROKES,
    DRUMS,
    MAX_SAMPLE_RATE,
    MIN_SAMPLE_RATE,
    SE_DAMP_S,
    STROKE_VARIANTS,
    VOICES,
    NoteKey,
    key_length,
    natural_length_s,
)
from instruments.voices.strings import PLUCKS
from instruments.voices.sung import LEGATO_JOINS, syllable_key
from instruments.voices.synthesis import synthesize

BELL_STRIKES = ("正鼓", "側鼓")
TWO_TONE_BELLS = frozenset({"編鐘", "鑮"})

# ── public helpers ──────────────────────────────────────────────────────────────────────────


def voice_names() -> tuple[str, ...]:
    """The instruments that have a voice (all of the catalog)."""
    return tuple(VOICES)


def voice_name(instrument: str) -> str:
    """The catalog name of the instrument a voice is asked for (UserError if none has one)."""
    canon = canonical_instrument(instrument)
    if canon is None or canon not in VOICES:
        raise UserError(f"no voice for instrument {instrument!r}; known: {', '.join(VOICES)}")
    return canon


def describe(instrument: str) -> str:
    """A one-paragraph description of the voice model used for ``instrument`` (or an alias)."""
    return VOICES[voice_name(instrument)].model


def is_sustained(instrument: str) -> bool:
    """True for voices that hold for the note's duration (笙 和 管 歌)."""
    return VOICES[voice_name(instrument)].sustained


def check_sample_rate(sample_rate: int) -> None:
    """Raise UserError unless ``sample_rate`` is an integer the voices can render at."""
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, int) or not (
        MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE
    ):
        raise UserError(
            f"sample rate must be an integer from {MIN_SAMPLE_RATE} to {MAX_SAMPLE_RATE} Hz, "
            f"got {sample_rate!r}"
        )


def note_key(
    instrument: str, freq_hz: float | None, duration_s: float, velocity: int = 100,
    sample_rate: int = 48000, *, bell_interval: str = "minor", lyric: str | None = None,
    stop_s: float | None = None, strike: str = "正鼓", variant: int = 0,
    glide_from: float | None = None, legato: str = "",
) -> NoteKey:
    """Validate a note and return its cache key; raises UserError naming what is wrong.

    Context some voices use: the 歌 sings ``lyric``; a 瑟 string is stopped ``stop_s`` after
    its pluck (the next pluck of the same string); ``strike`` ("正鼓" or "側鼓") is the tone a
    編鐘 or 鑮 note strikes (the note's pitch is the struck tone); ``variant`` (any integer,
    seed) the stroke of a struck voice: a drum's own stroke (``models.drum_stroke``), a bell's
    or stone's strike point (modulo STROKE_VARIANTS); ``glide_from`` (Hz) the pitch of the
    syllable the 歌 sang straight before this one, ``legato`` how it joins the next one sung
    straight after it ("voiced": the voice goes on; "stopped": the next one's consonant stops
    it; "": none follows: ``sung.legato_links``).  Each is ignored by the voices it does not
    concern."""
    name = voice_name(instrument)
    voice = VOICES[name]
    check_sample_rate(sample_rate)
    if isinstance(velocity, bool) or not isinstance(velocity, int) or not 1 <= velocity <= 127:
        raise UserError(f"velocity must be an integer from 1 to 127, got {velocity!r}")
    if not isinstance(duration_s, int | float) or not math.isfinite(duration_s) or duration_s <= 0:
        raise UserError(f"note duration must be a positive number of seconds, got {duration_s!r}")
    if bell_interval not in BELL_INTERVALS:
        raise UserError(
            f"bell_interval must be one of {', '.join(BELL_INTERVALS)}, got {bell_interval!r}"
        )
    if strike not in BELL_STRIKES:
        raise UserError(f"strike must be one of {', '.join(BELL_STRIKES)}, got {strike!r}")
    if isinstance(variant, bool) or not isinstance(variant, int):
        raise UserError(f"variant must be an integer, got {variant!r}")
    pitched = CATALOG[name].pitched
    freq: float | None
    if pitched:
        if freq_hz is None:
            raise UserError(f"{name} is pitched: the note needs a frequency")
        freq = float(freq_hz)
        top = freq * (2.0 if name == "和" else 1.0)
        if not math.isfinite(freq) or freq < 20.0 or top >= 0.45 * sample_rate:
            raise UserError(
                f"{name}: frequency {freq_hz!r} Hz is outside 20 Hz … {0.45 * sample_rate:g} Hz "
                f"(0.45 × the sample rate{', for the octave above' if name == '和' else ''})"
            )
    else:
        freq = None
    if glide_from is not None and (isinstance(glide_from, bool) or not isinstance(
            glide_from, int | float) or not math.isfinite(glide_from) or glide_from <= 0):
        raise UserError(f"glide_from must be a positive frequency in Hz, got {glide_from!r}")
    if legato not in LEGATO_JOINS:
        raise UserError(f"legato must be one of {LEGATO_JOINS}, got {legato!r}")
    if name == "瑟" and stop_s is not None:
        return _stopped_string(name, freq, int(velocity), sample_rate, float(stop_s),
                               _variant(name, variant))
    return NoteKey(
        instrument=name,
        freq_hz=freq,
        duration_s=float(duration_s) if voice.sustained else None,
        velocity=int(velocity),
        sample_rate=sample_rate,
        bell_interval=bell_interval if name == "編鐘" else None,
        syllable=syllable_key(lyric) if name == "歌" else None,
        strike=strike if name in TWO_TONE_BELLS else None,
        variant=_variant(name, variant),
        glide_from=(round(float(glide_from), 6) if name == "歌" and glide_from is not None
                    else None),
        legato=legato if name == "歌" else "",
    )


def _variant(name: str, variant: int) -> int:
    """What of a note's seed its voice keeps: a drum the stroke's own number, a bell or stone
    one of ``STROKE_VARIANTS`` strike points, a 瑟 one of its ``PLUCKS``, the sustained voices
    nothing."""
    if name in DRUMS:
        return variant % DRUM_STROKES
    if name == "瑟":
        return variant % len(PLUCKS)
    if VOICES[name].sustained:
        return 0
    return variant % STROKE_VARIANTS


def _stopped_string(name: str, freq: float | None, velocity: int, sample_rate: int,
                    stop_s: float, variant: int) -> NoteKey:
    """The key of a 瑟 note whose string is stopped ``stop_s`` after the pluck (None: it rings
    out, when the stop comes after its natural end)."""
    assert freq is not None
    ring = natural_length_s(name, freq, 0.0)
    return NoteKey(instrument=name, freq_hz=freq,
                   duration_s=round(stop_s, 4) if stop_s + SE_DAMP_S < ring else None,
                   velocity=velocity, sample_rate=sample_rate, bell_interval=None,
                   variant=variant)


def note_length_samples(
    instrument: str, freq_hz: float | None, duration_s: float, velocity: int = 100,
    sample_rate: int = 48000, *, bell_interval: str = "minor",
) -> int:
    """The exact length of the array ``render_note`` returns for these arguments, unrendered
    (the strike and the variant do not change a note's length)."""
    return key_length(
        note_key(instrument, freq_hz, duration_s, velocity, sample_rate,
                 bell_interval=bell_interval)
    )


# ── the cache ───────────────────────────────────────────────────────────────────────────────


class _WaveCache:
    """Least-recently-used cache of rendered notes, bounded by total bytes."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[NoteKey, np.ndarray] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def get(self, key: NoteKey) -> np.ndarray | None:
        with self._lock:
            arr = self._items.get(key)
            if arr is None:
                self.misses += 1
                return None
            self.hits += 1
            self._items.move_to_end(key)
            return arr

    def put(self, key: NoteKey, arr: np.ndarray) -> np.ndarray:
        """Keep ``arr`` for ``key`` and return what the cache holds for it (the first one put,
        when two threads rendered the same note)."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                return found
            self._items[key] = arr
            self._bytes += arr.nbytes
            while self._bytes > self.max_bytes and len(self._items) > 1:
                _, old = self._items.popitem(last=False)
                self._bytes -= old.nbytes
            return arr

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
            self.hits = self.misses = 0

    def info(self) -> dict[str, int]:
        return {"notes": len(self._items), "bytes": self._bytes, "max_bytes": self.max_bytes,
                "hits": self.hits, "misses": self.misses}


_CACHE = _WaveCache(max_bytes=int(os.environ.get("YUEZHENG_VOICE_CACHE_MB", "1024")) << 20)


def cached_wave(key: NoteKey) -> np.ndarray | None:
    """The cached sound of ``key``, or None (nothing is rendered)."""
    return _CACHE.get(key)


def keep_wave(key: NoteKey, wave: np.ndarray) -> np.ndarray:
    """Cache ``wave`` (read-only float32, ``key_length(key)`` samples, rendered elsewhere:
    ``instruments.mix.voice_processes``) as the sound of ``key``; returns what the cache holds."""
    wave.setflags(write=False)
    return _CACHE.put(key, wave)


def cache_limit_bytes() -> int:
    """The note cache's bound in bytes (``YUEZHENG_VOICE_CACHE_MB``)."""
    return _CACHE.max_bytes


def cache_info() -> dict[str, int]:
    """Counts of the note cache: notes held, bytes, limit, hits, misses."""
    return _CACHE.info()


def clear_cache() -> None:
    """Drop every cached note (the next render synthesizes again)."""
    _CACHE.clear()


# ── rendering ───────────────────────────────────────────────────────────────────────────────


def render_note(
    instrument: str, freq_hz: float | None, duration_s: float, velocity: int = 100,
    sample_rate: int = 48000, *, bell_interval: str = "minor", lyric: str | None = None,
    strike: str = "正鼓", variant: int = 0,
) -> np.ndarray:
    """The sound of one note as a read-only float32 mono array, natural decay tail included.

    ``instrument`` is a catalog name or alias; ``freq_hz`` the sounding pitch (drums ignore it
    and accept None); ``velocity`` 1–127 scales loudness (∝ (v/127)^1.5) and brightness.
    ``bell_interval`` ('minor' 6/5 or 'major' 5/4) sets the 編鐘's 側鼓音; ``lyric`` is the
    syllable the 歌 sings; ``strike`` and ``variant`` are ``note_key``'s.  The result has
    ``note_length_samples(...)`` samples and is cached: equal notes return the same array.
    """
    key = note_key(instrument, freq_hz, duration_s, velocity, sample_rate,
                   bell_interval=bell_interval, lyric=lyric, strike=strike, variant=variant)
    return render_key(key)


def render_key(key: NoteKey) -> np.ndarray:
    """Render (or fetch from the cache) the note identified by a ``NoteKey``; thread-safe:
    every voice is numpy, so notes render in parallel."""
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    arr = synthesize(key)
    arr.setflags(write=False)
    return _CACHE.put(key, arr)


RENDER_THREADS = 2
"""Notes rendered at once by ``render_keys`` (the voices are numpy: they release the GIL in
their array work)."""


def render_keys(keys: Iterable[NoteKey], ahead: int = 16) -> Iterator[tuple[NoteKey, np.ndarray]]:
    """(key, sound) for each of ``keys`` in order, rendered ``RENDER_THREADS`` at a time and at
    most ``ahead`` keys before the one the caller is at (memory stays bounded)."""
    from concurrent.futures import ThreadPoolExecutor

    pending: deque = deque()
    with ThreadPoolExecutor(RENDER_THREADS, thread_name_prefix="yuezheng-voice") as pool:
        for key in keys:
            pending.append((key, pool.submit(render_key, key)))
            if len(pending) > ahead:
                done, future = pending.popleft()
                yield done, future.result()
        while pending:
            done, future = pending.popleft()
            yield done, future.result()

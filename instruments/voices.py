"""Synthesis voices: one physical-ish model per instrument of the catalog, rendered with pyo.

Every note is synthesized once, offline, by pyo (``Server(audio="offline")``) into a table and
kept as a float32 numpy array in a bounded cache; the mixer (``instruments.mixer``) places the
cached waveforms with numpy.  pyo is imported lazily, inside the rendering function, never at
module import, and with ``PYO_GUI_WX=0`` so that it prints no WxPython banner.

What a note is:

* struck and plucked voices (編鐘 鑮 編磬, the drums, 瑟) are not damped by the player in this
  model: the returned array is the whole natural ring, whatever ``duration_s`` says (the cache
  key ignores the duration for them).  Tails are cut 52 dB below the slowest partial's start
  (six time constants) with a 50 ms raised-cosine fade, so every array ends at exactly zero.
* sustained voices (笙 和 管 歌) hold for ``duration_s`` and then release; the array is
  ``duration_s`` plus the release tail.

``note_length_samples`` gives the exact length of the array ``render_note`` returns without
rendering it, so that the mixer can plan a render before synthesizing anything.

Rendering is deterministic: each note's noise generators are seeded from a CRC of the note's
key, so the same note gives the same samples in any process and whatever was rendered before.
Only one pyo server may exist in a process at a time; rendering holds a module lock and must not
be mixed with a live pyo server in the same process.
"""

from __future__ import annotations

import math
import os
import tempfile
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cues.catalog import CATALOG, canonical_instrument
from cues.errors import UserError

BELL_INTERVALS: dict[str, float] = {"minor": 6 / 5, "major": 5 / 4}
"""側鼓音 : 正鼓音 ratio of the two-tone bell (pitch_facts.json: usually a minor third)."""

BELL_PARTIALS: dict[str, tuple[float, ...]] = {
    # Shen Sinyan (1987), as quoted in pitch_facts.json: ratios to the 正鼓 (sui) tone.
    "minor": (1.0, 1.2, 2.4, 2.81, 3.0),
    "major": (1.0, 1.25, 2.5, 2.81, 3.0),
}

QING_MODE_RATIOS: tuple[float, ...] = (1.0, 2.756, 5.404, 8.933)
"""The project's model of a 磬 (the sources give no partials): the flexural modes of a free-free
uniform bar (Euler–Bernoulli), f_n ∝ β_n² with β = 4.730, 7.853, 10.996, 14.137."""

MEMBRANE_RATIOS: tuple[float, ...] = (1.0, 1.594, 2.136, 2.296, 2.653)
"""Ideal circular membrane modes (01), (11), (21), (02), (31): ratios of Bessel-function zeros."""

TAIL_TIME_CONSTANTS = 6.0  # struck tails end after 6 τ of the slowest partial (−52 dB)
FADE_S = 0.05  # raised-cosine fade at the very end of every note
REFERENCE_HZ = 261.63  # decay times are stated for a note at this pitch
MIN_SAMPLE_RATE = 8000
MAX_SAMPLE_RATE = 192000


@dataclass(frozen=True)
class _Voice:
    name: str
    sustained: bool
    level: float  # amplitude scale, calibrated so a velocity-100 note peaks near 0.25
    model: str  # text shown by `yuezheng instruments`


_VOICES: dict[str, _Voice] = {
    v.name: v
    for v in (
        _Voice("編鐘", False, 0.21,
               "two-tone bronze bell: 正鼓音 at the note and 側鼓音 a minor third above (6/5; "
               "bell_interval='major' gives 5/4), plus partials at 2.4 (2.5), 2.81 and 3.0 × the "
               "正鼓音 (Shen 1987, via pitch_facts.json); each partial decays exponentially, "
               "τ = 1.1 s × (261.63/f)^0.6 for the 正鼓音 and τ/ratio^0.9 above it; a 6 ms "
               "band-passed noise strike"),
        _Voice("鑮", False, 0.21,
               "large single bell (鑮如鍾而大): one strike tone as a slightly split doublet "
               "(1.0 and 1.006, a slow beat), upper partials at 2.32 and 3.29 × the tone (the "
               "ends of the Shanghai Museum bells' (3,0) range, pitch_facts.json) and 2.81 "
               "(Shen), darker and twice as long as 編鐘 (τ = 2.4 s × (261.63/f)^0.6), a low "
               "thud at the strike"),
        _Voice("編磬", False, 0.22,
               "stone chime — PROJECT MODEL, the sources give no 磬 partials: the flexural "
               "modes of a free-free uniform bar, 1 : 2.756 : 5.404 : 8.933, amplitudes "
               "1, 0.45, 0.22, 0.10, τ = 0.8 s × (261.63/f)^0.5 for the fundamental and "
               "τ/ratio above it (stone damps high modes), a wooden-mallet click; the L shape "
               "(倨句) of a real stone is not modelled"),
        _Voice("瑟", False, 0.64,
               "plucked silk-string zither: pyo Waveguide (Karplus–Strong-type delay-line "
               "string) excited by a 6 ms low-passed noise pluck, 40 dB decay in "
               "2.2 s × (261.63/f)^0.5; harder plucks are brighter"),
        _Voice("笙", True, 0.97,
               "free-reed mouth organ: band-limited pulse (pyo Blit, all harmonics up to "
               "0.4·sr) low-passed at 3.2 kHz with a little breath noise; 40 ms attack, steady "
               "sustain, 80 ms release"),
        _Voice("和", True, 0.68,
               "small mouth organ (笙小者謂之和): the 笙 voice an octave higher (2 × the "
               "note) and softer"),
        _Voice("管", True, 0.26,
               "paired bamboo pipes (並兩而吹之): two flute tones (fundamental, weak 2nd and "
               "3rd harmonics) detuned ±4 cents so they beat slowly, with band-passed breath "
               "noise and a short chiff; 70 ms attack, 100 ms release"),
        _Voice("歌", True, 12.0,
               "singing voice: band-limited glottal pulse with delayed 5.3 Hz vibrato "
               "(±0.6 %) through three formant resonators of the vowel /a/ (730, 1090, 2440 Hz; "
               "adult male); 90 ms attack, 150 ms release"),
        _Voice("建鼓", False, 0.25,
               "large drum on a post: circular-membrane modes 1 : 1.594 : 2.136 : 2.296 : "
               "2.653 on 62 Hz with a pitch drop from +25 % (60 ms), τ = 0.5 s for the "
               "fundamental, plus a low-passed noise slap; ignores the note's pitch"),
        _Voice("鼓", False, 0.26,
               "drum: the 建鼓 model on 80 Hz, τ = 0.4 s; ignores the note's pitch"),
        _Voice("朔鼙", False, 0.21,
               "small drum (鼙, the first to strike, west): membrane modes on 165 Hz, "
               "τ = 0.14 s, pitch drop +20 %, brighter noise slap; ignores the note's pitch"),
        _Voice("應鼙", False, 0.21,
               "small answering drum (east): the 鼙 model on 185 Hz; ignores the note's pitch"),
        _Voice("鼙", False, 0.22,
               "small drum: membrane modes on 175 Hz, τ = 0.14 s; ignores the note's pitch"),
        _Voice("鼗", False, 0.15,
               "pellet drum shaken by its handle: a rattle burst of 12 pellet strikes over "
               "0.5 s alternating between the two heads (340 and 362 Hz membrane modes, "
               "τ = 35 ms, with 3 and 4.7 kHz clicks), fading as the twist slows; ignores the "
               "note's pitch"),
    )
}

_DRUMS: dict[str, tuple[float, float, float, float]] = {
    # name: (fundamental Hz, fundamental τ s, pitch-drop depth, noise cut-off Hz)
    "建鼓": (62.0, 0.5, 0.25, 900.0),
    "鼓": (80.0, 0.4, 0.25, 1100.0),
    "朔鼙": (165.0, 0.14, 0.2, 2400.0),
    "應鼙": (185.0, 0.14, 0.2, 2600.0),
    "鼙": (175.0, 0.14, 0.2, 2500.0),
}

_RELEASE_S: dict[str, float] = {"笙": 0.08, "和": 0.08, "管": 0.1, "歌": 0.15}
_TAIL_S: dict[str, float] = {"笙": 0.05, "和": 0.05, "管": 0.08, "歌": 0.1}

# ── public helpers ──────────────────────────────────────────────────────────────────────────


def voice_names() -> tuple[str, ...]:
    """The instruments that have a voice (all of the catalog)."""
    return tuple(_VOICES)


def _canon(instrument: str) -> str:
    canon = canonical_instrument(instrument)
    if canon is None or canon not in _VOICES:
        raise UserError(f"no voice for instrument {instrument!r}; known: {', '.join(_VOICES)}")
    return canon


def describe(instrument: str) -> str:
    """A one-paragraph description of the voice model used for ``instrument`` (or an alias)."""
    return _VOICES[_canon(instrument)].model


def is_sustained(instrument: str) -> bool:
    """True for voices that hold for the note's duration (笙 和 管 歌)."""
    return _VOICES[_canon(instrument)].sustained


def _ref_scale(freq: float, power: float) -> float:
    return (REFERENCE_HZ / freq) ** power


def _natural_length_s(name: str, freq: float | None, duration_s: float) -> float:
    """Length in seconds of the note before rounding to samples."""
    if name in _RELEASE_S:
        return duration_s + _RELEASE_S[name] + _TAIL_S[name]
    assert freq is not None or name in _DRUMS or name == "鼗"
    if name == "編鐘":
        return TAIL_TIME_CONSTANTS * _clamp(1.1 * _ref_scale(freq, 0.6), 0.25, 3.0)  # type: ignore[arg-type]
    if name == "鑮":
        return TAIL_TIME_CONSTANTS * _clamp(2.4 * _ref_scale(freq, 0.6), 0.5, 4.0)  # type: ignore[arg-type]
    if name == "編磬":
        return TAIL_TIME_CONSTANTS * _clamp(0.8 * _ref_scale(freq, 0.5), 0.2, 2.0)  # type: ignore[arg-type]
    if name == "瑟":
        return 1.5 * _se_t40(freq)  # type: ignore[arg-type]
    if name == "鼗":
        return 0.75
    return TAIL_TIME_CONSTANTS * _DRUMS[name][1]


def _se_t40(freq: float) -> float:
    return _clamp(2.2 * _ref_scale(freq, 0.5), 0.6, 5.0)


def _clamp(v: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, v))


@dataclass(frozen=True)
class NoteKey:
    """The normalized identity of a note: equal keys render identical samples."""

    instrument: str
    freq_hz: float | None
    duration_s: float | None  # None for struck voices, whose length is their natural ring
    velocity: int
    sample_rate: int
    bell_interval: str | None  # only for 編鐘


def note_key(
    instrument: str, freq_hz: float | None, duration_s: float, velocity: int = 100,
    sample_rate: int = 48000, *, bell_interval: str = "minor",
) -> NoteKey:
    """Validate a note and return its cache key; raises UserError naming what is wrong."""
    name = _canon(instrument)
    voice = _VOICES[name]
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, int) or not (
        MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE
    ):
        raise UserError(
            f"sample rate must be an integer from {MIN_SAMPLE_RATE} to {MAX_SAMPLE_RATE} Hz, "
            f"got {sample_rate!r}"
        )
    if isinstance(velocity, bool) or not isinstance(velocity, int) or not 1 <= velocity <= 127:
        raise UserError(f"velocity must be an integer from 1 to 127, got {velocity!r}")
    if not isinstance(duration_s, int | float) or not math.isfinite(duration_s) or duration_s <= 0:
        raise UserError(f"note duration must be a positive number of seconds, got {duration_s!r}")
    if bell_interval not in BELL_INTERVALS:
        raise UserError(
            f"bell_interval must be one of {', '.join(BELL_INTERVALS)}, got {bell_interval!r}"
        )
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
    return NoteKey(
        instrument=name,
        freq_hz=freq,
        duration_s=float(duration_s) if voice.sustained else None,
        velocity=int(velocity),
        sample_rate=sample_rate,
        bell_interval=bell_interval if name == "編鐘" else None,
    )


def _key_length(key: NoteKey) -> int:
    seconds = _natural_length_s(key.instrument, key.freq_hz, key.duration_s or 0.0)
    return max(1, int(round(seconds * key.sample_rate)))


def note_length_samples(
    instrument: str, freq_hz: float | None, duration_s: float, velocity: int = 100,
    sample_rate: int = 48000, *, bell_interval: str = "minor",
) -> int:
    """The exact length of the array ``render_note`` returns for these arguments, unrendered."""
    return _key_length(
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

    def get(self, key: NoteKey) -> np.ndarray | None:
        arr = self._items.get(key)
        if arr is None:
            self.misses += 1
            return None
        self.hits += 1
        self._items.move_to_end(key)
        return arr

    def put(self, key: NoteKey, arr: np.ndarray) -> None:
        if key in self._items:
            return
        self._items[key] = arr
        self._bytes += arr.nbytes
        while self._bytes > self.max_bytes and len(self._items) > 1:
            _, old = self._items.popitem(last=False)
            self._bytes -= old.nbytes

    def clear(self) -> None:
        self._items.clear()
        self._bytes = 0
        self.hits = self.misses = 0

    def info(self) -> dict[str, int]:
        return {"notes": len(self._items), "bytes": self._bytes, "max_bytes": self.max_bytes,
                "hits": self.hits, "misses": self.misses}


_CACHE = _WaveCache(max_bytes=int(os.environ.get("YUEZHENG_VOICE_CACHE_MB", "512")) << 20)
_PYO_LOCK = threading.RLock()


def cache_info() -> dict[str, int]:
    """Counts of the note cache: notes held, bytes, limit, hits, misses."""
    return _CACHE.info()


def clear_cache() -> None:
    """Drop every cached note (the next render synthesizes again)."""
    _CACHE.clear()


# ── rendering ───────────────────────────────────────────────────────────────────────────────


def render_note(
    instrument: str, freq_hz: float | None, duration_s: float, velocity: int = 100,
    sample_rate: int = 48000, *, bell_interval: str = "minor",
) -> np.ndarray:
    """The sound of one note as a read-only float32 mono array, natural decay tail included.

    ``instrument`` is a catalog name or alias; ``freq_hz`` the sounding pitch (drums ignore it
    and accept None); ``velocity`` 1–127 scales loudness (∝ (v/127)^1.5) and brightness.
    ``bell_interval`` ('minor' 6/5 or 'major' 5/4) sets the 編鐘's 側鼓音.  The result has
    ``note_length_samples(...)`` samples and is cached: equal notes return the same array.
    """
    key = note_key(instrument, freq_hz, duration_s, velocity, sample_rate,
                   bell_interval=bell_interval)
    return render_key(key)


def render_key(key: NoteKey) -> np.ndarray:
    """Render (or fetch from the cache) the note identified by a ``NoteKey``."""
    with _PYO_LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        arr = _synthesize(key)
        arr.setflags(write=False)
        _CACHE.put(key, arr)
        return arr


def _seed(key: NoteKey) -> int:
    return zlib.crc32(repr(key).encode("utf-8")) % 2_000_000_000 + 1


def _synthesize(key: NoteKey) -> np.ndarray:
    os.environ.setdefault("PYO_GUI_WX", "0")
    import pyo  # noqa: PLC0415 - lazy on purpose: never import pyo at module import

    n = _key_length(key)
    sr = key.sample_rate
    length_s = n / sr
    with tempfile.TemporaryDirectory(prefix="yuezheng-voice-") as tmp:
        server = pyo.Server(sr=sr, nchnls=1, duplex=0, audio="offline", buffersize=256)
        server.setVerbosity(0)
        server.boot()
        try:
            server.setGlobalSeed(_seed(key))
            # run a few blocks longer than the note so the table is surely full
            server.recordOptions(dur=length_s + 2048 / sr, filename=os.path.join(tmp, "o.wav"),
                                 fileformat=0, sampletype=3)
            table = pyo.NewTable(length=length_s + 1024 / sr, chnls=1)
            keep: list[Any] = []
            sig = _BUILDERS[key.instrument](pyo, key, length_s, keep)
            rec = pyo.TableRec(sig, table=table).play()
            keep += [sig, rec]
            server.start()
            data = np.array(memoryview(table.getBuffer()), dtype=np.float64)
        finally:
            server.stop()
            server.shutdown()
    arr = np.zeros(n, dtype=np.float32)
    m = min(n, data.size)
    # the raised-cosine end: exactly zero at the last sample whatever pyo's ramp did
    arr[:m] = data[:m]
    k = min(n, int(FADE_S * sr))
    if k > 1:
        arr[n - k:] *= (0.5 + 0.5 * np.cos(np.linspace(0.0, math.pi, k))).astype(np.float32)
    return arr


# ── voice builders (each receives the pyo module, the key, the length and a keep-alive list) ─

Builder = Callable[[Any, NoteKey, float, list[Any]], Any]


def _vel(key: NoteKey) -> tuple[float, float]:
    """(amplitude scale, brightness 0…1) for the key's velocity."""
    v = key.velocity / 127.0
    return (v ** 1.5) * _VOICES[key.instrument].level, v


def _decay(P: Any, tau: float, amp: float, keep: list[Any], attack: float = 0.0005,
           delay: float = 0.0) -> tuple[Any, float]:
    """amp · (linear attack) · exp(−t/τ) as a pyo stream that starts at ``delay`` and is cut
    (to 0) after 12 τ (−104 dB), so it costs nothing afterwards; returns (stream, active s)."""
    active = attack + 12.0 * tau
    att = P.Linseg([(0.0, 0.0), (attack, amp), (active, amp)])
    ramp = P.Linseg([(0.0, 0.0), (active, -active / tau)])
    env = P.Pow(math.e, ramp, mul=att)
    for obj in (att, ramp, env):
        obj.play(dur=active, delay=delay)
    keep += [att, ramp, env]
    return env, active


# pyo's ComplexRes answers a unit impulse with 0.01·e^(−t/decay)·sin(2πft), whatever f and decay
_RES_GAIN = 100.0


def _modal(P: Any, freq: Any, partials: list[tuple[float, float, float]], nyquist_guard: float,
           keep: list[Any], base_hz: float, strike: Any = None) -> list[Any]:
    """Modal synthesis: a unit impulse (``strike``, default one at t = 0) into one complex
    resonator per partial, so each partial is exactly amp·e^(−t/τ)·sin(2π·f·ratio·t).
    Partials at or above ``nyquist_guard`` are left out."""
    if strike is None:
        strike = P.Trig().play()
        keep.append(strike)
    outs = []
    for ratio, amp, tau in partials:
        if base_hz * ratio >= nyquist_guard or amp <= 0:
            continue
        f = freq * ratio
        res = P.ComplexRes(strike, freq=f, decay=tau, mul=amp * _RES_GAIN)
        keep += [f, res]
        outs.append(res)
    return outs


def _noise_burst(P: Any, tau: float, amp: float, keep: list[Any],
                 lowpass: float | None = None, bandpass: tuple[float, float] | None = None,
                 delay: float = 0.0) -> Any:
    """A filtered noise burst with an exponential envelope (pyo's Noise is costly, so it only
    runs while the envelope is above −104 dB)."""
    env, active = _decay(P, tau, amp, keep, delay=delay)
    noise = P.Noise(mul=env).play(dur=active, delay=delay)
    keep.append(noise)
    if bandpass is not None:
        filt = P.ButBP(noise, freq=bandpass[0], q=bandpass[1])
    elif lowpass is not None:
        filt = P.ButLP(noise, freq=lowpass)
    else:
        return noise
    keep.append(filt)
    return filt


def _bell(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    f = float(key.freq_hz)  # type: ignore[arg-type]
    amp, b = _vel(key)
    tau1 = _clamp(1.1 * _ref_scale(f, 0.6), 0.25, 3.0)
    ratios = BELL_PARTIALS[key.bell_interval or "minor"]
    amps = (1.0, 0.6, 0.3, 0.22, 0.18)
    partials = []
    for k, (r, a) in enumerate(zip(ratios, amps, strict=True)):
        bright = (0.55 + 0.45 * b) ** max(0, k - 1)
        partials.append((r, amp * a * bright, tau1 / r ** 0.9))
    guard = 0.45 * key.sample_rate
    parts = _modal(P, f, partials, guard, keep, f)
    parts.append(_noise_burst(P, 0.006, amp * 0.5 * b * b, keep,
                              bandpass=(min(3.2 * f, 0.4 * key.sample_rate), 3.0)))
    mix = P.Mix(parts, voices=1)
    keep.append(mix)
    return mix


def _bo(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    f = float(key.freq_hz)  # type: ignore[arg-type]
    amp, b = _vel(key)
    tau1 = _clamp(2.4 * _ref_scale(f, 0.6), 0.5, 4.0)
    spec = ((1.0, 1.0), (1.006, 0.55), (2.32, 0.22), (2.81, 0.14), (3.29, 0.09))
    partials = []
    for k, (r, a) in enumerate(spec):
        bright = (0.5 + 0.5 * b) ** max(0, k - 1)
        partials.append((r, amp * a * bright, tau1 / r ** 0.9))
    parts = _modal(P, f, partials, 0.45 * key.sample_rate, keep, f)
    parts.append(_noise_burst(P, 0.02, amp * 0.6 * b, keep, lowpass=min(2.0 * f, 600.0)))
    mix = P.Mix(parts, voices=1)
    keep.append(mix)
    return mix


def _qing(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    f = float(key.freq_hz)  # type: ignore[arg-type]
    amp, b = _vel(key)
    tau1 = _clamp(0.8 * _ref_scale(f, 0.5), 0.2, 2.0)
    amps = (1.0, 0.45, 0.22, 0.10)
    partials = []
    for k, (r, a) in enumerate(zip(QING_MODE_RATIOS, amps, strict=True)):
        bright = (0.6 + 0.4 * b) ** k
        partials.append((r, amp * a * bright, tau1 / r))
    parts = _modal(P, f, partials, 0.45 * key.sample_rate, keep, f)
    parts.append(_noise_burst(P, 0.003, amp * 0.35 * b, keep,
                              lowpass=min(4000.0, 0.4 * key.sample_rate)))
    mix = P.Mix(parts, voices=1)
    keep.append(mix)
    return mix


def _drum(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    f0, tau, depth, cutoff = _DRUMS[key.instrument]
    amp, b = _vel(key)
    drop, _ = _decay(P, 0.06, f0 * depth, keep, attack=0.0001)
    glide = drop + f0  # f0·(1 + depth·e^(−t/60 ms))
    keep.append(glide)
    amps = (1.0, 0.5, 0.35, 0.25, 0.15)
    partials = [(r, amp * a * (0.6 + 0.4 * b) ** k, tau / r ** 1.5)
                for k, (r, a) in enumerate(zip(MEMBRANE_RATIOS, amps, strict=True))]
    parts = _modal(P, glide, partials, 0.45 * key.sample_rate, keep, f0 * (1 + depth))
    parts.append(_noise_burst(P, 0.03, amp * 0.7 * b, keep,
                              lowpass=min(cutoff * (0.6 + 0.8 * b), 0.4 * key.sample_rate)))
    mix = P.Mix(parts, voices=1)
    keep.append(mix)
    return mix


# strike times (s) and relative strengths of the 鼗's pellets: a fixed, deterministic pattern
_TAO_STRIKES: tuple[tuple[float, float], ...] = (
    (0.000, 1.00), (0.036, 0.92), (0.081, 0.95), (0.119, 0.85), (0.163, 0.86), (0.203, 0.74),
    (0.251, 0.72), (0.293, 0.60), (0.345, 0.55), (0.390, 0.43), (0.447, 0.36), (0.500, 0.25),
)


def _tao(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    amp, b = _vel(key)
    heads: list[list[Any]] = [[], []]
    for i, (t, strength) in enumerate(_TAO_STRIKES):
        trig = P.Trig()
        if t > 0:
            trig.play(delay=t)
        else:
            trig.play()
        scaled = trig * strength
        keep.append(trig)
        heads[i % 2].append(scaled)
    keep += heads[0] + heads[1]
    parts = []
    for f, trigs in ((340.0, heads[0]), (362.0, heads[1])):
        strikes = P.Mix(trigs, voices=1)
        keep.append(strikes)
        parts += _modal(P, f, [(1.0, amp, 0.035), (1.594, amp * 0.45, 0.021),
                               (2.136, amp * 0.3, 0.016)],
                        0.45 * key.sample_rate, keep, f, strike=strikes)
        # the pellet's click: two short high resonances
        parts += _modal(P, 1.0, [(3000.0, amp * 0.5 * b, 0.004), (4700.0, amp * 0.3 * b, 0.003)],
                        0.45 * key.sample_rate, keep, 1.0, strike=strikes)
    mix = P.Mix(parts, voices=1)
    keep.append(mix)
    return mix


def _se(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    f = float(key.freq_hz)  # type: ignore[arg-type]
    amp, b = _vel(key)
    pluck_env = P.Linseg([(0.0, 0.0), (0.0005, 1.0), (0.006, 0.0), (length + 1.0, 0.0)]).play()
    noise = P.Noise(mul=pluck_env).play(dur=0.01)
    pluck = P.Tone(noise, freq=min(1500.0 + 4500.0 * b, 0.4 * key.sample_rate))
    string = P.Waveguide(pluck, freq=f, dur=_se_t40(f), minfreq=min(20.0, f * 0.5))
    body = P.Tone(string, freq=min(6000.0, 0.4 * key.sample_rate), mul=amp)
    keep += [pluck_env, noise, pluck, string, body]
    return body


def _sustain_env(P: Any, dur: float, attack: float, release: float, length: float,
                 amp: float, keep: list[Any]) -> Any:
    attack = min(attack, dur * 0.5)
    env = P.Linseg([(0.0, 0.0), (attack, amp), (dur, amp), (dur + release, 0.0),
                    (length + 1.0, 0.0)]).play()
    keep.append(env)
    return env


def _harms(f: float, sr: int, limit: int) -> int:
    return max(1, min(limit, int(0.4 * sr / f)))


def _sheng(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    f = float(key.freq_hz) * (2.0 if key.instrument == "和" else 1.0)  # type: ignore[arg-type]
    amp, b = _vel(key)
    dur = key.duration_s or 0.0
    env = _sustain_env(P, dur, 0.04, _RELEASE_S[key.instrument], length, amp, keep)
    reed = P.Blit(freq=f, harms=_harms(f, key.sample_rate, 60), mul=env)
    tone = P.ButLP(P.DCBlock(reed), freq=min(3200.0, 0.4 * key.sample_rate))
    breath_env = _sustain_env(P, dur, 0.04, _RELEASE_S[key.instrument], length,
                              amp * 0.05 * b, keep)
    noise = P.Noise(mul=breath_env).play(dur=dur + _RELEASE_S[key.instrument] + 0.01)
    breath = P.ButBP(noise, freq=min(2 * f, 0.4 * key.sample_rate), q=4)
    keep.append(noise)
    mix = P.Mix([tone, breath], voices=1)
    keep += [reed, tone, breath, mix]
    return mix


def _guan(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    f = float(key.freq_hz)  # type: ignore[arg-type]
    amp, b = _vel(key)
    dur = key.duration_s or 0.0
    env = _sustain_env(P, dur, 0.07, _RELEASE_S["管"], length, amp, keep)
    parts = []
    for cents in (-4.0, 4.0):
        fp = f * 2 ** (cents / 1200)
        for h, a in ((1, 0.5), (2, 0.12), (3, 0.04)):
            if fp * h >= 0.45 * key.sample_rate:
                continue
            osc = P.Sine(freq=fp * h, mul=env * a)
            keep.append(osc)
            parts.append(osc)
    breath_env = _sustain_env(P, dur, 0.07, _RELEASE_S["管"], length, amp * 0.25, keep)
    noise = P.Noise(mul=breath_env).play(dur=dur + _RELEASE_S["管"] + 0.01)
    breath = P.Reson(noise, freq=f, q=8)
    keep.append(noise)
    chiff = _noise_burst(P, 0.015, amp * 0.15 * b, keep,
                         bandpass=(min(3 * f, 0.4 * key.sample_rate), 2.0))
    parts += [breath, chiff]
    mix = P.Mix(parts, voices=1)
    keep += [breath, mix]
    return mix


_VOWEL_A = ((730.0, 80.0, 1.0), (1090.0, 90.0, 0.5), (2440.0, 120.0, 0.25))


def _ge(P: Any, key: NoteKey, length: float, keep: list[Any]) -> Any:
    f = float(key.freq_hz)  # type: ignore[arg-type]
    amp, _ = _vel(key)
    dur = key.duration_s or 0.0
    env = _sustain_env(P, dur, 0.09, _RELEASE_S["歌"], length, amp, keep)
    depth = P.Linseg([(0.0, 0.0), (0.25, 0.0), (0.6, 0.006), (length + 1.0, 0.006)]).play()
    vib = P.Sine(freq=5.3, mul=depth, add=1.0)
    src = P.Blit(freq=vib * f, harms=_harms(f, key.sample_rate, 80), mul=env)
    keep += [depth, vib, src]
    parts = []
    for fc, bw, g in _VOWEL_A:
        if fc >= 0.45 * key.sample_rate:
            continue
        res = P.Reson(src, freq=fc, q=fc / bw, mul=g)
        keep.append(res)
        parts.append(res)
    mix = P.Mix(parts, voices=1)
    keep.append(mix)
    return mix


_BUILDERS: dict[str, Builder] = {
    "編鐘": _bell, "鑮": _bo, "編磬": _qing, "瑟": _se, "笙": _sheng, "和": _sheng,
    "管": _guan, "歌": _ge, "建鼓": _drum, "鼓": _drum, "朔鼙": _drum, "應鼙": _drum,
    "鼙": _drum, "鼗": _tao,
}

"""The voice models as numbers and words: one entry per instrument of the catalog.

What this module holds (no pyo, no numpy): the partial ratios of the bells, the stone and the
membranes; each voice's level, whether it is sustained, and the paragraph ``yuezheng
instruments`` prints; the drums' parameters; the release of the sustained voices; the decay
times of the struck and plucked voices; from them the exact length of a note
(``key_length``), and the identity of a note (``NoteKey``).  ``instruments.synthesis`` builds the
sound from these numbers; ``instruments.voices`` validates notes and caches their sound.

Decay times are stated for a note at ``REFERENCE_HZ`` and scale as (REFERENCE_HZ / f)^power.
``REFERENCE_HZ`` is 261.63 Hz, the default 黃鍾 rounded to the hundredth of a hertz; it is a fact
of the voice models (the pitch at which their decay times were tuned), not the tuning's 黃鍾,
and the models' descriptions quote it.
"""

from __future__ import annotations

from dataclasses import dataclass

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
SE_DAMP_S = 0.08  # a 瑟 string stopped by a re-pluck dies out over this time
MIN_SAMPLE_RATE = 8000
MAX_SAMPLE_RATE = 192000


@dataclass(frozen=True)
class Voice:
    """One voice of the catalog: its model, in numbers for the synthesis and in words."""

    name: str
    sustained: bool
    level: float  # amplitude scale, calibrated so a velocity-100 note peaks near 0.25
    model: str  # text shown by `yuezheng instruments`


VOICES: dict[str, Voice] = {
    v.name: v
    for v in (
        Voice("編鐘", False, 0.21,
               "two-tone bronze bell: 正鼓音 at the note and 側鼓音 a minor third above (6/5; "
               "bell_interval='major' gives 5/4), plus partials at 2.4 (2.5), 2.81 and 3.0 × the "
               "正鼓音 (Shen 1987, via pitch_facts.json); each partial decays exponentially, "
               "τ = 1.1 s × (261.63/f)^0.6 for the 正鼓音 and τ/ratio^0.9 above it; a 6 ms "
               "band-passed noise strike"),
        Voice("鑮", False, 0.21,
               "large single bell (鑮如鍾而大): one strike tone as a slightly split doublet "
               "(1.0 and 1.006, a slow beat), upper partials at 2.32 and 3.29 × the tone (the "
               "ends of the Shanghai Museum bells' (3,0) range, pitch_facts.json) and 2.81 "
               "(Shen), darker and twice as long as 編鐘 (τ = 2.4 s × (261.63/f)^0.6), a low "
               "thud at the strike"),
        Voice("編磬", False, 0.22,
               "stone chime — PROJECT MODEL, the sources give no 磬 partials: the flexural "
               "modes of a free-free uniform bar, 1 : 2.756 : 5.404 : 8.933, amplitudes "
               "1, 0.45, 0.22, 0.10, τ = 0.8 s × (261.63/f)^0.5 for the fundamental and "
               "τ/ratio above it (stone damps high modes), a wooden-mallet click; the L shape "
               "(倨句) of a real stone is not modelled"),
        Voice("瑟", False, 0.36,
               "plucked silk-string zither: modes h·f·√(1 + 1e-4·h²) shaped by the pluck "
               "point (sin(π·h·0.13)/h), 40 dB decay in 2.2 s × (261.63/f)^0.5 for the "
               "fundamental and faster above, weighted by four body resonances (110–820 Hz, "
               "PROJECT MODEL) that also knock at the pluck; a re-plucked string is stopped "
               "first; harder plucks are brighter"),
        Voice("笙", True, 0.14,
               "free-reed mouth organ: a chord of three pipes (the note, the fifth and the "
               "octave above), each a reed (harmonics 1/h) shaped by its pipe's odd "
               "resonances (pipe 2 % above the reed: Cottingham 2011), with a little breath "
               "noise; 50 ms attack, steady sustain, 80 ms release"),
        Voice("和", True, 0.10,
               "small mouth organ (笙小者謂之和): the 笙 voice an octave higher (2 × the "
               "note) and softer"),
        Voice("管", True, 0.19,
               "paired bamboo pipes (並兩而吹之): two unequal flute tones (weak 2nd–4th "
               "harmonics), the second 6 cents higher and 15 dB softer so they beat gently, "
               "with breath noise around the pitch and a short chiff; 70 ms attack, 100 ms "
               "release"),
        Voice("歌", True, 0.095,
               "two singers singing the lyric: per syllable a consonant onset and vowel "
               "targets (Peterson & Barney formants, adult male; glides and nasal codas) on a "
               "tilted glottal source (−12 dB/oct, +6 dB/oct radiation) with breath noise, "
               "level even across pitch, 5.5 Hz vibrato unbroken across syllables; the second "
               "singer 7 cents higher and 18 ms later; 60 ms attack, 150 ms release"),
        Voice("建鼓", False, 0.25,
               "large drum on a post: circular-membrane modes 1 : 1.594 : 2.136 : 2.296 : "
               "2.653 on 62 Hz with a pitch drop from +25 % (60 ms), τ = 0.5 s for the "
               "fundamental, plus a low-passed noise slap; ignores the note's pitch"),
        Voice("鼓", False, 0.26,
               "drum: the 建鼓 model on 80 Hz, τ = 0.4 s; ignores the note's pitch"),
        Voice("朔鼙", False, 0.21,
               "small drum (鼙, the first to strike, west): membrane modes on 165 Hz, "
               "τ = 0.14 s, pitch drop +20 %, brighter noise slap; ignores the note's pitch"),
        Voice("應鼙", False, 0.21,
               "small answering drum (east): the 鼙 model on 185 Hz; ignores the note's pitch"),
        Voice("鼙", False, 0.22,
               "small drum: membrane modes on 175 Hz, τ = 0.14 s; ignores the note's pitch"),
        Voice("鼗", False, 0.15,
               "pellet drum shaken by its handle: a rattle burst of 12 pellet strikes over "
               "0.5 s alternating between the two heads (340 and 362 Hz membrane modes, "
               "τ = 35 ms, with 3 and 4.7 kHz clicks), fading as the twist slows; ignores the "
               "note's pitch"),
    )
}

DRUMS: dict[str, tuple[float, float, float, float]] = {
    # name: (fundamental Hz, fundamental τ s, pitch-drop depth, noise cut-off Hz)
    "建鼓": (62.0, 0.5, 0.25, 900.0),
    "鼓": (80.0, 0.4, 0.25, 1100.0),
    "朔鼙": (165.0, 0.14, 0.2, 2400.0),
    "應鼙": (185.0, 0.14, 0.2, 2600.0),
    "鼙": (175.0, 0.14, 0.2, 2500.0),
}

RELEASE_S: dict[str, float] = {"笙": 0.08, "和": 0.08, "管": 0.1, "歌": 0.15}
TAIL_S: dict[str, float] = {"笙": 0.05, "和": 0.05, "管": 0.08, "歌": 0.1}


def _below_reference(freq: float, power: float) -> float:
    return (REFERENCE_HZ / freq) ** power


def _clamp(v: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, v))


def bianzhong_tau_s(freq: float) -> float:
    """The time constant of the 編鐘's 正鼓音 (its upper partials decay faster)."""
    return _clamp(1.1 * _below_reference(freq, 0.6), 0.25, 3.0)


def bo_tau_s(freq: float) -> float:
    """The time constant of the 鑮's strike tone."""
    return _clamp(2.4 * _below_reference(freq, 0.6), 0.5, 4.0)


def qing_tau_s(freq: float) -> float:
    """The time constant of the 編磬's fundamental."""
    return _clamp(0.8 * _below_reference(freq, 0.5), 0.2, 2.0)


def se_decay_s(freq: float) -> float:
    """The time the 瑟's string takes to decay by 40 dB."""
    return _clamp(2.2 * _below_reference(freq, 0.5), 0.6, 5.0)


def natural_length_s(name: str, freq: float | None, duration_s: float) -> float:
    """Length in seconds of a note of voice ``name`` before rounding to samples: a sustained
    voice holds for ``duration_s`` and then releases; a struck one rings for its own time; a
    瑟 string with a ``duration_s`` is stopped then (re-plucked) and dies within SE_DAMP_S."""
    if name in RELEASE_S:
        return duration_s + RELEASE_S[name] + TAIL_S[name]
    if name == "鼗":
        return 0.75
    if name in DRUMS:
        return TAIL_TIME_CONSTANTS * DRUMS[name][1]
    assert freq is not None, f"{name} is pitched: its length depends on the frequency"
    if name == "編鐘":
        return TAIL_TIME_CONSTANTS * bianzhong_tau_s(freq)
    if name == "鑮":
        return TAIL_TIME_CONSTANTS * bo_tau_s(freq)
    if name == "編磬":
        return TAIL_TIME_CONSTANTS * qing_tau_s(freq)
    ring = 1.5 * se_decay_s(freq)  # 瑟
    return min(ring, duration_s + SE_DAMP_S) if duration_s > 0 else ring


@dataclass(frozen=True)
class NoteKey:
    """The normalized identity of a note: equal keys render identical samples."""

    instrument: str
    freq_hz: float | None
    duration_s: float | None  # None for struck voices, whose length is their natural ring
    # (瑟: the time its string is stopped by a re-pluck, None when it rings out)
    velocity: int
    sample_rate: int
    bell_interval: str | None  # only for 編鐘
    syllable: str | None = None  # only for 歌: "initial.final" of the sung syllable's reading


def velocity_amp(key: NoteKey) -> tuple[float, float]:
    """(amplitude scale, brightness 0…1) for the key's velocity: ∝ (v/127)^1.5 × the voice's
    level, and v/127."""
    v = key.velocity / 127.0
    return (v ** 1.5) * VOICES[key.instrument].level, v


def key_length(key: NoteKey) -> int:
    """The number of samples of the note ``key`` names."""
    seconds = natural_length_s(key.instrument, key.freq_hz, key.duration_s or 0.0)
    return max(1, int(round(seconds * key.sample_rate)))

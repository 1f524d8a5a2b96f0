"""The voice models as numbers and words: one entry per instrument of the catalog.

What this module holds (no pyo, no numpy): the partial ratios of the bells, the stone and the
membranes, with their sources (docs/voices.md); the bell-strike rule (``bell_strike``: which
tone of a 編鐘 a note strikes) and the stroke variation (``stroke_variant``); each voice's
level, whether it is sustained, and the paragraph ``yuezheng instruments`` prints; the drums'
parameters; the release of the sustained voices; the decay times of the struck and plucked
voices; from them the exact length of a note (``key_length``), and the identity of a note
(``NoteKey``).  ``instruments.synthesis`` builds the sound from these numbers;
``instruments.voices`` validates notes and caches their sound.

Decay times are stated for a note at ``REFERENCE_HZ`` and scale as (REFERENCE_HZ / f)^power.
``REFERENCE_HZ`` is 261.63 Hz, the default 黃鍾 rounded to the hundredth of a hertz; it is a fact
of the voice models (the pitch at which their decay times were tuned), not the tuning's 黃鍾,
and the models' descriptions quote it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BELL_INTERVALS: dict[str, float] = {"minor": 6 / 5, "major": 5 / 4}
"""Nominal 側鼓音 : 正鼓音 ratio of the two-tone bell (pitch_facts.json: usually a minor third)."""

BELL_INTERVAL_SEMITONES: dict[str, int] = {"minor": 3, "major": 4}
"""The same intervals in semitones: a 側鼓 stroke's bell has its 正鼓 this far below the note."""

BELL_INTERVAL_RANGE: tuple[float, float] = (1.11, 1.31)
"""The measured range of the two (2,0) tones' ratio over ten bells (Rossing et al., Shanghai
Museum bells; the issue quotes it): every bell's own interval stays inside it."""

BELL_INTERVAL_SPREAD_CENTS = 30.0
"""Each bell's own interval departs from the nominal third by up to this much (seeded by the
bell): 6/5 ± 30 cents is 1.179–1.221, 5/4 ± 30 cents 1.228–1.272, inside the measured range."""

BELL_PAIR_RANGE: tuple[float, float] = (2.32, 3.29)
"""The (3,0) pair: two partials 2.32–3.29 × the lowest (2,0) tone (Rossing et al., ten Shanghai
Museum bells); each bell draws its own pair inside the range, seeded by the bell."""

BELL_UPPER: tuple[tuple[float, float], ...] = ((4.1, 0.10), (5.4, 0.06), (6.9, 0.035),
                                               (8.4, 0.02), (9.8, 0.012))
"""Upper partials 3–10 × the 正鼓音 (ratio, amplitude): PROJECT MODEL, placed between the
higher (m,0) pairs of a bell of this shape; they decay as τ/ratio^1.6, i.e. within a few
tenths of a second (the 「短促」 decay the sources describe)."""

BELL_TRACE_DB: tuple[float, float] = (-24.0, -19.0)
"""How far under the struck tone the other (2,0) tone sounds, by strike position (a stroke a
little off the 正鼓 or 側鼓 point excites its partner more): always ≥ 15 dB down."""

ZHENGGU_DEGREES: frozenset[int] = frozenset({0, 2, 4, 7, 9})
"""The bell-strike rule: a 編鐘 note whose degree (semitones above 黃鍾, mod 12) is 宮 商 角 徵 羽
strikes the 正鼓 of the bell tuned to it; any other degree (變徵, 變宮, 清角 …) strikes the 側鼓
of the bell whose 正鼓 lies the bell interval (3 or 4 semitones) below the note."""

BELL_DETUNES = ("0", "5", "excavated")
"""Per-bell tuning error (a setting): none, up to ±5 cents, or the spread of an excavated set."""

BELL_DETUNE_CENTS: dict[str, float] = {"0": 0.0, "5": 5.0, "excavated": 25.0}
"""The largest departure of a bell from its nominal pitch, per setting (cents).  "5": a cast set
tuned to ±5 cents (the figure a modern maker quotes for good bells); "excavated": PROJECT
CHOICE, ±25 cents, the order of the departures from a regular scale reported for excavated sets
(not a measured distribution: no published table was at hand)."""

QING_MODE_RATIOS: tuple[float, ...] = (1.0, 2.16, 3.93, 5.92)
"""The 編磬's partial ratios. PROJECT ESTIMATE for an L-shaped (倨句) stone: the bend lowers
the second flexural mode far under a uniform bar's 2.756 (issue 14 quoting Yoo 2005/2006 on
Korean pyeongyeong); Yoo's tables could not be consulted, so these figures are NOT a citation
of them — see docs/voices.md."""

MEMBRANE_MODES: tuple[tuple[str, float, float, float], ...] = (
    # mode, ratio to the (0,1) mode, τ relative to the (1,1) mode's, Bessel zero j_mn
    ("(0,1)", 1.0, 0.3, 2.405),
    ("(1,1)", 1.47, 1.0, 3.832),
    ("(2,1)", 2.2, 0.75, 5.136),
    ("(0,2)", 2.3, 0.4, 5.520),
    ("(3,1)", 2.94, 0.55, 6.380),
    ("(4,1)", 3.67, 0.4, 7.588),
)
"""A two-headed drum's modes.  On a two-headed drum the (0,1) mode radiates as a monopole and
decays fastest, (1,1) rings longest (Fletcher & Rossing, The Physics of Musical Instruments,
ch. 18 on the bass drum; Rossing, Science of Percussion Instruments): τ here is relative to the
(1,1) mode's.  Ratios: PROJECT MODEL — the (m,1) modes nearly harmonic, 1 : 1.5 : 2 : 2.5 over
the (1,1) mode, as air loading makes them on a drum of this kind; the (0,2) near the ideal
membrane's 2.295.  A stroke at radius r (fraction of the head's radius) excites mode (m,n) as
|J_m(j_mn·r)| (``drum_mode_amplitudes`` in instruments.struck_models)."""

DRUM_STRIKE_RADII: tuple[float, ...] = (0.15, 0.25, 0.35, 0.45, 0.55, 0.65)
"""Strike positions (fraction of the radius) of the stroke variants: a player never strikes the
same point twice."""

STROKE_VARIANTS = len(DRUM_STRIKE_RADII)
"""Struck voices are synthesized in this many variants (strike position, a little pitch); the
note's seed chooses one and a level within ``STROKE_LEVEL_DB``."""

STROKE_LEVEL_DB = 0.75
"""A stroke's level varies by up to ± this many dB (seeded by the note)."""

STROKE_PITCH_CENTS = 12.0
"""A drum stroke's pitch varies by up to ± this many cents between variants (head tension
under the stroke); bells and stones keep their pitch."""

TAIL_TIME_CONSTANTS = 6.0  # struck tails end after 6 τ of the slowest partial (−52 dB)
DRUM_TAIL_TIME_CONSTANTS = 4.5  # drums: 4.5 τ of the (1,1) mode, itself ≥ 6 dB under the stroke
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
               "two-tone bronze bell: the strike point picks the tone — a 正鼓 stroke sounds "
               "the 正鼓音 with the 側鼓音 (a third above: 6/5, or 5/4 with "
               "bell_interval='major', each bell ±30 cents, inside the measured 1.11–1.31) "
               "19–24 dB under it, a 側鼓 stroke the reverse; each bell its own (3,0) pair "
               "at 2.32–3.29 × (Rossing et al., Shanghai Museum bells) and partials 4–10 × "
               "that die within tenths of a second; τ = 0.5 s × (261.63/f)^0.6 for the struck "
               "tone (T60 3.5 s at C4); a 3 ms metallic strike transient"),
        Voice("鑮", False, 0.21,
               "large single bell (鑮如鍾而大), also two-tone: the 正鼓音 with its 側鼓音 a "
               "minor third up 20 dB under it, a (3,0) pair at 2.32 and 3.29 × (the ends of "
               "the measured range), darker, quieter (−3 LU) and shorter than the 編鐘 "
               "(τ = 0.35 s × (261.63/f)^0.6), a low thud at the strike"),
        Voice("編磬", False, 0.22,
               "L-shaped stone chime: partials 1 : 2.16 : 3.93 : 5.92 (PROJECT ESTIMATE of an "
               "L-shaped stone's lowered modes, see docs/voices.md), amplitudes 1, 0.4, 0.2, "
               "0.08, τ = 0.8 s × (261.63/f)^0.5 for the fundamental and τ/ratio above it "
               "(stone damps high modes), a wooden-mallet click"),
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
               "large two-headed drum on a post: six modes on 62 Hz ((0,1), (1,1) at 1.47, "
               "(2,1), (0,2), (3,1), (4,1)); the (0,1) decays fastest (τ 0.18 s), the (1,1) "
               "rings longest (τ 0.6 s); strike position, pitch (±12 cents) and level (±0.75 dB) "
               "vary stroke by stroke; a pitch drop from +15 % and a noise slap; ignores the "
               "note's pitch"),
        Voice("鼓", False, 0.26,
               "two-headed drum: the 建鼓 model on 80 Hz, (1,1) τ 0.45 s; ignores the note's "
               "pitch"),
        Voice("朔鼙", False, 0.21,
               "small two-headed drum (鼙, the first to strike, west): the mode set on 165 Hz, "
               "(1,1) τ 0.3 s, brighter slap; ignores the note's pitch"),
        Voice("應鼙", False, 0.21,
               "small answering drum (east): the 鼙 model on 185 Hz; ignores the note's pitch"),
        Voice("鼙", False, 0.22,
               "small two-headed drum: the mode set on 175 Hz, (1,1) τ 0.3 s; ignores the "
               "note's pitch"),
        Voice("鼗", False, 0.15,
               "pellet drum shaken by its handle: a rattle burst of 12 pellet strikes over "
               "0.5 s alternating between the two heads (340 and 362 Hz membrane modes, "
               "τ = 35 ms, with 3 and 4.7 kHz clicks), fading as the twist slows; ignores the "
               "note's pitch"),
    )
}

DRUMS: dict[str, tuple[float, float, float, float]] = {
    # name: ((0,1) mode Hz, (1,1) mode τ s, pitch-drop depth, noise cut-off Hz)
    "建鼓": (62.0, 0.6, 0.15, 900.0),
    "鼓": (80.0, 0.45, 0.15, 1100.0),
    "朔鼙": (165.0, 0.3, 0.12, 2400.0),
    "應鼙": (185.0, 0.3, 0.12, 2600.0),
    "鼙": (175.0, 0.3, 0.12, 2500.0),
}

DRUM_GLIDE_TAU_S = 0.05
"""A drum stroke starts sharp: its modes glide from (1 + depth·b) × their pitch down to it as
f·(1 + depth·b·e^(−t/DRUM_GLIDE_TAU_S)) (depth in ``DRUMS``, b the velocity's brightness)."""

STRIKE_NOISE: dict[str, tuple[float, float, int]] = {
    # name: (τ s of the burst's exponential envelope, level × the note's amplitude, power of
    # the brightness b that also scales it); the filter is the voice's (instruments.struck_models)
    "編鐘": (0.003, 0.5, 2),  # a metallic tick: band-pass at 5 f, Q 2
    "鑮": (0.02, 0.6, 1),  # a low thud: low-pass at 2 f (≤ 600 Hz)
    "編磬": (0.003, 0.35, 1),  # a wooden-mallet click: low-pass at 4 kHz
    "drum": (0.03, 0.7, 1),  # the slap: low-pass at the drum's cut-off × (0.6 + 0.8 b)
}
"""Each struck voice's strike noise: white noise under amp·e^(−t/τ) (cut after 12 τ) through a
second-order Butterworth filter."""

DRUM_CONTACT: tuple[float, float, float, float] = (0.0012, 0.2, 3000.0, 0.8)
"""(τ s, level × the note's amplitude × b, band-pass centre Hz, Q) of a drum stroke's contact
click: the stick's millisecond on the head excites it far above its membrane modes (PROJECT
CHOICE of level and band: a stroke's first millisecond is broadband on every drum recorded, and
without it a quick stroke over the ring of an accented one has too little above 1 kHz for
``yuezheng check`` to time it within its 10 ms)."""

QING_MODE_AMPS: tuple[float, ...] = (1.0, 0.4, 0.2, 0.08)
"""The 編磬's partial amplitudes (``QING_MODE_RATIOS``); each variant's strike position weights
them by 0.8–1.2."""

TAO_STRIKES: tuple[tuple[float, float], ...] = (
    (0.000, 1.00), (0.036, 0.92), (0.081, 0.95), (0.119, 0.85), (0.163, 0.86), (0.203, 0.74),
    (0.251, 0.72), (0.293, 0.60), (0.345, 0.55), (0.390, 0.43), (0.447, 0.36), (0.500, 0.25),
)
"""The 鼗's pellet strikes (time s, strength): a fixed pattern, alternating between the heads."""

TAO_HEADS_HZ: tuple[float, float] = (340.0, 362.0)
"""The (0,1) mode of each of the 鼗's two small heads."""

TAO_HEAD_MODES: tuple[tuple[float, float, float], ...] = (
    (1.0, 1.0, 0.035), (1.594, 0.45, 0.021), (2.136, 0.3, 0.016))
"""A 鼗 head's (0,1), (1,1), (2,1) modes (ratio, amplitude, τ s) at the ideal membrane's
ratios; the (0,1) rings longest on a head this small and taut: it fills the gaps between the
pellets, so that one shake stays one stroke."""

TAO_CLICKS: tuple[tuple[float, float, float], ...] = ((3000.0, 0.5, 0.004), (4700.0, 0.3, 0.003))
"""The pellet's click on either head: two short high resonances (Hz, amplitude × b, τ s)."""

RELEASE_S: dict[str, float] = {"笙": 0.08, "和": 0.08, "管": 0.1, "歌": 0.15}
TAIL_S: dict[str, float] = {"笙": 0.05, "和": 0.05, "管": 0.08, "歌": 0.1}


def _below_reference(freq: float, power: float) -> float:
    return (REFERENCE_HZ / freq) ** power


def _clamp(v: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, v))


def bianzhong_tau_s(freq: float) -> float:
    """The time constant of the 編鐘's struck tone (its upper partials decay faster)."""
    return _clamp(0.5 * _below_reference(freq, 0.6), 0.15, 1.5)


def bo_tau_s(freq: float) -> float:
    """The time constant of the 鑮's struck tone."""
    return _clamp(0.35 * _below_reference(freq, 0.6), 0.12, 1.2)


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
        return DRUM_TAIL_TIME_CONSTANTS * DRUMS[name][1]
    assert freq is not None, f"{name} is pitched: its length depends on the frequency"
    if name == "編鐘":
        return TAIL_TIME_CONSTANTS * bianzhong_tau_s(freq)
    if name == "鑮":
        return TAIL_TIME_CONSTANTS * bo_tau_s(freq)
    if name == "編磬":
        return TAIL_TIME_CONSTANTS * qing_tau_s(freq)
    ring = 1.5 * se_decay_s(freq)  # 瑟
    return min(ring, duration_s + SE_DAMP_S) if duration_s > 0 else ring


def bell_strike(semitones: int | None) -> str:
    """"正鼓" or "側鼓": which tone of a 編鐘 a note strikes (``ZHENGGU_DEGREES``); a note
    without a degree (a user's MIDI key) strikes the 正鼓."""
    if semitones is None or semitones % 12 in ZHENGGU_DEGREES:
        return "正鼓"
    return "側鼓"


def stroke_variant(seed: int) -> tuple[int, float]:
    """(variant, level factor) of a struck note with seed ``seed``: the variant picks the
    strike position (and a drum's pitch), the factor is within ±STROKE_LEVEL_DB."""
    mixed = (seed * 2654435761) & 0xFFFFFFFF
    level_db = STROKE_LEVEL_DB * (2.0 * ((mixed >> 8) & 0xFFFF) / 0xFFFF - 1.0)
    return seed % STROKE_VARIANTS, 10.0 ** (level_db / 20.0)


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
    strike: str | None = None  # 編鐘 and 鑮: "正鼓" or "側鼓"
    variant: int = 0  # struck voices: which of STROKE_VARIANTS strikes (0 for the others)
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:  # a render looks keys up ~100,000 times: hashed once
        object.__setattr__(self, "_hash", hash(self._fields()))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[NoteKey], tuple[object, ...]]:
        return NoteKey, self._fields()  # rebuilt, so hashed again where it is read back

    def _fields(self) -> tuple[object, ...]:
        return (self.instrument, self.freq_hz, self.duration_s, self.velocity,
                self.sample_rate, self.bell_interval, self.syllable, self.strike, self.variant)


def velocity_amp(key: NoteKey) -> tuple[float, float]:
    """(amplitude scale, brightness 0…1) for the key's velocity: ∝ (v/127)^1.5 × the voice's
    level, and v/127."""
    v = key.velocity / 127.0
    return (v ** 1.5) * VOICES[key.instrument].level, v


def key_length(key: NoteKey) -> int:
    """The number of samples of the note ``key`` names."""
    seconds = natural_length_s(key.instrument, key.freq_hz, key.duration_s or 0.0)
    return max(1, int(round(seconds * key.sample_rate)))

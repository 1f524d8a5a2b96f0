"""The voice models as numbers and words: one entry per instrument of the catalog.

What this module holds (no pyo, no numpy): the partial ratios of the bells, the stone and the
membranes, with their sources (docs/voices.md); the bell-strike rule (``bell_strike``: which
tone of a 編鐘 a note strikes) and the stroke variation (``stroke_variant``); each voice's
level, whether it is sustained, and the paragraph ``yuezheng instruments`` prints; the drums'
parameters; the release of the sustained voices; the decay times of the struck and plucked
voices; from them the exact length of a note (``key_length``), and the identity of a note
(``NoteKey``).  ``instruments.voices.synthesis`` builds the sound from these numbers;
``instruments.voices.notes`` validates notes and caches their sound.

Decay times are stated for a note at ``REFERENCE_HZ`` and scale as (REFERENCE_HZ / f)^power.
``REFERENCE_HZ`` is 261.63 Hz, the default 黃鍾 rounded to the hundredth of a hertz; it is a fact
of the voice models (the pitch at which their decay times were tuned), not the tuning's 黃鍾,
and the models' descriptions quote it.
"""

from __future__ import annotations

import math
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
Museum bells); each bell draws its own pair inside the range, seeded by the bell (its centre
in ``BELL_PAIR_CENTRE``, its split in ``BELL_DOUBLET_SPLIT``)."""

BELL_PAIR_CENTRE: tuple[float, float] = (2.5, 3.1)
"""Where a bell's (3,0) pair is centred (× the 正鼓音), seeded: Shen's minor-third bell has it
at 2.81 and 3.0 (Shen Sinyan, "Acoustics of Ancient Chinese Bells", Scientific American 256
(4), 1987: partials 1 : 1.2 : 2.4 : 2.81 : 3), and a split of 3–10 % keeps it inside
``BELL_PAIR_RANGE``."""

BELL_DOUBLET_SPLIT: tuple[float, float] = (0.03, 0.10)
"""The modes of a two-tone bell come in pairs, one member with an antinode at the 正鼓 (sui)
strike point and the other at the 側鼓 (gu), 3–10 % apart in frequency (Rossing, Hampton,
Richardson, Sathoff and Lehr, "Vibrational modes of Chinese two-tone bells", JASA 83 (1): 369,
1988).  Each pair of a bell has its own split, seeded by the bell; the struck point's member
sounds ``BELL_DOUBLET_OTHER_DB`` over the other."""

BELL_DOUBLET_OTHER_DB = -6.0
"""The member of a pair whose antinode is away from the struck point: this far under the
struck one (PROJECT ESTIMATE: the (2,0) pair's 19–24 dB is the lowest and purest case; the
upper pairs are "more mixed" (Rossing et al. 1988), so both members sound)."""

BELL_GU_OCTAVE = 0.25
"""The octave of the 側鼓音 (2 × the bell's interval: 2.4 × the 正鼓音 on a minor-third bell,
Shen 1987's third partial), × the struck tone's amplitude on a 側鼓 stroke, half on a 正鼓
stroke: PROJECT ESTIMATE of its level."""

BELL_UPPER: tuple[tuple[float, float], ...] = ((4.1, 0.45), (5.4, 0.40), (6.9, 0.33),
                                               (8.4, 0.27), (9.8, 0.22), (11.6, 0.17),
                                               (13.5, 0.13), (15.7, 0.10))
"""The upper pairs, 4–16 × the 正鼓音 (centre ratio, amplitude of the struck point's member at
full brightness): PROJECT MODEL of where and how strong (no table of a zhong's upper modes was
at hand; these sit between the higher (m,0) and (m,1) pairs of a bell of this shape, and make
the strike bright — a mallet on bronze is heard up to several kHz); each a pair split 3–10 %
(``BELL_DOUBLET_SPLIT``).  They decay as τ/ratio^``BELL_UPPER_DECAY_POWER``: within a tenth
of a second at the top (the 「短促」 decay the sources describe), so the strike is bright and
the ring is the two tones."""

BELL_UPPER_DECAY_POWER = 1.0

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
|J_m(j_mn·r)| (``drum_mode_amplitudes`` in instruments.voices.struck_models)."""

STROKE_VARIANTS = 6
"""The bells and stones are synthesized in this many variants (the strike point: a bell's
trace, a stone's mode weights); the note's seed chooses one and a level within
``STROKE_LEVEL_DB``.  Drums have a stroke of their own for every note (``DRUM_STROKES``)."""

STROKE_LEVEL_DB = 0.75
"""A bell's or stone's stroke level varies by up to ± this many dB (seeded by the note)."""

DRUM_STROKES = 1 << 24
"""A drum note's variant is its seed modulo this: every stroke of a drum its own (its strike
point, force, pitch, slap and click drawn from it by ``drum_stroke``)."""

DRUM_STRIKE_RADIUS: tuple[float, float] = (0.1, 0.7)
"""The range of a drum stroke's strike point (fraction of the head's radius): a player never
strikes the same point twice, and rarely the dead centre or the rim."""

DRUM_FORCE_DB = 1.5
"""A drum stroke's force departs from the written velocity by up to ± this many dB (a
triangular draw: standard deviation 0.61 dB), heard as its level and, as a velocity that much
harder would, its brightness (the pitch drop, the slap's band, the modes' balance).  PROJECT
CHOICE within the ±2 dB asked of a drummer: the 節 stroke (velocity 127) stays ≥ 3 dB over the
strokes inside the 節 (88) whatever the draws."""

DRUM_DAMPING = 1.06
"""A drum stroke's ring lasts up to this factor longer or shorter (its time constants × 1/1.06
… 1.06): how long the stick stays on the head, how the other hand rests on it.  PROJECT
CHOICE."""

STROKE_PITCH_CENTS = 12.0
"""A drum stroke's pitch departs by up to ± this many cents (head tension under the stroke);
bells and stones keep their pitch."""

TAIL_DB = 80.0
"""Every struck note rings until its slowest partial is this far under its start (9.2 τ) and
then fades over ``FADE_S``: a tail goes on into the noise floor (≤ −80 dBFS where the stroke
peaks at full scale) instead of stopping 41–52 dB down as it did."""
TAIL_TIME_CONSTANTS = TAIL_DB / (20.0 * math.log10(math.e))  # 9.21 τ of the slowest partial
FADE_S = 0.05  # raised-cosine fade at the very end of every note
REFERENCE_HZ = 261.63  # decay times are stated for a note at this pitch
SE_DAMP_S = 0.08  # a 瑟 string stopped by a re-pluck dies out over this time
SE_LEVEL_DB = 1.0  # a 瑟 pluck's level varies within ± this (seeded by the note): PROJECT CHOICE
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
               "19–24 dB under it, a 側鼓 stroke the reverse; every mode above a pair 3–10 % "
               "apart (Rossing et al. 1988), the struck point's member the louder: the (3,0) "
               "pair at 2.5–3.1 × (Shen 1987: 2.81, 3.0), the 側鼓音's octave, upper pairs to "
               "16 × that die within a tenth of a second (a bright strike); τ = 0.5 s × "
               "(261.63/f)^0.6 for the struck tone (T60 3.5 s at C4), ringing to −80 dB; a "
               "mallet's tick at 3.5 kHz"),
        Voice("鑮", False, 0.21,
               "large single bell (鑮如鍾而大), also two-tone: the 正鼓音 with its 側鼓音 a "
               "minor third up 20 dB under it, its (3,0) and four upper pairs, darker, "
               "quieter and longer than a 編鐘 of its pitch (τ × 1.3: T60 4.5 s at C4, "
               "PROJECT ESTIMATE), a low thud at the strike"),
        Voice("編磬", False, 0.22,
               "L-shaped stone chime: partials 1 : 2.16 : 3.93 : 5.92 (PROJECT ESTIMATE of an "
               "L-shaped stone's lowered modes, see docs/voices.md), amplitudes 1, 0.4, 0.2, "
               "0.08, each decaying at a constant Q of 200 (τ = 1/(π·f·0.005): stone damps "
               "more than bronze, T60 1.7 s at C4), a wooden-mallet click"),
        Voice("瑟", False, 0.36,
               "plucked silk-string zither: modes h·f·√(1 + 1e-4·h²) shaped by the pluck "
               "point (sin(π·h·β)/h; every pluck one of four points β 0.09–0.21 and forces, "
               "its level ±1 dB), 40 dB decay in 2.2 s × (261.63/f)^0.5 for the fundamental "
               "and faster above, weighted by four body resonances (110–820 Hz, PROJECT "
               "MODEL) that also knock at the pluck; a re-plucked string is stopped first; "
               "harder plucks are brighter"),
        Voice("笙", True, 0.14,
               "free-reed mouth organ: a chord of three pipes (the note, the fifth and the "
               "octave above), each a reed (harmonics 1/h) shaped by its pipe's odd "
               "resonances (pipe 2 % above the reed: Cottingham 2011); the breath drifts "
               "(level and brightness, ±1.2 dB) and dips where it turns (blown and drawn), "
               "breath noise that does not loop; 50 ms attack, 80 ms release"),
        Voice("和", True, 0.10,
               "small mouth organ (笙小者謂之和): the 笙 voice an octave higher (2 × the "
               "note) and softer"),
        Voice("管", True, 0.19,
               "paired edge-blown pipes (並兩而吹之; 鄭: 如篴而小): all harmonics of an open "
               "pipe falling with frequency, the jet's edge noise at the harmonics and a hiss, "
               "a chiff where the second harmonic speaks first; the second pipe 6 cents higher "
               "and 15 dB softer so they beat gently; the breath drifts (±0.8 dB); 70 ms "
               "attack, 100 ms release"),
        Voice("歌", True, 0.095,
               "two men singing the lyric an octave under the written 律: per syllable its "
               "consonant in parts (closure, burst, aspiration, a nasal's murmur, the "
               "formants moving from the consonant's locus) and vowel targets (Peterson & "
               "Barney formants, adult male; glides and nasal codas) on a tilted glottal "
               "source (−12 dB/oct, +6 dB/oct radiation) with breath noise, level even "
               "across pitch, 5.5 Hz vibrato unbroken across syllables; legato syllables "
               "glide from one pitch to the next on one continuous phase; the second singer "
               "7 cents higher and 18 ms later; 60 ms attack, 150 ms release"),
        Voice("建鼓", False, 0.25,
               "large two-headed drum on a post: six modes on 62 Hz ((0,1), (1,1) at 1.47, "
               "(2,1), (0,2), (3,1), (4,1)); the (0,1) decays fastest (τ 0.18 s), the (1,1) "
               "rings longest (τ 0.6 s), to −80 dB; every stroke its own: strike point, "
               "force (±1.5 dB, level and brightness), pitch (±12 cents), damping, slap and "
               "click; a pitch drop from +15 %; ignores the note's pitch"),
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
    # the brightness b that also scales it); the filter is the voice's
    # (instruments.voices.struck_models)
    "編鐘": (0.002, 0.6, 2),  # the mallet's tick on bronze: band-pass at 3.5 kHz, Q 1
    "鑮": (0.02, 0.6, 1),  # a low thud: low-pass at 2 f (≤ 600 Hz)
    "編磬": (0.003, 0.35, 1),  # a wooden-mallet click: low-pass at 4 kHz
    "drum": (0.03, 0.7, 1),  # the slap: low-pass at the drum's cut-off × (0.6 + 0.8 b)
}
"""Each struck voice's strike noise: white noise under amp·e^(−t/τ) (cut after 12 τ) through a
second-order Butterworth filter."""

DRUM_CONTACT: tuple[float, float, float, float] = (0.0012, 0.3, 3000.0, 0.8)
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

TAO_LENGTH_S = 0.85
"""A shake of the 鼗 lasts this long: its last pellet at 0.5 s, then 10 τ of its slowest mode."""

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


BO_RING = 1.3
"""The 鑮 rings this much longer than a 編鐘 at the same pitch: PROJECT ESTIMATE — no decay of a
鎛 was measured at hand; it is larger and thicker for its pitch (「鑮如鍾而大」) and its mouth is
flat where the 鐘's is arched, both of which lengthen a bell's ring; it used to decay faster
(0.35 against 0.5 s at C4), which nothing supports."""


def bo_tau_s(freq: float) -> float:
    """The time constant of the 鑮's struck tone: ``BO_RING`` × the 編鐘's at that pitch."""
    return _clamp(BO_RING * 0.5 * _below_reference(freq, 0.6), 0.2, 2.0)


QING_LOSS_FACTOR = 5e-3
"""The 編磬's loss factor η: each mode decays with τ = 1 / (π·f·η) (a constant Q of 200).
PROJECT ESTIMATE — no decay of a 磬 was measured at hand.  Rock damps more than bronze (loss
factors of 10⁻³–10⁻² for stone and concrete against 10⁻⁴–10⁻³ for brass and copper: Cremer,
Heckl and Ungar, *Structure-Borne Sound*, as tabulated by T. Irvine, "Damping properties of
materials", 2004), so a stone rings shorter than a bronze bell of its pitch: T60 1.7 s at C4
against the 編鐘's 3.5 s (it rang 1.6× longer than the bronze at every pitch)."""


def qing_tau_s(freq: float) -> float:
    """The time constant of the 編磬's fundamental (its upper partials: the same Q)."""
    return _clamp(1.0 / (math.pi * freq * QING_LOSS_FACTOR), 0.05, 2.0)


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
        return TAO_LENGTH_S
    if name in DRUMS:
        return TAIL_TIME_CONSTANTS * DRUMS[name][1] * DRUM_DAMPING  # the longest ring
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
    """(variant, level factor) of a bell's or stone's note with seed ``seed``: the variant picks
    the strike point, the factor is within ±STROKE_LEVEL_DB."""
    mixed = (seed * 2654435761) & 0xFFFFFFFF
    level_db = STROKE_LEVEL_DB * (2.0 * ((mixed >> 8) & 0xFFFF) / 0xFFFF - 1.0)
    return seed % STROKE_VARIANTS, 10.0 ** (level_db / 20.0)


def _draws(seed: int, count: int) -> list[float]:
    """``count`` numbers in [0, 1) drawn from ``seed`` by splitmix64 (integer arithmetic: the
    same in every process; neighbouring seeds give unrelated draws)."""
    out = []
    state = seed & _MASK64
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        out.append(((z ^ (z >> 31)) >> 11) / 2 ** 53)
    return out


_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class DrumStroke:
    """What one drum stroke's seed decides: where the stick lands, how hard, how the head is
    tensioned under it, how the hand slaps and the stick clicks."""

    radius: float  # strike point, fraction of the head's radius (DRUM_STRIKE_RADIUS)
    force_db: float  # level and brightness over the written velocity (±DRUM_FORCE_DB)
    cents: float  # pitch (±STROKE_PITCH_CENTS)
    slap: float  # the slap noise's band, × its nominal cut-off (0.8–1.25)
    click: float  # the stick's contact click, × its nominal level (0.8–1.25)
    damping: float  # the ring's time constants × this (0.94–1.06): the stick or hand resting


def _kronecker(k: int, dims: int) -> list[float]:
    """Point ``k`` of the R_d low-discrepancy sequence in [0, 1)^dims (Roberts 2018: frac(0.5 +
    k·α_j) with α_j = g^−j, g the positive root of x^(dims+1) = x + 1): consecutive strokes
    never land near each other in every respect at once, as random draws sometimes do."""
    g = 2.0
    for _ in range(60):  # Newton on x^(d+1) − x − 1
        g -= (g ** (dims + 1) - g - 1.0) / ((dims + 1) * g ** dims - 1.0)
    return [(0.5 + k * g ** -(j + 1)) % 1.0 for j in range(dims)]


def _triangular(u: float) -> float:
    """A number in [−1, 1] with the triangular distribution, from a uniform ``u`` in [0, 1)."""
    return -1.0 + math.sqrt(2.0 * u) if u < 0.5 else 1.0 - math.sqrt(2.0 * (1.0 - u))


def drum_stroke(variant: int) -> DrumStroke:
    """The stroke of a drum note whose variant is ``variant``: the stroke's number in its drum's
    part (``sequencer.outputs.render`` counts them), modulo ``DRUM_STROKES``.  Strike point,
    force, pitch and damping are the stroke's point of a low-discrepancy sequence
    (``_kronecker``): every stroke of a part differs from every other in some of them; the
    slap and click are drawn (splitmix64)."""
    k = variant % DRUM_STROKES
    radius_u, force_u, cents_u, damping_u = _kronecker(k, 4)
    slap_u, click_u = _draws(k, 2)
    low, high = DRUM_STRIKE_RADIUS
    return DrumStroke(radius=low + (high - low) * radius_u,
                      force_db=DRUM_FORCE_DB * _triangular(force_u),
                      cents=STROKE_PITCH_CENTS * (2.0 * cents_u - 1.0),
                      slap=0.8 * (1.25 / 0.8) ** (round(8 * slap_u) / 8),  # 9 bands: cached
                      click=0.8 * (1.25 / 0.8) ** click_u,
                      damping=DRUM_DAMPING ** (2.0 * damping_u - 1.0))


def stroke_gain(instrument: str, seed: int) -> float:
    """The level factor of a struck or plucked note with seed ``seed``: a drum stroke's force, a
    瑟 pluck's ±SE_LEVEL_DB, the other struck voices' ±STROKE_LEVEL_DB (the sustained: 1)."""
    if instrument in DRUMS:
        return 10.0 ** (drum_stroke(seed).force_db / 20.0)
    if instrument == "瑟":
        return 10.0 ** (SE_LEVEL_DB * (2.0 * _draws(seed, 1)[0] - 1.0) / 20.0)
    if VOICES[instrument].sustained:
        return 1.0
    return stroke_variant(seed)[1]


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
    glide_from: float | None = None  # 歌: the pitch of the syllable sung straight before it
    legato: str = ""  # 歌: how it joins the next syllable ("voiced", "stopped"; "": it ends)
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:  # a render looks keys up ~100,000 times: hashed once
        object.__setattr__(self, "_hash", hash(self._fields()))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[NoteKey], tuple[object, ...]]:
        return NoteKey, self._fields()  # rebuilt, so hashed again where it is read back

    def _fields(self) -> tuple[object, ...]:
        return (self.instrument, self.freq_hz, self.duration_s, self.velocity,
                self.sample_rate, self.bell_interval, self.syllable, self.strike, self.variant,
                self.glide_from, self.legato)


def velocity_amp(key: NoteKey) -> tuple[float, float]:
    """(amplitude scale, brightness 0…1) for the key's velocity: ∝ (v/127)^1.5 × the voice's
    level, and v/127."""
    v = key.velocity / 127.0
    return (v ** 1.5) * VOICES[key.instrument].level, v


LEGATO_TAIL_S = 0.1
"""A 歌 note joined to the next one (``NoteKey.legato``) ends this long after the next one's
onset: its voice is gone 48 ms after it (the second singer's 18 ms and the 30 ms crossing),
then the end fade."""


def key_length(key: NoteKey) -> int:
    """The number of samples of the note ``key`` names."""
    if key.legato:
        seconds = (key.duration_s or 0.0) + LEGATO_TAIL_S
    else:
        seconds = natural_length_s(key.instrument, key.freq_hz, key.duration_s or 0.0)
    return max(1, int(round(seconds * key.sample_rate)))

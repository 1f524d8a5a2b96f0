"""Tuning: the twelve 律, 三分損益 from 鄭玄's pipe lengths, 清 octaves, and a chosen 黃鍾.

Pitches are integers: semitones above 黃鍾 (the 詩譜's ``semitones``), +12 for each 清 octave
and -12 for each 濁 octave.  A :class:`Tuning` turns them into frequency ratios, Hz, MIDI notes
with a cents offset, and MIDI pitch-wheel values.

三分損益 ("sanfen")
    The ratios are computed, with exact :class:`~fractions.Fraction` arithmetic, from the
    generation chain recorded in ``cues/data/sources/reference/pitch_facts.json`` (鄭玄's note on
    周禮·春官·大師: 「下生者三分去一，上生者三分益一」): start from a 黃鍾 pipe of 9 寸, multiply
    the length by 2/3 (三分損一) or 4/3 (三分益一) along the chain, and take the frequency ratio
    as 9 / length.  The result is Pythagorean: 林鍾 3/2, 太蔟 9/8, 大呂 2187/2048, …  Other
    octaves multiply by 2**k (三分損益 does not close: 仲呂's next step overshoots 黃鍾清 by the
    Pythagorean comma, so 黃鍾清 is taken as exactly 2, as the 清 octave is by definition).
"equal"
    Twelve-tone equal temperament on the same 黃鍾: ratio 2 ** (semitones / 12).

Absolute pitch
    No source gives 黃鍾 a frequency (``pitch_facts.json``: "No classical text gives an absolute
    frequency"; the one sourced estimate, the Zeng bells' norm tone near F4, is explicitly *not*
    an identification of 黃鍾).  The default is therefore a convention, stated as such:
    :data:`DEFAULT_HUANGZHONG_HZ` = C4 of twelve-tone equal temperament at A4 = 440 Hz
    (440 · 2^(-9/12) ≈ 261.63 Hz).  With 黃鍾 = C the 律 fall on the familiar letter names
    (黃鍾 C, 太蔟 D, 姑洗 E, 蕤賓 F♯, 林鍾 G, 南呂 A, 應鍾 B, 無射 B♭), which is how modern
    transcriptions most often write the 律 when they fix none; the 詩譜 range 黃鍾 … 太蔟清
    (C4–D5) lies in a comfortable singing range; and 黃鍾 itself is then exactly a MIDI note
    (60) with no pitch bend, so only the 三分損益 deviations show.  Users choose another
    (``--huangzhong``), e.g. 293.66 Hz to put 黃鍾 on D4.

MIDI numbers assume A4 = 440 Hz = MIDI 69.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from types import MappingProxyType

from cues.errors import UserError

# the twelve 律 in pitch order (as cues.repertoire.LU_NAMES; repeated here so that importing this
# module stays cheap for the CLI's --help — a test checks that the two agree)
LU_NAMES = (
    "黃鍾", "大呂", "太蔟", "夾鍾", "姑洗", "仲呂", "蕤賓", "林鍾", "夷則", "南呂", "無射", "應鍾",
)

A4_HZ = 440.0
A4_MIDI = 69
DEFAULT_HUANGZHONG_HZ: float = A4_HZ * 2.0 ** ((60 - A4_MIDI) / 12)  # C4 ≈ 261.6256 Hz
TUNING_SYSTEMS = ("sanfen", "equal")
#: the range accepted for 黃鍾 (the piano's, A0 … C8), so that every 律 of the 詩譜 has a MIDI note
HUANGZHONG_MIN_HZ = 27.5
HUANGZHONG_MAX_HZ = 4186.01

PITCH_FACTS = "reference/pitch_facts.json"
HUANGZHONG_PIPE_CUN = Fraction(9)  # 「黃鍾長九寸」
_STEP = re.compile(r"^\s*(\S+?)\s*→\s*(\S+?)\s*\(.*?×\s*(\d+)\s*/\s*(\d+)\s*\)\s*$")


@cache
def sanfen_pipe_lengths() -> MappingProxyType[str, Fraction]:
    """The pipe length (寸) of each 律, following the 三分損益 chain of ``pitch_facts.json``."""
    from cues.sources import read_json_source

    facts = read_json_source(PITCH_FACTS)
    chain = facts["generation_rule_primary_source"]["chain"]
    lengths: dict[str, Fraction] = {LU_NAMES[0]: HUANGZHONG_PIPE_CUN}
    for step in chain:
        match = _STEP.match(step)
        if match is None:
            raise ValueError(f"{PITCH_FACTS}: cannot read chain step {step!r}")
        src, dst = match.group(1), match.group(2)
        num, den = int(match.group(3)), int(match.group(4))
        if src not in lengths or dst in lengths or dst not in LU_NAMES:
            raise ValueError(f"{PITCH_FACTS}: chain step {step!r} is out of order")
        lengths[dst] = lengths[src] * Fraction(num, den)
    if set(lengths) != set(LU_NAMES):
        raise ValueError(f"{PITCH_FACTS}: the chain does not reach all twelve 律")
    return MappingProxyType({name: lengths[name] for name in LU_NAMES})


@cache
def sanfen_ratios() -> tuple[Fraction, ...]:
    """Exact frequency ratios above 黃鍾 of the twelve 律, in pitch order (each in [1, 2))."""
    out: list[Fraction] = []
    for length in sanfen_pipe_lengths().values():
        ratio = HUANGZHONG_PIPE_CUN / length  # frequency is inversely proportional to length
        while ratio >= 2:
            ratio /= 2
        while ratio < 1:
            ratio *= 2
        out.append(ratio)
    if out != sorted(out):
        raise ValueError(f"{PITCH_FACTS}: the 三分損益 ratios are not in 律 order: {out}")
    return tuple(out)


def lu_name(semitones: int) -> str:
    """The 律 name of a pitch given in semitones above 黃鍾.

    0…11 are the twelve 律 (黃鍾 … 應鍾); each octave above adds 清 ("黃鍾清" = 12, "太蔟清" =
    14, "黃鍾清清" = 24); each octave below 黃鍾 adds 濁 ("應鍾濁" = -1, "無射濁" = -2,
    "黃鍾濁" = -12, "黃鍾濁濁" = -24).  The 濁 (low) register is what the old texts also call
    倍 (a pipe of double length); the suffix form mirrors "黃鍾清" so that names sort by 律.
    """
    return LU_NAMES[int(semitones) % 12] + octave_mark(semitones)


def octave_mark(semitones: int) -> str:
    """清 for each octave above 黃鍾's, 濁 for each octave below ('' in 黃鍾's octave)."""
    octave = int(semitones) // 12
    return "清" * octave if octave > 0 else "濁" * -octave


def cents(ratio: Fraction | float) -> float:
    """The size of a frequency ratio in cents."""
    return 1200.0 * math.log2(float(ratio))


def cents_ratio(cents: float) -> float:
    """The frequency ratio of an interval of ``cents`` (the inverse of :func:`cents`)."""
    return 2 ** (cents / 1200)


def midi_key_hz(key: float) -> float:
    """The frequency of a MIDI key, fractional keys included (A4 = 440 Hz = 69)."""
    return A4_HZ * 2 ** ((key - A4_MIDI) / 12)


def hz_midi_key(hz: float) -> float:
    """The fractional MIDI key of a frequency (the inverse of :func:`midi_key_hz`)."""
    return A4_MIDI + 12.0 * math.log2(hz / A4_HZ)


@dataclass(frozen=True)
class Tuning:
    """A tuning system and the frequency of 黃鍾."""

    system: str = "sanfen"  # 三分損益 (exact Pythagorean ratios) or "equal"
    huangzhong_hz: float = DEFAULT_HUANGZHONG_HZ

    def __post_init__(self) -> None:
        if self.system not in TUNING_SYSTEMS:
            raise ValueError(f"unknown tuning system {self.system!r}; expected one of "
                             f"{', '.join(TUNING_SYSTEMS)}")
        if not (math.isfinite(self.huangzhong_hz) and self.huangzhong_hz > 0):
            raise ValueError(f"黃鍾 must be a positive frequency in Hz, not {self.huangzhong_hz!r}")

    def ratio(self, semitones: int) -> Fraction | float:
        """Frequency ratio above 黃鍾: an exact Fraction for sanfen, a float for equal."""
        if self.system == "equal":
            return 2.0 ** (semitones / 12)
        octave, pc = divmod(int(semitones), 12)
        return sanfen_ratios()[pc] * Fraction(2) ** octave

    def hz(self, semitones: int) -> float:
        return self.huangzhong_hz * float(self.ratio(semitones))

    def midi_float(self, semitones: int) -> float:
        """The pitch as a fractional MIDI note number (A4 = 440 Hz = 69)."""
        return hz_midi_key(self.hz(semitones))

    def midi(self, semitones: int) -> tuple[int, float]:
        """The nearest MIDI note and the offset from it in cents, in (-50, 50]."""
        exact = self.midi_float(semitones)
        note = math.ceil(exact - 0.5)
        return note, (exact - note) * 100.0

    def pitch_bend(self, semitones: int, bend_range_semitones: int = 2) -> tuple[int, int]:
        """The MIDI note and the pitch-wheel value (-8192 … 8191) that sound the pitch.

        ``bend_range_semitones`` is the receiver's pitch-bend range (RPN 0; 2 is the GM default).
        """
        if bend_range_semitones < 1:
            raise ValueError(f"pitch-bend range must be at least 1 semitone, "
                             f"not {bend_range_semitones}")
        note, offset = self.midi(semitones)
        value = round(offset / (100.0 * bend_range_semitones) * 8192)
        return note, max(-8192, min(8191, value))

    def cents_from_equal(self, semitones: int) -> float:
        """How far the pitch lies from the equal-tempered pitch on the same 黃鍾, in cents."""
        if self.system == "equal":
            return 0.0
        return cents(self.ratio(semitones)) - 100.0 * semitones

    def describe(self) -> str:
        """One line for score credits and reports, e.g. "三分損益, 黃鍾 = 261.63 Hz (C4)"."""
        system = "三分損益 (Pythagorean)" if self.system == "sanfen" else "equal temperament"
        note, offset = self.midi(0)
        where = _note_name(note)
        if abs(offset) >= 0.5:
            where += f" {offset:+.0f}¢"
        return f"{system}, 黃鍾 = {self.huangzhong_hz:.2f} Hz ({where}, A4 = 440 Hz)"


_NAMES = ("C", "C♯", "D", "E♭", "E", "F", "F♯", "G", "G♯", "A", "B♭", "B")


def _note_name(midi: int) -> str:
    return f"{_NAMES[midi % 12]}{midi // 12 - 1}"


def parse_tuning(system: str, huangzhong_hz: float) -> Tuning:
    """A Tuning from user input; a UserError says what is wrong and what is expected."""
    name = (system or "").strip().lower()
    if name not in TUNING_SYSTEMS:
        raise UserError(f"unknown tuning {system!r}: expected one of {', '.join(TUNING_SYSTEMS)} "
                        "(sanfen = 三分損益, equal = twelve-tone equal temperament)")
    try:
        hz = float(huangzhong_hz)
    except (TypeError, ValueError):
        raise UserError(f"黃鍾 frequency must be a number in Hz, not {huangzhong_hz!r}") from None
    if not (math.isfinite(hz) and HUANGZHONG_MIN_HZ <= hz <= HUANGZHONG_MAX_HZ):
        raise UserError(f"黃鍾 frequency {huangzhong_hz!r} Hz is out of range: expected "
                        f"{HUANGZHONG_MIN_HZ}–{HUANGZHONG_MAX_HZ} Hz (default "
                        f"{DEFAULT_HUANGZHONG_HZ:.2f} Hz = C4)")
    return Tuning(system=name, huangzhong_hz=hz)

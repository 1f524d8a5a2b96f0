"""The compiler's settings: every value the timeline depends on, from the sheet's [settings]
and then the command line, checked before anything is compiled (UserError when out of range)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from fractions import Fraction

from cues.errors import UserError
from cues.limits import NUMBER_CHARS, over_limit
from instruments.tuning import DEFAULT_HUANGZHONG_HZ, parse_tuning
from sequencer import drums

RELEASE_RULES = ("half", "quarters")
# the 九夏's order: the bells first (鄭: 「先擊鍾，次擊鼓」)
# or the drums first (大射 疏: 「先擊鼓，後擊鍾鑮」)
JIU_XIA_ORDERS = ("鍾先", "鼓先")
BELLS_FIRST = JIU_XIA_ORDERS[0]


@dataclass(frozen=True)
class CompileSettings:
    """Every setting the timeline depends on (the sheet's [settings], then the command line)."""

    tempo_bpm: Fraction = Fraction(60)  # sung syllables a minute
    jie_seconds: Fraction | None = None  # None: one 終 of the 射節 song
    lost_zhong_seconds: Fraction = Fraction(20)
    go_gap_s: Fraction = Fraction(2)
    huangzhong_hz: float = DEFAULT_HUANGZHONG_HZ
    tuning: str = "sanfen"
    drum_pattern: str = drums.DEFAULT_PATTERN
    drum_reading: str = drums.DEFAULT_READING
    release_rule: str = "half"
    jiu_xia_order: str = BELLS_FIRST

    def describe(self) -> tuple[tuple[str, str], ...]:
        return tuple((f.name, str(getattr(self, f.name))) for f in fields(self))


_SETTING_TYPES = {
    "tempo_bpm": Fraction, "jie_seconds": Fraction, "lost_zhong_seconds": Fraction,
    "go_gap_s": Fraction, "huangzhong_hz": float, "tuning": str, "drum_pattern": str,
    "drum_reading": str, "release_rule": str, "jiu_xia_order": str,
}


def make_settings(
    sheet: Mapping[str, object] | None = None, overrides: Mapping[str, object] | None = None,
) -> CompileSettings:
    """Settings from a sheet's [settings] and command-line overrides, validated (UserError)."""
    values: dict[str, object] = {}
    for source in (sheet or {}, overrides or {}):
        for key, value in source.items():
            if value is not None and key in _SETTING_TYPES:
                values[key] = _setting_value(key, value)
    settings = CompileSettings(**values)  # type: ignore[arg-type]
    _check_ranges(settings)
    return settings


def _setting_value(key: str, value: object) -> object:
    """``value`` as the type of setting ``key``; UserError when it is not a number it should be."""
    kind = _SETTING_TYPES[key]
    if kind is str:
        return str(value)
    if isinstance(value, str) and len(value) > NUMBER_CHARS.value:
        raise UserError(f"setting {key}: {over_limit(NUMBER_CHARS, len(value))}")
    try:
        if isinstance(value, bool) or not isinstance(value, int | float | str | Fraction):
            raise ValueError
        if kind is Fraction and (isinstance(value, Fraction)
                                 or isinstance(value, str) and "/" in value):
            return Fraction(value)  # exact already; "1/3": a fraction has no exponent
        number = float(value)
        if not math.isfinite(number):
            raise UserError(f"setting {key} = {value!r}: expected a finite number")
        if kind is float:
            return number
        if isinstance(value, float) or (isinstance(value, str) and "e" in value.lower()):
            return Fraction(repr(number))  # an exponent such as 1e-99999999: no huge powers
        return Fraction(value)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        raise UserError(f"setting {key} = {value!r}: expected a number") from None


def _check_ranges(s: CompileSettings) -> None:
    if not 1 <= s.tempo_bpm <= 600:
        raise UserError(f"tempo {s.tempo_bpm} is out of range: expected 1–600 syllables a minute")
    if s.jie_seconds is not None and not Fraction(1, 10) <= s.jie_seconds <= 3600:
        raise UserError(f"節 length {float(s.jie_seconds)} s is out of range: expected 0.1–3600 s")
    if not 1 <= s.lost_zhong_seconds <= 3600:
        raise UserError("lost_zhong_seconds is out of range: expected 1–3600 s")
    if not 0 <= s.go_gap_s <= 3600:
        raise UserError("go_gap_s is out of range: expected 0–3600 s")
    if s.release_rule not in RELEASE_RULES:
        raise UserError(f"unknown release rule {s.release_rule!r}: expected one of "
                        f"{', '.join(RELEASE_RULES)}")
    if s.jiu_xia_order not in JIU_XIA_ORDERS:
        raise UserError(f"unknown jiu_xia_order {s.jiu_xia_order!r}: expected one of "
                        f"{', '.join(JIU_XIA_ORDERS)}")
    if s.drum_pattern not in drums.PATTERNS:
        raise UserError(f"unknown drum pattern {s.drum_pattern!r}: expected one of "
                        f"{', '.join(drums.PATTERNS)}")
    drums.pattern_string(s.drum_pattern, s.drum_reading)  # checks the reading
    parse_tuning(s.tuning, s.huangzhong_hz)

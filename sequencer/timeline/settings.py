"""The compiler's settings: every value the timeline depends on, from the sheet's [settings]
and then the command line, checked before anything is compiled (UserError when out of range)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any

from cues.errors import UserError
from cues.limits import NUMBER_CHARS, over_limit
from instruments.tuning import DEFAULT_HUANGZHONG_HZ, TUNING_SYSTEMS, parse_tuning
from sequencer.timeline import drums

RELEASE_RULES = ("half", "quarters")
# the 九夏's order: the bells first (鄭: 「先擊鍾，次擊鼓」)
# or the drums first (大射 疏: 「先擊鼓，後擊鍾鑮」)
JIU_XIA_ORDERS = ("鍾先", "鼓先")
BELLS_FIRST = JIU_XIA_ORDERS[0]
MAX_HUMANIZE_MS = 50


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
    humanize_ms: Fraction = Fraction(0)  # the drummers' timing error (standard deviation, ms)


SETTING_TYPES: dict[str, type] = {
    "tempo_bpm": Fraction, "jie_seconds": Fraction, "lost_zhong_seconds": Fraction,
    "go_gap_s": Fraction, "huangzhong_hz": float, "tuning": str, "drum_pattern": str,
    "drum_reading": str, "release_rule": str, "jiu_xia_order": str, "humanize_ms": Fraction,
}
SETTING_NAMES = tuple(f.name for f in fields(CompileSettings))


def make_settings(
    sheet: Mapping[str, object] | None = None, overrides: Mapping[str, object] | None = None,
    *, flags: Mapping[str, str] | None = None,
) -> CompileSettings:
    """Settings from a sheet's [settings] and then ``overrides`` (a None leaves the value before
    it), each checked alone and then together (UserError).

    ``flags`` names how the user wrote an override (``tempo_bpm`` → ``--tempo``): its error then
    names the flag and the value as typed, ``--tempo abc: expected a number``; a sheet's value is
    named as the sheet writes it, ``setting tempo_bpm = 'abc': expected a number``.  Keys that
    are not settings of the timeline are ignored (a sheet's ``bell_interval`` is the
    renderer's)."""
    values: dict[str, object] = {}
    given: dict[str, tuple[object, str | None]] = {}  # the value as written, and its flag
    for source, named in ((sheet or {}, {}), (overrides or {}, flags or {})):
        for key, value in source.items():
            if value is None or key not in SETTING_TYPES:
                continue
            given[key] = (value, named.get(key))
            try:
                values[key] = _setting_value(key, value)
            except _Problem as problem:
                raise UserError(problem.said(key, *given[key])) from None
    for key, value in values.items():  # the values in force: a sheet's may be overridden
        wrong = _CHECKS[key](value)
        if wrong:
            raise UserError(_Problem(wrong, of_value=False).said(key, *given[key]))
    # each value has its field's type: _setting_value converted it by SETTING_TYPES
    settings = CompileSettings(**values)  # type: ignore[arg-type]
    _check_together(settings, flags or {})
    return settings


class _Problem(Exception):
    """What is wrong with one setting's value, before it is said whose value it is."""

    def __init__(self, text: str, *, of_value: bool = True, limit: bool = False) -> None:
        super().__init__(text)
        self.text, self.of_value, self.limit = text, of_value, limit

    def said(self, key: str, value: object, flag: str | None) -> str:
        if self.limit:  # the value itself is too long to repeat
            return f"{flag or 'setting ' + key}: {self.text}"
        if flag is not None:
            return f"{flag} {value}: {self.text}"
        return f"setting {key} = {value!r}: {self.text}" if self.of_value else self.text


def _setting_value(key: str, value: object) -> object:
    """``value`` as the type of setting ``key``; _Problem when it is not a number it should be."""
    kind = SETTING_TYPES[key]
    if kind is str:
        return str(value)
    if isinstance(value, str) and len(value) > NUMBER_CHARS.value:
        raise _Problem(over_limit(NUMBER_CHARS, len(value)), limit=True)
    try:
        if isinstance(value, bool) or not isinstance(value, int | float | str | Fraction):
            raise ValueError
        if kind is Fraction and (isinstance(value, Fraction)
                                 or isinstance(value, str) and "/" in value):
            return Fraction(value)  # exact already; "1/3": a fraction has no exponent
        number = float(value)
        if not math.isfinite(number):
            raise _Problem("expected a finite number")
        if kind is float:
            return number
        if isinstance(value, float) or (isinstance(value, str) and "e" in value.lower()):
            return Fraction(repr(number))  # an exponent such as 1e-99999999: no huge powers
        return Fraction(value)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        raise _Problem("expected a number") from None


def _one_of(what: str, allowed: tuple[str, ...]) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        if value in allowed:
            return None
        return f"unknown {what} {value!r}: expected one of {', '.join(allowed)}"
    return check


def _tuning(system: str = TUNING_SYSTEMS[0], hz: float = DEFAULT_HUANGZHONG_HZ) -> str | None:
    try:
        parse_tuning(system, hz)
    except UserError as exc:
        return str(exc)
    return None


# each setting alone: None, or what is wrong with it
_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "tempo_bpm": lambda v: None if 1 <= v <= 600 else
    f"tempo {v} is out of range: expected 1–600 syllables a minute",
    "jie_seconds": lambda v: None if Fraction(1, 10) <= v <= 3600 else
    f"節 length {float(v)} s is out of range: expected 0.1–3600 s",
    "lost_zhong_seconds": lambda v: None if 1 <= v <= 3600 else
    "lost_zhong_seconds is out of range: expected 1–3600 s",
    "go_gap_s": lambda v: None if 0 <= v <= 3600 else "go_gap_s is out of range: expected 0–3600 s",
    "humanize_ms": lambda v: None if 0 <= v <= MAX_HUMANIZE_MS else
    f"humanize {float(v):g} ms is out of range: expected 0–{MAX_HUMANIZE_MS} ms (the drummers' "
    "timing error, standard deviation)",
    "release_rule": _one_of("release rule", RELEASE_RULES),
    "jiu_xia_order": _one_of("jiu_xia_order", JIU_XIA_ORDERS),
    "drum_pattern": _one_of("drum pattern", drums.PATTERNS),
    "drum_reading": _one_of("drum reading", drums.READINGS),
    "tuning": lambda v: _tuning(system=v),
    "huangzhong_hz": lambda v: _tuning(hz=v),
}


def _check_together(s: CompileSettings, flags: Mapping[str, str]) -> None:
    """What holds only of settings together: a drum pattern under a reading of 投壺."""
    try:
        drums.pattern_string(s.drum_pattern, s.drum_reading)
    except UserError as exc:
        given = [flags[k] for k in ("drum_pattern", "drum_reading") if k in flags]
        raise UserError(f"{' and '.join(given)}: {exc}" if given else str(exc)) from None

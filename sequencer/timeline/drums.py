"""The drum language: 投壺's 魯鼓 and 薛鼓 patterns and the strokes of a 節.

禮記·投壺 keeps two drum patterns as strings of ○ and □ (``reference/touhu_drums.json``).
鄭注: 「圜者擊鼙，方者擊鼓」 — ○ is a stroke on the small 鼙, □ on the large 鼓 — and
「取半以下為投壺禮，盡用之為射禮」: the whole string is the shooting pattern.

The first block of the text is ambiguous: its labels may follow their strings
(reading ``follow``: 鼓 …… 魯鼓 …… 薛鼓) or precede them (reading ``precede``, as the ifcalm
edition punctuates it, which leaves block 1 with an unlabelled string, a 魯鼓 string, and no
薛鼓 string).  The second block is unambiguous.  Pattern names:

- ``jie`` (default): no 投壺 string — the 鼓 strikes at the 節 and the 鼙 on the quarters.
- ``lu`` / ``xue``: block 1's 魯鼓 / 薛鼓, by the chosen reading (``drum_reading``).
- ``lu2`` / ``xue2``: block 2's 魯鼓 / 薛鼓 (``xue2`` as 禮記.txt ends it; 禮記注疏 adds one ○).

However a pattern is chosen, its strokes are spaced evenly across each 節, so that every onset
of the 射節 lies on one equal grid and 「間若一」 holds for the strokes as for the 節.
"""

from __future__ import annotations

from functools import cache

from cues.errors import UserError
from cues.sources import read_json_source

PATTERNS = ("jie", "lu", "xue", "lu2", "xue2")
READINGS = ("follow", "precede")
DEFAULT_PATTERN = "jie"
DEFAULT_READING = "follow"
SMALL = "鼙"
LARGE = "鼓"


@cache
def _sequences() -> dict[str, dict[str, str]]:
    data = read_json_source("reference/touhu_drums.json")
    seqs = data["sequences"]
    by_prefix: dict[str, dict[str, str]] = {}
    for key, value in seqs.items():
        by_prefix[key.split(" ", 1)[0]] = value
    return by_prefix


def pattern_string(name: str, reading: str = DEFAULT_READING) -> str:
    """The ○/□ string of a named pattern under a reading of block 1."""
    if reading not in READINGS:
        raise UserError(f"unknown drum reading {reading!r}: expected one of {', '.join(READINGS)}")
    seqs = _sequences()
    if name == "jie":
        return "□○○○"
    if name == "lu2":
        return seqs["set2_lu"]["full_for_she"]
    if name == "xue2":
        return seqs["set2_xue"]["full_for_she"]
    if name in ("lu", "xue"):
        if reading == "follow":
            return seqs["set1_lu" if name == "lu" else "set1_xue"]["full_for_she"]
        if name == "lu":  # labels precede: 魯鼓 names block 1's second string
            return seqs["set1_xue"]["full_for_she"]
        raise UserError("under the reading 'precede' block 1 of 投壺 has no 薛鼓 string; "
                        "use the pattern xue2 (block 2) or the reading 'follow'")
    raise UserError(f"unknown drum pattern {name!r}: expected one of {', '.join(PATTERNS)}")


def strokes(name: str, reading: str = DEFAULT_READING) -> tuple[str, ...]:
    """The pattern as strokes: 鼙 for ○, 鼓 for □ (鄭注: 「圜者擊鼙，方者擊鼓」)."""
    out = []
    for ch in pattern_string(name, reading):
        if ch == "○":
            out.append(SMALL)
        elif ch == "□":
            out.append(LARGE)
    return tuple(out)

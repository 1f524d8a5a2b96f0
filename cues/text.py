"""Text for a terminal: the display width of mixed CJK/Latin text, padding by it, and clock times.

A terminal draws a wide character (East Asian Width W or F: 漢字, fullwidth forms, 「」) in two
columns, a combining mark or a zero-width character in none, and everything else in one.  Python's
``str.ljust`` counts characters, so a table of 鄉射禮 cues padded with it misaligns; the
functions here count columns.  The lowest layer of the stack, so that every printer (the command
line's tables, the live console) can use it.
"""

from __future__ import annotations

import unicodedata

_ZERO_WIDTH_CATEGORIES = frozenset({"Mn", "Me", "Cf", "Cc"})


def char_width(ch: str) -> int:
    """Columns a terminal gives one character: 2 (wide), 0 (combining, format, control) or 1."""
    if unicodedata.category(ch) in _ZERO_WIDTH_CATEGORIES or ch == "\u200b":
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: 「鄉射禮」 is 10, "abc" 3, "é" (e + U+0301) 1."""
    return sum(char_width(ch) for ch in text)


def pad(text: str, width: int, align: str = "<") -> str:
    """``text`` padded with spaces to ``width`` columns: ``align`` "<" left, ">" right.

    Text already as wide or wider is returned as it is (never cut)."""
    fill = " " * max(0, width - display_width(text))
    return fill + text if align == ">" else text + fill


def clip(text: str, width: int) -> str:
    """The longest start of ``text`` that fits in ``width`` columns (a wide character is never
    split in half)."""
    out, used = [], 0
    for ch in text:
        size = char_width(ch)
        if used + size > width:
            break
        out.append(ch)
        used += size
    return "".join(out)


def clock(seconds: float | None) -> str:
    """A length or a time as minutes:seconds, rounded to the second ("33:46"); "-" for None.

    Every length the command line reports (a rite's, a render's, a plot's) is written this way."""
    if seconds is None:
        return "-"
    whole = int(round(seconds))
    return f"{whole // 60}:{whole % 60:02d}"

"""How the 工 shape a sung stanza: the stress of its syllables and the arch of its phrases, as
the velocities of the 歌's notes (the MIDI file carries them; the built-in voice sings them as
its level).

The lines are the 詩經's own: the bundled text (``cues.repertoire.Piece.text``, the ifcalm
edition) punctuates every line (、 ， ； 。 ？ ！), and where its characters are the lyric's the
punctuation is taken; where they differ (采蘩 and 采蘋 have a character the 詩譜 lacks) the lyric
is read in lines of four, the 詩經's usual line (the score's bars are of four too).  A couplet
ends at 。 (or ？ ！ ；).

The shape (PROJECT CHOICE of every figure; the principles cited):

* **stress**: a line goes in feet of two syllables, the second the stronger (Chao Yuen Ren, *A
  Grammar of Spoken Chinese*, 1968: a disyllable's usual stress is on its second syllable):
  ±``STRESS_DB``; a line of odd length ends in a foot of one, stressed;
* **the phrase's arch**: a couplet swells to its middle and falls at its end (the "phrase
  arch" of the KTH rules for performance: Friberg, Bresin and Sundberg, "Overview of the KTH
  rule system for musical performance", Advances in Cognitive Psychology 2 (2–3), 2006): down
  to −``COUPLET_ARCH_DB`` at its ends;
* **the stanza's arch**: the same over the stanza, −``STANZA_ARCH_DB`` at its ends;
* the stanza's mean level is the ensemble's (the balance stays the catalog's).

A level in dB is a velocity as the voices hear one: amplitude ∝ velocity^1.5, so Δ dB is
velocity × 10^(Δ/30) from the ensemble's 歌 velocity.
"""

from __future__ import annotations

import math
from functools import cache

from cues import repertoire

STRESS_DB = 1.0
COUPLET_ARCH_DB = 1.5
STANZA_ARCH_DB = 1.0
LINE = 4  # syllables of a line where the text does not say
_LINE_ENDS = set("、，,；;。？?！!：:")
_COUPLET_ENDS = set("。？?！!；;")


@cache
def stanza_lines(title: str) -> tuple[tuple[tuple[int, bool], ...], ...]:
    """Per stanza of piece ``title``, its lines as (syllables, ends a couplet)."""
    piece = repertoire.get_piece(title)
    lyric = "".join(st.lyric for st in piece.stanzas)
    marks = _punctuated(piece.text or "", lyric)
    out = []
    at = 0
    for stanza in piece.stanzas:
        n = len(stanza.lyric)
        lines: list[tuple[int, bool]] = []
        start = 0
        for i in range(n):
            mark = marks.get(at + i) if marks else ("。" if (i + 1) % (2 * LINE) == 0
                                                     else "、" if (i + 1) % LINE == 0 else None)
            if mark is not None or i == n - 1:
                lines.append((i + 1 - start, mark in _COUPLET_ENDS or i == n - 1))
                start = i + 1
        out.append(tuple(lines))
        at += n
    return tuple(out)


def _punctuated(text: str, lyric: str) -> dict[int, str]:
    """Syllable index → the punctuation after it, where ``text``'s characters are the lyric's
    (else empty)."""
    marks: dict[int, str] = {}
    i = -1
    chars = []
    for ch in text:
        if "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf":
            chars.append(ch)
            i += 1
        elif ch in _LINE_ENDS and i >= 0:
            marks[i] = ch
    return marks if "".join(chars) == lyric else {}


@cache
def stanza_levels(title: str, stanza: int) -> tuple[float, ...]:
    """The level (dB from the ensemble's) of each syllable of stanza ``stanza`` (0-based)."""
    lines = stanza_lines(title)[stanza]
    total = sum(n for n, _ in lines)
    levels: list[float] = []
    couplet: list[float] = []
    for n, ends in lines:
        for j in range(n):
            last_single = n % 2 == 1 and j == n - 1
            couplet.append(STRESS_DB if j % 2 == 1 or last_single else -STRESS_DB)
        if ends:
            levels += [s - COUPLET_ARCH_DB * (1.0 - math.sin(math.pi * (k + 0.5) / len(couplet)))
                       for k, s in enumerate(couplet)]
            couplet = []
    levels += couplet
    shaped = [v - STANZA_ARCH_DB * (1.0 - math.sin(math.pi * (i + 0.5) / total))
              for i, v in enumerate(levels)]
    mean = sum(shaped) / len(shaped)
    return tuple(v - mean for v in shaped)  # the stanza's level the ensemble's, on average


def velocity(base: int, level_db: float) -> int:
    """The velocity ``level_db`` over ``base`` (amplitude ∝ velocity^1.5), within 1–127."""
    return max(1, min(127, round(base * 10.0 ** (level_db / 30.0))))

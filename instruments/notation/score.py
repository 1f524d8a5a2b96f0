"""Scores (issue 7): the 詩譜 melodies as music21 scores, for a piece or the sung pieces of a rite.

Editorial choices, each stated in the score itself (as credit text):

* **Rhythm.** The 詩譜 gives one 律 per syllable and no rhythm.  Every syllable is a quarter note;
  bars of four syllables (the usual 詩經 line) are drawn for reading only, under a hidden time
  signature.  Neither is the source's.
* **Lyrics.** Three lyric lines under the voice: 1 the syllable (traditional characters), 2 the
  律 (abbreviated as in the 律呂字 line, with 清 for the upper octave: 黃, 南, 黃清, 太清), 3 the
  工尺 (俗字) as the source writes it.  Lyric lines survive a MusicXML round trip intact.
* **Pitch.** Each note is spelled at the MIDI note nearest to its frequency under the chosen
  :class:`~instruments.tuning.Tuning` (so 黃鍾 follows ``huangzhong_hz``: 293.66 Hz puts it on
  D).  Where the sounding pitch differs from the written one by 1 cent or more (三分損益, or a
  黃鍾 between two notes) the difference is written above the note (``+14``, in cents).
  MusicXML keeps only quarter tones, so the cents are text, not alterations.
* **The voice and the 瑟.** The 工 were men: the voice sounds an octave under the written 律
  (``cues.melody_octaves``), written in the treble-8 clef as tenors are; a second staff, the
  瑟, doubles it at the unison in the same clef (熊朋來's 《瑟譜》 gives the 瑟 the same 律 per
  syllable as the voice) — the octaves the MIDI file and the render play.
* **Anomalies.** Each stanza ``note`` recorded in ``fengya12.json`` (a 律 that disagrees with its
  工尺, a placeholder for a character the digital text could not read) is printed as editorial
  text "[校] …" at the start of the stanza, in the words of ``editorial_text``; where it names a
  position, that note is also marked "校".  The reading printed is the one the note chooses (the
  repertoire's decoding).

A piece whose melody is lost has no score: :func:`piece_score` raises ``UserError`` ("melody
lost; no score is invented").  music21 is imported inside the functions (it is slow to import).
``instruments.notation.score_files`` writes a score to MusicXML or, through LilyPond, PDF.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from cues.errors import UserError
from cues.melody_octaves import melody_octave
from cues.model import Rite
from cues.repertoire import MODES, Piece, Stanza, canonical_title, get_piece
from cues.sources import read_json_source
from cues.text import display_width
from instruments.tuning import Tuning, lu_name, octave_mark

if TYPE_CHECKING:
    from music21 import stream
    from music21.style import TextStyle

SYLLABLES_PER_BAR = 4
CENTS_SHOWN_FROM = 1.0  # |deviation| at which the cents are written above the note
CENTS_TEXT = re.compile(r"^[+-]\d+$")  # a cents text above a note: "+14", "-6"
CONTINUED = "  "  # a credit line that continues the one above (wrapped)

VOICE_OCTAVE = melody_octave("歌")  # semitones from the written 律: the timeline's octave
SE_OCTAVE = melody_octave("瑟")
SE_PART_NAME = "瑟 (se)"
EDITION = "熊朋來《瑟譜》「詩舊譜」: 風雅十二詩譜"
EDITION_LONG = ("熊朋來《瑟譜》(元), 「詩舊譜」: the 風雅十二詩譜 (趙彥肅所傳開元十二詩譜), "
                "after the 欽定四庫全書 text (殆知閣 digital edition); lyrics in traditional "
                "characters")
# the repertoire's notes on the digital text, in the words of a printed edition
_EDITORIAL_WORDS = (
    ("the daizhige OCR placeholder", "the digital text's mark for an unread character"),
    ("OCR placeholder", "unread character in the digital text"),
    ("dropped in OCR", "lost in the digital text"),
    ("OCR", "the digital text"),
)

_CN_DIGITS = "〇一二三四五六七八九十"
_POSITION = re.compile(r"positions?\s+(\d+)(?:\s*-\s*(\d+))?")


# ── labels ─────────────────────────────────────────────────────────────────────────────────────

def stanza_label(number: int) -> str:
    """"第一章" … for the stanza numbers of the 詩譜 (1–99)."""
    if number <= 10:
        digits = _CN_DIGITS[number]
    elif number < 20:
        digits = "十" + (_CN_DIGITS[number - 10] if number > 10 else "")
    else:
        tens, ones = divmod(number, 10)
        digits = _CN_DIGITS[tens] + "十" + (_CN_DIGITS[ones] if ones else "")
    return f"第{digits}章"


def lu_abbreviation(semitones: int) -> str:
    """The 律 as the 律呂字 line writes it (first character), with 清 marks: 黃, 黃清, 太清."""
    return lu_name(semitones)[0] + octave_mark(semitones)


def editorial_text(note: str) -> str:
    """A stanza's anomaly note as the score prints it (the digital text's defects named as such,
    not as scanning jargon)."""
    for old, new in _EDITORIAL_WORDS:
        note = note.replace(old, new)
    return note


def score_title(piece: Piece) -> str:
    """"鹿鳴 — 黃鍾宮" (the mode is part of the title)."""
    return f"{piece.title} — {piece.mode}" if piece.mode else piece.title


@cache
def _notation() -> dict[str, Any]:
    data = read_json_source("reference/fengya12.json")
    return {"notation": data["notation"]}


def mode_description(mode: str) -> str:
    """The source's description of a mode (``fengya12.json`` notation.modes), e.g. 黃鍾宮."""
    simplified = {v: k for k, v in MODES.items()}.get(mode, mode)
    text = _notation()["notation"]["modes"].get(simplified, "")
    return f"{mode}: {text}" if text else mode


def _marked_positions(note: str) -> set[int]:
    """0-based note indices a stanza's anomaly note names ("position 6", "positions 1-2")."""
    out: set[int] = set()
    for match in _POSITION.finditer(note):
        first = int(match.group(1))
        last = int(match.group(2) or first)
        out.update(range(first - 1, last))
    return out


# ── the builder ────────────────────────────────────────────────────────────────────────────────

@dataclass
class _Builder:
    """Appends stanzas (and text-only lines) to a voice part and a 瑟 part, bar by bar."""

    tuning: Tuning
    voice: Any = None
    se: Any = None
    measure_number: int = 0
    last_length: int | None = None
    notes: int = 0
    editorial: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        from music21 import clef, instrument, stream

        from cues.catalog import get_instrument

        self.voice = stream.Part(id="voice")
        self.voice.partName = "歌 (voice)"
        self.voice.partAbbreviation = "歌"
        singer = instrument.Vocalist()
        singer.partName = "歌 (voice)"
        self.voice.insert(0, singer)
        self.voice.insert(0, clef.Treble8vbClef())  # men: an octave under the written 律

        self.se = stream.Part(id="se")
        self.se.partName = SE_PART_NAME
        self.se.partAbbreviation = "瑟"
        zither = instrument.Instrument()
        zither.instrumentName = "瑟"
        zither.partName = SE_PART_NAME
        zither.midiProgram = get_instrument("瑟").gm_program
        self.se.insert(0, zither)
        self.se.insert(0, clef.Treble8vbClef())

    def _measures(self, length: int) -> tuple[Any, Any]:
        from music21 import meter, stream

        self.measure_number += 1
        pair = []
        for _ in range(2):
            measure = stream.Measure(number=self.measure_number)
            if length != self.last_length:
                signature = meter.TimeSignature(f"{length}/4")
                signature.style.hideObjectOnPrint = True  # the 詩譜 has no metre
                measure.insert(0, signature)
            pair.append(measure)
        self.last_length = length
        self.voice.append(pair[0])
        self.se.append(pair[1])
        return pair[0], pair[1]

    def _text(self, measure: Any, offset: float, content: str, *, below: bool = False) -> None:
        from music21 import expressions

        words = expressions.TextExpression(content)
        words.placement = "below" if below else "above"
        measure.insert(offset, words)

    def _end(self, style: str) -> None:
        from music21 import bar

        for part in (self.voice, self.se):
            measures = part.getElementsByClass("Measure")
            if measures:
                measures[-1].rightBarline = bar.Barline(style)

    def stanza(self, stanza: Stanza, *, rehearsal: str | None, heading: str | None,
               editorial_prefix: str = "") -> None:
        from music21 import expressions, note

        marked = _marked_positions(stanza.note) if stanza.note else set()
        count = len(stanza.semitones)
        for start in range(0, count, SYLLABLES_PER_BAR):
            stop = min(start + SYLLABLES_PER_BAR, count)
            voice_bar, se_bar = self._measures(stop - start)
            if start == 0:
                if rehearsal:
                    voice_bar.insert(0, expressions.RehearsalMark(rehearsal))
                    se_bar.insert(0, expressions.RehearsalMark(rehearsal))
                if heading:
                    self._text(voice_bar, 0, heading)
                if stanza.note:
                    note_text = editorial_text(stanza.note)
                    self._text(voice_bar, 0, f"[校] {note_text}", below=True)
                    line = f"{editorial_prefix}{stanza_label(stanza.number)}: {note_text}"
                    if line not in self.editorial:  # a piece sung twice has its notes once
                        self.editorial.append(line)
            for index in range(start, stop):
                semitones = stanza.semitones[index]
                midi, cents = self.tuning.midi(semitones)
                offset = float(index - start)
                sung = note.Note(midi=midi + VOICE_OCTAVE, quarterLength=1)
                sung.addLyric(stanza.lyric[index] if index < len(stanza.lyric) else "")
                sung.addLyric(lu_abbreviation(semitones))
                sung.addLyric(stanza.su[index] if index < len(stanza.su) else "")
                voice_bar.insert(offset, sung)
                se_bar.insert(offset, note.Note(midi=midi + SE_OCTAVE, quarterLength=1))
                if abs(cents) >= CENTS_SHOWN_FROM:
                    self._text(voice_bar, offset, f"{cents:+.0f}")
                if index in marked:
                    self._text(voice_bar, offset, "校")
                self.notes += 1
        self._end("light-light")

    def text_line(self, content: str, *, rehearsal: str | None) -> None:
        """A bar of rest carrying a line of text (a lost piece in a rite)."""
        from music21 import expressions, note

        voice_bar, se_bar = self._measures(SYLLABLES_PER_BAR)
        for measure in (voice_bar, se_bar):
            if rehearsal:
                measure.insert(0, expressions.RehearsalMark(rehearsal))
            rest = note.Rest(quarterLength=SYLLABLES_PER_BAR)
            rest.fullMeasure = True
            measure.insert(0, rest)
        self._text(voice_bar, 0, content)
        self._end("light-light")

    def score(self, title: str, credits: Sequence[str]) -> stream.Score:
        from music21 import metadata, stream, text

        self._end("light-heavy")
        score = stream.Score(id="yuezheng")
        info = metadata.Metadata()
        info.title = title
        info.composer = EDITION
        info.lyricist = "詩經"
        score.metadata = info
        lines = [(CONTINUED if i else "") + part
                 for line in credits for i, part in enumerate(_wrap(line))]
        y = 60 + 24 * len(lines)
        for line in lines:
            box = text.TextBox(line, 90, y)
            style = cast("TextStyle", box.style)  # a TextBox's style is a TextStyle
            style.justify = "left"
            style.fontSize = 7
            score.insert(0, box)
            y -= 24
        score.insert(0, self.voice)
        score.insert(0, self.se)
        return score


def _wrap(line: str, width: int = 120) -> list[str]:
    """Split a credit line into lines of at most ``width`` columns (CJK characters count two)."""
    out: list[str] = []
    current, columns = "", 0
    for word in re.split(r"(?<= )", line):
        size = display_width(word)
        if current and columns + size > width:
            out.append(current.rstrip())
            current, columns = "", 0
        current += word
        columns += size
    if current.strip():
        out.append(current.rstrip())
    return out


def _credits(tuning: Tuning, modes: Sequence[str], editorial: Sequence[str]) -> list[str]:
    lines = [
        f"Edition: {EDITION_LONG}. One 律 per syllable.",
        "The 詩譜 notates no rhythm: the equal quarter notes and the bars of four syllables are "
        "editorial, for reading only (the time signatures are hidden).",
        f"Tuning: {tuning.describe()}. Notes are written at the nearest equal-tempered pitch; a "
        "signed number is the note's deviation in cents (shown when at least 1 cent; above the "
        "note in MusicXML, lyric line 4 in the PDF). MusicXML keeps only quarter tones, so the "
        "cents are text, not alterations.",
        "Lyric lines: 1 syllable, 2 律 (清 = upper octave), 3 工尺 (俗字) as in the source "
        "(named 字, 律, 工尺 and ¢ for the cents in the PDF).",
        "Voice: the 工 were men; they sing an octave under the written 律, as the MIDI file and "
        "the rendered audio play it (treble-8 clef: the notes sound an octave below the staff's "
        "treble reading). 瑟: doubles the voice at the unison, in the same clef; the 《瑟譜》 "
        "gives the 瑟 the same 律 as the voice.",
    ]
    lines.extend(f"Mode — {mode_description(mode)}" for mode in modes)
    lines.extend(f"[校] {line}" for line in editorial)
    return lines


# ── public API ─────────────────────────────────────────────────────────────────────────────────

def _surviving_piece(title: str) -> Piece:
    try:
        piece = get_piece(title)
    except KeyError:
        raise UserError(f"unknown piece {title!r}: expected a title of the repertoire, "
                        "e.g. 鹿鳴 or 關雎 (traditional or simplified)") from None
    if piece.lost or not piece.stanzas:
        raise UserError(f"《{piece.title}》: melody lost; no score is invented")
    return piece


def piece_score(title: str, tuning: Tuning = Tuning()) -> stream.Score:  # noqa: B008 (frozen)
    """Every stanza of a 詩譜 piece: voice (syllable, 律, 工尺 under each note) and 瑟."""
    piece = _surviving_piece(title)
    builder = _Builder(tuning)
    for stanza in piece.stanzas:
        builder.stanza(stanza, rehearsal=stanza_label(stanza.number), heading=None)
    credits = _credits(tuning, [piece.mode] if piece.mode else [], builder.editorial)
    return builder.score(score_title(piece), credits)


def rite_score(rite: Rite, tuning: Tuning = Tuning()) -> stream.Score:  # noqa: B008
    """The sung (``by == "歌"``) pieces of a rite in order, each cue's id as a rehearsal mark.

    A sung piece whose melody is lost is a bar of rest with the line "《X》 — lost".
    """
    builder = _Builder(tuning)
    modes: list[str] = []
    sung = 0
    for cue in rite.cues:
        rehearsal: str | None = cue.id
        for ref in cue.pieces:
            if ref.by != "歌":
                continue
            sung += 1
            canon = canonical_title(ref.title)
            if canon is None:
                raise UserError(f"cue {cue.id!r}: unknown piece {ref.title!r} "
                                "(not in the repertoire)")
            piece = get_piece(canon)
            if piece.lost or not piece.stanzas:
                builder.text_line(f"{cue.kind}: 《{piece.title}》 — lost", rehearsal=rehearsal)
                rehearsal = None
                continue
            if piece.mode and piece.mode not in modes:
                modes.append(piece.mode)
            for stanza in piece.stanzas:
                heading = f"{cue.kind}: 《{piece.title}》 {piece.mode or ''} · " \
                    f"{stanza_label(stanza.number)}"
                builder.stanza(stanza, rehearsal=rehearsal, heading=heading,
                               editorial_prefix=f"《{piece.title}》 ")
                rehearsal = None
    if not sung:
        raise UserError(f"{rite.title}: no sung (歌) pieces, so there is nothing to score")
    return builder.score(f"{rite.title} — 歌", _credits(tuning, modes, builder.editorial))

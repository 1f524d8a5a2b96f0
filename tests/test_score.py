"""Scores: every 詩譜 song written as MusicXML and read back with music21.

music21 is slow, so each file is written and parsed once per module (the fixtures below) and the
tests read the parsed scores.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cli import main
from cues.errors import UserError
from cues.melody_octaves import melody_octave
from cues.repertoire import Piece, all_pieces, get_piece
from instruments.notation.score import lu_abbreviation, piece_score, rite_score
from instruments.notation.score_files import write_score
from instruments.tuning import Tuning

# scores and pictures made and read back: seconds each
pytestmark = pytest.mark.render

SONGS = tuple(p.title for p in all_pieces() if p.stanzas)
CENTS = re.compile(r"^[+-]\d+$")
VOICE = melody_octave("歌")  # the 工 sing an octave under the written 律


def _parse(path: Path) -> Any:
    from music21 import converter

    return converter.parse(str(path), forceSource=True)


def _stanzas(part: Any) -> list[list[Any]]:
    """The notes of a part grouped by stanza: a stanza starts at a rehearsal mark or a heading."""
    from music21 import expressions

    groups: list[list[Any]] = []
    for measure in part.getElementsByClass("Measure"):
        starts = measure.getElementsByClass(expressions.RehearsalMark) or [
            t for t in measure.getElementsByClass(expressions.TextExpression)
            if "章" in t.content]
        if starts or not groups:
            groups.append([])
        groups[-1].extend(measure.notes)
    return groups


def _texts_at(measure: Any, offset: float) -> list[str]:
    from music21 import expressions

    return [t.content for t in measure.getElementsByClass(expressions.TextExpression)
            if t.offset == offset]


def _credits(score: Any) -> str:
    from music21 import text

    return " ".join(box.content for box in score.recurse().getElementsByClass(text.TextBox))


@pytest.fixture(scope="module")
def songs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Piece, Any]]:
    out = tmp_path_factory.mktemp("songs")
    parsed: dict[str, tuple[Piece, Any]] = {}
    for title in SONGS:
        path = write_score(piece_score(title), out / f"{title}.musicxml")
        parsed[title] = (get_piece(title), _parse(path))
    return parsed


@pytest.mark.render
def test_the_twelve_songs_are_all_there(songs: dict[str, tuple[Piece, Any]]) -> None:
    assert len(SONGS) == 12
    assert set(songs) == {"鹿鳴", "四牡", "皇皇者華", "魚麗", "南有嘉魚", "南山有臺",
                          "關雎", "葛覃", "卷耳", "鵲巢", "采蘩", "采蘋"}


@pytest.mark.parametrize("title", SONGS)
def test_round_trip(songs: dict[str, tuple[Piece, Any]], title: str) -> None:
    piece, score = songs[title]
    # the mode is stated in the title
    assert score.metadata.bestTitle == f"{piece.title} — {piece.mode}"
    assert piece.mode in ("黃鍾宮", "無射商")
    assert len(score.parts) == 2
    voice, se = score.parts
    stanzas = _stanzas(voice)
    assert len(stanzas) == len(piece.stanzas)
    from music21 import expressions

    marks = [m.content for m in voice.recurse().getElementsByClass(expressions.RehearsalMark)]
    assert marks == ["第一章", "第二章", "第三章", "第四章", "第五章", "第六章"][:len(stanzas)]
    for stanza, notes in zip(piece.stanzas, stanzas, strict=True):
        # one note per syllable
        assert len(notes) == len(stanza.semitones) == len(stanza.lyric)
        # the melodic steps are the 詩譜's steps
        steps = [b.pitch.midi - a.pitch.midi for a, b in zip(notes, notes[1:], strict=False)]
        want = [b - a for a, b in zip(stanza.semitones, stanza.semitones[1:], strict=False)]
        assert steps == want
        # the default 黃鍾 is C4: absolute placement too — the 工 (men) an octave under the
        # written 律, in the treble-8 clef
        assert [n.pitch.midi for n in notes] == [60 + VOICE + s for s in stanza.semitones]
        # every note carries its syllable, its 律 and its 工尺
        for i, n in enumerate(notes):
            assert [ly.text for ly in n.lyrics] == [
                stanza.lyric[i], lu_abbreviation(stanza.semitones[i]), stanza.su[i]]
            assert n.quarterLength == 1
    # the 瑟 doubles the voice at the unison, as the timeline plays it; both staves say the
    # octave by their clef
    assert [n.pitch.midi for n in se.recurse().notes] == [
        n.pitch.midi for n in voice.recurse().notes]
    for part in (voice, se):
        clef = part.recurse().getElementsByClass("Clef")[0]
        assert (clef.sign, clef.octaveChange) == ("G", -1)
    credits = _credits(score)
    assert "no rhythm" in credits
    assert "quarter tones" in credits
    assert "octave below" in credits
    assert "OCR" not in credits and "garychowcmu" not in credits and "熊朋來《瑟譜》" in credits
    assert piece.mode in credits


def test_cents_written_where_sanfen_deviates(songs: dict[str, tuple[Piece, Any]]) -> None:
    piece, score = songs["鹿鳴"]
    tuning = Tuning()
    voice = score.parts[0]
    checked = 0
    semitones = [s for st in piece.stanzas for s in st.semitones]
    notes = iter(semitones)
    for measure in voice.getElementsByClass("Measure"):
        for n in measure.notes:
            s = next(notes)
            cents = [t for t in _texts_at(measure, n.offset) if CENTS.match(t)]
            deviation = tuning.midi(s)[1]
            if abs(deviation) >= 1:
                assert cents == [f"{deviation:+.0f}"], (s, cents)
                checked += 1
            else:
                assert cents == []
    assert checked > 0
    # 蕤賓 is +12 cents, 林鍾 +2, 黃鍾 none
    assert f"{tuning.midi(6)[1]:+.0f}" == "+12"


def test_anomalies_are_editorial_text(songs: dict[str, tuple[Piece, Any]]) -> None:
    from music21 import expressions

    piece, score = songs["南有嘉魚"]
    voice = score.parts[0]
    texts = [t.content for t in voice.recurse().getElementsByClass(expressions.TextExpression)]
    notes = [t for t in texts if t.startswith("[校]")]
    assert len(notes) == sum(1 for st in piece.stanzas if st.note)
    assert any("南 kept" in t for t in notes)
    # the note it names (position 6 of stanza 1) is marked, and sung as the chosen reading 南呂
    first = voice.getElementsByClass("Measure")[1]  # notes 5-8
    assert "校" in _texts_at(first, 1.0)
    assert first.notes[1].lyrics[1].text == "南"
    assert first.notes[1].pitch.midi % 12 == 9
    assert "南 kept" in _credits(score)
    # 鹿鳴 stanza 1 position 31: 律 大 read as 太蔟清
    luming = songs["鹿鳴"][1].parts[0]
    thirty_first = list(luming.recurse().notes)[30]
    assert thirty_first.lyrics[1].text == "太清" and thirty_first.lyrics[2].text == "五"
    assert thirty_first.pitch.midi == 60 + VOICE + 14


def test_huangzhong_places_the_notes(tmp_path: Path) -> None:
    piece = get_piece("關雎")
    path = write_score(piece_score("关雎", Tuning("sanfen", 293.66)), tmp_path / "d.musicxml")
    score = _parse(path)
    notes = list(score.parts[0].recurse().notes)
    semitones = [s for st in piece.stanzas for s in st.semitones]
    assert len(notes) == len(semitones)
    for n, s in zip(notes, semitones, strict=True):
        assert n.pitch.midi == 62 + VOICE + s
        if s % 12 == 0:
            assert n.pitch.name == "D"  # 黃鍾 on D
    assert "293.66 Hz" in _credits(score)


def test_equal_temperament_writes_no_cents(tmp_path: Path) -> None:
    from music21 import expressions

    path = write_score(piece_score("鵲巢", Tuning("equal")), tmp_path / "e.xml")
    score = _parse(path)
    texts = [t.content for t in score.recurse().getElementsByClass(expressions.TextExpression)]
    assert not [t for t in texts if CENTS.match(t)]
    assert "equal temperament" in _credits(score)


@pytest.mark.parametrize("title", ["騶虞", "貍首", "狸首", "南陔", "新宮"])
def test_lost_melodies_have_no_score(title: str) -> None:
    with pytest.raises(UserError, match="melody lost; no score is invented"):
        piece_score(title)


def test_unknown_piece() -> None:
    with pytest.raises(UserError, match="unknown piece"):
        piece_score("不存在")


# ── rite scores, with a hand-made stand-in for the rite model (a test fixture) ───────────────

@dataclass(frozen=True)
class _Ref:
    title: str
    by: str


@dataclass(frozen=True)
class _Cue:
    id: str
    kind: str
    pieces: tuple[_Ref, ...]


@dataclass(frozen=True)
class _Rite:
    title: str
    cues: tuple[_Cue, ...]


RITE = _Rite("鄉飲酒禮 (test fixture)", (
    _Cue("jin-zou", "金奏", ()),
    _Cue("sheng-ge", "升歌", (_Ref("鹿鳴", "歌"), _Ref("四牡", "歌"))),
    _Cue("sheng", "笙", (_Ref("南陔", "笙"), _Ref("白華", "笙"))),
    _Cue("jian-ge", "間歌", (_Ref("魚麗", "歌"), _Ref("由庚", "笙"))),
    _Cue("she-jie", "射節", (_Ref("騶虞", "歌"),)),
    _Cue("he-yue", "合樂", (_Ref("關雎", "歌"), _Ref("葛覃", "歌"))),
))


def test_rite_score(tmp_path: Path) -> None:
    from music21 import expressions

    path = write_score(rite_score(RITE), tmp_path / "rite.musicxml")
    score = _parse(path)
    assert score.metadata.bestTitle.startswith("鄉飲酒禮")
    voice = score.parts[0]
    marks = [m.content for m in voice.recurse().getElementsByClass(expressions.RehearsalMark)]
    assert marks == ["sheng-ge", "jian-ge", "she-jie", "he-yue"]
    sung = ["鹿鳴", "四牡", "魚麗", "關雎", "葛覃"]
    want = [s for title in sung for st in get_piece(title).stanzas for s in st.semitones]
    assert [n.pitch.midi for n in voice.recurse().notes] == [60 + VOICE + s for s in want]
    texts = [t.content for t in voice.recurse().getElementsByClass(expressions.TextExpression)]
    assert "射節: 《騶虞》 — lost" in texts
    assert not [t for t in texts if "南陔" in t or "由庚" in t]  # 笙 pieces are not sung
    headings = [t for t in texts if t.startswith(("升歌", "間歌", "合樂"))]
    assert headings[0] == "升歌: 《鹿鳴》 黃鍾宮 · 第一章"
    assert len(headings) == sum(len(get_piece(t).stanzas) for t in sung)
    credits = _credits(score)
    assert "黃鍾宮" in credits and "無射商" in credits


def test_rite_without_sung_pieces() -> None:
    rite = _Rite("test", (_Cue("sheng", "笙", (_Ref("南陔", "笙"),)),))
    with pytest.raises(UserError, match="no sung"):
        rite_score(rite)


# ── writing ──────────────────────────────────────────────────────────────────────────────────

@pytest.fixture(scope="module")
def small_score() -> Any:
    return piece_score("采蘋")


def test_mxl_keeps_a_sibling_musicxml(tmp_path: Path, small_score: Any) -> None:
    xml = write_score(small_score, tmp_path / "x.musicxml")
    mxl = write_score(small_score, tmp_path / "x.mxl")
    assert xml.exists() and mxl.exists()
    assert mxl.read_bytes()[:2] == b"PK"
    back = _parse(mxl)
    assert len(back.parts[0].recurse().notes) == sum(
        len(st.semitones) for st in get_piece("采蘋").stanzas)


def test_bad_outputs(tmp_path: Path, small_score: Any) -> None:
    with pytest.raises(UserError, match=r"\.musicxml"):
        write_score(small_score, tmp_path / "x.mid")
    with pytest.raises(UserError, match="does not exist"):
        write_score(small_score, tmp_path / "missing" / "x.musicxml")


def test_pdf_without_lilypond_names_the_package(
    tmp_path: Path, small_score: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an environment without LilyPond on the PATH
    with pytest.raises(UserError, match="lilypond"):
        write_score(small_score, tmp_path / "x.pdf")


@pytest.mark.render
@pytest.mark.skipif(shutil.which("lilypond") is None, reason="Debian lilypond not installed")
def test_pdf_with_lilypond(tmp_path: Path, small_score: Any) -> None:
    pdf = write_score(small_score, tmp_path / "x.pdf")
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert list(tmp_path.iterdir()) == [pdf]
    if shutil.which("pdftotext") is None:
        return
    import subprocess

    words = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True,
                           check=True).stdout
    assert words.count("采蘋 — 無射商") == 1  # the title once (no subtitle copy)
    assert "OCR" not in words and "garychowcmu" not in words and "LilyPond" not in words
    assert "熊朋來《瑟譜》" in words
    assert "瑟 (se)" in words  # the part name whole


@pytest.mark.render
def test_pdf_copy_numbers_each_note_once() -> None:
    from instruments.notation.score_files import _lilypond_copy

    rite = _Rite("test", (_Cue("a", "升歌", (_Ref("鹿鳴", "歌"),)),
                          _Cue("b", "升歌", (_Ref("鹿鳴", "歌"),))))
    _, notes = _lilypond_copy(rite_score(rite))
    numbered = [n for n in notes if n.startswith("[校 ")]
    assert numbered and len(numbered) == len(set(numbered)) == len(
        [s for s in get_piece("鹿鳴").stanzas if s.note])


# ── the command ──────────────────────────────────────────────────────────────────────────────

def test_cli_score_piece(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "luming.musicxml"
    assert main(["score", "鹿鸣", "-o", str(out), "--huangzhong", "293.66"]) == 0
    assert "wrote" in capsys.readouterr().out
    notes = list(_parse(out).parts[0].recurse().notes)
    assert notes[7].pitch.name == "D"  # 呦呦鹿鳴食野之苹: 苹 is 黃鍾
    assert notes[7].lyrics[0].text == "苹"


@pytest.mark.parametrize("argv, message", [
    (["score", "騶虞", "-o", "x.musicxml"], "melody lost; no score is invented"),
    (["score", "鹿鳴", "-o", "x.txt"], ".musicxml"),
    (["score", "鹿鳴", "-o", "x.musicxml", "--huangzhong", "0"], "out of range"),
    (["score", "鹿鳴", "-o", "x.musicxml", "--tuning", "just"], "invalid choice"),
    (["score", "鹿鳴", "-o", "x.musicxml", "--variant", "v"], "rites only"),
])
def test_cli_score_errors(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert not list(tmp_path.iterdir())


@pytest.mark.render
@pytest.mark.skipif(shutil.which("lilypond") is None, reason="Debian lilypond not installed")
def test_pdf_names_its_text_rows_and_keeps_its_notes_on_the_music_page(tmp_path: Path) -> None:
    """關雎's PDF (issue 29): the voice's text rows are named (字 律 工尺 ¢), not numbered like
    verses, and its [校] end note no longer spills alone onto a second page."""
    import subprocess

    from instruments.notation.score_files import pdf_pages

    pdf = tmp_path / "guanju.pdf"
    assert main(["score", "關雎", "-o", str(pdf)]) == 0
    assert pdf_pages(pdf) == 1
    words = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True,
                           text=True, check=True).stdout
    rows = [line.split() for line in words.splitlines() if line.split()]
    firsts = {row[0] for row in rows}
    assert {"字", "律", "工尺"} <= firsts and not firsts & {"1.", "2.", "3.", "4."}
    assert "[校 1] 第三章" in words  # the end note, on the same page

"""A piece played on its own (`render 關雎`, `--ensemble`) and the pinyin names of pieces and
instruments."""

from __future__ import annotations

import json
import re
import wave
from pathlib import Path

import pytest

import cli
from cues.builtin import ENSEMBLES
from cues.catalog import CATALOG, canonical_instrument
from cues.pinyin import add_names, name_key
from cues.repertoire import all_pieces, canonical_title
from sequencer.timeline.compiler import compile_rite
from sequencer.timeline.selection import piece_rite, selected_rite


def test_every_piece_and_instrument_has_a_unique_pinyin() -> None:
    for names in ([p.pinyin for p in all_pieces()], [i.pinyin for i in CATALOG.values()]):
        assert all(n and n == name_key(n) and n.isascii() for n in names)
        assert len(set(names)) == len(names)
    table: dict[str, str] = {}  # every name of every piece selects one piece
    for piece in all_pieces():
        add_names(table, (piece.title, *piece.aliases, piece.pinyin), piece.title, "piece")
    table = {}
    for inst in CATALOG.values():
        add_names(table, (inst.name, *inst.aliases, inst.pinyin), inst.name, "instrument")


def test_an_ambiguous_name_is_an_error_naming_both() -> None:
    table: dict[str, str] = {}
    add_names(table, ["guanju"], "關雎", "piece")
    with pytest.raises(ValueError, match="names both 關雎 and 葛覃"):
        add_names(table, ["Guan-Ju"], "葛覃", "piece")


@pytest.mark.parametrize("name", ["guanju", "Guān-jū", "guan ju", "GUANJU", "关雎", "《關雎》"])
def test_piece_names(name: str) -> None:
    assert canonical_title(name) == "關雎"


@pytest.mark.parametrize("name", ["bianzhong", "Bian-Zhong", "biān zhōng", "编钟", "編鐘"])
def test_instrument_names(name: str) -> None:
    assert canonical_instrument(name) == "編鐘"


def test_pieces_and_instruments_list_the_pinyin(capsys) -> None:
    assert cli.main(["pieces", "--json"]) == 0
    pieces = json.loads(capsys.readouterr().out)
    assert {p["title"]: p["pinyin"] for p in pieces}["關雎"] == "guanju"
    assert cli.main(["pieces"]) == 0
    assert re.search(r"guanju +《關雎》 +周南", capsys.readouterr().out)
    assert cli.main(["instruments", "--json"]) == 0
    instruments = json.loads(capsys.readouterr().out)
    assert {i["name"]: i["pinyin"] for i in instruments}["編鐘"] == "bianzhong"
    assert cli.main(["instruments"]) == 0
    assert "aliases: bianzhong 编钟" in capsys.readouterr().out


@pytest.mark.render
def test_audition_and_score_take_pinyin(tmp_path: Path) -> None:
    assert cli.main(["audition", "bianzhong", "-o", str(tmp_path / "b.wav")]) == 0
    assert cli.main(["score", "guanju", "-o", str(tmp_path / "g.musicxml")]) == 0
    assert "關" in (tmp_path / "g.musicxml").read_text(encoding="utf-8")


@pytest.mark.parametrize("ensemble", list(ENSEMBLES))
def test_a_piece_is_one_cue_played_by_its_ensemble(ensemble: str) -> None:
    rite = piece_rite("關雎", ensemble)
    rite_id, cue_id, _ = ENSEMBLES[ensemble]
    [cue] = rite.cues
    assert cue.id == cue_id and [p.title for p in cue.pieces] == ["關雎"]
    timeline = compile_rite(rite)
    played = {n.instrument for n in timeline.notes}
    listed = {c.name for c in cue.instruments if not c.silent}
    assert played and played <= listed


def test_the_default_ensemble_is_the_he_yue() -> None:
    rite, _ = selected_rite("guanju")
    assert rite.title == "《關雎》" and rite.cues[0].kind == "合樂"
    played = {n.instrument for n in compile_rite(rite).notes}
    assert {"歌", "瑟", "笙", "和", "編磬"} <= played


@pytest.mark.render
def test_render_and_midi_take_a_piece(tmp_path: Path, capsys) -> None:
    assert cli.main(["render", "guanju", "-o", str(tmp_path / "g.wav")]) == 0
    assert "wrote" in capsys.readouterr().out
    with wave.open(str(tmp_path / "g.wav")) as w:
        assert w.getnframes() > 48000 * 60  # five stanzas at 60 syllables a minute
    assert cli.main(["midi", "關雎", "--ensemble", "sheng-ge", "-o", str(tmp_path / "g.mid")]) == 0
    assert (tmp_path / "g.mid").read_bytes().startswith(b"MThd")


def test_piece_options_are_checked(capsys) -> None:
    assert cli.main(["midi", "guanju", "--variant", "x", "-o", "x.mid"]) == cli.EXIT_USAGE
    assert "apply to rites only" in capsys.readouterr().err
    assert cli.main(["midi", "xiang-she", "--ensemble", "sheng", "-o", "x.mid"]) == cli.EXIT_USAGE
    assert "--ensemble applies to a piece" in capsys.readouterr().err
    assert cli.main(["midi", "guanju", "--ensemble", "nobody", "-o", "x.mid"]) == cli.EXIT_USAGE

"""Names a user may write another way — reading ids and values, variant ids, --ensemble, cue
kinds — take the simplified, pinyin and case forms that rites and pieces take; a --reading that
changes nothing says so and names the variant it needs; an unknown name that could be a piece is
not called an unknown rite."""

from __future__ import annotations

from pathlib import Path

import pytest

import cli
from cues.builtin import builtin_text, ensemble_name
from cues.errors import SheetErrors
from cues.pinyin import loose_key
from cues.sheet.cue_table import canonical_kind
from cues.sheet.loader import load_rite, parse_sheet
from sequencer.timeline.compiler import compile_rite, make_settings
from sequencer.timeline.events import MARKER_JIE


def _jie(rite_id: str, variants: tuple[str, ...], readings: dict[str, str]) -> int:
    rite = load_rite(rite_id, variants, readings)
    tl = compile_rite(rite, make_settings(rite.settings))
    return sum(1 for m in tl.markers if m.kind == MARKER_JIE)


def test_reading_and_variant_forms_select_the_same_music() -> None:
    canonical = _jie("yan", ("she",), {"yan-she-jie": "貍首-7"})
    assert canonical == _jie("yan", ("SHE",), {"YAN-SHE-JIE": "狸首-7"})
    assert canonical == _jie("yan", (" she ",), {"yan she jie": "lishou-7"})
    assert canonical != _jie("yan", ("she",), {})
    rite = load_rite("yan", ("she",), {"jiu-xia-order": "钟先"})
    assert next(r for r in rite.readings if r.name == "jiu-xia-order").value == "鍾先"
    rite = load_rite("yan", ("she",), {"yan-she-jie": "采苹-5"})
    assert next(r for r in rite.readings if r.name == "yan-she-jie").value == "采蘋-5"


def test_a_reading_whose_cue_is_not_played_warns_naming_the_variant(capsys,
                                                                  tmp_path: Path) -> None:
    rite = load_rite("yan", (), {"yan-she-jie": "貍首-7"})
    assert len(rite.notices) == 1
    assert "changes nothing" in rite.notices[0] and "--variant she" in rite.notices[0]
    assert "she-jie" in rite.notices[0]
    assert not load_rite("yan", ("she",), {"yan-she-jie": "貍首-7"}).notices
    assert not load_rite("yan", (), {}).notices  # the defaults say nothing
    out = tmp_path / "yan.mid"
    assert cli.main(["midi", "yan", "--reading", "yan-she-jie=貍首-7", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: --reading yan-she-jie=貍首-7 changes nothing" in err
    assert "add --variant she" in err


def test_kind_forms_and_no_false_second_error() -> None:
    assert canonical_kind("合乐") == "合樂" and canonical_kind("He-Yue") == "合樂"
    assert canonical_kind("wu suan yue") == "無算樂" and canonical_kind("射节") == "射節"
    assert canonical_kind("合月") is None
    text = builtin_text("xiang-she").replace('kind = "合樂"', 'kind = "合乐"', 1)
    rite = parse_sheet(text, "s.toml")
    assert rite.cues[0].kind == "合樂"
    # a kind still unknown is one error: the cue after it is not called the first cue
    bad = builtin_text("xiang-she").replace('kind = "合樂"', 'kind = "合月"', 1)
    with pytest.raises(SheetErrors) as info:
        parse_sheet(bad, "s.toml")
    message = str(info.value)
    assert "unknown kind '合月'" in message and "first cue" not in message


def test_ensemble_forms(tmp_path: Path) -> None:
    assert ensemble_name("Sheng Ge") == "sheng-ge" and ensemble_name("JINZOU") == "jin-zou"
    assert ensemble_name("nothing") == "nothing"
    assert loose_key("鐘先") == loose_key("钟先") == loose_key("鍾先")
    out = tmp_path / "g.mid"
    assert cli.main(["midi", "關雎", "--ensemble", "Sheng Ge", "-o", str(out)]) == 0
    assert out.stat().st_size > 0


def test_an_unknown_name_is_an_unknown_rite_or_piece(capsys, tmp_path: Path) -> None:
    assert cli.main(["midi", "關雎x", "-o", str(tmp_path / "x.mid")]) == 2
    err = capsys.readouterr().err
    assert "unknown rite or piece '關雎x'" in err and "did you mean '關雎'" in err
    assert "unknown rite '" not in err
    assert cli.main(["score", "鹿鳴鳴", "-o", str(tmp_path / "x.musicxml")]) == 2
    assert "unknown rite or piece" in capsys.readouterr().err

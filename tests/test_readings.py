"""Readings that change the music (docs/fidelity-code.md): --reading, the 九夏 order, every
listed instrument sounding or saying why, the project's own choices, and the validator."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import cli
from cues import repertoire
from cues.errors import SheetErrors, UserError
from cues.sheet.loader import BUILTIN_RITES, builtin_rite, load_rite, parse_sheet
from cues.sources import normalize, read_source
from sequencer.timeline.compiler import compile_rite, make_settings
from sequencer.timeline.events import MARKER_JIE, Timeline
from sequencer.timeline.sheet_check import sheet_warnings

BELL_AND_DRUM = ("金奏", "陔", "驁")


def timeline(rite_id: str, variants: tuple[str, ...] = (), **readings: str) -> Timeline:
    rite = load_rite(rite_id, variants, {k.replace("_", "-"): v for k, v in readings.items()})
    return compile_rite(rite, make_settings(rite.settings))


def she_jie(tl: Timeline) -> tuple[list, list]:
    notes = [n for n in tl.notes if n.cue == "she-jie"]
    jie = [m for m in tl.markers if m.cue == "she-jie" and m.kind == MARKER_JIE]
    return notes, jie


# ── 1. yan-she-jie: the song, the 節 and the listening 節 ────────────────────────────────────

def test_yan_she_jie_default_is_zou_yu_five_without_melody() -> None:
    tl = timeline("yan", ("she",))
    notes, jie = she_jie(tl)
    assert {m.n for m in jie} == {5} and tl.span("she-jie").listen == 1
    assert not [n for n in notes if n.instrument == "歌"  # 騶虞's tune is lost
                and n.position != "獲者"]  # (the 獲者's calls are a voice of their own)
    assert {n.semitones for n in notes if n.instrument == "瑟"} == {-12, -5}  # the drone


def test_yan_she_jie_cai_pin_is_sung_with_its_words() -> None:
    rite = load_rite("yan", ("she",), {"yan-she-jie": "采蘋-5"})
    shoot = rite.cue("she-jie").shooting
    assert (shoot.song, shoot.jie, shoot.listen) == ("采蘋", 5, 1)
    notes, jie = she_jie(compile_rite(rite, make_settings(rite.settings)))
    assert {m.n for m in jie} == {5}
    sung = "".join(n.lyric for n in notes if n.instrument == "歌" and n.position != "獲者")
    words = "".join(st.lyric for st in repertoire.get_piece("采蘋").stanzas)
    assert sung.startswith(words) and len(sung) == len(words) * 5 * len(shoot.ou)


def test_yan_she_jie_li_shou_has_seven_jie_three_to_listen() -> None:
    tl = timeline("yan", ("she",), yan_she_jie="貍首-7")
    notes, jie = she_jie(tl)
    ou = len(load_rite("yan", ("she",)).cue("she-jie").shooting.ou)
    assert [m.k for m in jie] == list(range(1, 8)) * ou and tl.span("she-jie").listen == 3
    assert not [n for n in notes if n.instrument == "歌"  # 貍首 is lost
                and n.position != "獲者"]  # (the 獲者's calls are a voice of their own)
    assert any(n.instrument == "瑟" for n in notes)


READING_CASES = [("yan", ("na-bin", "she", "xia-guan")), ("da-she", ()), ("xiang-she", ()),
                 ("xiang-yin-jiu", ())]


@pytest.mark.parametrize(("rite_id", "variants"), READING_CASES)
def test_every_value_of_every_reading_changes_the_timeline(rite_id, variants) -> None:
    rite = load_rite(rite_id, variants)
    assert rite.readings
    for reading in rite.readings:
        seen = {}
        for value in reading.choices:
            tl = timeline(rite_id, variants, **{reading.name: value})
            seen[value] = (tl.notes, tl.markers)
        assert len(set(seen.values())) == len(reading.choices), reading.name


def test_unknown_reading_or_value_exits_2(capsys) -> None:
    assert cli.main(["show", "yan", "--reading", "nope=1"]) == 2
    err = capsys.readouterr().err
    assert ("unknown reading 'nope' for 燕禮; its readings: yan-she-jie (騶虞-5 | 采蘋-5 | "
            "貍首-7), jiu-xia-order (鍾先 | 鼓先)") in err
    assert cli.main(["midi", "yan", "-o", "/tmp/x.mid", "--reading", "yan-she-jie=x"]) == 2
    assert "unknown value 'x'" in capsys.readouterr().err
    assert cli.main(["show", "yan", "--reading", "yan-she-jie"]) == 2
    with pytest.raises(UserError):
        load_rite("da-she", (), {"yan-she-jie": "采蘋-5"})


def test_reading_on_the_command_line(tmp_path: Path, capsys) -> None:
    assert cli.main(["show", "yan", "--variant", "she", "--reading", "yan-she-jie=采蘋-5",
                     "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    cue = next(c for c in data["cues"] if c["id"] == "she-jie")
    assert cue["song"] == "采蘋" and cue["jie"] == 5
    reading = next(r for r in data["readings"] if r["name"] == "yan-she-jie")
    assert reading["value"] == "采蘋-5"
    assert [c["value"] for c in reading["choices"]] == ["騶虞-5", "采蘋-5", "貍首-7"]
    assert all(c["cues"] == ["she-jie"] and c["source"]["file"] for c in reading["choices"])
    order = next(r for r in data["readings"] if r["name"] == "jiu-xia-order")
    assert order["choices"][1]["setting"] == {"jiu_xia_order": "鼓先"}
    for command in ("midi", "plot"):
        out = tmp_path / ("x.mid" if command == "midi" else "x.png")
        assert cli.main([command, "yan", "--variant", "she", "-o", str(out), "--reading",
                         "yan-she-jie=貍首-7", "--from", "she-jie", "--until", "she-jie"]) == 0


def test_settings_readings_choose_a_value() -> None:
    text = Path(__file__).resolve().parent.parent.joinpath("cues/rites/yan.toml").read_text(
        encoding="utf-8")
    text = text.replace("tempo_bpm = 60", 'tempo_bpm = 60\nreadings = { yan-she-jie = "貍首-7" }')
    rite = parse_sheet(text, "yan.toml", ("she",))
    assert rite.cue("she-jie").shooting.song == "貍首"
    assert next(r for r in rite.readings if r.name == "yan-she-jie").value == "貍首-7"


# ── 2. the 九夏 order ────────────────────────────────────────────────────────────────────────

def _first(tl: Timeline, cue: str, instrument: str) -> int:
    return min(n.tick for n in tl.notes if n.cue == cue and n.instrument == instrument)


@pytest.mark.parametrize(("rite_id", "variants"), [("yan", ("na-bin",)), ("da-she", ())])
def test_bells_before_drums_by_zheng_and_after_by_the_shu(rite_id, variants) -> None:
    rite = load_rite(rite_id, variants)
    cues = [c.id for c in rite.cues if c.kind in BELL_AND_DRUM]
    assert cues
    zheng = timeline(rite_id, variants)
    shu = timeline(rite_id, variants, jiu_xia_order="鼓先")
    for cue in cues:
        assert _first(zheng, cue, "編鐘") < _first(zheng, cue, "建鼓"), cue
        assert _first(shu, cue, "編鐘") > _first(shu, cue, "建鼓"), cue


@pytest.mark.parametrize("order", ["鍾先", "鼓先"])
def test_small_drums_keep_their_order_in_both_readings(order: str) -> None:
    tl = timeline("da-she", jiu_xia_order=order)
    sixia = [n for n in tl.notes if n.cue == "si-xia-bin"]
    assert sixia[0].instrument == "鼗"
    strokes = [n.instrument for n in sixia if n.semitones is None][:3]
    assert strokes == ["鼗", "朔鼙", "應鼙"]  # 「先擊朔鼙，應鼙應之」


def test_jiu_xia_order_is_a_setting_too() -> None:
    rite = load_rite("da-she")
    drums_first = compile_rite(rite, make_settings(rite.settings, {"jiu_xia_order": "鼓先"}))
    assert drums_first.notes == timeline("da-she", jiu_xia_order="鼓先").notes
    with pytest.raises(UserError, match="jiu_xia_order"):
        make_settings({"jiu_xia_order": "鐘先"})


# ── 3. every listed instrument sounds, or says why not ──────────────────────────────────────

@pytest.mark.parametrize("rite_id", BUILTIN_RITES)
def test_no_built_in_instrument_is_silent_without_a_reason(rite_id: str) -> None:
    assert sheet_warnings(builtin_rite(rite_id, None)) == []


def test_da_she_bo_strikes_on_every_jie() -> None:
    tl = timeline("da-she")
    notes, jie = she_jie(tl)
    bo = sorted(n.tick for n in notes if n.instrument == "鑮")
    assert bo == sorted(m.tick for m in jie)  # 「奏樂以鼓鑮為節」
    assert {"朔鼙", "應鼙", "建鼓"} <= {n.instrument for n in notes}


def test_shao_is_sung_and_danced_to_a_drum() -> None:
    tl = timeline("yan", ("wu",))
    sounds = {n.instrument for n in tl.notes if n.cue == "shao"}
    assert sounds == {"瑟", "建鼓"}  # no melody invented for the 工, no bells


def test_silent_is_shown() -> None:
    rite = load_rite("yan", ("wu",))
    from sequencer.timeline.rite_json import rite_json

    cue = next(c for c in rite_json(rite)["cues"] if c["id"] == "shao")
    assert cue["instruments"][0]["silent"].startswith("the 勺's melody is lost")
    assert "silent" not in cue["instruments"][1]


# ── 4. the project's own choices ─────────────────────────────────────────────────────────────

def _json(rite_id: str, variants: tuple[str, ...]) -> dict:
    from sequencer.timeline.rite_json import rite_json

    rite = load_rite(rite_id, variants)
    return rite_json(rite, compile_rite(rite, make_settings(rite.settings)))


def _every_cue(rite_id: str) -> list[dict]:
    rite = builtin_rite(rite_id)
    cues: dict[str, dict] = {}
    for variants in [()] + [(v.id,) for v in rite.variants]:
        for cue in _json(rite_id, variants)["cues"]:
            cues.setdefault(cue["id"], cue)
    return list(cues.values())


def _stop_is_textual(stop_at: str, source_file: str) -> bool:
    """The stop's moment is the text's own: its last clause X then 「(而)樂闋」 in the cue's
    source."""
    last = normalize(re.split(r"[，。；、…]", stop_at)[-1])
    text = normalize(read_source(source_file))
    return last + "而樂闋" in text or last + "樂闋" in text


@pytest.mark.parametrize("rite_id", BUILTIN_RITES)
def test_choices_mark_what_no_source_fixes(rite_id: str) -> None:
    for cue in _every_cue(rite_id):
        fields = {c["field"] for c in cue["choices"]}
        assert all(c["reason"] for c in cue["choices"])
        if cue["kind"] == "射節":
            assert {"jie_s", "drum_pattern", "release_rule"} <= fields, cue["id"]
        if cue["kind"] in BELL_AND_DRUM:
            assert "jiu_xia_jie_s" in fields
        if cue["lost"]:
            assert "lost_zhong_s" in fields
        if "stop" in cue and not _stop_is_textual(cue["stop"]["at"], cue["source"]["file"]):
            assert "stop" in fields, cue["id"]


def test_the_table_marks_choices(capsys) -> None:
    assert cli.main(["show", "da-she"]) == 0
    out = capsys.readouterr().out
    assert "she-jie*" in out and "節*" in out
    assert "* the project's own choices" in out
    assert "she-jie drum_pattern: the drum's strokes inside a 節: pattern jie" in out
    assert "鼓先: 儀禮·大射 賈疏 [疏]: 「則先擊鼓，後擊鍾鑮，皆是與樂為節」" in out


def test_li_shou_is_a_fragment(capsys) -> None:
    piece = repertoire.get_piece("貍首")
    assert piece.text_state == "fragment" and piece.lost
    assert piece.fragment.startswith("曾孫侯氏")
    assert cli.main(["pieces"]) == 0
    assert re.search(r"《貍首》 +逸詩 +text fragment", capsys.readouterr().out)


# ── 5. the validator ────────────────────────────────────────────────────────────────────────

SHEET = '''
[rite]
id = "t"
title = "T"
hang = "特縣"
{reading}
[[cue]]
id = "sing"
kind = "升歌"
at = "{at}"
pieces = ["鹿鳴"]
instruments = [{{ name = "歌", count = 1 }}, {{ name = "瑟", count = 1 }}{extra}]
source = {{ work = "儀禮·鄉射禮", file = "seeds/yili-xiang-she-li-annotated.txt", quote = "奏《騶虞》，間若一" }}
'''


def _validate(tmp_path: Path, capsys, **parts: str) -> tuple[int, str]:
    fields = {"reading": "", "at": "工入", "extra": ""} | parts
    path = tmp_path / "t.toml"
    path.write_text(SHEET.format(**fields), encoding="utf-8")
    code = cli.main(["validate", str(path)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_validate_errors_on_a_quote_not_in_the_cited_texts(tmp_path, capsys) -> None:
    code, out = _validate(tmp_path, capsys, at="樂正命大師曰：「奏《采蘋》，間若一」")
    assert code == 2
    assert "'at' quotes 「奏《采蘋》，間若一」, which is not in the texts this sheet cites" in out
    code, _ = _validate(tmp_path, capsys, at="樂正命大師曰：「奏《騶虞》，間若一」")
    assert code == 0


def test_validate_errors_on_a_reading_that_changes_nothing(tmp_path, capsys) -> None:
    reading = '[[reading]]\nname = "r"\nvalue = "a"\n[[reading.choice]]\nvalue = "a"\n'
    code, out = _validate(tmp_path, capsys, reading=reading)
    assert code == 2 and "t.toml:9: reading 'r' value 'a' changes nothing" in out
    reading = ('[[reading]]\nname = "r"\nvalue = "b"\n[[reading.choice]]\nvalue = "a"\n'
               'cues = { nope = { zhong = 3 } }\n')
    code, out = _validate(tmp_path, capsys, reading=reading)
    assert "reading 'r' value 'b' changes nothing" in out
    assert "reading 'r' value 'a' sets cue 'nope', which the sheet does not have" in out


def test_a_reading_choice_is_checked_as_a_cue(tmp_path, capsys) -> None:
    reading = ('[[reading]]\nname = "r"\nvalue = "a"\n[[reading.choice]]\nvalue = "a"\n'
               'cues = { sing = { zhong = 2, pieces = ["鹿鳴", "四牡", "皇皇者華"] } }\n')
    code, out = _validate(tmp_path, capsys, reading=reading)
    assert code == 2 and "reading 'r' value 'a': 2 終 does not fit 3 pieces" in out


def test_validate_warns_on_an_unsounded_instrument(tmp_path, capsys) -> None:
    code, out = _validate(tmp_path, capsys, extra=', { name = "鑮", count = 1 }')
    assert code == 0
    assert ("warning: " in out and "instrument 鑮 is listed for sing but never sounds: remove "
            "it or say why (silent = \"…\")") in out
    code, out = _validate(tmp_path, capsys,
                          extra=', { name = "鑮", count = 1, silent = "for the stage plan" }')
    assert code == 0 and "warning" not in out


def test_old_string_choices_warn(tmp_path, capsys) -> None:
    reading = '[[reading]]\nname = "r"\nvalue = "a"\nchoices = ["a", "b"]\n'
    code, out = _validate(tmp_path, capsys, reading=reading)
    assert code == 0 and "reading 'r': its choices change nothing" in out
    with pytest.raises(SheetErrors):
        parse_sheet(SHEET.format(reading=reading.replace('"a", "b"', '"b"'), at="x", extra=""))

"""Issue 26, the third pass of fidelity: each fix pinned to its passage (quoted in the test's
docstring), checked in the sheets and in the compiled timeline."""

from __future__ import annotations

from fractions import Fraction

import pytest

from cues.builtin import builtin_text
from cues.errors import SheetErrors
from cues.sheet.loader import builtin_rite, parse_sheet
from sequencer.timeline.compiler import compile_rite, make_settings
from sequencer.timeline.events import Note


def _calls(rite_id: str, cue_id: str, variants: tuple[str, ...] = ()) -> list[Note]:
    rite = builtin_rite(rite_id, variants)
    return [n for n in compile_rite(rite).notes if n.cue == cue_id and n.position == "獲者"]


@pytest.mark.parametrize(("rite_id", "variants"), [("xiang-she", ()), ("yan", ("she",)),
                                                   ("da-she", ())])
def test_the_marker_calls_gong_then_shang_in_every_round(rite_id: str,
                                                          variants: tuple[str, ...]) -> None:
    """鄉射: 「獲者坐而獲，舉旌以宮，偃旌以商」; 大射: 「舉旌以宮，偃旌以商」, 注 「再言獲也」;
    the later rounds 「如初」 (大射 疏: 「皆如上第二番射法，唯作樂為異耳」)."""
    rite = builtin_rite(rite_id, variants)
    for cue_id in ("she-1", "she-2", "she-jie"):
        cue = rite.cue(cue_id)
        notes = [n for n in _calls(rite_id, cue_id, variants) if n.lyric == "獲"]
        turns = len(cue.shooting.ou) if cue.shooting else next(
            c.times for c in cue.calls if c.words == "獲")
        assert len(notes) == 2 * turns, cue_id
        assert [n.semitones for n in notes[:2]] == [-12, -10]  # 宮 then 商, a man's octave
        assert all(n.instrument == "歌" and (n.x, n.y) == (-5.0, -30.0) for n in notes)


def test_shang_is_nine_to_eight_above_gong() -> None:
    """大射 注 「宮為君，商為臣，其聲和相生也」; 疏 「宮數八十一，商數七十二」: the 商 string is 72
    to the 宮's 81, so 商 sounds 81:72 = 9:8 above it (not below, as a modern note has it)."""
    notes = _calls("da-she", "she-1")
    gong = next(n for n in notes if n.semitones == -12)
    shang = next(n for n in notes if n.semitones == -10)
    assert Fraction(shang.hz / gong.hz).limit_denominator(100) == Fraction(9, 8)
    assert abs(shang.hz / gong.hz - 81 / 72) < 1e-9


def test_the_da_she_bearers_answer_on_gong_then_shang_before_the_shots() -> None:
    """大射: 「負侯皆許諾，以宮趨，直西，及乏南，又諾以商，至乏，聲止」 — and again in the second
    round: 「司馬命去侯，負侯許諾如初」."""
    for cue_id in ("she-1", "she-2"):
        notes = sorted(_calls("da-she", cue_id), key=lambda n: n.tick)
        assert [(n.lyric, n.semitones) for n in notes[:2]] == [("諾", -12), ("諾", -10)]
        assert notes[0].duration > notes[2].duration  # the 宮 held while they run west
        assert "命去侯" in builtin_rite("da-she").cue(cue_id).at


def test_a_call_must_stand_in_the_layout() -> None:
    """The call sounds where its caller stands: a `who` the layout lacks is an error."""
    text = builtin_text("xiang-she").replace('who = "獲者"', 'who = "無人"', 1)
    with pytest.raises(SheetErrors) as err:
        parse_sheet(text, "x.toml")
    assert "無人" in str(err.value) and "position" in str(err.value)


def test_calls_change_nothing_under_a_silent_layout_setting() -> None:
    """The 射節's 節 stay on their grid with the calls added (「間若一」)."""
    rite = builtin_rite("xiang-she")
    timeline = compile_rite(rite, make_settings(rite.settings))
    span = timeline.span("she-jie")
    jie = span.jie_ticks
    drums = [n.tick - span.start for n in timeline.notes if n.cue == "she-jie"
             and n.instrument == "鼓"]
    assert drums and all(t % (jie // 4) == 0 for t in drums)


@pytest.mark.parametrize(("rite_id", "cue_ids"), [("yan", ("he-yue", "wu-suan-yue")),
                                                  ("da-she", ("wu-suan-yue",))])
def test_a_lords_he_yue_sounds_bells_and_stones(rite_id: str, cue_ids: tuple[str, ...]) -> None:
    """燕禮 記 「有房中之樂」, 注 「弦歌周南召南之詩而不用鍾磬之節也」: only the 房中之樂 goes
    without 鍾磬, so a lord's 合樂 (「歌樂與眾聲俱作」) keeps them — reading he-yue-jin = 鍾磬 by
    default; 磬 (the 鄉飲酒 疏's 「堂下有笙磬」) leaves the bells out."""
    for reading, bells in (("鍾磬", True), ("磬", False)):
        rite = builtin_rite(rite_id, (), {"he-yue-jin": reading})
        notes = compile_rite(rite).notes
        for cue_id in cue_ids:
            struck = {n.instrument for n in notes if n.cue == cue_id}
            assert "編磬" in struck and ("編鐘" in struck) is bells, (cue_id, reading)
    rite = builtin_rite("yan", ("xia-guan",))
    assert "編鐘" in {n.instrument for n in compile_rite(rite).notes
                     if n.cue == "he-yue-xia-guan"}


def test_the_fang_zhong_still_has_no_bells() -> None:
    """「弦歌周南召南之詩而不用鍾磬之節也」: the 房中之樂 alone is without 鍾磬."""
    rite = builtin_rite("yan", ("fang-zhong",))
    struck = {n.instrument for n in compile_rite(rite).notes if n.cue == "fang-zhong"}
    assert not struck & {"編鐘", "編磬"}


def test_a_reading_whose_cue_is_absent_warns_naming_the_variant() -> None:
    """A reading whose cue the chosen variants leave out changes nothing: it says which variant
    it needs (燕禮 「若射則大射正爲司射如鄕射之禮」: the 射節 plays only with variant she)."""
    rite = builtin_rite("yan", (), {"yan-she-jie": "采蘋-5"})
    assert rite.notices == (
        "--reading yan-she-jie=采蘋-5 changes nothing: it sets cue she-jie, which is not played "
        "(--variant she is not chosen); add --variant she",)
    assert not builtin_rite("yan", ("she",), {"yan-she-jie": "采蘋-5"}).notices
    assert not builtin_rite("yan").notices  # a default is not a choice


def test_the_yan_she_drums_the_touhu_pattern_by_default() -> None:
    """大射 注 「凡射之鼓節，《投壺》其存者也」; 投壺 注 「射謂燕射」 (孔疏 「非大射及乡射也」):
    the 燕's shooting drums 魯鼓 whole (「盡用之為射禮」), ○ on the 鼙, □ on the 鼓
    (「圜者擊鼙，方者擊鼓」)."""
    from sequencer.timeline.drums import pattern_string

    rite = builtin_rite("yan", ("she",))
    assert rite.settings["drum_pattern"] == "lu2"
    timeline = compile_rite(rite, make_settings(rite.settings))
    span = timeline.span("she-jie")
    first = sorted((n for n in timeline.notes if n.cue == "she-jie"
                    and n.instrument in ("鼙", "建鼓") and n.tick < span.start + span.jie_ticks),
                   key=lambda n: n.tick)
    string = "".join("○" if n.instrument == "鼙" else "□" for n in first)
    assert string == pattern_string("lu2")


@pytest.mark.parametrize("rite_id", ["xiang-she", "da-she"])
def test_jie_is_the_projects_pattern_where_the_touhu_is_not_tied(rite_id: str) -> None:
    """孔疏 on the 投壺: 「故知此射亦谓燕射非大射及乡射也」 — the 鄉射 and 大射 keep the
    project's 節 by default, marked as its choice; the 投壺's strings are a reading."""
    rite = builtin_rite(rite_id)
    assert rite.settings.get("drum_pattern", "jie") == "jie"
    assert any(c.field == "drum_pattern" for c in rite.cue("she-jie").choices)
    assert builtin_rite(rite_id, (), {"she-gu": "薛鼓"}).settings["drum_pattern"] == "xue2"


@pytest.mark.parametrize(("rite_id", "variants", "cue_id"), [
    ("yan", ("xia-guan",), "xia-guan-xin-gong"), ("da-she", (), "guan-xin-gong")])
def test_xin_gong_with_the_sheng_is_a_reading(rite_id: str, variants: tuple[str, ...],
                                              cue_id: str) -> None:
    """記 「下管新宮，笙入三成」; 疏 「則吹管者亦吹笙，故兼言笙，欲見笙管相將也」: by default the
    管 alone (注 「管之入三成謂三終也」), with reading xin-gong-sheng = 管笙 the 笙 and 和 sound
    with the 管."""
    for value, winds in (("管", {"管"}), ("管笙", {"管", "笙", "和"})):
        rite = builtin_rite(rite_id, variants, {"xin-gong-sheng": value})
        assert {n.instrument for n in compile_rite(rite).notes if n.cue == cue_id} == winds


@pytest.mark.parametrize("rite_id", ["xiang-yin-jiu", "xiang-she"])
def test_the_xiang_wu_suan_pool_is_a_reading(rite_id: str) -> None:
    """鄭注 「燕乐亦无数，或[间]或合，尽欢而止也」 names the 間 and the 合 only; the 疏
    「案上升歌笙[间]合乐皆三终，言有数，此即无[算]也」 counts the whole program: the 疏's pool by
    default, marked as the project's choice, the 注's a reading."""
    whole = builtin_rite(rite_id).cue("wu-suan-yue")
    assert {"鹿鳴", "南陔"} <= {p.title for p in whole.pieces}
    assert any(c.field == "pieces" for c in whole.choices)
    zhu = builtin_rite(rite_id, (), {"wu-suan-pool": "間合"}).cue("wu-suan-yue")
    assert [p.title for p in zhu.pieces][:2] == ["魚麗", "由庚"] and len(zhu.pieces) == 12


def _show(rite_id: str, *args: str) -> dict:
    import contextlib
    import io
    import json

    import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["show", rite_id, *args, "--json"]) == 0
    return json.loads(out.getvalue())


def _choices(data: dict, cue_id: str) -> set[str]:
    return {c["field"] for c in next(c for c in data["cues"] if c["id"] == cue_id)["choices"]}


def test_the_silent_choices_are_marked() -> None:
    """What no passage fixes is in `choices` with its reason: the 大射 金奏's players (the text
    names 鍾 鑮 鼓 磬, not their players); no 獻笙 in the 燕's xia-guan (大射 注 「笙從工而入，既管
    不獻，略下樂也」); the winds silent and the pairs back to back in every 射節; the 磬 on each
    stanza's first note (「谓堂上有歌瑟，堂下有笙磬，合奏此诗」 says it sounds, not when)."""
    da_she = _show("da-she")
    assert "performers" in _choices(da_she, "si-xia-bin") & _choices(da_she, "si-xia-gong")
    assert {"winds", "ou", "drum_pattern"} <= _choices(da_she, "she-jie")
    assert "stanza_strike" in _choices(da_she, "wu-suan-yue")
    assert "unless" in {c.field for c in builtin_rite("yan").cue("xian-sheng").choices}
    assert "stanza_strike" in _choices(_show("xiang-yin-jiu"), "he-yue")


def test_a_paraphrased_moment_is_marked_not_quoted() -> None:
    """An `at` whose words are not the text's, e.g. 燕 「小臣納工工四人二瑟」 joined to
    「升自西階北面東上坐」 across other words, is shown as a paraphrase, not between 「」; the
    text's own words, 「樂正東面命大師曰：「奏《騶虞》，間若一」」, are quoted."""
    data = _show("yan", "--variant", "xia-guan", "--variant", "she")
    at = {c["id"]: c["at_verbatim"] for c in data["cues"]}
    assert at["sheng-ge-lu-ming"] is False and at["she-jie"] is True
    import contextlib
    import io

    import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["show", "yan", "--variant", "xia-guan"]) == 0
    assert "at (paraphrase) 小臣納工；升自西階，北面東上坐" in out.getvalue()
    assert "at 「卒歌，主人洗，升，獻工」" in out.getvalue()  # 「卒歌主人洗升獻工」: verbatim
    assert all(c["at_verbatim"] for c in _show("da-she")["cues"]
               if c["id"] in ("she-1", "she-2"))


def test_the_li_shou_fragment_is_the_she_yi_whole() -> None:
    """射義: 「曾孫侯氏，四正具舉。大夫君子，凡以庶士，小大莫處，御于君所，以燕以射，則燕則譽」 —
    not the 疏's abridgment 「曾孫侯氏，四正具舉。小大莫處，御於君所」."""
    from cues import repertoire

    assert repertoire.get_piece("貍首").fragment == (
        "曾孫侯氏，四正具舉。大夫君子，凡以庶士，小大莫處，御于君所，以燕以射，則燕則譽")

"""The items issue 26 left (docs/fidelity.md, "The fourth pass"): each pinned to its passage
(quoted in the test's docstring), checked in the sheets and in the compiled timeline."""

from __future__ import annotations

from cues import repertoire
from cues.sheet.loader import builtin_rite
from cues.sources import read_source
from sequencer.timeline.compiler import compile_rite
from sequencer.timeline.rite_json import cue_json

RANK_NOTE = ("春秋傳曰肆夏䌓遏渠天子所以享元侯也文王大明緜兩君相見之樂也然則諸侯相與燕升歌大雅合小稚也"
             "天子與次國小國之君燕亦如之與大國之君燕升歌頌合大雅其笙間之篇未聞")


def test_the_rank_passage_is_the_seed_verbatim_with_its_zhi() -> None:
    """燕禮 注: 「…文王大明緜兩君相見之樂也然則諸侯相與燕升歌大雅合小稚也天子與次國小國之君燕亦
    如之與大國之君燕升歌頌合大雅其笙間之篇未聞」 — the file writes 稚 for 雅 once."""
    text = read_source("seeds/yili-yan-li-zhengzhu.txt")
    assert RANK_NOTE in text
    assert "合小雅" not in text


def test_lords_feasting_one_another_sing_wen_wang_da_ming_mian() -> None:
    """「文王大明緜兩君相見之樂也然則諸侯相與燕升歌大雅合小稚也」 ... 「其笙間之篇未聞」: with
    variant zhu-hou the 升歌 is 文王, 大明, 緜, the 合 an unnamed 小雅, the 笙 and 間 unknown;
    none has a melody, so the 歌 never sounds (no invented melody) and the 瑟 drones."""
    rite = builtin_rite("yan", ("zhu-hou",))
    assert [p.title for p in rite.cue("sheng-ge").pieces] == ["文王", "大明", "緜"]
    assert [p.title for p in rite.cue("he-yue").pieces] == ["小雅 (未名)"]
    assert {p.title for p in rite.cue("sheng-ru").pieces} == {"笙詩 (未聞)"}
    assert {p.title for p in rite.cue("jian-ge").pieces} == {"間歌 (未聞)", "笙詩 (未聞)"}
    for cue in ("sheng-ge", "sheng-ru", "jian-ge", "he-yue", "wu-suan-yue"):
        assert all(repertoire.get_piece(p.title).lost for p in rite.cue(cue).pieces), cue
    notes = compile_rite(rite).notes
    assert not [n for n in notes if n.instrument == "歌"
                and n.cue in ("sheng-ge", "jian-ge", "he-yue", "wu-suan-yue")]
    assert [n for n in notes if n.cue == "sheng-ge" and n.instrument == "瑟"]
    for title in ("文王", "大明", "緜"):
        piece = repertoire.get_piece(title)
        assert piece.category == "大雅" and piece.melody_lost
        assert piece.source.quote == "文王大明緜兩君相見之樂也"


def test_the_tianzi_and_a_great_lord_is_the_other_value() -> None:
    """「天子與次國小國之君燕亦如之與大國之君燕升歌頌合大雅」: reading yan-bin =
    天子與大國之君 — a 頌 sung, a 大雅 joined in, neither named."""
    rite = builtin_rite("yan", ("zhu-hou",), {"yan-bin": "天子與大國之君"})
    assert [p.title for p in rite.cue("sheng-ge").pieces] == ["頌 (未名)"]
    assert [p.title for p in rite.cue("he-yue").pieces] == ["大雅 (未名)"]
    assert rite.cue("sheng-ge").zhong == 3


def test_the_rank_programs_are_off_by_default() -> None:
    """「故國君與其臣下及四方之賔燕用之合樂也」: the 經's program is the lord's with his own 臣;
    without variant zhu-hou the reading is not in force, nor listed, and says so if chosen."""
    rite = builtin_rite("yan")
    assert [p.title for p in rite.cue("sheng-ge").pieces] == ["鹿鳴", "四牡", "皇皇者華"]
    assert "yan-bin" not in {r.name for r in rite.readings}
    chosen = builtin_rite("yan", (), {"yan-bin": "天子與大國之君"})
    assert chosen.notices == ("--reading yan-bin=天子與大國之君 changes nothing: reading yan-bin "
                              "applies only with --variant zhu-hou; add it",)
    assert [c.pieces for c in chosen.cues] == [c.pieces for c in rite.cues]


def test_a_later_readings_bells_keep_the_rank_programs_pieces() -> None:
    """he-yue-jin = 磬 (鄉飲酒 疏 「谓堂上有歌瑟，堂下有笙磬，合奏此诗」) sets the 合樂's
    instruments only: the rank program's pieces stay, and its 歌 stays said silent."""
    rite = builtin_rite("yan", ("zhu-hou",), {"he-yue-jin": "磬"})
    cue = rite.cue("he-yue")
    assert [p.title for p in cue.pieces] == ["小雅 (未名)"]
    assert [c.name for c in cue.instruments] == ["歌", "瑟", "笙", "和", "編磬"]
    assert next(c for c in cue.instruments if c.name == "歌").silent



def test_no_dafu_enters_once_the_music_has_begun() -> None:
    """鄉飲酒 記 and 鄉射 記: 「樂作，大夫不入」 (鄭注 「後乐贤者」) — a rule of the first music
    cue, quoted verbatim with its layer 記 and shown by `show`. The 燕禮 has no such words."""
    for rite_id, cue_id in (("xiang-yin-jiu", "sheng-ge"), ("xiang-she", "he-yue")):
        rite = builtin_rite(rite_id)
        first = next(c for c in rite.cues if c.is_music)
        assert first.id == cue_id
        (rule,) = first.rules
        assert rule.quote == "樂作，大夫不入" and rule.work.endswith("記")
        assert "樂作，大夫不入" in read_source(rule.file)
        assert not any(c.rules for c in rite.cues if c.id != cue_id)
        shown = cue_json(first, compile_rite(rite))["rules"]
        assert [(r["quote"], r["layers"]) for r in shown] == [("樂作，大夫不入", ["記"])]
    assert "大夫不入" not in read_source("seeds/yili-yan-li-zhengzhu.txt")
    assert "大夫不入" not in read_source("seeds/yili-da-she-zhushu.txt")


def _called(rite_id: str, cue_id: str, variants: tuple[str, ...]) -> list[tuple[str | None, int]]:
    rite = builtin_rite(rite_id, variants)
    notes = sorted((n for n in compile_rite(rite).notes if n.cue == cue_id
                    and n.position == "獲者"), key=lambda n: n.tick)
    return [(n.lyric, n.semitones) for n in notes]


def test_the_third_rounds_nuo_sounds_before_the_command() -> None:
    """大射, the third round: 「司射猶挾一个以作射，如初。一耦揖升如初。司馬升，命去侯，負侯許諾。」
    — 疏 「此經云「如初」者，皆如上第二番射法，唯作樂為異耳」, and the second's is 「負侯許諾
    如初」: the 諾 on 宮 then 商 (「以宮趨…又諾以商」), a cue before 樂正's command (variant
    san-nuo; off by default, the default program unchanged)."""
    assert _called("da-she", "qu-hou-3", ("san-nuo",)) == [("諾", -12), ("諾", -10)]
    rite = builtin_rite("da-she", ("san-nuo",))
    ids = [c.id for c in rite.cues]
    assert ids.index("qu-hou-3") == ids.index("she-jie") - 1
    assert rite.cue("qu-hou-3").source.quote.endswith("司馬升，命去侯，負侯許諾。")
    assert "qu-hou-3" not in {c.id for c in builtin_rite("da-she").cues}


def test_the_fu_she_is_an_optional_round_before_the_wu_suan() -> None:
    """大射: 「若命曰「復射」，則不獻庶子」; 「司射命射，唯欲」; 「壹發，中三侯皆獲」 — an optional
    round (variant fu-she, off by default) after the 射節 and before the 無算爵; no music named."""
    rite = builtin_rite("da-she", ("fu-she",))
    ids = [c.id for c in rite.cues]
    assert ids.index("she-jie") < ids.index("fu-she") < ids.index("wu-suan-yue")
    cue = rite.cue("fu-she")
    assert cue.at == "司射命射，唯欲" and not cue.pieces and not cue.instruments
    assert {lyric for lyric, _ in _called("da-she", "fu-she", ("fu-she",))} == {"獲"}
    assert {n.instrument for n in compile_rite(rite).notes if n.cue == "fu-she"} == {"歌"}
    variant = next(v for v in rite.variants if v.id == "fu-she")
    assert variant.source is not None and variant.source.quote == "若命曰「復射」，則不獻庶子"
    assert "fu-she" not in {c.id for c in builtin_rite("da-she").cues}

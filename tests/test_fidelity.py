"""The four built-in rites against their texts: every quotation is verbatim, and the audited
facts of docs/fidelity.md hold in the sheets and in the compiled timeline."""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from cues.sheet.loader import BUILTIN_RITES, builtin_rite
from cues.sheet.quotations import found_in, quoted_parts
from cues.sources import normalize, read_source, source_files
from sequencer.timeline.compiler import compile_rite, make_settings

FIDELITY = Path(__file__).resolve().parent.parent / "docs" / "fidelity.md"


def sheet(rite_id: str) -> tuple[dict, str]:
    text = resources.files("cues.rites").joinpath(f"{rite_id}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text), text


def all_cues(rite_id: str) -> list:
    full = builtin_rite(rite_id)
    cues = {c.id: c for c in full.cues}
    return list(cues.values())


@pytest.mark.parametrize("rite_id", BUILTIN_RITES)
def test_every_source_quote_is_verbatim_in_its_file(rite_id: str) -> None:
    data, _ = sheet(rite_id)
    sources = [c["source"] for c in data["cue"]]
    sources += [t["source"] for name in ("position", "variant") for t in data.get(name, [])
                if "source" in t]
    for src in sources:
        assert src.get("file"), src
        assert normalize(src["quote"]) in normalize(read_source(src["file"])), src["quote"]


@pytest.mark.parametrize("rite_id", BUILTIN_RITES)
def test_quoted_at_and_stop_are_verbatim_in_the_rites_texts(rite_id: str) -> None:
    """An `at` (or a stop's `at`) written with 「」 quotes the texts the sheet itself cites."""
    data, text = sheet(rite_id)
    cited = set(re.findall(r'file = "([^"]+)"', text))
    for cue in data["cue"]:
        for moment in (cue.get("at", ""), cue.get("stop", {}).get("at", "")):
            for part in quoted_parts(moment):
                assert found_in(part, cited), (cue["id"], part)


@pytest.mark.parametrize("rite_id", BUILTIN_RITES)
def test_quotations_in_notes_are_verbatim_somewhere_in_the_sources(rite_id: str) -> None:
    _, text = sheet(rite_id)
    everything = set(source_files())
    for line in text.splitlines():
        if "note" in line or line.startswith("note"):
            for part in quoted_parts(line):
                assert found_in(part, everything), part


def test_pieces_notes_are_verbatim() -> None:
    text = resources.files("cues").joinpath("data/pieces.toml").read_text(encoding="utf-8")
    for part in quoted_parts(text):
        assert found_in(part, set(source_files())), part


def test_the_dashi_is_one_of_the_gong() -> None:
    """「大師上工也」: where the 大師 is named beside the 工, the 工 are four (six at the 大射)."""
    for rite_id, total in (("xiang-she", 4), ("yan", 4), ("da-she", 6)):
        rite = builtin_rite(rite_id, [v.id for v in builtin_rite(rite_id).variants
                                      if v.id != "xia-guan"])
        for cue in rite.cues:
            names = {c.name: c.count for c in cue.performers}
            if cue.kind == "射節":
                singers = sum(names.get(n, 0) for n in ("大師", "少師", "上工", "工"))
                assert singers == total, (rite_id, cue.id, names)


def test_the_pipes_are_played_by_the_sheng_players() -> None:
    """疏: 「則吹管者亦吹笙」 — no separate 管 players are counted."""
    for rite_id, variants, cue_id in (("da-she", [], "guan-xin-gong"),
                                      ("yan", ["xia-guan"], "xia-guan-xin-gong")):
        cue = builtin_rite(rite_id, variants).cue(cue_id)
        assert [p.name for p in cue.performers] == ["笙"]
        assert {i.name for i in cue.instruments} == {"管"}
        assert cue.zhong == 3


def test_yan_xia_guan_sings_lu_ming_three_times() -> None:
    cue = builtin_rite("yan", ["xia-guan"]).cue("sheng-ge-lu-ming")
    assert [p.title for p in cue.pieces] == ["鹿鳴"] and cue.zhong == 3


@pytest.mark.parametrize("rite_id", BUILTIN_RITES)
def test_wu_suan_yue_pool_is_sheng_ge_jian_and_he(rite_id: str) -> None:
    """「升歌間合無數」 / 「或閒或合」: not only the six 周南/召南 songs."""
    cue = builtin_rite(rite_id).cue("wu-suan-yue")
    titles = [p.title for p in cue.pieces]
    for title in ("鹿鳴", "魚麗", "由庚", "關雎", "采蘋"):
        assert title in titles, (rite_id, title)
    assert all(p.by == "笙" for p in cue.pieces if p.title in ("由庚", "崇丘", "由儀"))


def test_fang_zhong_plays_song_and_se_without_bells_or_chimes() -> None:
    """記 「有房中之樂」; 注 「弦歌周南召南之詩而不用鍾磬之節也」."""
    rite = builtin_rite("yan", ["fang-zhong"])
    cue = rite.cue("fang-zhong")
    assert {i.name for i in cue.instruments} == {"歌", "瑟"}
    tl = compile_rite(rite, make_settings(rite.settings))
    sounding = {n.instrument for n in tl.notes if n.cue == "fang-zhong"}
    assert sounding == {"歌", "瑟"}
    assert not sounding & {"編鐘", "鑮", "編磬"}


def test_yan_shooting_is_the_xiang_she() -> None:
    """「如鄕射之禮」: the 遷樂, two rounds without music, the 射節, the return."""
    rite = builtin_rite("yan", ["she"])
    ids = [c.id for c in rite.cues]
    order = ["qian-yue", "she-1", "she-2", "she-jie", "ji-wei", "wu-suan-yue"]
    assert [i for i in ids if i in order] == order
    assert [rite.cue(i).kind for i in order[:5]] == ["遷樂", "射", "射", "射節", "遷樂"]
    she = rite.cue("she-jie").shooting
    assert (she.song, she.jie, she.listen) == ("騶虞", 5, 1)  # the default reading
    reading = next(r for r in rite.readings if r.name == "yan-she-jie")
    assert reading.value == "騶虞-5" and set(reading.choices) == {"騶虞-5", "采蘋-5", "貍首-7"}
    assert any(o.exempt == ("左",) for o in she.ou)  # 「不以樂志」


def test_shao_is_a_sung_song() -> None:
    cue = builtin_rite("yan", ["wu"]).cue("shao")
    assert [(p.title, p.by) for p in cue.pieces] == [("勺", "歌")]
    assert {"歌", "瑟"} <= {i.name for i in cue.instruments}
    assert "編鐘" not in {i.name for i in cue.instruments}


def test_da_she_second_si_xia_stops_where_the_jing_says() -> None:
    """「主人答拜。樂闋。升受爵」 after the lord drains the cup."""
    cue = builtin_rite("da-she").cue("si-xia-gong")
    assert cue.stop is not None and "卒爵" in cue.stop.at and "答拜" in cue.stop.at


def test_gai_of_the_xiang_yin_jiu_starts_at_the_steps() -> None:
    """記: 「樂正命奏《陔》，賔出，至於階，《陔》作」."""
    cue = builtin_rite("xiang-yin-jiu").cue("gai")
    assert "至於階" in cue.at and {i.name for i in cue.instruments} == {"鼓"}


def test_fidelity_document_covers_every_cue() -> None:
    doc = FIDELITY.read_text(encoding="utf-8")
    for rite_id in BUILTIN_RITES:
        rite = builtin_rite(rite_id)
        every = {c.id for c in rite.cues}
        every |= {c.id for c in builtin_rite(rite_id, [v.id for v in rite.variants]).cues}
        every |= {c.id for v in rite.variants for c in builtin_rite(rite_id, [v.id]).cues}
        for cue_id in every:
            assert f"`{rite_id}/{cue_id}`" in doc, (rite_id, cue_id)


def test_fidelity_document_quotes_verbatim() -> None:
    everything = set(source_files())
    for part in quoted_parts(FIDELITY.read_text(encoding="utf-8")):
        assert found_in(part, everything), part


def test_fidelity_code_spec_quotes_verbatim() -> None:
    everything = set(source_files())
    spec = FIDELITY.with_name("fidelity-code.md").read_text(encoding="utf-8")
    for part in quoted_parts(spec):
        assert found_in(part, everything), part

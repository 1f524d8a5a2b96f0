"""The four built-in rites print the `show --json` contract, and every quote is verbatim."""

from __future__ import annotations

import json

import pytest

import cli
from cues.model import KINDS, MUSIC_KINDS
from cues.repertoire import all_pieces, canonical_title
from cues.sheet.loader import BUILTIN_RITES, builtin_rite
from cues.sources import normalize, quote_found, read_source, source_files

VARIANTS = {"xiang-yin-jiu": [[]], "xiang-she": [[], ["cai-pin"]],
            "yan": [[], ["na-bin"], ["xia-guan", "wu", "she", "na-bin"]], "da-she": [[]]}


def show_json(capsys, *args: str) -> dict:
    assert cli.main(["show", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("rite", BUILTIN_RITES)
def test_show_json_contract(rite: str, capsys) -> None:
    for variants in VARIANTS[rite]:
        args = [rite] + [a for v in variants for a in ("--variant", v)]
        data = show_json(capsys, *args)
        assert {"rite", "title", "layout", "cues"} <= set(data)
        assert data["rite"] == rite
        assert all({"name", "x", "y"} <= set(p) for p in data["layout"])
        assert len({c["id"] for c in data["cues"]}) == len(data["cues"])
        for cue in data["cues"]:
            for key in ("id", "kind", "pieces", "zhong", "performers", "instruments", "trigger",
                        "at", "start_s", "duration_s", "lost", "source"):
                assert key in cue, (rite, cue["id"], key)
            assert cue["kind"] in KINDS
            assert all(canonical_title(t) == t for t in cue["pieces"])  # traditional titles
            for group in ("performers", "instruments"):
                assert all(set(x) - {"silent"} == {"name", "count"} and x["count"] >= 1
                           for x in cue[group])
            assert isinstance(cue["start_s"], float)
            assert cue["at"], cue["id"]
            if cue["kind"] == "射節":
                assert {"song", "jie", "listen", "release_s"} <= set(cue)
                assert cue["jie"] - cue["listen"] == 4
                assert len(cue["release_s"]) == 8  # 乘矢 for each of the pair
            if cue["kind"] == "無算樂":
                assert cue["duration_s"] is None  # the operator ends it
        starts = [c["start_s"] for c in data["cues"]]
        assert starts == sorted(starts)


@pytest.mark.parametrize("rite", BUILTIN_RITES)
def test_every_music_cue_quotes_its_source_verbatim(rite: str) -> None:
    full = builtin_rite(rite)
    all_variants = [v.id for v in full.variants]
    cues = {c.id: c for c in full.cues}
    cues.update({c.id: c for c in builtin_rite(rite, all_variants).cues})
    music = [c for c in cues.values() if c.kind in MUSIC_KINDS]
    assert music
    for cue in cues.values():
        if cue.kind in MUSIC_KINDS or cue.source.quote:
            assert cue.source.file, cue.id
            assert quote_found(cue.source.quote, cue.source.file), (cue.id, cue.source.quote)


def test_quotes_are_found_in_the_shared_sources_too() -> None:
    """The bundled sources are byte copies of ../shared; each quote is there, punctuation aside."""
    corpus = "".join(normalize(read_source(f)) for f in source_files())
    for rite in BUILTIN_RITES:
        for cue in builtin_rite(rite, [v.id for v in builtin_rite(rite).variants]).cues:
            assert normalize(cue.source.quote) in corpus


def test_programs_follow_the_texts() -> None:
    kinds = {r: [c.kind for c in builtin_rite(r).cues] for r in BUILTIN_RITES}
    assert [k for k in kinds["xiang-yin-jiu"] if k in MUSIC_KINDS] == [
        "升歌", "笙", "間歌", "合樂", "無算樂", "陔"]
    assert [k for k in kinds["xiang-she"] if k in MUSIC_KINDS] == ["合樂", "射節", "無算樂", "陔"]
    assert kinds["xiang-she"].count("遷樂") == 2
    ds = builtin_rite("da-she")
    assert [k for k in kinds["da-she"] if k in MUSIC_KINDS] == [
        "金奏", "金奏", "升歌", "管", "射節", "無算樂", "陔", "驁"]
    assert ds.cue("ge-lu-ming").pieces[0].title == "鹿鳴" and ds.cue("ge-lu-ming").zhong == 3
    she = ds.cue("she-jie").shooting
    assert (she.song, she.jie, she.listen) == ("貍首", 7, 3)
    assert any(o.exempt == ("左",) for o in she.ou)  # the lord: 「不以樂志」
    hang = {p.name: (p.x, p.y) for p in ds.layout}
    # east: 笙磬, south of it 笙鍾, south of that 鑮; west likewise; 朔鼙 north of the west 建鼓
    assert hang["笙磬"][0] > 0 and hang["笙磬"][1] > hang["笙鍾"][1] > hang["東鑮"][1]
    assert hang["頌磬"][0] < 0 and hang["頌磬"][1] > hang["頌鍾"][1] > hang["西鑮"][1]
    assert hang["朔鼙"][1] > hang["西建鼓"][1] and hang["應鼙"][0] > hang["東建鼓"][0]
    assert hang["鼗"][0] < hang["頌磬"][0]


def test_repertoire_marks_the_lost() -> None:
    pieces = {p.title: p for p in all_pieces()}
    for title in ("肆夏", "南陔", "白華", "華黍", "由庚", "崇丘", "由儀", "貍首", "新宮", "陔", "驁",
                  "騶虞", "勺"):
        assert pieces[title].lost and not pieces[title].stanzas
    extant = [t for t, p in pieces.items() if not p.lost]
    assert len(extant) == 12  # the 風雅十二詩譜
    for title in extant:
        p = pieces[title]
        assert p.mode in ("黃鍾宮", "無射商") and p.text
        assert all(len(st.lyric) == st.syllables for st in p.stanzas)
    assert pieces["騶虞"].text and not pieces["貍首"].text
    for p in pieces.values():
        assert quote_found(p.source.quote, p.source.file), p.title


def test_readable_table(capsys) -> None:
    assert cli.main(["show", "大射"]) == 0
    out = capsys.readouterr().out
    assert "she-jie" in out and "《貍首》" in out and "lost" in out


def test_bad_usage_exit_2(capsys) -> None:
    assert cli.main(["show", "xiang-she", "--variant", "nope"]) == 2
    assert "unknown variant 'nope'" in capsys.readouterr().err
    assert cli.main(["frobnicate"]) == 2
    assert cli.main(["show", "no-such-rite"]) == 2
    assert cli.main(["show", "xiang-she", "--tempo", "abc"]) == 2

"""Citations a scholar can trust and follow: every quote says what it is (經, 記, 注, 疏, a modern
note) and the edition, modern notes are never shown as the classic, the texts have readable
names, and ``yuezheng source`` shows a passage in its context."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import cli
from cues.editions import (
    JI,
    JING,
    MODERN,
    MODERN_NOTE,
    SHU,
    ZHU,
    char_layers,
    claimed_layer,
    current_name,
    editions,
    former_names,
)
from cues.errors import SheetErrors
from cues.model import Source
from cues.passages import locate
from cues.repertoire import all_pieces
from cues.sheet.loader import BUILTIN_RITES, builtin_rite, parse_sheet
from cues.sources import quote_found, read_source, source_files

ANNOTATED = "seeds/yili-xiang-she-li-annotated.txt"
DA_SHE = "seeds/yili-da-she-zhushu.txt"


def _builtin_citations() -> Iterator[tuple[str, Source]]:
    for rid in BUILTIN_RITES:
        rite = builtin_rite(rid, variants=None)
        sources = [("layout", rite.layout_source), *((c.id, c.source) for c in rite.cues),
                   *((f"position {p.name}", p.source) for p in rite.layout),
                   *((f"variant {v.id}", v.source) for v in rite.variants),
                   *((f"reading {r.name}={o.value}", o.source)
                     for r in rite.readings for o in r.options)]
        sources += [(f"reading cue {cid}", c.source) for r in rite.readings
                    for o in r.options for cid, c in o.cues.items()]
        for what, source in sources:
            if source is not None:
                yield f"{rid} {what}", source
    for piece in all_pieces():
        yield f"piece {piece.title}", Source(piece.source.work, piece.source.quote,
                                             piece.source.file)
        if piece.fragment_source is not None:
            f = piece.fragment_source
            yield f"piece {piece.title} fragment", Source(f.work, f.quote, f.file)


def _line_layers(file: str, line: int) -> set[str | None]:
    text = read_source(file)
    lines = text.split("\n")
    start = sum(len(x) + 1 for x in lines[:line - 1])
    return set(char_layers(file, text)[start:start + len(lines[line - 1])])


def test_no_quote_shown_as_the_classic_comes_from_a_modern_note() -> None:
    shown = 0
    for what, source in _builtin_citations():
        passage = locate(source)
        assert passage is not None, what
        assert not passage.modern, (what, source.quote, passage.layers)
        if passage.marked:
            shown += 1
            # the work's own word agrees with where the file puts the quote
            assert claimed_layer(source.work) in passage.layers, (what, source.work,
                                                                  passage.layers)
    assert shown >= 60  # most citations are in files that mark their layers


def test_the_annotated_edition_marks_its_modern_notes_and_translation() -> None:
    assert _line_layers(ANNOTATED, 62) == {JING}  # 「奏《騶虞》，間若一（103）」
    assert _line_layers(ANNOTATED, 119) == {JI}  # 歌《騶虞》，若《采蘋》，皆五終
    assert _line_layers(ANNOTATED, 143) == {MODERN_NOTE}  # (16) 立於縣中：即立於磬之東
    assert _line_layers(ANNOTATED, 226) == {MODERN_NOTE}  # (103) 《騶虞》：《詩經·召南》中詩篇
    assert _line_layers(ANNOTATED, 300) <= MODERN | {None}


def test_the_da_she_zhushu_lines_alternate_jing_and_zhu_between_shu() -> None:
    assert _line_layers(DA_SHE, 306) == {JING}  # 乃管《新宮》三終。
    assert _line_layers(DA_SHE, 307) == {ZHU}  # 管，謂吹簜以播《新宮》之樂…
    assert _line_layers(DA_SHE, 308) == {SHU}
    assert _line_layers(DA_SHE, 305) == {SHU}  # the second half of the 疏 cut in two
    assert _line_layers(DA_SHE, 730) == {JING} and _line_layers(DA_SHE, 731) == {ZHU}


def test_zouyu_and_the_sheng_position_cite_the_classic() -> None:
    zouyu = next(p for p in all_pieces() if p.title == "騶虞")
    passage = locate(Source(zouyu.source.work, zouyu.source.quote, zouyu.source.file))
    assert passage is not None and passage.marked and passage.layers == (ZHU,)
    assert "詩經·召南》中詩篇" not in zouyu.source.quote
    sheng = next(p for p in builtin_rite("xiang-she").layout if p.name == "笙")
    assert sheng.source is not None
    passage = locate(sheng.source)
    assert passage is not None and passage.layers == (JING,) and passage.first == 25


def test_every_bundled_text_is_catalogued_with_a_readable_name_and_its_edition() -> None:
    texts = [f for f in source_files() if f.endswith(".txt")]
    assert set(texts) <= set(editions()), set(texts) - set(editions())
    for file in texts:
        entry = editions()[file]
        assert entry.edition and entry.origin and entry.title
        assert not any(ch.isdigit() for ch in file.split("/")[1].split("_")[0][:3]), file
    assert set(former_names()) == {
        "seeds/000_5493ada665a6bf47.txt", "seeds/001_0c4ea496b34776c0.txt",
        "seeds/002_6b8d3caf3f378969.txt", "seeds/003_bc907776b82d5268.txt",
        "seeds/004_1d8b5caa97974f06.txt"}
    readme = (Path(__file__).parents[1] / "cues/data/sources/SOURCES.md").read_text("utf-8")
    for file in [f for f in texts if f.startswith("seeds/")]:
        assert f"`{file}`" in readme and f"`{editions()[file].former}`" in readme


SHEET = """
[rite]
id = "mine"
title = "試"
work = "儀禮·鄉射禮"
hang = "特縣"

[[cue]]
id = "sheng"
kind = "合樂"
at = "乃合樂"
pieces = ["關雎"]
source = {{ work = "{work}", file = "{file}", quote = "{quote}" }}
"""


def test_a_modern_note_cited_as_the_classic_is_refused() -> None:
    text = SHEET.format(work="儀禮·鄉射禮", file=ANNOTATED, quote="即立於磬之東")
    with pytest.raises(SheetErrors) as info:
        parse_sheet(text, "mine.toml")
    message = str(info.value)
    assert "modern note" in message and "line 143" in message and "mine.toml" in message
    # said for what it is, it is allowed
    parse_sheet(SHEET.format(work="儀禮·鄉射禮 (modern note)", file=ANNOTATED,
                             quote="即立於磬之東"), "mine.toml")


def test_a_sheet_citing_a_former_name_still_loads_and_shows_the_new_name() -> None:
    old = "seeds/000_5493ada665a6bf47.txt"
    assert current_name(old) == ANNOTATED and quote_found("乃合樂《周南·關睢》", old)
    rite = parse_sheet(SHEET.format(work="儀禮·鄉射禮", file=old, quote="乃合樂《周南·關睢》"),
                       "mine.toml")
    assert rite.cues[0].source.file == ANNOTATED


def test_source_prints_the_passage_in_context_with_file_line_and_layer(capsys) -> None:
    assert cli.main(["source", "騶虞"]) == 0
    out = capsys.readouterr().out
    assert "儀禮·鄉射禮 鄭注 — 注" in out and "reference/zhouli_music.txt, line 71" in out
    assert "⟦驺虞》，《国风召南》之诗篇也⟧" in out and "edition:" in out
    assert ">   71 經/注" in out  # the line's layers; > marks the quote's line
    assert cli.main(["source", "笙", "--rite", "鄉射禮"]) == 0
    out = capsys.readouterr().out
    assert f"{ANNOTATED}, line 25" in out and "⟦笙入，立於縣中⟧（16）" in out
    assert "modern note" not in out.split("edition:")[0]
    assert cli.main(["source", "ao", "--rite", "da-she"]) == 0
    out = capsys.readouterr().out
    # the 經 alone since the spliced 經+注 quote was split by layer (the 注 is in the note)
    assert "儀禮·大射 — 經: 「公入，《驁》」" in out and "line 874\n" in out


def test_source_json_and_the_refusals(capsys) -> None:
    assert cli.main(["source", "she-jie", "--rite", "xiang-she", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["source"]["layers"] == [JING] and rows[0]["source"]["line"] == 62
    assert any(c["quote"] and c["line"] == 62 for c in rows[0]["context"])
    assert cli.main(["source", "she-jie"]) == 2  # in three rites: say which
    assert "--rite" in capsys.readouterr().err
    assert cli.main(["source", "no-such-cue", "--rite", "yan"]) == 2
    assert "nothing cites" in capsys.readouterr().err


def test_show_and_pieces_say_what_each_quote_is_and_the_edition(capsys) -> None:
    assert cli.main(["show", "xiang-she", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    she_jie = next(c for c in data["cues"] if c["id"] == "she-jie")
    assert she_jie["source"]["layers"] == [JING] and she_jie["source"]["layers_marked"]
    assert {t["file"] for t in data["texts"]} >= {ANNOTATED}
    assert all(t["edition"] for t in data["texts"])
    assert cli.main(["show", "xiang-she"]) == 0
    out = capsys.readouterr().out
    assert "儀禮·鄉射禮 [經]: 「樂正東面命大師曰" in out and "texts cited" in out
    assert cli.main(["pieces"]) == 0
    out = capsys.readouterr().out
    zouyu = next(line for line in out.splitlines() if "《騶虞》" in line)
    assert "[注]" in zouyu and "中詩篇" not in zouyu


def test_a_work_naming_another_layer_than_the_file_is_a_warning() -> None:
    text = SHEET.format(work="儀禮·鄉射禮 鄭注", file=ANNOTATED, quote="乃合樂《周南·關睢》")
    rite = parse_sheet(text, "mine.toml")
    assert any("names the 注" in w and "in the 經" in w for w in rite.warnings), rite.warnings
    for rid in BUILTIN_RITES:  # the built-in rites' works agree with their files
        assert not [w for w in builtin_rite(rid, variants=None).warnings if "names the" in w]


def test_a_moment_quoted_from_a_modern_note_only_is_refused() -> None:
    # 「即立於磬之東」 is note (16) of the annotated edition, not the 經
    text = SHEET.format(work="儀禮·鄉射禮", file=ANNOTATED, quote="乃合樂《周南·關睢》")
    text = text.replace('at = "乃合樂"', 'at = "「即立於磬之東」"')
    with pytest.raises(SheetErrors) as info:
        parse_sheet(text, "mine.toml")
    assert "only in a modern note or translation" in str(info.value)
    parse_sheet(text.replace("「即立於磬之東」", "「笙入，立於縣中」"), "mine.toml")


def test_source_names_a_piece_or_a_rite_s_own_cue(capsys) -> None:
    assert cli.main(["source", "gai"]) == 0  # without --rite: the piece 《陔》
    assert capsys.readouterr().out.startswith("piece 《陔》")
    assert cli.main(["source", "gai", "--rite", "xiang-she"]) == 0  # the rite's cue gai
    out = capsys.readouterr().out
    assert out.startswith("cue gai — 鄉射禮") and "賓降及階" in out
    assert cli.main(["source", "关雎", "--rite", "xiang-she"]) == 0  # no cue so named: the piece
    assert capsys.readouterr().out.startswith("piece 《關雎》")
    assert cli.main(["source", "layout", "--rite", "燕礼"]) == 0
    assert "注 (as cited)" in capsys.readouterr().out  # 經 and 注 unmarked in that edition


def test_source_shows_a_sheet_s_own_text_beside_it(tmp_path: Path, capsys) -> None:
    (tmp_path / "mine.txt").write_text("第一行\n乃合樂，工歌\n第三行\n", encoding="utf-8")
    sheet = tmp_path / "mine.toml"
    sheet.write_text(SHEET.format(work="我的本", file="mine.txt", quote="乃合樂"),
                     encoding="utf-8")
    assert cli.main(["source", "sheng", "--rite", str(sheet)]) == 0
    out = capsys.readouterr().out
    assert "我的本 — 經 (as cited)" in out and "mine.txt, line 2" in out
    assert "⟦乃合樂⟧，工歌" in out and "the user's own text" in out


def test_every_built_in_moment_is_in_the_classic_s_words() -> None:
    from cues.sheet.quotations import found_in_classic, quoted_parts

    for rid in BUILTIN_RITES:
        rite = builtin_rite(rid, variants=None)
        files = rite.cited_files()
        cues = [*rite.cues, *(c for r in rite.readings for o in r.options for c in o.cues.values())]
        for cue in cues:
            for moment in (cue.at, cue.stop.at if cue.stop else ""):
                for part in quoted_parts(moment):
                    assert found_in_classic(part, files), (rid, cue.id, part)

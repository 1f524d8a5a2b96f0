"""The cue-sheet loader and validator: every rule has a sheet that breaks it."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cli
from cues.builtin import builtin_text
from cues.errors import SheetErrors
from cues.sheet.loader import BUILTIN_RITES, builtin_rite, load_rite, load_sheet, parse_sheet

GOOD = textwrap.dedent('''\
    [rite]
    id = "test"
    title = "試"
    work = "test"
    hang = "特縣"
    signals = ["賓醉"]

    [[variant]]
    id = "v"
    title = "a variant"

    [[position]]
    name = "磬"
    instrument = "編磬"
    x = 0.0
    y = -1.5

    [[cue]]
    id = "a"
    kind = "升歌"
    at = "工入"
    pieces = ["鹿鳴", "四牡", "皇皇者華"]
    zhong = 3
    performers = [{ name = "工", count = 4 }]
    instruments = [{ name = "瑟", count = 2 }, { name = "歌", count = 2 }]
    source = { work = "儀禮·燕禮", file = "seeds/yili-yan-li-zhengzhu.txt", quote = "工歌鹿鳴四牡皇皇者華" }

    [[cue]]
    id = "b"
    kind = "間歌"
    at = "乃間"
    trigger = "follow"
    pieces = [{ title = "魚麗", by = "歌" }, { title = "由庚", by = "笙" }]
    zhong = 1
    source = { work = "w", quote = "q" }

    [[cue]]
    id = "c"
    kind = "射節"
    at = "奏騶虞"
    trigger = "after:a"
    song = "騶虞"
    jie = 5
    listen = 1
    ou = ["上耦", { name = "君與賓", exempt = ["左"] }]
    source = { work = "w", quote = "q" }

    [[cue]]
    id = "d"
    kind = "陔"
    at = "賓出"
    trigger = "signal:賓醉"
    when = ["v"]
    pieces = ["陔"]
    stop = { event = "樂闋", at = "遂出" }
    source = { work = "w", quote = "q" }
    ''')


def errors_of(text: str) -> list[str]:
    with pytest.raises(SheetErrors) as info:
        parse_sheet(text, "t.toml")
    return [str(e) for e in info.value.errors]


def test_good_sheet_loads() -> None:
    rite = parse_sheet(GOOD, "t.toml")
    assert [c.id for c in rite.cues] == ["a", "b", "c"]  # d only with its variant
    assert [c.id for c in parse_sheet(GOOD, "t.toml", ["v"]).cues] == ["a", "b", "c", "d"]
    assert rite.cue("c").shooting.ou[1].exempt == ("左",)
    assert rite.cue("b").pieces[1].by == "笙"


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


BREAKS = [
    # (description, old, new, expected message fragment, the cue, the line's needle)
    ("toml syntax", 'zhong = 3', 'zhong = = 3', "TOML syntax error", None, "zhong = = 3"),
    ("unknown key", 'zhong = 3', 'zhong = 3\nzhongg = 3', "unknown key 'zhongg'", "a", "zhongg"),
    ("unknown kind", 'kind = "升歌"', 'kind = "升哥"', "unknown kind '升哥'", "a", "升哥"),
    ("unknown piece", '"四牡"', '"四馬"', "unknown piece 《四馬》", "a", "四馬"),
    ("unknown instrument", '{ name = "瑟", count = 2 }', '{ name = "琵琶", count = 2 }',
     "unknown instrument '琵琶'", "a", "琵琶"),
    ("zero count", '{ name = "工", count = 4 }', '{ name = "工", count = 0 }',
     "count 0: expected a whole number", "a", 'count = 0'),
    ("fractional count", '{ name = "工", count = 4 }', '{ name = "工", count = 2.5 }',
     "count 2.5", "a", "count = 2.5"),
    ("duplicate id", 'id = "b"', 'id = "a"', "duplicate cue id 'a'", "a", None),
    ("dangling after", 'trigger = "after:a"', 'trigger = "after:zz"', "names no cue", "c",
     "after:zz"),
    ("after a later cue", 'trigger = "after:a"', 'trigger = "after:d"', "waits for a later cue",
     "c", "after:d"),
    ("follow on the first cue", 'at = "工入"', 'at = "工入"\ntrigger = "follow"',
     "no previous cue", "a", 'trigger = "follow"'),
    ("undeclared signal", 'signal:賓醉', 'signal:公入', "never declares", "d", "signal:公入"),
    ("間歌 not alternating", '{ title = "由庚", by = "笙" }', '{ title = "南有嘉魚", by = "歌" }',
     "alternates 歌 and 笙", "b", "南有嘉魚"),
    ("笙詩 sung", '{ title = "由庚", by = "笙" }', '{ title = "由庚", by = "歌" }',
     "is a 笙詩", "b", 'by = "歌" }]'),
    ("節 vs listening", "listen = 1", "listen = 3", "expected listen = 1", "c", "listen = 3"),
    ("zhong does not fit", 'zhong = 3', 'zhong = 2', "2 終 does not fit 3 pieces", "a",
     "zhong = 2"),
    ("unknown variant", 'when = ["v"]', 'when = ["w"]', "variant 'w' is not declared", "d",
     'when = ["w"]'),
    ("quote not in source", 'quote = "工歌鹿鳴四牡皇皇者華"', 'quote = "工歌鹿鳴四牡皇皇者葉"',
     "not found verbatim", "a", "皇皇者葉"),
    ("music cue without source", 'source = { work = "w", quote = "q" }\n\n[[cue]]\nid = "c"',
     '\n[[cue]]\nid = "c"', "missing 'source'", "b", None),
    ("go without at", 'at = "工入"', 'at = ""', "needs 'at'", "a", None),
    ("射節 keys on another kind", 'zhong = 3', 'zhong = 3\njie = 5', "belong to a 射節", "a",
     "jie = 5"),
    ("bad exempt side", 'exempt = ["左"]', 'exempt = ["中"]', "expected sides", "c", None),
    ("position without coordinates", "x = 0.0\n", "", "needs x and y", None, None),
    ("unknown hang", 'hang = "特縣"', 'hang = "四縣"', "hang '四縣'", None, "四縣"),
    ("bad trigger", 'trigger = "follow"', 'trigger = "later"', "not understood", "b", "later"),
]


@pytest.mark.parametrize("name,old,new,fragment,cue,needle", BREAKS, ids=[b[0] for b in BREAKS])
def test_each_rule_has_a_breaking_sheet(name, old, new, fragment, cue, needle) -> None:
    assert old in GOOD, name
    text = GOOD.replace(old, new, 1)
    messages = errors_of(text)
    hits = [m for m in messages if fragment in m]
    assert hits, messages
    assert hits[0].startswith("t.toml")
    if cue is not None:
        assert f"cue {cue!r}" in hits[0]
    if needle is not None:
        assert hits[0].startswith(f"t.toml:{line_of(text, needle)}:"), hits[0]


def test_all_errors_are_reported_together() -> None:
    text = GOOD.replace('kind = "升歌"', 'kind = "x"').replace('"騶虞"', '"狗"')
    assert len(errors_of(text)) >= 2


def test_no_cues_and_no_rite() -> None:
    assert any("no cues" in m for m in errors_of('[rite]\nid = "x"\ntitle = "y"\n'))
    assert any("missing the [rite]" in m for m in errors_of('[[cue]]\nid = "x"\nkind = "停"\n'))


def test_files_bad_encoding_directory_missing(tmp_path: Path) -> None:
    bad = tmp_path / "latin.toml"
    bad.write_bytes(b'[rite]\nid = "\xff"\n')
    for path, fragment in ((bad, "not UTF-8"), (tmp_path, "is a directory"),
                           (tmp_path / "none.toml", "no such file")):
        with pytest.raises(SheetErrors) as info:
            load_sheet(path)
        assert fragment in str(info.value)


def test_builtin_rites_and_aliases() -> None:
    for rid in BUILTIN_RITES:
        assert builtin_rite(rid).id == rid
    for alias, rid in (("鄉射禮", "xiang-she"), ("乡射礼", "xiang-she"), ("大射", "da-she"),
                       ("燕礼", "yan"), ("乡饮酒礼", "xiang-yin-jiu"), ("鄉飲酒禮", "xiang-yin-jiu")):
        assert load_rite(alias).id == rid


def test_variants_change_the_program() -> None:
    plain = [c.id for c in load_rite("yan").cues]
    full = [c.id for c in load_rite("yan", ["na-bin", "xia-guan", "wu", "she"]).cues]
    assert "si-xia-bin" not in plain and full[:2] == ["si-xia-bin", "si-xia-gong"]
    assert "jian-ge" in plain and "jian-ge" not in full and "xia-guan-xin-gong" in full
    assert [c.song for c in [load_rite("xiang-she", ["cai-pin"]).cue("she-jie-cai-pin").shooting]
            ] == ["采蘋"]


# ── the command line on bad input: exit 2, a message, never a traceback ──


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_validate_reports_file_line_and_cue(tmp_path: Path, capsys) -> None:
    sheet = tmp_path / "bad.toml"
    sheet.write_text(GOOD.replace('"四牡"', '"四馬"'), encoding="utf-8")
    code, _, err = run_cli(["validate", str(sheet)], capsys)
    assert code == 2
    assert f"{sheet}:{line_of(sheet.read_text(), '四馬')}: cue 'a': unknown piece 《四馬》" in err
    good = tmp_path / "good.toml"
    good.write_text(GOOD, encoding="utf-8")
    assert run_cli(["validate", str(good)], capsys)[0] == 0


def mutations(text: str, rng: random.Random, count: int) -> list[str]:
    lines = text.splitlines()
    out = []
    for _ in range(count):
        choice = rng.randrange(6)
        if choice == 0:
            out.append(text[: rng.randrange(len(text))])  # truncated
        elif choice == 1:
            mutated = list(lines)
            del mutated[rng.randrange(len(mutated))]
            out.append("\n".join(mutated))
        elif choice == 2:
            mutated = list(lines)
            i, j = rng.randrange(len(mutated)), rng.randrange(len(mutated))
            mutated[i], mutated[j] = mutated[j], mutated[i]
            out.append("\n".join(mutated))
        elif choice == 3:
            pos = rng.randrange(len(text))
            out.append(text[:pos] + rng.choice('="[]{},#\\\n節0-.') + text[pos + 1:])
        elif choice == 4:
            out.append("".join(chr(rng.randrange(32, 0x9FFF)) for _ in range(rng.randrange(200))))
        else:
            mutated = list(lines)
            i = rng.randrange(len(mutated))
            mutated.insert(i, rng.choice(['x = 1', '[[cue]]', 'kind = 5', 'id = "a"',
                                          'pieces = "鹿鳴"', 'jie = -1', '[rite]', 'zhong = []']))
            out.append("\n".join(mutated))
    return out


@pytest.mark.fuzz
@pytest.mark.parametrize("rite", BUILTIN_RITES)
def test_mutated_truncated_garbage_sheets_never_traceback(rite, tmp_path: Path, capsys) -> None:
    rng = random.Random(rite)
    for i, text in enumerate(mutations(builtin_text(rite), rng, 40)):
        path = tmp_path / f"m{i}.toml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        code, out, err = run_cli(["show", str(path), "--json"], capsys)
        assert code in (0, 2), (code, err)
        assert "Traceback" not in err and "internal error" not in err, err
        if code == 2:
            assert str(path) in err


def test_help_is_fast_and_imports_nothing_heavy() -> None:
    code = ("import sys, time; t=time.perf_counter(); import cli; "
            "assert 'pyo' not in sys.modules and 'music21' not in sys.modules; "
            "print(time.perf_counter()-t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).parent.parent, check=True)
    assert float(out.stdout) < 5  # the figure itself is printed by benchmarks/cli_startup.py


def test_arrays_of_tables_must_be_tables() -> None:
    for text, fragment in (('signals = 5\nreading = 5\n', "'reading' is the number 5"),
                           ('reading = "x"\n', "'reading' is the string 'x'"),
                           ('reading = [1]\n', "a [[reading]] must be a table")):
        assert any(fragment in m for m in errors_of(text + GOOD)), text

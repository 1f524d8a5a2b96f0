"""`new SHEET.toml --from RITE` and a sheet's citations of the user's own texts."""

from __future__ import annotations

from pathlib import Path

import pytest

import cli
from cues.builtin import BUILTIN_RITES, builtin_text
from cues.errors import SheetErrors
from cues.sheet.loader import load_sheet
from sequencer.outputs.provenance import read_provenance


@pytest.mark.render
@pytest.mark.parametrize("rite", BUILTIN_RITES)
def test_new_round_trips_each_builtin_rite(tmp_path: Path, rite: str) -> None:
    sheet = tmp_path / f"mine-{rite}.toml"
    assert cli.main(["new", str(sheet), "--from", rite]) == cli.EXIT_OK
    text = sheet.read_text(encoding="utf-8")
    assert text.startswith(f"# A cue sheet written by `yuezheng new` from the built-in rite "
                           f"{rite} (")
    assert text.endswith(builtin_text(rite))  # the built-in's TOML, byte for byte
    assert cli.main(["midi", rite, "-o", str(tmp_path / "a.mid")]) == cli.EXIT_OK
    assert cli.main(["midi", str(sheet), "-o", str(tmp_path / "b.mid")]) == cli.EXIT_OK
    # the same file but for its provenance, which says what it was made from: the sheet
    built_in, mine = read_provenance(tmp_path / "a.mid"), read_provenance(tmp_path / "b.mid")
    assert (built_in.sheet, mine.sheet) == (None, str(sheet)) and built_in.rite == mine.rite
    assert built_in.she_jie == mine.she_jie
    assert _without_text((tmp_path / "a.mid").read_bytes(), built_in.text()) == \
        _without_text((tmp_path / "b.mid").read_bytes(), mine.text())


def _without_text(data: bytes, text: str) -> bytes:
    """A MIDI file's bytes with one text meta event (FF 01, at delta 0) cut out, and its track's
    length mended."""
    import struct

    from mido.midifiles.meta import encode_variable_int

    body = text.encode("utf-8")
    event = b"\x00\xff\x01" + bytes(encode_variable_int(len(body))) + body
    at = data.index(event)
    track = data.rindex(b"MTrk", 0, at)
    size = struct.unpack(">I", data[track + 4:track + 8])[0] - len(event)
    return (data[:track + 4] + struct.pack(">I", size) + data[track + 8:at]
            + data[at + len(event):])


def test_new_takes_an_alias_and_keeps_an_existing_sheet(tmp_path: Path, capsys) -> None:
    sheet = tmp_path / "she.toml"
    assert cli.main(["new", str(sheet), "--from", "乡射"]) == cli.EXIT_OK
    sheet.write_text("# my edits\n", encoding="utf-8")
    assert cli.main(["new", str(sheet), "--from", "xiang-she"]) == cli.EXIT_USAGE
    assert "give --force" in capsys.readouterr().err
    assert sheet.read_text(encoding="utf-8") == "# my edits\n"
    assert cli.main(["new", str(sheet), "--from", "xiang-she", "--force"]) == cli.EXIT_OK
    assert cli.main(["new", str(tmp_path / "x.toml"), "--from", "nowhere"]) == cli.EXIT_USAGE
    assert cli.main(["new", str(tmp_path / "x.txt"), "--from", "yan"]) == cli.EXIT_USAGE


EDITION = "鄉射之禮。工四人，二瑟。乃合樂，周南關雎、葛覃、卷耳。\n"
OWN_CUE = '''
[[cue]]
id = "own"
kind = "合樂"
at = "工四人，「二瑟」"
trigger = "go"
pieces = ["關雎"]
source = {{ work = "my edition", file = "{file}", quote = "{quote}" }}
'''


def _own_sheet(tmp_path: Path, file: str, quote: str) -> Path:
    """The 鄉射禮 sheet with one more cue citing ``file`` (the user's own text)."""
    sheet = tmp_path / "rites" / "mine.toml"
    sheet.parent.mkdir(exist_ok=True)
    sheet.write_text(builtin_text("xiang-she") + OWN_CUE.format(file=file, quote=quote),
                     encoding="utf-8")
    return sheet


def test_a_sheet_may_cite_the_users_own_text(tmp_path: Path) -> None:
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "edition.txt").write_text(EDITION, encoding="utf-8")
    sheet = _own_sheet(tmp_path, "../texts/edition.txt", "乃合樂：周南《關雎》")
    rite = load_sheet(sheet)
    assert rite.cue("own").source.file == "../texts/edition.txt"
    assert "../texts/edition.txt" in rite.cited_files()


def test_a_quote_not_in_the_users_text_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "rites").mkdir()
    (tmp_path / "rites" / "edition.txt").write_text(EDITION, encoding="utf-8")
    sheet = _own_sheet(tmp_path, "edition.txt", "乃合樂周南鵲巢")
    with pytest.raises(SheetErrors) as info:
        load_sheet(sheet)
    [error] = info.value.errors
    assert error.cue == "own" and error.line is not None
    assert "not found verbatim" in error.message and "edition.txt" in error.message


def test_a_missing_own_text_is_an_error_with_file_and_line(tmp_path: Path) -> None:
    sheet = _own_sheet(tmp_path, "missing.txt", "乃合樂")
    with pytest.raises(SheetErrors) as info:
        load_sheet(sheet)
    [error] = info.value.errors
    assert error.file == str(sheet)
    line = sheet.read_text(encoding="utf-8").splitlines()[error.line - 1]
    assert line.startswith("source = ") and "missing.txt" in line
    assert "does not exist" in error.message


def test_a_builtin_rite_cites_only_bundled_texts() -> None:
    from cues.sheet.loader import parse_sheet

    text = builtin_text("xiang-she") + OWN_CUE.format(file="edition.txt", quote="乃合樂")
    with pytest.raises(SheetErrors) as info:
        parse_sheet(text, "xiang-she.toml (built-in)")
    assert "is not a bundled source" in str(info.value)

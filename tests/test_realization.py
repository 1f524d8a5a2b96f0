"""A user's own realization file for a lost piece: its notes replace the structure-only default."""

from __future__ import annotations

import json
from pathlib import Path

import mido
import pytest

import cli
from cues.sheet.loader import load_sheet
from sequencer.timeline.compiler import compile_rite, make_settings

SHEET = '''
[rite]
id = "r"
title = "realized"

[[cue]]
id = "sheng"
kind = "笙"
at = "笙入"
pieces = [{{ title = "由庚", by = "笙", realization = "{file}" }}, "崇丘"]
instruments = [{{ name = "笙", count = 3 }}, {{ name = "建鼓", count = 1, silent = "the file's" }}]
source = {{ work = "w", quote = "q" }}
'''


def write_midi(path: Path) -> None:
    mid = mido.MidiFile(ticks_per_beat=480)
    track = mido.MidiTrack()
    mid.tracks.append(track)
    track.append(mido.MetaMessage("set_tempo", tempo=500_000))  # 120 bpm: a beat is 0.5 s
    for key in (60, 62, 67):
        track.append(mido.Message("note_on", note=key, velocity=90, time=0))
        track.append(mido.Message("note_off", note=key, velocity=0, time=480))
    track.append(mido.MetaMessage("set_tempo", tempo=1_000_000, time=0))  # then a beat is 1 s
    track.append(mido.Message("note_on", channel=9, note=36, velocity=100, time=0))
    track.append(mido.Message("note_off", channel=9, note=36, velocity=0, time=480))
    mid.save(str(path))


def test_midi_realization_replaces_the_drone(tmp_path: Path) -> None:
    write_midi(tmp_path / "youge.mid")
    sheet = tmp_path / "r.toml"
    sheet.write_text(SHEET.format(file="youge.mid"), encoding="utf-8")
    rite = load_sheet(sheet)
    tl = compile_rite(rite, make_settings({}, {"lost_zhong_seconds": 10}))
    first = [n for n in tl.notes if n.tick < 2400]
    assert [(n.tick, n.duration, n.key, n.instrument) for n in first if n.instrument == "笙"] == [
        (0, 480, 60, "笙"), (480, 480, 62, "笙"), (960, 480, 67, "笙")]
    stroke = [n for n in tl.notes if n.instrument == "建鼓"]  # key 36 (a 鼓): the cue's 建鼓
    assert [(n.tick, n.key) for n in stroke] == [(1440, 35)]
    # the next piece (崇丘, lost, no file) starts when the file ends (2.5 s) as a drone
    drone = [n for n in tl.notes if n.tick >= 2400]
    assert drone and min(n.tick for n in drone) == 2400 and {n.semitones for n in drone} == {0, 7}


XIANG_SHE_GAI = 'pieces = [{{ title = "陔", realization = "{file}" }}]'


def _drums_mid(path: Path, channel: int, *, name: str | None = None,
               program: int | None = None) -> Path:
    """Eight strokes alternating keys 36 and 38 (a GM kick and snare), half a second apart."""
    mid = mido.MidiFile(ticks_per_beat=480, charset="utf-8")
    track = mido.MidiTrack()
    mid.tracks.append(track)
    if name is not None:
        track.append(mido.MetaMessage("track_name", name=name))
    if program is not None:
        track.append(mido.Message("program_change", channel=channel, program=program))
    for i in range(8):
        track.append(mido.Message("note_on", channel=channel, note=(36, 38)[i % 2],
                                  velocity=100, time=0 if i == 0 else 240))
        track.append(mido.Message("note_off", channel=channel, note=(36, 38)[i % 2], time=240))
    mid.save(str(path))
    return path


def _gai_sheet(tmp_path: Path, capsys, file: str = "gai.mid") -> Path:
    """The 鄉射 as a sheet, its 《陔》 played from ``file`` (realizations are read once a
    process: each case its own file)."""
    sheet = tmp_path / f"she-{Path(file).stem}.toml"
    assert cli.main(["new", str(sheet), "--from", "xiang-she"]) == 0
    text = sheet.read_text(encoding="utf-8")
    at = text.index('id = "gai"')
    end = text.index('pieces = ["陔"]', at)
    sheet.write_text(text[:end] + XIANG_SHE_GAI.format(file=file)
                     + text[end + len('pieces = ["陔"]'):],
                     encoding="utf-8")
    capsys.readouterr()
    return sheet


@pytest.mark.parametrize(("channel", "name", "program"), [
    (9, None, None),  # the GM percussion channel: kick and snare keys
    (0, None, None),  # nothing said: the 《陔》's bells are not in the 鄉射: the cue's 鼓
    (0, "drums", None),
    (2, None, 116),  # GM program 117, Taiko Drum
])
def test_a_drum_realization_of_gai_sounds_on_the_gu(tmp_path: Path, capsys, channel: int,
                                                    name: str | None,
                                                    program: int | None) -> None:
    """The issue's case: a drum MIDI (keys 36/38) for 《陔》 in the 鄉射, a rite without bells,
    sounds on its 鼓 — not on 編鐘 at C2 — and `show` names the file."""
    _drums_mid(tmp_path / "gai.mid", channel, name=name, program=program)
    sheet = _gai_sheet(tmp_path, capsys)
    rite = load_sheet(sheet)
    tl = compile_rite(rite, make_settings(rite.settings))
    gai = [n for n in tl.notes if n.cue == "gai"]
    assert [n.instrument for n in gai] == ["鼓"] * 8 and {n.key for n in gai} == {36}
    assert {n.channel for n in gai} == {9} and [n.velocity for n in gai] == [100] * 8
    assert cli.main(["show", str(sheet)]) == 0
    out = capsys.readouterr().out
    gai_row = next(line for line in out.splitlines() if " gai" in line)
    assert "《陔》: the user's realization, " in gai_row and gai_row.endswith("gai.mid)")
    assert "structure only" not in gai_row
    assert cli.main(["show", str(sheet), "--json"]) == 0
    cue = next(c for c in json.loads(capsys.readouterr().out)["cues"] if c["id"] == "gai")
    assert cue["realizations"] == [{"piece": "陔", "file": str(tmp_path / "gai.mid")}]
    assert not cue["lost"]
    assert cli.main(["validate", str(sheet)]) == 0
    assert "鼓" not in capsys.readouterr().err  # no warning that the 鼓 never sounds


def test_a_realization_on_an_instrument_the_rite_has_not_is_an_error(tmp_path: Path,
                                                                      capsys) -> None:
    for file, name, program in (("bells.mid", "編鐘 (bianzhong, graded bronze bells)", None),
                                ("guan.mid", None, 75)):
        _drums_mid(tmp_path / file, 0, name=name, program=program)
        sheet = _gai_sheet(tmp_path, capsys, file)
        assert cli.main(["midi", str(sheet), "-o", str(tmp_path / "x.mid")]) == 2
        err = capsys.readouterr().err
        assert file in err and "which 鄉射禮 has not" in err and "Traceback" not in err
    # a 笙 track plays on the 笙 (the 鄉射 has one), at the file's keys
    _drums_mid(tmp_path / "sheng.mid", 0, name="sheng")
    rite = load_sheet(_gai_sheet(tmp_path, capsys, "sheng.mid"))
    gai = [n for n in compile_rite(rite, make_settings(rite.settings)).notes if n.cue == "gai"]
    assert {n.instrument for n in gai} == {"笙"} and [n.key for n in gai[:2]] == [36, 38]


def test_musicxml_realization(tmp_path: Path) -> None:
    from music21 import note, stream

    s = stream.Stream([note.Note("D4", quarterLength=1), note.Note("A4", quarterLength=2)])
    s.write("musicxml", fp=str(tmp_path / "y.musicxml"))
    sheet = tmp_path / "r.toml"
    sheet.write_text(SHEET.format(file="y.musicxml"), encoding="utf-8")
    tl = compile_rite(load_sheet(sheet), make_settings({}, {"tempo_bpm": 120}))
    sheng = [(n.tick, n.duration, n.key) for n in tl.notes if n.tick < 1440]
    assert sheng == [(0, 480, 62), (480, 960, 69)]


def test_missing_or_bad_realization_is_exit_2(tmp_path: Path, capsys) -> None:
    sheet = tmp_path / "r.toml"
    sheet.write_text(SHEET.format(file="none.mid"), encoding="utf-8")
    assert cli.main(["show", str(sheet)]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "bad.mid").write_bytes(b"not midi at all")
    sheet.write_text(SHEET.format(file="bad.mid"), encoding="utf-8")
    assert cli.main(["midi", str(sheet), "-o", str(tmp_path / "o.mid")]) == 2
    err = capsys.readouterr().err
    assert "cannot read this realization file" in err and "Traceback" not in err


@pytest.mark.parametrize("ext", [".mid", ".musicxml"])
def test_realization_paths_are_relative_to_the_sheet(tmp_path: Path, ext: str) -> None:
    sub = tmp_path / "show"
    sub.mkdir()
    sheet = sub / "r.toml"
    sheet.write_text(SHEET.format(file=f"media/y{ext}"), encoding="utf-8")
    with pytest.raises(Exception, match="does not exist"):
        load_sheet(sheet)

"""A user's own realization file for a lost piece: its notes replace the structure-only default."""

from __future__ import annotations

from pathlib import Path

import mido
import pytest

import cli
from cues.sheet import load_sheet
from sequencer.compiler import compile_rite, make_settings

SHEET = '''
[rite]
id = "r"
title = "realized"

[[cue]]
id = "sheng"
kind = "笙"
at = "笙入"
pieces = [{{ title = "由庚", by = "笙", realization = "{file}" }}, "崇丘"]
instruments = [{{ name = "笙", count = 3 }}]
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
    stroke = [n for n in tl.notes if n.instrument == "建鼓"]
    assert [(n.tick, n.key) for n in stroke] == [(1440, 35)]
    # the next piece (崇丘, lost, no file) starts when the file ends (2.5 s) as a drone
    drone = [n for n in tl.notes if n.tick >= 2400]
    assert drone and min(n.tick for n in drone) == 2400 and {n.semitones for n in drone} == {0, 7}


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

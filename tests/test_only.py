"""--only / --except: a part of the ensemble (a station's share) on midi, render, show, plot
and live; the groups are sides of the hall, 八音 families, instruments and layout positions
(sequencer.timeline.groups). Files are read back: MIDI with mido, audio with soundfile."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import mido
import numpy as np
import pytest
import soundfile as sf

import cli
from cues.catalog import CATALOG
from cues.errors import UserError
from cues.sheet.loader import BUILTIN_RITES
from instruments.midi import is_all_off, is_pitch_bend, is_tuning_restore
from sequencer.live.player.plan import plan_show
from sequencer.live.player.player import Player
from sequencer.timeline.compiler import compile_rite
from sequencer.timeline.groups import (
    FAMILY,
    INSTRUMENT,
    POSITION,
    SIDE,
    find_group,
    note_selection,
    rite_groups,
    select_notes,
)
from sequencer.timeline.selection import selected_rite
from tests.timing import delivered, timing_flaky

SI_XIA = ["da-she", "--from", "si-xia-bin", "--until", "si-xia-bin"]  # 20 s, both sides
SHE_JIE = ["da-she", "--from", "she-jie", "--until", "she-jie", "--jie-seconds", "0.25"]
EAST = {"編鐘", "鑮", "編磬", "建鼓", "應鼙", "瑟", "笙", "和", "歌"}  # what sounds east in 大射


def _timeline(rite_id: str, **overrides: str):
    rite, settings = selected_rite(rite_id, overrides=overrides)
    return rite, compile_rite(rite, settings)


@pytest.mark.parametrize("rite_id", BUILTIN_RITES)
def test_sides_and_families_part_the_whole(rite_id: str) -> None:
    rite, whole = _timeline(rite_id)
    def kept(*only: str):
        return select_notes(whole, note_selection(rite, only)).notes
    east, west, axis = kept("東"), kept("西"), kept("中")
    assert len(east) + len(west) + len(axis) == len(whole.notes) > 0
    assert sorted(east + west + axis) == sorted(whole.notes)
    assert all(n.x > 0 for n in east) and all(n.x < 0 for n in west)
    assert len(kept("堂上")) + len(kept("堂下")) == len(whole.notes)
    families = {i.bayin for i in CATALOG.values()}
    assert sum(len(kept(f)) for f in families) == len(whole.notes)
    # --except is the complement of --only; markers, spans and settings stay whole
    rest = select_notes(whole, note_selection(rite, (), ["東"]))
    assert sorted(rest.notes) == sorted(west + axis)
    for part in (rest, select_notes(whole, note_selection(rite, ["東"]))):
        assert part.markers == whole.markers and part.spans == whole.spans
        assert part.settings == whole.settings


def test_names_aliases_and_order() -> None:
    rite, whole = _timeline("da-she")
    groups = rite_groups(rite)
    for name, kind, canonical in [
        ("east", SIDE, "東"), ("东县", SIDE, "東"), ("西縣", SIDE, "西"), ("hall", SIDE, "堂上"),
        ("金", FAMILY, "金"), ("人聲", FAMILY, "人聲"), ("鍾", INSTRUMENT, "編鐘"), ("頌磬", POSITION, "頌磬"), ("笙", INSTRUMENT, "笙"),
        ("bianzhong", INSTRUMENT, "編鐘"), ("磬", INSTRUMENT, "編磬"), ("鼓", INSTRUMENT, "鼓"),
        ("歌", INSTRUMENT, "歌"), ("笙磬", POSITION, "笙磬"), ("工", POSITION, "工"),
    ]:
        group = find_group(name, groups)
        assert group is not None and (group.kind, group.name) == (kind, canonical), name
    # an instrument is every note of it, wherever it stands (the 瑟 moves east in 大射)
    se = select_notes(whole, note_selection(rite, ["瑟"])).notes
    assert {n.instrument for n in se} == {"瑟"} and {n.x > 0 for n in se} == {True, False}
    # a position is what sounds there: the 工 on the hall and where it moves
    gong = select_notes(whole, note_selection(rite, ["工"])).notes
    assert {n.instrument for n in gong} == {"歌", "瑟"}
    both = note_selection(rite, ["金,石", "革"], ["西"])
    assert both is not None and [g.name for g in both.only] == ["金", "石", "革"]
    assert note_selection(rite) is None


def test_unknown_group_names_the_valid_ones() -> None:
    rite, _ = _timeline("da-she")
    with pytest.raises(UserError) as err:
        note_selection(rite, ["東"], ["北縣"])
    text = str(err.value)
    assert "--except 北縣" in text and "da-she" in text
    for name in ("東", "堂下", "金", "人聲", "編鐘", "頌磬", "工"):
        assert name in text


def _midi(path: Path) -> tuple[Counter, list[tuple[int, str]]]:
    """(channel, key) of every note-on, and the (tick, text) of every marker, read back."""
    notes: Counter = Counter()
    markers = []
    for track in mido.MidiFile(str(path), charset="utf-8").tracks:
        tick = 0
        for msg in track:
            tick += msg.time
            if msg.type == "note_on" and msg.velocity:
                notes[(msg.channel, msg.note)] += 1
            elif msg.type == "marker":
                markers.append((tick, msg.text))
    return notes, sorted(markers)


def test_midi_only_east_and_west_read_back(tmp_path: Path, capsys) -> None:
    files = {}
    for name, flags in (("all", []), ("east", ["--only", "東"]), ("west", ["--only", "西"]),
                        ("rest", ["--except", "東"])):
        files[name] = tmp_path / f"{name}.mid"
        assert cli.main(["midi", *SHE_JIE, *flags, "-o", str(files[name])]) == 0
    read = {name: _midi(path) for name, path in files.items()}
    whole, markers = read["all"]
    east, west = read["east"][0], read["west"][0]
    assert east + west == whole and read["rest"][0] == west
    # the west of 大射's 射節 played alone (no 遷樂 before it): the 朔鼙 (GM key 50) and the
    # 工's 瑟 on the hall, west of the axis, and the 獲者's calls from the 乏 (west of the
    # target: 「西五步」); the east has every other part
    assert {c for c, _ in west} == {CATALOG["瑟"].channel, CATALOG["歌"].channel, 9}
    assert {k for c, k in west if c == 9} == {CATALOG["朔鼙"].gm_key}
    assert {c for c, _ in east} <= {CATALOG[i].channel for i in EAST}
    assert CATALOG["朔鼙"].gm_key not in {k for c, k in east if c == 9}
    # every 節 and cue marker stays: the subset's file is checked as the whole's is
    jie = [text for _, text in markers if text.startswith("節 ")]
    assert len(jie) == 42
    for name in ("east", "west", "rest"):
        assert read[name][1] == markers
    capsys.readouterr()
    assert cli.main(["check", str(files["west"])]) == 0
    assert "間若一" in capsys.readouterr().out


def test_cli_unknown_group_exits_2(tmp_path: Path, capsys) -> None:
    out = tmp_path / "x.mid"
    assert cli.main(["midi", *SHE_JIE, "--only", "東", "nowhere", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--only nowhere" in err and "sides: 東 西 中 堂上 堂下" in err
    assert not out.exists()
    assert cli.main(["render", *SI_XIA, "--except", "琴", "-o", str(tmp_path / "x.wav")]) == 2
    assert cli.main(["live", *SI_XIA, "--auto", "--only", "琴", "--output", "memory:"]) == 2
    assert "--only 琴" in capsys.readouterr().err


def test_empty_selection_warns_and_writes(tmp_path: Path, capsys) -> None:
    out = tmp_path / "wood.mid"
    assert cli.main(["midi", *SHE_JIE, "--only", "木", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "only 木: no note of da-she is left" in captured.err
    notes, markers = _midi(out)
    assert not notes and len(markers) == 43  # the cue's marker and its 42 節


@pytest.mark.render
@pytest.mark.parametrize(("room", "side"), [("dry", 1.3), ("courtyard", 1.05)])
def test_render_east_and_west_read_back(tmp_path: Path, room: str, side: float) -> None:
    audio = {}
    for name, flags in (("all", []), ("east", ["--only", "東"]), ("west", ["--only", "西"])):
        path = tmp_path / f"{name}.wav"
        assert cli.main(["render", *SI_XIA, *flags, "--room", room, "--loudness", "-30", "-o",
                         str(path)]) == 0
        audio[name], rate = sf.read(str(path), dtype="float64")
        assert rate == 48000
    rms = {name: np.sqrt(np.mean(a ** 2, axis=0)) for name, a in audio.items() if len(a)}
    # the listener faces the hall (north): the east sounds on the right, the west on the left
    # (in the courtyard less so: the far wall's reflection and the tail come from both sides)
    left, right = rms["east"]
    assert right > side * left > 0
    left, right = rms["west"]
    assert left > side * right > 0
    # each part is heard as in the whole (the courtyard's time zero and the loudness gain are
    # the whole's), so the parts add up to the whole (the mix is linear below the limiter,
    # which this cue does not reach at -30 LUFS; nothing sounds on the axis here): nothing of the west is
    # in the east's file, nothing is lost — but for the courtyard's room tone, which the whole
    # render carries once and a part does not (−78 dBFS RMS: its peaks stay under 1e-3)
    n = len(audio["all"])
    total = np.zeros_like(audio["all"])
    for name in ("east", "west"):
        part = audio[name][:n]
        total[:len(part)] += part
    assert np.abs(audio["all"]).max() < 0.95
    assert np.abs(total - audio["all"]).max() < (1e-4 if room == "dry" else 1e-3)


def test_show_lists_the_groups(capsys) -> None:
    assert cli.main(["show", "da-she", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    groups = {(g["kind"], g["name"]): g for g in data["groups"]}
    assert groups[("side", "東")]["notes"] + groups[("side", "西")]["notes"] + \
        groups[("side", "中")]["notes"] == sum(
            g["notes"] for g in data["groups"] if g["kind"] == "instrument")
    assert "east" in groups[("side", "東")]["aliases"]
    assert groups[("position", "頌鍾")]["notes"] == 0  # hung, but 大射's bells sound east
    assert "鍾" in groups[("instrument", "編鐘")]["aliases"]
    assert cli.main(["show", "da-she", "--only", "西"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("groups"))
    assert "sides 東° 西 中°" in line and "positions" in line


def test_plot_takes_a_part(tmp_path: Path, capsys) -> None:
    out = tmp_path / "west.svg"
    assert cli.main(["plot", *SHE_JIE, "--only", "西", "-o", str(out)]) == 0
    # the 朔鼙's strokes, the 瑟 on the hall, and the 獲者's 獲 (宮, 商) in each of six turns
    assert "180 notes" in capsys.readouterr().out
    assert out.stat().st_size > 0


def test_live_part_keeps_the_whole_cue_shape() -> None:
    """A live part sends only its notes, but its cues last, loop and rest as the whole's do:
    a station stopped (樂闋) with the others stops at the same rest point."""
    rite, settings = selected_rite("da-she", from_cue="si-xia-bin", until_cue="ge-lu-ming")
    whole = Player(plan_show(rite, settings), "memory:")
    west = Player(plan_show(rite, settings, note_selection(rite, ["西"])), "memory:")
    assert west.machine.cues == whole.machine.cues
    assert {n.instrument for n in west.timeline.notes} == {"鼗", "朔鼙", "歌", "瑟"}
    sent = {cue: len(s.messages) for cue, s in west.schedules.items()}
    assert 0 < sent["si-xia-bin"] < len(whole.schedules["si-xia-bin"].messages)
    assert sent["ge-lu-ming"] == len(whole.schedules["ge-lu-ming"].messages)


@pytest.mark.live
@timing_flaky
def test_live_memory_sends_the_files_part(tmp_path: Path, capsys) -> None:
    record = tmp_path / "west.jsonl"
    code = cli.main(["live", *SHE_JIE, "--auto", "--only", "西", "--output", f"memory:{record}"])
    delivered(code, "".join(capsys.readouterr()))
    sent = [bytes.fromhex(json.loads(x)["data"]) for x in record.read_text().splitlines()]
    midi = tmp_path / "west.mid"
    assert cli.main(["midi", *SHE_JIE, "--only", "西", "-o", str(midi)]) == 0
    expected = [bytes(m.bytes()) for m in mido.merge_tracks(mido.MidiFile(str(midi)).tracks)
                if not m.is_meta]
    assert len(expected) > 2 * 168 and sent[:len(expected)] == expected
    # after the cue only clean-up may come: pitch wheels back to the centre, and the safety
    # net's all-notes-off on the channels the part used, the keys it tuned back to equal
    assert all(is_pitch_bend(m) or is_all_off(m) or is_tuning_restore(m)
               for m in sent[len(expected):])

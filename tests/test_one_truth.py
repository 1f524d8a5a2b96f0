"""One truth for every figure (issue 13): the 瑟's octave in score, MIDI and audio; one default
tuning; one length per rite in show, midi, plot and render; show --json settings with their
types; the sheet's 耦 names in judge; CJK-aware widths."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import mido
import pytest

from cli import main
from cues.melody_octaves import melody_octave
from cues.sheet.loader import builtin_rite
from cues.text import clip, clock, display_width, pad
from instruments.notation.score import piece_score
from sequencer.outputs.render import render_notes
from sequencer.outputs.smf import build_midi_bytes
from sequencer.timeline.compiler import compile_rite, make_settings
from sequencer.timeline.rite_json import rite_length_s
from sequencer.timeline.timebase import seconds


@pytest.fixture(scope="module")
def xiang_yin_jiu():
    rite = builtin_rite("xiang-yin-jiu")
    return compile_rite(rite, make_settings(rite.settings))


def _pairs(notes, key):
    """(歌, 瑟) values of the notes the two sound together (same tick, same cue)."""
    sung = {(n.tick, n.cue): key(n) for n in notes if n.instrument == "歌"}
    return [(sung[(n.tick, n.cue)], key(n)) for n in notes
            if n.instrument == "瑟" and (n.tick, n.cue) in sung]


@pytest.mark.render
def test_se_octave_is_one_in_timeline_midi_audio_and_score(xiang_yin_jiu) -> None:
    # the 瑟 and the 工 (men, an octave under the written 律) sound the same octave
    octave = melody_octave("瑟") - melody_octave("歌")
    assert (melody_octave("瑟"), melody_octave("歌")) == (-12, -12) and octave == 0
    pairs = _pairs(xiang_yin_jiu.notes, lambda n: n.semitones)
    assert pairs and all(se - ge == octave for ge, se in pairs)
    # MIDI: the keys written to the file
    midi = mido.MidiFile(file=io.BytesIO(build_midi_bytes(xiang_yin_jiu)))
    keys: dict[str, list[int]] = {}
    for inst in ("歌", "瑟"):
        channel = next(n.channel for n in xiang_yin_jiu.notes if n.instrument == inst)
        keys[inst] = [m.note for m in midi if m.type == "note_on" and m.velocity
                      and m.channel == channel][:20]
    assert keys["歌"] == [n.key for n in xiang_yin_jiu.notes if n.instrument == "歌"][:20]
    assert [k + octave for k in keys["歌"]] == keys["瑟"]
    # audio: the frequencies the mixer synthesizes
    rendered = render_notes(xiang_yin_jiu)
    by_start = {(r.start_s, r.instrument): r.freq_hz for r in rendered}
    ratios = [by_start[(r.start_s, "瑟")] / r.freq_hz for r in rendered
              if r.instrument == "歌" and (r.start_s, "瑟") in by_start]
    assert ratios and all(ratio == pytest.approx(2 ** (octave / 12)) for ratio in ratios)
    # score: the 瑟 staff
    voice, se = piece_score("鹿鳴").parts
    assert [n.pitch.midi for n in se.recurse().notes] == [
        n.pitch.midi + octave for n in voice.recurse().notes]


def test_audition_defaults_to_sanfen_like_every_command() -> None:
    from cli import _build_parser

    parser = _build_parser()
    for command in ("audition", "score"):
        args = parser.parse_args([command, "瑟" if command == "audition" else "關雎", "-o", "x"])
        assert args.tuning == make_settings().tuning == "sanfen"
    assert "default of every command" in _help("audition")


def _help(command: str) -> str:
    from cli import _build_parser

    sub = next(a for a in _build_parser()._actions if a.dest == "command")
    return sub.choices[command].format_help()


@pytest.mark.render
def test_one_length_per_rite(tmp_path: Path, capsys) -> None:
    """show, midi, plot (its report and its title) and render report the same length: the
    timeline's end (a render's ring-out ending earlier or later does not change it)."""
    rite = builtin_rite("xiang-yin-jiu")
    want = clock(rite_length_s(compile_rite(rite, make_settings(rite.settings))))
    assert main(["show", rite.id]) == 0
    assert re.search(r"(\d+:\d\d) offline", capsys.readouterr().out)[1] == want
    for command, out in (("midi", "x.mid"), ("plot", "x.png"), ("render", "x.wav")):
        assert main([command, rite.id, "-o", str(tmp_path / out)]) == 0
        report = capsys.readouterr().out
        assert re.findall(r", (\d+:\d\d)(?:,|$)", report.strip()) == [want], (command, report)


def test_clock_is_the_one_format() -> None:
    assert clock(2026.0) == "33:46" and clock(59.6) == "1:00" and clock(None) == "-"
    timeline = compile_rite(builtin_rite("yan"), make_settings())
    last_note = max(n.tick + n.duration for n in timeline.notes)
    assert rite_length_s(timeline) == float(seconds(max(last_note, timeline.spans[-1].end)))


def test_show_json_settings_have_their_types(capsys) -> None:
    assert main(["show", "xiang-she", "--json"]) == 0
    settings = json.loads(capsys.readouterr().out)["settings"]
    assert settings["tempo_bpm"] == 60 and isinstance(settings["tempo_bpm"], int)
    assert settings["jie_seconds"] is None
    assert isinstance(settings["huangzhong_hz"], float)
    assert settings["go_gap_s"] == 2 and settings["tuning"] == "sanfen"
    assert "None" not in json.dumps(settings)
    assert main(["show", "xiang-she", "--json", "--jie-seconds", "2.5", "--tempo", "72"]) == 0
    settings = json.loads(capsys.readouterr().out)["settings"]
    assert settings["jie_seconds"] == 2.5 and settings["tempo_bpm"] == 72


def test_display_width() -> None:
    assert display_width("abc") == 3
    assert display_width("鄉射禮") == 6
    assert display_width("「間若一」") == 10
    assert display_width("e\u0301") == 1  # e + combining acute
    assert display_width("ｱ") == 1  # halfwidth katakana
    assert display_width("Ａ") == 2  # fullwidth A
    assert display_width("") == 0
    assert pad("合樂", 6) == "合樂  " and pad("獻", 6, ">") == "    獻"
    assert pad("無算樂", 4) == "無算樂"  # never cut
    assert clip("鄉射禮", 5) == "鄉射"


def test_tables_line_up_in_columns(capsys) -> None:
    assert main(["rites"]) == 0
    lines = capsys.readouterr().out.splitlines()
    columns = {display_width(line.split(" 特縣")[0].split(" 軒縣")[0]) for line in lines}
    assert len(columns) == 1, lines
    assert main(["show", "yan"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines()
            if re.match(r"^\s*\d+  [a-z]", line)]
    # the start column ends at the same terminal column on every row, whatever the kind's width
    ends = {display_width(re.match(r"^(.*?\d+:\d\d)", line)[1]) for line in rows}
    assert len(rows) > 5 and len(ends) == 1, rows


def test_judge_names_the_sheets_pairs(tmp_path: Path, capsys) -> None:
    csv = tmp_path / "releases.csv"
    csv.write_text("time_s,side,hit\n4.0,右,1\n24.0,右,1\n", encoding="utf-8")
    assert main(["judge", "xiang-she", "--releases", str(csv), "--jie-seconds", "4"]) == 0
    out = capsys.readouterr().out
    assert "上耦:" in out and "次耦:" in out and "耦 1" not in out

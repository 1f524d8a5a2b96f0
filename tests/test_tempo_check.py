"""Tests of the tempo-consistency checker (issue 6): MIDI, audio, show logs and the CLI (the grid itself: test_grid.py)."""

from __future__ import annotations

import json
from pathlib import Path

import mido
import numpy as np
import pytest
import soundfile

import cli
from sequencer.check.onsets import detect_onsets
from sequencer.check.tempo import (
    check_audio,
    check_log,
    check_midi,
)

SR = 48_000
TPB = 480
TEMPO_1MS = 480_000  # at 480 ticks per beat, one tick is exactly 1 ms
TEMPO_2MS = 960_000  # … and here exactly 2 ms


# ── helpers ──────────────────────────────────────────────────────────────────────────────────


def write_midi(path: Path, tracks: list[list[tuple[int, mido.Message]]]) -> Path:
    """A type-1 file, UTF-8 text; each track given as (absolute tick, message) pairs."""
    mid = mido.MidiFile(type=1, ticks_per_beat=TPB, charset="utf-8")
    for events in tracks:
        track = mido.MidiTrack()
        now = 0
        for tick, msg in sorted(events, key=lambda e: e[0]):
            track.append(msg.copy(time=tick - now))
            now = tick
        track.append(mido.MetaMessage("end_of_track", time=0))
        mid.tracks.append(track)
    mid.save(str(path))
    return path


def tempo_track(changes: list[tuple[int, int]]) -> list[tuple[int, mido.Message]]:
    return [(tick, mido.MetaMessage("set_tempo", tempo=tempo)) for tick, tempo in changes]


def marker(tick: int, text: str) -> tuple[int, mido.Message]:
    return tick, mido.MetaMessage("marker", text=text)


def two_blocks_ticks(displace_ticks: int = 0) -> list[int]:
    """Ten 節 (two 射節 of five) every 1.5 s across a tempo change at tick 4500 (4.5 s).

    Tempo 1 ms/tick until tick 4500, then 2 ms/tick: 1.5 s is 1500 ticks, then 750 ticks.
    ``displace_ticks`` moves 節 3 of the second block (1 tick = 2 ms there).
    """
    ticks = [0, 1500, 3000, 4500] + [4500 + 750 * i for i in range(1, 7)]
    ticks[7] += displace_ticks
    return ticks


def jie_midi(path: Path, displace_ticks: int = 0) -> Path:
    ticks = two_blocks_ticks(displace_ticks)
    marks = [marker(0, "she-3 射節 騶虞"), marker(ticks[5], "she-4 射節 騶虞")]
    for i, tick in enumerate(ticks):
        marks.append(marker(tick, f"節 {i % 5 + 1}/5"))
    notes = [(t, mido.Message("note_on", channel=9, note=35, velocity=100)) for t in ticks]
    return write_midi(path, [tempo_track([(0, TEMPO_1MS), (4500, TEMPO_2MS)]), marks + notes])


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["check", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def stroke(kind: str, rng: np.random.Generator) -> np.ndarray:
    if kind == "click":
        n = int(0.004 * SR)
        k = np.arange(n)
        return 0.8 * np.sin(2 * np.pi * 2500 * k / SR) * np.exp(-k / (0.001 * SR))
    n = int(0.15 * SR)  # a drum-like decaying noise burst
    return 0.7 * rng.standard_normal(n) * np.exp(-np.arange(n) / (0.035 * SR))


def write_audio(path: Path, times: list[float], kind: str, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    x = np.zeros(int((max(times) + 0.6) * SR))
    for t in times:
        s = stroke(kind, rng)
        i = int(round(t * SR))
        x[i : i + s.size] += s
    x += 0.003 * rng.standard_normal(x.size)  # a noise floor about 47 dB below the strokes
    soundfile.write(str(path), x, SR, subtype="PCM_24")
    return path


def grid_times(n: int = 12, interval: float = 0.5, start: float = 0.25) -> list[float]:
    return [start + interval * i for i in range(n)]


# ── MIDI ─────────────────────────────────────────────────────────────────────────────────────


def test_midi_markers_even_across_a_tempo_change(tmp_path: Path) -> None:
    report = check_midi(jie_midi(tmp_path / "even.mid"))
    assert report.kind == "midi-markers" and report.ok
    assert [b.count for b in report.blocks] == [5, 5]
    assert [b.label for b in report.blocks] == [
        "射節 1: 節 1–5 of 5 (she-3 射節 騶虞)",
        "射節 2: 節 1–5 of 5 (she-4 射節 騶虞)",
    ]
    for block in report.blocks:
        assert block.mean_interval_s == pytest.approx(1.5, abs=1e-12)
        assert block.max_deviation_ms < 1e-9


def test_midi_markers_displaced_20ms(tmp_path: Path) -> None:
    report = check_midi(jie_midi(tmp_path / "late.mid", displace_ticks=10))  # 10 ticks = 20 ms
    assert not report.ok
    first, second = report.blocks
    assert first.ok
    assert not second.ok
    (v,) = second.violations
    assert v.index == 2  # 節 3
    assert v.deviation_ms == pytest.approx(20.0, abs=1e-6)
    assert v.time_s == pytest.approx(10.52, abs=1e-9)


def test_midi_tempo_map_is_exact_over_many_changes(tmp_path: Path) -> None:
    # 600 beats, the tempo changing on every beat between 1 ms and 2 ms per tick (beats of
    # 480 ms and 960 ms, alternately); a 節 on every other beat is then exactly 1.44 s apart.
    tempos, marks, tick = [], [], 0
    for beat in range(600):
        tempos.append((tick, TEMPO_1MS if beat % 2 == 0 else TEMPO_2MS))
        if beat % 2 == 0:
            marks.append(marker(tick, f"節 {beat // 2 + 1}/300"))
        tick += TPB
    report = check_midi(write_midi(tmp_path / "many.mid", [tempo_track(tempos), marks]),
                        tolerance_ms=1e-6)
    assert report.ok
    (block,) = report.blocks
    assert block.count == 300
    assert block.mean_interval_s == pytest.approx(1.44, abs=1e-12)
    assert block.max_deviation_ms < 1e-6


def test_midi_missing_jie_fails_its_block(tmp_path: Path) -> None:
    marks = [marker((k - 1) * 1000, f"節 {k}/5") for k in (1, 2, 3, 5)]  # 節 4 is missing
    report = check_midi(write_midi(tmp_path / "gap.mid", [tempo_track([(0, TEMPO_1MS)]), marks]))
    (block,) = report.blocks
    assert not block.ok and not report.ok
    assert block.violations == ()
    assert any("missing 節 4 of 5" in note for note in block.notes)


def test_midi_notes_without_markers(tmp_path: Path) -> None:
    even = [(i * 600, mido.Message("note_on", channel=9, note=35, velocity=90)) for i in range(8)]
    chord = [(i * 600 + 5, mido.Message("note_on", channel=9, note=42, velocity=90))
             for i in range(8)]  # 5 ms later: merged with the stroke
    offs = [(i * 600 + 100, mido.Message("note_on", channel=9, note=35, velocity=0))
            for i in range(8)]  # velocity 0 is a note-off
    melody = [(t, mido.Message("note_on", channel=0, note=60, velocity=70))
              for t in (100, 1000, 1300, 2950)]
    path = write_midi(tmp_path / "notes.mid",
                      [tempo_track([(0, TEMPO_1MS)]), even + chord + offs, melody])
    report = check_midi(path, channel=10)
    assert report.kind == "midi-notes" and report.ok
    assert report.blocks[0].count == 8
    assert any("channel 10" in note for note in report.notes)
    assert not check_midi(path).ok  # all channels: the melody is not on the grid


def test_midi_notes_displaced(tmp_path: Path) -> None:
    ticks = [i * 500 for i in range(10)]
    ticks[6] += 20
    notes = [(t, mido.Message("note_on", note=60, velocity=80)) for t in ticks]
    report = check_midi(write_midi(tmp_path / "n.mid", [tempo_track([(0, TEMPO_1MS)]), notes]))
    assert [(v.index, round(v.deviation_ms, 6)) for v in report.blocks[0].violations] == [(6, 20.0)]


# ── CLI ──────────────────────────────────────────────────────────────────────────────────────


def test_cli_midi_exit_codes_and_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(jie_midi(tmp_path / "even.mid")))
    assert code == 0
    assert "every block holds" in out and "she-4" in out
    code, out, _ = run(capsys, str(jie_midi(tmp_path / "late.mid", displace_ticks=10)))
    assert code == 4 and "節 3 at" not in out and "--verbose" in out  # summaries first
    code, out, _ = run(capsys, str(jie_midi(tmp_path / "late.mid", displace_ticks=10)),
                       "--verbose")
    assert code == 4
    assert "節 3 at 10.520000 s: +20.000 ms (late)" in out
    assert "FAIL" in out


def test_cli_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = jie_midi(tmp_path / "late.mid", displace_ticks=10)
    code, out, _ = run(capsys, str(path), "--json", "--tolerance-ms", "25")
    assert code == 0
    report = json.loads(out)
    assert report["ok"] is True and report["kind"] == "midi-markers"
    assert report["tolerance_ms"] == 25.0
    assert [b["count"] for b in report["blocks"]] == [5, 5]
    code, out, _ = run(capsys, str(path), "--json")
    assert code == 4
    (violation,) = json.loads(out)["blocks"][1]["violations"]
    assert violation == {"time_s": 10.52, "index": 2, "deviation_ms": 20.0}


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("garbage.mid", b"this is not a MIDI file at all", "not a readable Standard MIDI File"),
        ("garbage.wav", b"RIFF....WAVEjunk", "not a readable audio file"),
        ("notes.txt", b"hello", "unknown file type"),
        ("bad.jsonl", b'{"event": "jie", "t": 0, "k": 1, "n": 5}\n{oops\n', "bad.jsonl:2"),
        ("bad2.jsonl", b'{"event": "jie", "t": "soon", "k": 1, "n": 5}\n', "bad2.jsonl:1"),
        ("empty.jsonl", b'{"event": "go", "t": 1}\n', "no 節 records"),
    ],
)
def test_cli_bad_files_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    code, out, err = run(capsys, str(path))
    assert code == 2
    assert message in err
    assert out == ""


def test_cli_missing_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(tmp_path / "nowhere.mid"))
    assert code == 2 and "no such file" in err


def test_cli_too_few_onsets_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = [(t, mido.Message("note_on", note=60, velocity=80)) for t in (0, 480)]
    code, _, err = run(capsys, str(write_midi(tmp_path / "two.mid", [notes])))
    assert code == 2 and "only 2 note onsets" in err and "at least 3" in err


def test_cli_a_block_of_two_jie_is_reported_untested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every block is reported: one of two 節 untested, each incomplete block failing (a file
    says nothing of an operator who stopped it)."""
    marks = [marker(0, "節 1/5"), marker(960, "節 2/5"), marker(5000, "節 1/5"),
             marker(6000, "節 2/5"), marker(7000, "節 3/5")]
    code, out, _ = run(capsys, str(write_midi(tmp_path / "short.mid", [marks])), "--verbose")
    assert code == 4
    first, second = out.splitlines()[2:4], out.splitlines()
    assert "FAIL" in first[0] and "2 節: too few to test" in out
    assert "missing 節 3, 4, 5 of 5" in out and "missing 節 4, 5 of 5" in "\n".join(second)


def test_cli_malformed_jie_marker_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marks = [marker(0, "節 1/5"), marker(960, "節 two/5")]
    code, _, err = run(capsys, str(write_midi(tmp_path / "m.mid", [marks])))
    assert code == 2 and "'節 k/N'" in err and "tick 960" in err
    marks = [marker(0, "節 1/5"), marker(960, "節 3/5"), marker(1920, "節 2/5")]
    code, _, err = run(capsys, str(write_midi(tmp_path / "order.mid", [marks])))
    assert code == 2 and "must increase" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--channel", "17"], "between 1 and 16"),
        (["--channel", "0"], "between 1 and 16"),
        (["--tolerance-ms", "0"], "positive"),
        (["--tolerance-ms", "abc"], "invalid float"),
    ],
)
def test_cli_bad_options_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = run(capsys, str(jie_midi(tmp_path / "even.mid")), *argv)
    assert code == 2 and message in err


def test_cli_channel_is_for_midi_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "show.jsonl"
    path.write_text("".join(json.dumps({"event": "jie", "t": i, "k": i + 1, "n": 3}) + "\n"
                            for i in range(3)))
    code, _, err = run(capsys, str(path), "--channel", "10")
    assert code == 2 and "MIDI files only" in err


# ── audio ────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(("kind", "ext"), [("click", "wav"), ("burst", "flac")])
def test_detect_onsets_within_a_millisecond(tmp_path: Path, kind: str, ext: str) -> None:
    times = [t + 0.37e-3 * (i % 3) for i, t in enumerate(grid_times())]  # off the sample grid
    data, sr = soundfile.read(str(write_audio(tmp_path / f"a.{ext}", times, kind)))
    found = detect_onsets(data, sr)
    assert len(found) == len(times)
    assert np.max(np.abs(np.array(found) - np.array(times))) < 1e-3


@pytest.mark.render
@pytest.mark.parametrize(("kind", "ext"), [("click", "wav"), ("burst", "flac")])
def test_audio_even_and_displaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, ext: str
) -> None:
    even = write_audio(tmp_path / f"even.{ext}", grid_times(), kind, seed=1)
    report = check_audio(even)
    assert report.ok and report.kind == "audio"
    assert report.blocks[0].count == 12
    assert report.blocks[0].mean_interval_s == pytest.approx(0.5, abs=1e-3)
    assert run(capsys, str(even))[0] == 0

    times = grid_times()
    times[7] += 0.040
    late = write_audio(tmp_path / f"late.{ext}", times, kind, seed=2)
    report = check_audio(late)
    assert not report.ok
    (v,) = report.blocks[0].violations
    assert v.index == 7
    assert v.deviation_ms == pytest.approx(40.0, abs=2.0)
    code, out, _ = run(capsys, str(late), "--verbose")
    assert code == 4 and "onset 8 at" in out


def test_audio_too_few_onsets_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_audio(tmp_path / "two.wav", [0.3, 0.8], "click")
    code, _, err = run(capsys, str(path))
    assert code == 2 and "found only 2 onsets" in err
    silent = tmp_path / "silent.wav"
    soundfile.write(str(silent), np.zeros(SR), SR)
    code, _, err = run(capsys, str(silent))
    assert code == 2 and "found only 0 onsets" in err


# ── live show log ────────────────────────────────────────────────────────────────────────────


def write_log(path: Path, times: list[float], n: int = 5) -> Path:
    lines = [json.dumps({"event": "show", "rite": "xiang-she"}), ""]
    for i, t in enumerate(times):
        cue = "she-3" if i < n else "she-4"
        lines.append(json.dumps({"event": "jie", "t": t, "k": i % n + 1, "n": n, "cue": cue}))
        lines.append(json.dumps({"event": "note", "t": t + 0.001}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_log_even_and_displaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    times = [100.0 + 1.5 * i + (0.0012 if i % 2 else -0.0008) for i in range(10)]
    report = check_log(write_log(tmp_path / "even.jsonl", times))
    assert report.ok and report.kind == "log" and report.tolerance_ms == 5.0
    assert [b.label for b in report.blocks] == ["射節 1: 節 1–5 of 5 (she-3)",
                                                "射節 2: 節 1–5 of 5 (she-4)"]
    times[3] += 0.012
    path = write_log(tmp_path / "late.jsonl", times)
    report = check_log(path)
    assert not report.ok and report.blocks[1].ok
    assert [v.index for v in report.blocks[0].violations] == [3]
    code, out, _ = run(capsys, str(path), "--verbose")
    assert code == 4 and "節 4 at" in out
    assert run(capsys, str(path), "--tolerance-ms", "20")[0] == 0

"""Hostile input files and values (issue 15): each refused with exit 2 and a message naming the
file and the limit, within bounded memory and time — never a hang, a traceback or exit 1."""

from __future__ import annotations

import io
import json
import math
import os
import struct
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from cues.limits import AUDIO_SAMPLES, COMBINATIONS, CUES, LIMITS, LOG_BYTES, MIDI_BYTES
from tests.bounded_run import ROOT, run_cli

pytestmark = pytest.mark.fuzz

SHEET_HEAD = '[rite]\nid = "x"\ntitle = "t"\n'
CUE = '[[cue]]\nid = "{id}"\nkind = "笙"\nat = "a"\ntrigger = "{trigger}"\npieces = [{piece}]\n' \
      'source = {{ work = "w", quote = "q" }}\n{extra}\n'


def _cue(cid: str = "c", piece: str = '"南陔"', extra: str = "", trigger: str = "go") -> str:
    return CUE.format(id=cid, piece=piece, extra=extra, trigger=trigger)


def _sheet(tmp_path: Path, body: str, head: str = SHEET_HEAD) -> str:
    path = tmp_path / "sheet.toml"
    path.write_text(head + body, encoding="utf-8")
    return str(path)


def _realized(tmp_path: Path, name: str, data: bytes) -> str:
    """A sheet whose one cue plays file ``name`` holding ``data``."""
    (tmp_path / name).write_bytes(data)
    return _sheet(tmp_path, _cue(piece=f'{{ title = "由庚", by = "笙", realization = "{name}" }}'))


def _musicxml(octave: int = 4, duration: int = 1, shift: str = "") -> bytes:
    """One C of ``octave`` lasting ``duration``, with a written transposition ``shift``."""
    transpose = (f"<transpose><diatonic>0</diatonic><chromatic>0</chromatic><octave-change>"
                 f"{shift}</octave-change></transpose>" if shift else "")
    return (
        '<?xml version="1.0"?><score-partwise version="3.1"><part-list><score-part id="P1">'
        '<part-name>x</part-name></score-part></part-list><part id="P1"><measure number="1">'
        f'<attributes><divisions>1</divisions>{transpose}</attributes><note><pitch><step>C</step>'
        f'<octave>{octave}</octave></pitch><duration>{duration}</duration><type>quarter</type>'
        '</note></measure></part></score-partwise>').encode()


def _midi(track: bytes, division: int = 480) -> bytes:
    track += b"\x00\xff\x2f\x00"
    return (b"MThd" + struct.pack(">IHHH", 6, 0, 1, division) + b"MTrk"
            + struct.pack(">I", len(track)) + track)


def _zip_bomb() -> bytes:
    """A .mxl of a few KB whose score unpacks to 16 MB of zeros."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("score.xml", b"\0" * (16 * 1024 * 1024))
    return buf.getvalue()


def test_a_zip_bomb_mxl_is_refused_quickly(tmp_path: Path) -> None:
    bomb = _zip_bomb()
    assert len(bomb) < 32 * 1024
    sheet = _realized(tmp_path, "bomb.mxl", bomb)
    for command in (["validate", sheet], ["render", sheet, "-o", str(tmp_path / "x.wav")]):
        run = run_cli(*command)
        run.assert_clean((2,))
        assert "bomb.mxl" in run.err and "unpacks to more than" in run.err
        assert run.cpu_seconds < 10 and run.rss_mb < 200


@pytest.mark.parametrize("data, message", [
    (_musicxml(octave=12), "key 156"),  # above MIDI's 127
    (_musicxml(octave=-3), "key -24"),
    (_musicxml(duration=10 ** 9), "over the limit for one note"),
    (_musicxml(shift="9" * 23), "cannot read this realization file"),  # an octave shift overflows
], ids=["above-127", "below-0", "endless-note", "octave-shift"])
def test_musicxml_out_of_range_is_exit_2_and_no_file(tmp_path: Path, data: bytes,
                                                     message: str) -> None:
    sheet = _realized(tmp_path, "r.musicxml", data)
    out = tmp_path / "out.mid"
    run = run_cli("midi", sheet, "-o", str(out))
    run.assert_clean((2,))
    assert "r.musicxml" in run.err and message in run.err
    assert "Warning" not in run.err  # music21's own, printed past the CLI
    assert not out.exists()
    if "one note" in message:  # the endless note once segfaulted render (a 0-byte WAV)
        run = run_cli("render", sheet, "-o", str(tmp_path / "out.wav"))
        run.assert_clean((2,))
        assert "over the limit for one note" in run.err and not (tmp_path / "out.wav").exists()


@pytest.mark.parametrize("track", [
    # a 44-byte file: the slowest tempo, one note held for the longest delta time
    b"\x00\xff\x51\x03\xff\xff\xff\x00\x90\x3c\x40\x8f\xff\xff\x7f\x80\x3c\x00",
    b"\x00\x90\x3c\x40\x83\xe1\x9c\x00\x80\x3c\x00",  # a 10-hour note at 120 bpm
], ids=["44-bytes", "10-hours"])
def test_a_tiny_midi_realization_with_a_huge_note_is_refused(tmp_path: Path,
                                                              track: bytes) -> None:
    sheet = _realized(tmp_path, "r.mid", _midi(track, division=1 if b"\x51" in track else 480))
    run = run_cli("render", sheet, "-o", str(tmp_path / "x.wav"))
    run.assert_clean((2,))
    assert "r.mid" in run.err and "over the limit for one note" in run.err
    assert run.cpu_seconds < 10


@pytest.mark.parametrize("extra, settings, message", [
    ("pre_wait_s = 86400", "", "86,420 seconds, over the limit for a rite's timeline"),
    ("zhong = 99", "[settings]\nlost_zhong_seconds = 3600\n", "over the limit for a rite's"),
])
def test_a_timeline_past_24_hours_is_refused_before_rendering(
    tmp_path: Path, extra: str, settings: str, message: str,
) -> None:
    sheet = _sheet(tmp_path, _cue(extra=extra), head=SHEET_HEAD + settings)
    out = tmp_path / "x.wav"
    for command in (["validate", sheet], ["render", sheet, "-o", str(out)]):
        run = run_cli(*command)
        run.assert_clean((2,))
        assert message in run.err and run.cpu_seconds < 10
    assert not out.exists()


def test_a_hundred_thousand_pairs_are_refused(tmp_path: Path) -> None:
    ou = ", ".join(f'"o{i}"' for i in range(100_000))
    sheet = _sheet(tmp_path, '[[cue]]\nid = "s"\nkind = "射節"\nat = "a"\npieces = ["騶虞"]\n'
                   f'song = "騶虞"\njie = 5\nlisten = 1\nou = [{ou}]\n'
                   'source = { work = "w", quote = "q" }\n')
    run = run_cli("show", sheet)
    run.assert_clean((2,))
    assert "sheet.toml:12:" in run.err and "100,000 耦, over the limit" in run.err
    assert run.cpu_seconds < 10


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory"])
def test_an_input_that_is_not_a_regular_file_is_refused_at_once(tmp_path: Path,
                                                                 kind: str) -> None:
    if kind == "dev-zero":
        path = "/dev/zero"
    elif kind == "fifo":
        path = str(tmp_path / "in.toml")
        os.mkfifo(path)
    else:
        path = str(tmp_path)
    for command in (["validate", path], ["show", path], ["judge", "xiang-she", "--releases", path]):
        run = run_cli(*command, timeout=20)
        run.assert_clean((2,))
        assert path in run.err and ("not a regular file" in run.err or "directory" in run.err)
        assert run.seconds < 10 and run.rss_mb < 200


def test_a_fifo_realization_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "r.mid")
    sheet = _sheet(tmp_path, _cue(piece='{ title = "由庚", by = "笙", realization = "r.mid" }'))
    run = run_cli("validate", sheet, timeout=20)
    run.assert_clean((2,))
    assert "not a regular file" in run.err


@pytest.mark.parametrize("tempo, message", [
    ("1e-99999999", "tempo 0 is out of range"), ("nan", "expected a finite number"),
    ("inf", "expected a finite number"), ("9" * 5000, "over the limit for a number"),
])
def test_hostile_numbers_on_the_command_line_are_exit_2_at_once(tempo: str, message: str,
                                                                tmp_path: Path) -> None:
    run = run_cli("midi", "xiang-she", "-o", str(tmp_path / "x.mid"), "--tempo", tempo)
    run.assert_clean((2,))
    assert message in run.err and run.cpu_seconds < 10


def test_validate_checks_the_sheet_settings_with_file_and_line(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, _cue(), head=SHEET_HEAD + '[settings]\ntempo_bpm = 0\n'
                   'jie_seconds = "fast"\nhuangzhong_hz = nan\n')
    run = run_cli("validate", sheet)
    run.assert_clean((2,))
    assert "sheet.toml:5: [settings] tempo_bpm: tempo 0 is out of range" in run.err
    assert "sheet.toml:6: [settings] jie_seconds" in run.err and "'fast'" in run.err
    assert "sheet.toml:7: [settings] huangzhong_hz" in run.err and "finite" in run.err


def test_validate_opens_the_realization_files(tmp_path: Path) -> None:
    sheet = _realized(tmp_path, "r.mid", b"MThd junk")
    run = run_cli("validate", sheet)
    run.assert_clean((2,))
    assert "cue 'c'" in run.err and "r.mid" in run.err and "ok" not in run.out


def test_sheet_text_is_printed_with_control_characters_escaped(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, _cue().replace('at = "a"', 'at = "\\u001b[2J"'),
                   head='[rite]\nid = "x"\ntitle = "t\\u001b[31mRED\\u202e"\n')
    run = run_cli("show", sheet)
    run.assert_clean((0,))
    assert "\x1b" not in run.out and "\u202e" not in run.out
    assert "t\\x1b[31mRED\\u202e" in run.out and "\\x1b[2J" in run.out
    run = run_cli("validate", sheet)
    assert "\x1b" not in run.out and "\\x1b[31m" in run.out


@pytest.mark.parametrize("cid", ["a\\nb", "a\\tb", "a\\u001bb", "x" * 101])
def test_a_cue_id_must_be_printable_without_whitespace(tmp_path: Path, cid: str) -> None:
    run = run_cli("validate", _sheet(tmp_path, _cue(cid=cid)))
    run.assert_clean((2,))
    assert "expected a non-empty id" in run.err and "\x1b" not in run.err


def test_validation_is_linear_in_the_sheet(tmp_path: Path) -> None:
    """The largest sheet allowed validates in seconds; a larger one is refused at once."""
    body = _cue("c0") + "".join(_cue(f"c{i}", trigger="follow", piece='"陔"')
                                .replace("笙", "獻").replace('pieces = ["陔"]\n', "")
                                for i in range(1, CUES.value))
    run = run_cli("validate", _sheet(tmp_path, body))
    run.assert_clean((0,))
    assert f"{CUES.value} cues" in run.out and run.cpu_seconds < 20
    more = body + "".join(_cue(f"d{i}").replace("笙", "獻").replace('pieces = ["南陔"]\n', "")
                          for i in range(30_000))
    run = run_cli("validate", _sheet(tmp_path, more))
    run.assert_clean((2,))
    assert "over the limit" in run.err and run.cpu_seconds < 10


def test_a_million_keys_are_refused_quickly(tmp_path: Path) -> None:
    body = "[settings]\n" + "".join(f"k{i}=1\n" for i in range(400_000))
    run = run_cli("validate", _sheet(tmp_path, body))
    run.assert_clean((2,))
    # refused by its marks, before the TOML parser (once: by its 200,000 values, after it)
    assert "400,004 marks, over the limit" in run.err and run.cpu_seconds < 15
    body = "[settings]\n" + "".join(f"k{i}=1\n" for i in range(250_000))  # within the marks
    run = run_cli("validate", _sheet(tmp_path, body))
    run.assert_clean((2,))
    assert "200,000 values" in run.err and run.cpu_seconds < 15


def test_the_validator_lists_a_hundred_problems_and_counts_the_rest(tmp_path: Path) -> None:
    keys = "".join(f"unknown{i} = 1\n" for i in range(5000))
    run = run_cli("validate", _sheet(tmp_path, _cue(extra=keys)))
    run.assert_clean((2,))
    assert run.err.count("unknown key") == 100 and "… and 4,900 more problems" in run.err


@pytest.mark.parametrize("rows, message", [
    (20_000, "more than 10,000 rows"),
    (200_000, "over the limit for a releases CSV"),
])
def test_a_huge_releases_csv_is_refused(tmp_path: Path, rows: int, message: str) -> None:
    path = tmp_path / "r.csv"
    path.write_text("time_s,side,hit\n" + "1.0,右,1\n" * rows, encoding="utf-8")
    run = run_cli("judge", "xiang-she", "--releases", str(path))
    run.assert_clean((2,))
    assert "r.csv" in run.err and message in run.err


def test_the_readme_states_every_limit() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, limit in LIMITS.items():
        assert f"| {limit.what} | {limit.describe()} |" in readme, name


def test_validate_checks_every_variant_and_reading_combination(tmp_path: Path) -> None:
    """A bad realization reached only through a variant, only through a reading's value, or
    a timeline past 24 hours only with a variant: each is found, naming its combination."""
    (tmp_path / "good.musicxml").write_bytes(_musicxml())
    (tmp_path / "bad.mid").write_bytes(b"MThd junk")
    good = '{ title = "由庚", by = "笙", realization = "good.musicxml" }'
    bad = '{ title = "由庚", by = "笙", realization = "bad.mid" }'
    variant = '[[variant]]\nid = "v"\ntitle = "V"\n'
    run = run_cli("validate", _sheet(tmp_path, variant + _cue(piece=good)
                                     + _cue("w", piece=bad, extra='when = ["v"]')))
    run.assert_clean((2,))
    assert "with variants v: " in run.err and "cue 'w'" in run.err and "bad.mid" in run.err
    reading = ('[[reading]]\nname = "r"\nvalue = "a"\n[[reading.choice]]\nvalue = "a"\n'
               'cues = { c = { zhong = 1 } }\n[[reading.choice]]\nvalue = "b"\n'
               f'cues = {{ c = {{ pieces = [{bad}] }} }}\n')
    run = run_cli("validate", _sheet(tmp_path, _cue(piece=good) + reading))
    run.assert_clean((2,))
    assert "with reading r = b: " in run.err and "bad.mid" in run.err
    long_wait = 'pre_wait_s = 86400\nwhen = ["v"]'
    run = run_cli("validate", _sheet(tmp_path, variant + _cue(piece=good)
                                     + _cue("w", extra=long_wait) + _cue("x", extra=long_wait)))
    run.assert_clean((2,))
    assert "with variants v: " in run.err and "24 hours" in run.err
    run = run_cli("validate", _sheet(tmp_path, variant + _cue(piece=good)
                                     + _cue("w", piece=good, extra='when = ["v"]')))
    run.assert_clean((0,))


def test_combinations_are_bounded() -> None:
    """Up to the limit every combination; past it each variant and reading value alone."""
    from cues.sheet.loader import load_rite
    from sequencer.timeline.sheet_check import combinations

    xiang_she = load_rite("xiang-she", ())  # 1 variant, its readings: all listed
    values = math.prod(len(r.choices) for r in xiang_she.readings)
    every, total = combinations(xiang_she)
    assert total == len(every) == 2 * values <= COMBINATIONS.value
    yan = load_rite("yan", ())  # 6 variants and 7 readings: past the limit, sampled
    values = math.prod(len(r.choices) for r in yan.readings)
    n = len(yan.variants)
    assert n == 6 and 2 ** n * values > COMBINATIONS.value
    some, total = combinations(yan)
    assert total == 2 ** n * values and len(some) == COMBINATIONS.value
    many = replace(yan, variants=yan.variants * 4)  # 24 variants
    some, total = combinations(many)
    assert total == 2 ** (4 * n) * values and len(some) == COMBINATIONS.value
    ids = tuple(v.id for v in many.variants)
    assert some[:len(ids) + 2] == [((), {}), *(((v,), {}) for v in ids), (ids, {})]
    assert combinations(many)[0] == some  # the same sample on every run
    huge = replace(yan, variants=yan.variants * 10)  # 60: counted, never listed
    assert combinations(huge)[1] == 2 ** (10 * n) * values


@pytest.mark.parametrize(("channels", "rate", "frames", "message"), [
    (17, 48_000, 100, "17 channels, over the limit for an audio file for check (16 channels"),
    (1, 1, 7_201, "7,201 seconds, over the limit for an audio file for check (7,200 seconds"),
    (1, 2 ** 31 - 1, 100, "2,147,483,647 Hz, over the limit for the sample rate of an audio file "
     "for check (96,000 Hz"),  # its analysis window alone took 2.4 GB
    (1, 192_000, 100, "192,000 Hz, over the limit for the sample rate of an audio file for check "
     "(96,000 Hz: resample it"),
])
def test_check_refuses_audio_past_its_limits_before_reading_it(
        tmp_path: Path, channels: int, rate: int, frames: int, message: str) -> None:
    import numpy as np
    import soundfile

    path = tmp_path / "a.wav"
    soundfile.write(str(path), np.zeros((frames, channels), dtype=np.int16), rate,
                    subtype="PCM_16")
    run = run_cli("check", str(path))
    run.assert_clean((2,))
    assert "a.wav: " + message in run.err


def test_check_refuses_audio_of_too_many_samples_before_reading_it(tmp_path: Path) -> None:
    """16 channels of 8 kHz for 90 minutes: within the channels, the rate and the seconds, over
    the samples (a header and a sparse file: nothing written, nothing read)."""
    frames = AUDIO_SAMPLES.value // 16 + 1
    path = tmp_path / "many.wav"
    data = frames * 16 * 2
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", min(36 + data, 2 ** 32 - 1)) + b"WAVEfmt "
                + struct.pack("<IHHIIHH", 16, 1, 16, 8000, 8000 * 32, 32, 16)
                + b"data" + struct.pack("<I", min(data, 2 ** 32 - 1)))
        f.truncate(44 + data)
    run = run_cli("check", str(path))
    run.assert_clean((2,))
    assert (f"many.wav: {frames * 16:,} samples, over the limit for an audio file for check "
            "(frames × channels) (691,200,000 samples") in run.err


@pytest.mark.parametrize(("line", "message"), [
    ("[" * 100_000 + "]" * 100_000, "100,000 levels, over the limit for nesting of one show-log"),
    ('{"event": "jie", "cue": "x", "t": 1, "k": ' + "9" * 5000 + ', "n": 5}',
     "5,000 digits, over the limit for an integer in a show-log line"),
    ('{"event": "jie", "cue": "x", "t": 1e999, "k": 1, "n": 5}', "needs \"t\": seconds"),
], ids=["deep", "digits", "infinite"])  # (ids: a test's id goes into the environment)
def test_a_hostile_show_log_line_is_exit_2(tmp_path: Path, line: str, message: str) -> None:
    log = tmp_path / "show.jsonl"
    log.write_text(line + "\n", encoding="utf-8")
    run = run_cli("check", str(log))
    run.assert_clean((2,))
    assert "show.jsonl:1: " in run.err and message in run.err
    resume = run_cli("live", "xiang-she", "--output", "memory:", "--resume", str(log))
    resume.assert_clean((2,))
    assert "show.jsonl" in resume.err


@pytest.mark.parametrize(("name", "limit"), [("show.jsonl", LOG_BYTES), ("big.mid", MIDI_BYTES)])
def test_a_file_for_check_past_its_size_is_refused(tmp_path: Path, name: str, limit) -> None:
    path = tmp_path / name
    with open(path, "wb") as f:
        f.truncate(limit.value + 1)  # sparse: no disk used
    run = run_cli("check", str(path))
    run.assert_clean((2,))
    assert f"{name}: the file is {limit.value + 1:,} bytes, over the limit for {limit.what}" \
        in run.err


def _jie_markers(count: str) -> bytes:
    """A MIDI file of three 節 markers "節 k/COUNT" half a second apart (raw bytes: mido writes
    marker text as latin-1 only)."""
    from mido.midifiles.midifiles import encode_variable_int

    track = b""
    for k in (1, 2, 3):
        text = f"節 {k}/{count}".encode()
        track += (b"\x83\x60" if k > 1 else b"\x00") + b"\xff\x06" \
            + bytes(encode_variable_int(len(text))) + text
    track += b"\x00\xff\x2f\x00"
    return (b"MThd" + struct.pack(">IHHH", 6, 0, 1, 480) + b"MTrk"
            + struct.pack(">I", len(track)) + track)  # 480 ticks a beat at 120 bpm


@pytest.mark.parametrize("kind", ["log", "midi"])
def test_a_huge_jie_count_is_reported_in_bounded_memory(tmp_path: Path, kind: str) -> None:
    """節 1–3 of a count of 10¹⁷ (a log once took 18.7 GB listing the missing ones)."""
    count = 10 ** 17
    if kind == "log":
        path = tmp_path / "show.jsonl"
        path.write_text("".join(json.dumps({"event": "jie", "t": k, "k": k, "n": count}) + "\n"
                                for k in (1, 2, 3)), encoding="utf-8")
    else:
        path = tmp_path / "jie.mid"
        path.write_bytes(_jie_markers(str(count)))
    run = run_cli("check", "--verbose", str(path))
    run.assert_clean((4,))
    assert f"missing 節 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, " \
           f"23 and {count - 23:,} more of {count}: the block is incomplete" in run.out


def test_a_jie_marker_with_a_5000_digit_count_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "jie.mid"
    path.write_bytes(_jie_markers("9" * 5000))
    run = run_cli("check", str(path))
    run.assert_clean((2,))
    assert "jie.mid: track 0, tick 0: marker" in run.err and "is not of the form" in run.err


def test_many_delivery_records_are_checked_in_bounded_time(tmp_path: Path) -> None:
    """As many 節 as a file may hold (JIE_RECORDS) and 40,000 late deadlines and output losses:
    once quadratic (a 1.5 MB log of 20,000 took 37 s), now a few seconds."""
    from cues.limits import JIE_RECORDS

    n, m = JIE_RECORDS.value, 40_000
    lines = [{"event": "jie", "t": i * 0.5, "k": i % 5 + 1, "n": 5, "cue": "c"} for i in range(n)]
    lines.append({"event": "late", "cue": "c", "t": 1.0, "late": 1, "missed": 0, "lost": 0,
                  "worst_ms": 12.5, "times": [i * 0.5 + 0.1 for i in range(m)]})
    lines += [{"event": "output-lost", "t": 1e6 + i} for i in range(m)]
    log = tmp_path / "show.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    run = run_cli("check", str(log))
    run.assert_clean((4,))
    assert f"{n // 5} of {n // 5} blocks fail" in run.out  # each holds a late deadline


@pytest.mark.parametrize(("subtype", "value"), [("FLOAT", float("nan")), ("DOUBLE", float("inf"))])
def test_audio_with_a_sample_not_finite_is_exit_2_naming_it(tmp_path: Path, subtype: str,
                                                            value: float) -> None:
    """One NaN once made every onset strength NaN: "found only 0 onsets" said nothing useful."""
    import numpy as np
    import soundfile

    x = np.zeros(8000 * 4)
    x[::4000] = 0.8
    x[12_345] = value
    path = tmp_path / "a.wav"
    soundfile.write(str(path), x, 8000, subtype=subtype)
    run = run_cli("check", str(path))
    run.assert_clean((2,))
    assert "a.wav: sample 12,345 (at 1.543 s) is not a finite number (NaN or infinity)" in run.err


def test_a_two_hour_wav_is_checked_in_blocks(tmp_path: Path) -> None:
    """2 hours at 8 kHz (a sparse file: silence, no disk used): read whole as float64 it
    would take 460 MB; streamed in blocks the run stays near the interpreter's own size (once
    a 2-hour WAV cost `check` 8 GB)."""
    rate, frames = 8000, 8000 * 7200
    path = tmp_path / "long.wav"
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + 2 * frames) + b"WAVEfmt "
                + struct.pack("<IHHIIHH", 16, 1, 1, rate, 2 * rate, 2, 16)
                + b"data" + struct.pack("<I", 2 * frames))
        f.truncate(44 + 2 * frames)
    run = run_cli("check", str(path))
    run.assert_clean((2,))
    assert "long.wav: found only 0 onsets" in run.err
    assert run.rss_mb < 300, run.rss_mb


@pytest.mark.parametrize("name", ["in.wav", "in.jsonl", "in.mid"])
def test_check_refuses_a_fifo_at_once(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    os.mkfifo(path)
    run = run_cli("check", str(path), timeout=20)
    run.assert_clean((2,))
    assert name in run.err and "not a regular file" in run.err and run.seconds < 10


def test_fluidsynth_to_a_directory_is_exit_2(tmp_path: Path) -> None:
    """Once FluidSynth's render reported success for `-o DIR`."""
    run = run_cli("render", "xiang-she", "--from", "she-jie", "--until", "she-jie",
                  "--engine", "fluidsynth", "-o", str(tmp_path))
    run.assert_clean((2,))
    assert f"{tmp_path}: audio is written as .wav or .flac" in run.err


def test_a_junk_soundfont_is_exit_2(tmp_path: Path) -> None:
    """Once FluidSynth rendered ten minutes of silence from a junk .sf2 and reported success."""
    junk = tmp_path / "junk.sf2"
    junk.write_bytes(os.urandom(4096))
    out = tmp_path / "x.wav"
    run = run_cli("render", "xiang-she", "--from", "she-jie", "--until", "she-jie",
                  "--engine", "fluidsynth", "--soundfont", str(junk), "-o", str(out))
    run.assert_clean((2,))
    assert f"--soundfont {junk}: not a SoundFont 2 file" in run.err
    assert not out.exists()


def test_a_cue_name_with_a_newline_stays_on_its_line(tmp_path: Path) -> None:
    """A show log's cue name is shown escaped: a newline in it cannot start a line of the
    report of its own."""
    log = tmp_path / "show.jsonl"
    run_cli("live", "xiang-she", "--from", "she-jie", "--until", "she-jie", "--auto",
            "--jie-seconds", "0.1", "--output", "memory:", "--plain",
            "--log", str(log)).assert_clean((0, 1))
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    for r in records:
        if r.get("cue") == "she-jie":
            r["cue"] = "she\njie: FORGED"
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    run = run_cli("check", str(log))
    run.assert_clean((0, 4))
    assert "she\\njie: FORGED" in run.out
    assert not any(line.startswith("jie: FORGED") for line in run.out.splitlines())


@pytest.mark.parametrize(("text", "message"), [
    (".".join(["a"] * 20_000) + " = 1\n", "a key of 20,000 parts, over the limit for one dotted"),
    ("[" + ".".join(["b"] * 20_000) + "]\n", "a key of 20,000 parts, over the limit for one dotted"),
    ("x = 1\n" * 60_000 + "y = [" + "0.5, " * 250_000 + "]\n", "marks, over the limit for the"),
], ids=["dotted-key", "dotted-table", "marks"])
def test_a_pathological_toml_key_is_refused_before_tomllib(
        tmp_path: Path, text: str, message: str) -> None:
    """A 40 KB sheet with a 20,000-part dotted key took 2.3 GB inside Python's tomllib, before
    any limit was checked (issue 27): now it is refused before the parser sees it."""
    run = run_cli("validate", _sheet(tmp_path, text))
    run.assert_clean((2,))
    assert message in run.err and "sheet.toml:" in run.err
    assert run.rss_mb < 150, run.rss_mb


def test_a_long_run_of_letters_is_searched_once_for_a_long_key(tmp_path: Path) -> None:
    """The search for a key of too many parts once restarted at every letter of a run and
    scanned the run again: a 40 KB string of letters took 57 s, a 4 MB sheet of them days
    (issue 27).  Now the run is tried from its start only; the sheet goes on to the validator."""
    run = run_cli("validate", _sheet(tmp_path, _cue(extra=f'title = "{"q" * 400_000}"')))
    run.assert_clean((0, 2))
    assert "sheet.toml" in run.err + run.out


def test_a_log_of_too_many_lines_is_refused_before_they_are_parsed(tmp_path: Path) -> None:
    """16 MB of ``{}`` lines took `check` 36 s and 540 MB (issue 27): past LOG_LINES it is
    refused before the lines are parsed, by check and by --resume."""
    from cues.limits import LOG_LINES

    log = tmp_path / "show.jsonl"
    log.write_text("{}\n" * (LOG_LINES.value + 1), encoding="utf-8")
    for argv in (["check", str(log)],
                 ["live", "xiang-she", "--output", "memory:", "--plain", "--resume", str(log)]):
        run = run_cli(*argv)
        run.assert_clean((2,))
        assert f"{LOG_LINES.value + 1:,} lines, over the limit for a show log" in run.err
        assert run.cpu_seconds < 10 and run.rss_mb < 200, (run.cpu_seconds, run.rss_mb)


@pytest.mark.parametrize("kind", ["log", "midi"])
def test_more_jie_than_the_limit_are_refused_before_they_are_tested(tmp_path: Path,
                                                                    kind: str) -> None:
    """A million 節 records in blocks of 5 took `check` 288 s and 686 MB, each block fitted as
    a grid (issue 27): past JIE_RECORDS the file is refused, naming it and the limit."""
    from cues.limits import JIE_RECORDS

    count = JIE_RECORDS.value + 1
    if kind == "log":
        path = tmp_path / "show.jsonl"
        path.write_text("".join(json.dumps({"event": "jie", "t": i * 0.5, "k": i % 3 + 1,
                                            "n": 3}) + "\n" for i in range(count)),
                        encoding="utf-8")
    else:
        from mido.midifiles.midifiles import encode_variable_int

        track = b""
        for i in range(count):
            text = f"節 {i % 3 + 1}/3".encode()
            track += b"\x83\x60\xff\x06" + bytes(encode_variable_int(len(text))) + text
        path = tmp_path / "jie.mid"
        path.write_bytes(_midi(track))
    run = run_cli("check", str(path))
    run.assert_clean((2,))
    assert f"{path.name}: the file has {count:,} 節, over the limit for 節 records of a show " \
           "log, or 節 markers of a MIDI file, for check (5,000 節" in run.err

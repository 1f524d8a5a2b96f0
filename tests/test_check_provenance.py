"""A proof that needs no settings (issue 29, item 4): every file yuezheng writes carries its
provenance, `check` uses it, a difference between what the file says and what the user passes
is named (exit 2), and a recording without one is checked by the spacing found in it, with how
sure that is.  Real renders, real MIDI files, read back — no mocks."""

from __future__ import annotations

import json
import shutil
import struct
import wave
from pathlib import Path

import mido
import numpy as np
import pytest
import soundfile

import cli
from instruments.files.riff_info import info_chunk, read_info
from instruments.files.wav24 import Wav24Writer
from sequencer.outputs.provenance import read_provenance
from sequencer.timeline.drums import strokes
from tests.test_check_audio import displaced

pytestmark = pytest.mark.render

SHE_JIE = ("--from", "she-jie", "--until", "she-jie")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def render(tmp_path: Path, jie: str, ext: str = "wav") -> Path:
    out = tmp_path / f"she-jie-{jie}.{ext}"
    assert cli.main(["render", "xiang-she", *SHE_JIE, "--jie-seconds", jie, "-o", str(out)]) == 0
    return out


def stripped(path: Path) -> Path:
    """The samples alone, as another program copies them: no tags."""
    x, sr = soundfile.read(str(path), dtype="int32")
    out = path.with_name(f"stripped-{path.stem}.wav")
    soundfile.write(str(out), x, sr, subtype="PCM_24")
    assert read_provenance(out) is None
    return out


# ── the tags ──────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("riff_limit", [0xFFFFFFFF, 4096])  # RIFF, and RF64 past the limit
def test_info_tags_are_written_before_the_data_and_read_back(tmp_path: Path,
                                                            riff_limit: int) -> None:
    text = json.dumps({"provenance": "yuezheng/1", "title": "鄉射禮" * 600}, ensure_ascii=False)
    x = np.sin(np.arange(9001) / 7.0)[:, None].repeat(2, axis=1) * 0.5
    path = tmp_path / "t.wav"
    with path.open("wb") as raw, Wav24Writer(raw, 48000, 2, riff_limit=riff_limit,
                                             info=info_chunk({"title": "鄉射禮", "comment": text,
                                                              "software": "yuezheng"})) as w:
        w.write(x)
    assert read_info(path) == {"title": "鄉射禮", "comment": text, "software": "yuezheng"}
    assert len(text.encode()) > 4096  # longer than libsndfile reads: read here
    data, sr = soundfile.read(str(path))
    assert sr == 48000 and data.shape == x.shape
    assert np.max(np.abs(data - x)) < 2 ** -22
    if riff_limit == 0xFFFFFFFF:
        with wave.open(str(path)) as w:  # Python's own reader passes over the LIST chunk
            assert w.getnframes() == 9001 and w.getsampwidth() == 3
        size = struct.unpack("<I", path.read_bytes()[4:8])[0]
        assert size == path.stat().st_size - 8  # the LIST chunk counted in the RIFF size


def test_every_file_carries_what_it_was_made_with(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    mid = tmp_path / "x.mid"
    assert run(capsys, "midi", "yan", "--variant", "she", *SHE_JIE, "--jie-seconds", "2",
               "-o", str(mid))[0] == 0
    made = read_provenance(mid)
    assert made is not None and made.rite == "yan" and made.variants == ("she",)
    assert made.command == ("yuezheng midi yan --from she-jie --until she-jie --variant she "
                            "--jie-seconds 2 --midi-tuning mts")
    assert made.settings["jie_seconds"] == "2" and made.given == ("jie_seconds",)
    (grid,) = made.she_jie
    # the 燕射 drums the 投壺's 魯鼓 whole (reading she-gu), its strokes even across the 節
    per = len(strokes("lu2"))
    assert (grid.cue, grid.jie_s, grid.per_jie) == ("she-jie", 2.0, per)
    assert grid.step_s == pytest.approx(2.0 / per)
    # the MIDI contract holds: the markers, UTF-8 text; the provenance is one text event
    meta = mido.MidiFile(str(mid), charset="utf-8").tracks[0]
    texts = [m.text for m in meta if m.type == "text"]
    assert len(texts) == 1 and json.loads(texts[0])["rite"] == "yan"
    jie = [m.text for m in meta if m.type == "marker" and m.text.startswith("節 ")]
    assert len(jie) == grid.count // grid.per_jie == 25 and jie[:2] == ["節 1/5", "節 2/5"]
    flac = tmp_path / "x.flac"
    assert run(capsys, "render", "guanju", "--ensemble", "sheng", "-o", str(flac))[0] == 0
    made = read_provenance(flac)
    assert made is not None and made.piece == "關雎" and made.ensemble == "sheng"
    assert made.she_jie == ()
    audition = tmp_path / "a.wav"
    assert run(capsys, "audition", "鼓", "-o", str(audition))[0] == 0
    made = read_provenance(audition)
    assert made is not None and made.command.startswith("yuezheng audition 鼓 ")
    assert read_info(audition)["title"] == "audition 鼓"


def test_the_same_command_writes_the_same_bytes(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("a", "b"):
        assert run(capsys, "midi", "xiang-she", "-o", str(tmp_path / f"{name}.mid"))[0] == 0
        assert run(capsys, "render", "xiang-she", *SHE_JIE, "--jie-seconds", "1",
                   "-o", str(tmp_path / f"{name}.wav"))[0] == 0
    for ext in ("mid", "wav"):
        assert (tmp_path / f"a.{ext}").read_bytes() == (tmp_path / f"b.{ext}").read_bytes()


# ── check reads it ───────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("jie", ["1", "2.5"])
@pytest.mark.parametrize("ext", ["wav", "flac"])
def test_a_shejie_is_checked_without_being_told(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                jie: str, ext: str) -> None:
    path = render(tmp_path, jie, ext)
    code, out, _ = run(capsys, "check", str(path), "--json")
    report = json.loads(out)
    assert code == 0, report
    assert report["kind"] == "audio-timeline" and report["rite"] == "xiang-she"
    assert f"--jie-seconds {jie}" in report["made_with"]
    (block,) = report["blocks"]
    assert block["count"] == block["expected_count"] == 120
    assert block["expected_interval_s"] == pytest.approx(float(jie) / 4)
    assert block["max_deviation_ms"] < 1.0
    code, out, _ = run(capsys, "check", str(path))  # the text says what it was made with
    assert code == 0 and "made with: yuezheng render xiang-she" in out and "間若一" in out


@pytest.mark.parametrize("jie", ["1", "2.5"])
def test_a_stripped_wav_is_checked_by_the_spacing_found_in_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], jie: str) -> None:
    path = stripped(render(tmp_path, jie))
    code, out, _ = run(capsys, "check", str(path), "--json")
    report = json.loads(out)
    assert code == 0, report
    assert report["kind"] == "audio-found" and report["made_with"] is None
    (found,) = report["found"]
    assert found["step_s"] == pytest.approx(float(jie) / 4, abs=1e-4)
    assert (found["strokes"], found["positions"], found["sureness"]) == (120, 120, "sure")
    assert found["jie"]["strokes"] == 4 and found["jie"]["phase"] == 0
    assert found["jie"]["jie_s"] == pytest.approx(float(jie), abs=1e-3)
    assert found["jie"]["agree"] == found["jie"]["of"] == 30
    assert found["jie"]["sureness"] == "sure"
    (block,) = report["blocks"]
    assert block["ok"] and block["count"] == 120 and block["max_deviation_ms"] < 1.0
    code, out, _ = run(capsys, "check", str(path))
    assert code == 0
    assert f"found  1: strokes every {float(jie) / 4:.4f} s, 0.000–" in out
    assert f"節 every 4 strokes = {float(jie):.4f} s" in out and "(sure)" in out


def test_a_displaced_stroke_found_without_provenance_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The spacing is found loosely, the grid judged strictly: a stroke 40 ms late fails."""
    path = displaced(stripped(render(tmp_path, "2")), 13 * 0.5, 0.040, 0.5)  # stroke 14
    code, out, _ = run(capsys, "check", str(path), "--json")
    report = json.loads(out)
    assert code == 4, report
    (block,) = report["blocks"]
    (v,) = block["violations"]
    assert v["index"] == 13 and v["deviation_ms"] == pytest.approx(40.0, abs=3.0)


def test_what_the_user_passes_is_compared_with_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = render(tmp_path, "1")
    code, out, err = run(capsys, "check", str(path), "--rite", "xiang-she", "--jie-seconds",
                         "0.8")
    assert code == 2 and out == ""
    assert "--jie-seconds 0.8: the file was made with --jie-seconds 1" in err
    assert "does not hold" not in err and "Leave them out" in err
    code, _, err = run(capsys, "check", str(path), "--rite", "yan")
    assert code == 2 and "the file was made from 鄉射禮 (xiang-she), not 燕禮 (yan)" in err
    code, _, err = run(capsys, "check", str(path), "--from", "he-yue")
    assert code == 2 and "--from he-yue: the file was made with --from she-jie" in err
    code, _, err = run(capsys, "check", str(path), "--variant", "cai-pin")
    assert code == 2 and "--variant cai-pin: the file was made with no variant" in err
    # what agrees is no difference: the rest is read from the file
    assert run(capsys, "check", str(path), "--rite", "鄉射禮", "--jie-seconds", "1.0")[0] == 0
    assert run(capsys, "check", str(path), "--rite", "xiang-she", "--tempo", "60")[0] == 0
    mid = tmp_path / "x.mid"
    assert run(capsys, "midi", "xiang-she", *SHE_JIE, "--jie-seconds", "4", "-o", str(mid))[0] == 0
    code, out, _ = run(capsys, "check", str(mid))
    assert code == 0 and "made with: yuezheng midi xiang-she" in out and "節 markers" in out
    code, _, err = run(capsys, "check", str(mid), "--jie-seconds", "2")
    assert code == 2 and "--jie-seconds 2: the file was made with --jie-seconds 4" in err


def test_a_sheet_changed_since_the_file_was_made_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sheet = tmp_path / "she.toml"
    assert run(capsys, "new", str(sheet), "--from", "xiang-she")[0] == 0
    mid = tmp_path / "x.mid"
    assert run(capsys, "midi", str(sheet), *SHE_JIE, "--jie-seconds", "1", "-o", str(mid))[0] == 0
    assert read_provenance(mid).sheet == str(sheet)
    assert run(capsys, "check", str(mid), "--rite", str(sheet))[0] == 0
    text = sheet.read_text(encoding="utf-8")
    sheet.write_text(text.replace('ou = ["上耦", "次耦", "下耦", ', 'ou = [', 1), encoding="utf-8")
    code, _, err = run(capsys, "check", str(mid), "--rite", str(sheet))
    assert code == 2 and "was the sheet changed since the file was made?" in err
    assert run(capsys, "check", str(mid))[0] == 0  # untold: the file's own 節 markers


def test_a_malformed_provenance_is_an_error_naming_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.wav"
    bad = json.dumps({"provenance": "yuezheng/1", "she_jie": [{"cue": 1}]})
    with path.open("wb") as raw, Wav24Writer(raw, 48000, 2,
                                             info=info_chunk({"comment": bad})) as w:
        w.write(np.zeros((4800, 2)))
    code, _, err = run(capsys, "check", str(path))
    assert code == 2 and str(path) in err and "its provenance" in err


def test_no_strokes_to_follow_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "noise.wav"
    x = 0.05 * np.random.default_rng(3).standard_normal((10 * 48000, 2))
    soundfile.write(str(path), x, 48000, subtype="PCM_24")
    code, _, err = run(capsys, "check", str(path))
    assert code == 2 and "carries no provenance" in err and "--rite" in err


@pytest.mark.fluidsynth
def test_a_fluidsynth_render_carries_its_provenance(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("fluidsynth") is None:
        pytest.fail("the fluidsynth program is needed (Debian: fluidsynth)")
    for ext in ("wav", "flac"):
        out = tmp_path / f"fs.{ext}"
        assert run(capsys, "render", "xiang-she", *SHE_JIE, "--jie-seconds", "2.5", "-o",
                   str(out), "--engine", "fluidsynth")[0] == 0
        made = read_provenance(out)
        assert made is not None and "--engine fluidsynth" in made.command
        assert made.she_jie[0].step_s == 0.625
        info = soundfile.info(str(out))
        assert info.subtype == "PCM_24" and info.duration > 75.0


def test_songs_beside_a_shejie_are_listed_not_judged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The 鄉射 up to its 射節 (songs at four syllables a second, then the 射節's strokes every
    0.5 s), its tags stripped: the 射節 is found by its 節 stroke and judged; where the songs'
    syllables keep a spacing they are listed as other music, not judged (the detector places a
    sung syllable only within tens of milliseconds)."""
    out = tmp_path / "up-to-she-jie.wav"
    assert run(capsys, "render", "xiang-she", "--until", "she-jie", "--tempo", "240",
               "--jie-seconds", "2", "-o", str(out))[0] == 0
    code, text, _ = run(capsys, "check", str(stripped(out)), "--json")
    report = json.loads(text)
    assert code == 0, report
    judged = [f for f in report["found"] if f["judged"]]
    assert len(judged) == 1  # the songs, where their syllables keep a spacing, not judged
    (shejie,) = judged
    assert shejie["step_s"] == pytest.approx(0.5, abs=1e-4) and shejie["strokes"] == 120
    assert (shejie["jie"]["strokes"], shejie["jie"]["sureness"]) == (4, "sure")
    assert all(f["step_s"] < 0.3 for f in report["found"] if not f["judged"])
    (block,) = report["blocks"]
    assert block["ok"] and block["count"] == 120


def test_stems_carry_the_render_and_their_instrument(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, stems = tmp_path / "mix.wav", tmp_path / "stems"
    assert run(capsys, "render", "xiang-she", *SHE_JIE, "--jie-seconds", "1", "-o", str(out),
               "--stems", str(stems))[0] == 0
    assert read_provenance(out).stem is None
    drum, se = read_provenance(stems / "鼓.wav"), read_provenance(stems / "瑟.wav")
    assert (drum.stem, se.stem) == ("鼓", "瑟") and drum.command == read_provenance(out).command
    assert read_info(stems / "鼓.wav")["title"] == "鄉射禮 — stem 鼓"
    assert run(capsys, "check", str(stems / "鼓.wav"))[0] == 0  # the drum's strokes alone
    code, _, err = run(capsys, "check", str(stems / "瑟.wav"))
    assert code == 2 and "the 瑟 stem of a render" in err and "does not hold" not in err

"""Rendering a rite to audio: read the files back and check them with numbers."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import cli
from instruments.tuning import LU_NAMES, Tuning
from instruments.voices.notes import render_note
from sequencer.check.made_with import CheckRequest, check_request

pytestmark = pytest.mark.render

SHE = ["xiang-she", "--from", "she-jie", "--until", "she-jie", "--jie-seconds", "1.5",
       "--room", "dry"]  # the courtyard's check: tests/test_voices_struck.py


@pytest.fixture(scope="module")
def she_jie(tmp_path_factory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("render")
    wav, stems = out / "she.wav", out / "stems"
    assert cli.main(["render", *SHE, "-o", str(wav), "--stems", str(stems)]) == 0
    return wav, stems


def test_stems_sum_to_the_mix_and_nothing_clips(she_jie) -> None:
    wav, stems = she_jie
    mix, rate = sf.read(str(wav), dtype="float64")
    assert rate == 48000 and mix.shape[1] == 2
    assert np.abs(mix).max() <= 1.0
    files = sorted(stems.iterdir())
    assert {f.stem for f in files} == {"歌", "瑟", "鼓"} or {f.stem for f in files} >= {"鼓"}
    total = sum(sf.read(str(f), dtype="float64")[0] for f in files)
    lsb = 2.0 ** -23
    assert np.abs(total - mix).max() <= (len(files) + 1) * lsb
    rms = np.sqrt(np.mean(mix ** 2))
    assert 20 * np.log10(rms) > -40  # a usable level, not a whisper


def test_render_is_deterministic(she_jie, tmp_path: Path) -> None:
    wav, stems = she_jie
    again, again_stems = tmp_path / "again.wav", tmp_path / "stems"
    assert cli.main(["render", *SHE, "-o", str(again), "--stems", str(again_stems)]) == 0
    assert again.read_bytes() == wav.read_bytes()
    for f in stems.iterdir():
        assert (again_stems / f.name).read_bytes() == f.read_bytes()
    plain = [tmp_path / "p1.wav", tmp_path / "p2.wav"]
    for out in plain:
        assert cli.main(["render", *SHE, "-o", str(out)]) == 0
    assert plain[0].read_bytes() == plain[1].read_bytes()


def test_check_holds_on_our_own_rendered_she_jie(she_jie) -> None:
    # as `check` reads it: by its provenance, the 射節's strokes (the 獲者's calls that sound
    # in it are no 節; the plain onset grid below counts them)
    report = check_request(CheckRequest(str(she_jie[0])))
    assert report.ok
    assert report.blocks[0].count > 20
    assert abs(report.blocks[0].mean_interval_s - 1.5 / 4) < 1e-3  # the 鼓 and 鼙 quarter strokes


@pytest.mark.parametrize("room", ["dry", "courtyard"])
def test_east_is_louder_on_the_right(tmp_path: Path, room: str) -> None:
    stems = tmp_path / "stems"
    assert cli.main(["render", "da-she", "--until", "si-xia-bin", "--lost-zhong-seconds", "4",
                     "-o", str(tmp_path / "m.wav"), "--stems", str(stems), "--room", room]) == 0
    east, _ = sf.read(str(stems / "應鼙.wav"))  # 應鼙 hangs east of the 阼階 建鼓
    west, _ = sf.read(str(stems / "朔鼙.wav"))  # 朔鼙 hangs in the west
    rms = lambda x: np.sqrt(np.mean(x ** 2, axis=0))  # noqa: E731
    if room == "dry":
        assert rms(east)[1] > 1.2 * rms(east)[0]
        assert rms(west)[0] > 1.2 * rms(west)[1]
    else:  # reflections from both side walls narrow the image, the sides stay apart
        assert rms(east)[1] / rms(east)[0] > 1.2 * rms(west)[1] / rms(west)[0]


def _fundamental(x: np.ndarray, rate: int, near: float) -> float:
    seg = x[rate // 4: rate // 4 + rate * 2] * np.hanning(rate * 2)
    n = len(seg) * 16
    spec = np.abs(np.fft.rfft(seg, n))
    freqs = np.fft.rfftfreq(n, 1 / rate)
    band = (freqs > near * 0.97) & (freqs < near * 1.03)
    i = np.flatnonzero(band)[np.argmax(spec[band])]
    a, b, c = np.log(spec[i - 1: i + 2])
    return float(freqs[i] + 0.5 * (a - c) / (a - 2 * b + c) * (freqs[1] - freqs[0]))


@pytest.mark.parametrize("system", ["sanfen", "equal"])
def test_every_lu_sounds_within_one_cent(system: str) -> None:
    tuning = Tuning(system)
    for semitones, name in enumerate(LU_NAMES):
        want = tuning.hz(semitones)
        x = render_note("笙", want, 2.5, 90)
        got = _fundamental(np.asarray(x, dtype=np.float64), 48000, want)
        cents = 1200 * np.log2(got / want)
        assert abs(cents) < 1.0, (name, want, got, cents)


def test_fluidsynth_engine(tmp_path: Path) -> None:
    if not (shutil.which("fluidsynth") and Path("/usr/share/sounds/sf2/FluidR3_GM.sf2").exists()):
        if os.environ.get("CI"):
            pytest.fail("CI must have fluidsynth and fluid-soundfont-gm")
        pytest.skip("fluidsynth missing")
    out = tmp_path / "f.flac"
    assert cli.main(["render", *SHE, "--engine", "fluidsynth", "-o", str(out)]) == 0
    audio, rate = sf.read(str(out))
    assert rate == 48000 and np.sqrt(np.mean(audio ** 2)) > 1e-3


def test_render_bad_input(tmp_path: Path, capsys) -> None:
    assert cli.main(["render", "xiang-she", "-o", str(tmp_path / "x.mp3")]) == 2
    assert cli.main(["render", "xiang-she", "-o", str(tmp_path / "none" / "x.wav")]) == 2
    assert cli.main(["render", "xiang-she", "--until", "zheng-ge-bei", "--from", "zheng-ge-bei",
                     "-o", str(tmp_path / "x.wav")]) == 2  # nothing to render
    err = capsys.readouterr().err
    assert "Traceback" not in err

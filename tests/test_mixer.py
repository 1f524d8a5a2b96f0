"""The offline mixer: placement, block mixing, limiter, stems and files, read back as numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import cli
from cues.errors import UserError
from instruments.mix import limiter, mixer, placement
from instruments.mix import render_files as audio_files
from instruments.mix import room as room_module
from instruments.mix.mixer import RenderNote
from instruments.voices import notes as voices

pytestmark = pytest.mark.render

SR = 48000
LSB = 2.0 ** -23
DRY = mixer.Mastering(room="dry")  # the old placement: pan law and distance only


def _note(start: float, inst: str = "編磬", freq: float | None = 330.0, *, vel: int = 100,
          x: float = 0.0, y: float = -5.0, stem: str = "main", dur: float = 0.5) -> RenderNote:
    return RenderNote(start, inst, freq, dur, vel, x, y, stem)


def test_pan_law_constant_power_side_and_distance() -> None:
    left, right = placement.pan_gains(10.0, -15.0)  # due east of the listener, 10 m away
    assert left == pytest.approx(0.0, abs=1e-12) and right == pytest.approx(0.5)
    left, right = placement.pan_gains(-3.0, -11.0)  # west, 5 m: full level
    assert left > right and left**2 + right**2 == pytest.approx(1.0)
    left, right = placement.pan_gains(0.0, 5.0)  # straight ahead, 20 m: 1/d from 5 m
    assert left == pytest.approx(right) and math.hypot(left, right) == pytest.approx(0.25)
    assert placement.pan_gains(0.0, -14.0) == pytest.approx((math.sqrt(0.5), math.sqrt(0.5)))


def test_note_hung_in_the_east_is_louder_on_the_right(tmp_path: Path) -> None:
    path = tmp_path / "east.wav"
    audio_files.write_audio(path, [_note(0.0, "編鐘", 262.0, x=6.0, y=-8.0)], how=DRY)
    data, rate = sf.read(path)
    assert rate == SR and data.shape[1] == 2
    rms = np.sqrt((data**2).mean(axis=0))
    assert rms[1] > 2 * rms[0]
    audio_files.write_audio(path, [_note(0.0, "編鐘", 262.0, x=-6.0, y=-8.0)], how=DRY)
    data, _ = sf.read(path)
    rms = np.sqrt((data**2).mean(axis=0))
    assert rms[0] > 2 * rms[1]


def test_stems_sum_to_the_mix(tmp_path: Path) -> None:
    notes = [
        _note(0.0, "編鐘", 262.0, x=4.0, stem="東縣"),
        _note(0.3, "建鼓", None, x=-2.0, stem="鼓"),
        _note(0.1, "歌", 196.0, y=0.0, stem="工歌", dur=1.2),
        _note(0.5, "瑟", 196.0, x=-1.0, y=0.0, stem="工歌"),
        _note(0.7, "笙", 294.0, stem="笙/和"),  # a name that is not a safe file name
    ]
    report = audio_files.write_audio(tmp_path / "mix.flac", notes, stems_dir=tmp_path / "stems")
    assert len(report.stems) == 4 and all(Path(p).suffix == ".flac" for p in report.stems)
    assert Path(audio_files.stem_path(tmp_path / "stems", "笙/和", ".flac")).exists()
    mix, _ = sf.read(tmp_path / "mix.flac")
    total = sum(sf.read(p)[0] for p in report.stems)
    tolerance = (len(report.stems) + 1) * audio_files.STEM_SUM_TOLERANCE_LSB * LSB
    assert np.abs(total - mix).max() <= tolerance
    assert np.abs(mix).max() > 0.01  # a real signal, not two silences


def test_forty_loud_notes_never_clip(tmp_path: Path) -> None:
    notes = [_note(0.0, "建鼓", None, vel=127, y=-12.0, stem="drums") for _ in range(20)]
    notes += [_note(0.0, "編鐘", 200.0 * (1 + i / 20), vel=127, x=1.0, y=-12.0, stem="bells")
              for i in range(20)]
    report = audio_files.write_audio(tmp_path / "loud.wav", notes, stems_dir=tmp_path / "s")
    data, _ = sf.read(tmp_path / "loud.wav")
    assert np.abs(data).max() <= 1.0
    assert np.abs(data).max() <= limiter.LIMITER_CEILING + LSB
    assert report.peak <= limiter.LIMITER_CEILING + 1e-6
    assert report.min_gain_db < -3.0  # the limiter had to act
    # every stem is kept under the ceiling too (the drums alone exceed the mix here)
    for p in report.stems:
        assert np.abs(sf.read(p)[0]).max() <= limiter.LIMITER_CEILING + LSB


def test_same_notes_same_bytes(tmp_path: Path) -> None:
    notes = [_note(0.05 * i, inst, f, x=i - 3.0, vel=70 + 5 * i)
             for i, (inst, f) in enumerate([("編鐘", 262.0), ("鼗", None), ("瑟", 196.0),
                                            ("管", 392.0), ("鼙", None), ("鑮", 131.0)])]
    audio_files.write_audio(tmp_path / "a.wav", notes)
    voices.clear_cache()  # the second render synthesizes every note again
    audio_files.write_audio(tmp_path / "b.wav", notes)
    assert (tmp_path / "a.wav").read_bytes() == (tmp_path / "b.wav").read_bytes()


@pytest.mark.parametrize("room", ["dry", "courtyard"])
def test_block_size_does_not_change_the_mix(room: str) -> None:
    notes = [_note(0.013 * i, "編磬", 300.0 + 20 * i, x=float(i)) for i in range(5)]
    seen: list[tuple[float, float]] = []
    how = mixer.Mastering(room=room)
    big = np.concatenate(list(mixer.render(notes, block_s=2.0, how=how,
                                           progress=lambda d, t: seen.append((d, t)))))
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert seen[-1][0] == pytest.approx(seen[-1][1]) == pytest.approx(big.shape[0] / SR)
    small_blocks = list(mixer.render(notes, block_s=0.05, how=how))
    small = np.concatenate(small_blocks)
    assert big.dtype == np.float32 and big.shape[1] == 2
    assert max(b.shape[0] for b in small_blocks) <= 0.05 * SR + limiter.LIMITER_CHUNK
    if room == "dry":
        assert np.array_equal(big, small)
    else:  # the tail's FFTs round differently with the block: equal to float32 precision
        assert np.abs(big - small).max() < 1e-6
    # the mix lasts exactly to the end of the last note's tail (and the room's)
    end = max(round(n.start_s * SR) + voices.note_length_samples("編磬", n.freq_hz, 0.5)
              for n in notes)
    assert big.shape[0] == end + room_module.Room(room, SR).extra


def test_render_is_lazy_and_places_notes_only_where_they_sound() -> None:
    # one hour, one note a minute: the first block needs only the first note's waveform
    notes = [_note(60.0 * i, "鼙", None, vel=60 + i) for i in range(60)]
    before = voices.cache_info()["misses"]
    blocks = mixer.render(notes, block_s=1.0, how=DRY)
    first = next(blocks)
    assert voices.cache_info()["misses"] - before <= 1
    assert first.shape == (round(SR / limiter.LIMITER_CHUNK) * limiter.LIMITER_CHUNK, 2)
    blocks.close()
    # a note at 2.5 s appears at exactly its sample
    out = np.concatenate(list(mixer.render([_note(2.5, "鼙", None)], block_s=1.0, how=DRY)))
    nz = np.flatnonzero(np.abs(out[:, 0]) > 0)
    assert nz[0] in (2 * SR + SR // 2, 2 * SR + SR // 2 + 1)


def test_bad_input_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="audio is written as .wav or .flac, not .mp3"):
        audio_files.write_audio(tmp_path / "x.mp3", [_note(0.0)])
    with pytest.raises(UserError, match="no notes"):
        audio_files.write_audio(tmp_path / "x.wav", [])
    with pytest.raises(UserError, match="start_s"):
        _note(-1.0)
    with pytest.raises(UserError, match="note 1 .*velocity"):
        list(mixer.render([_note(0.0), _note(1.0, vel=300)]))


def test_cli_instruments_and_audition(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["instruments", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_name = {r["name"]: r for r in rows}
    assert by_name["編磬"]["bayin"] == "石" and "PROJECT ESTIMATE" in by_name["編磬"]["voice"]
    out = tmp_path / "qing.wav"
    assert cli.main(["audition", "磬", "-o", str(out), "--huangzhong", "293.66"]) == 0
    assert "wrote" in capsys.readouterr().out
    data, rate = sf.read(out)
    assert rate == SR and data.shape[1] == 2
    # the first stone sounds 黃鍾 (first 0.8 s, before the next stone)
    x = data[: int(0.8 * SR), 0]
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    assert np.fft.rfftfreq(len(x), 1 / SR)[spec.argmax()] == pytest.approx(293.66, rel=0.01)
    assert cli.main(["audition", "琵琶", "-o", str(out)]) == 2
    assert cli.main(["audition", "鼗", "-o", str(tmp_path / "t.flac")]) == 0


def test_audition_default_huangzhong_is_the_tunings() -> None:
    from instruments.mix.audition import audition_notes
    from instruments.tuning import DEFAULT_HUANGZHONG_HZ, Tuning

    notes = audition_notes("編鐘")
    assert notes[0].freq_hz == DEFAULT_HUANGZHONG_HZ
    assert [n.freq_hz for n in notes] == [Tuning("equal").hz(st) for st in (0, 2, 4, 7, 9, 12)]

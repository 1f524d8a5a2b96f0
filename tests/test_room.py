"""The courtyard and the loudness target, measured on real renders read back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf

import cli
from instruments.mix import loudness, room
from instruments.mix.placement import pan_gains
from sequencer.outputs.render import DEFAULT_LOUDNESS_LUFS

pytestmark = pytest.mark.render

SHENG_GE = ["xiang-yin-jiu", "--from", "sheng-ge", "--until", "sheng-ge"]


@pytest.fixture(scope="module")
def renders(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("room")
    paths = {}
    for mode in ("courtyard", "dry"):
        paths[mode] = out / f"{mode}.wav"
        assert cli.main(["render", *SHENG_GE, "-o", str(paths[mode]), "--room", mode]) == 0
    return paths


def _correlation(data: np.ndarray) -> float:
    return float(np.corrcoef(data[:, 0], data[:, 1])[0, 1])


def test_courtyard_decorrelates_and_dry_keeps_the_old_placement(renders) -> None:
    court, _ = sf.read(str(renders["courtyard"]), dtype="float64")
    dry, _ = sf.read(str(renders["dry"]), dtype="float64")
    assert _correlation(court) < 0.9
    assert _correlation(dry) > 0.99  # the singers on the hall: a near-centre point source
    # dry: the channels stand in the pan law's ratio for the 工 (west of the axis)
    from sequencer.timeline.compiler import compile_rite

    args = cli._build_parser().parse_args(["render", *SHENG_GE, "-o", "x.wav"])
    timeline = compile_rite(*cli._load(args))
    singer = next(n for n in timeline.notes if n.instrument == "歌")
    assert all((n.x, n.y) == (singer.x, singer.y) for n in timeline.notes)
    left, right = pan_gains(singer.x, singer.y)
    rms = np.sqrt((dry ** 2).mean(axis=0))
    assert rms[0] / rms[1] == pytest.approx(left / right, rel=0.02)



def test_placement_stays_audible_in_the_courtyard(tmp_path: Path) -> None:
    from instruments.mix import render_files as audio_files
    from instruments.mix.mixer import Mastering, RenderNote

    for x, louder in ((6.5, 1), (-6.5, 0)):
        path = tmp_path / "bell.wav"
        audio_files.write_audio(path, [RenderNote(0.0, "編鐘", 262.0, 1.0, 100, x, -8.0, "s")],
                                how=Mastering(room="courtyard"))
        data, _ = sf.read(str(path), dtype="float64")
        rms = np.sqrt((data ** 2).mean(axis=0))
        assert rms[louder] > 1.5 * rms[1 - louder]


@pytest.mark.parametrize("mode", ["courtyard", "dry"])
def test_renders_are_normalised_to_the_target(renders, mode: str) -> None:
    data, rate = sf.read(str(renders[mode]), dtype="float64")
    measured = pyloudnorm.Meter(rate).integrated_loudness(data)
    assert measured == pytest.approx(DEFAULT_LOUDNESS_LUFS, abs=0.5)


def test_loudness_target_is_a_setting(tmp_path: Path) -> None:
    wav = tmp_path / "quiet.wav"
    assert cli.main(["render", *SHENG_GE, "-o", str(wav), "--loudness", "-26"]) == 0
    data, rate = sf.read(str(wav), dtype="float64")
    assert pyloudnorm.Meter(rate).integrated_loudness(data) == pytest.approx(-26.0, abs=0.5)


def test_our_meter_agrees_with_pyloudnorm() -> None:
    rng = np.random.default_rng(7)
    for rate in (44100, 48000):
        x = rng.standard_normal((rate * 6, 2)) * np.linspace(0.001, 0.2, rate * 6)[:, None]
        ref = pyloudnorm.Meter(rate).integrated_loudness(x)
        assert loudness.integrated_loudness(x, rate) == pytest.approx(ref, abs=0.01)
        meter = loudness.LoudnessMeter(rate)
        for i in range(0, x.shape[0], 12345):
            meter.add(x[i:i + 12345].T)
        assert meter.integrated() == pytest.approx(ref, abs=0.01)


def test_the_path_filter_is_scipys_firwin() -> None:
    """``path_filter``'s written-out taps are the Kaiser-window design they stand for."""
    from scipy.signal import firwin

    q, m = room.TAIL_DECIMATION, room.PATH_PHASE_TAPS
    designed = firwin(q * m + 1, room.PATH_CUTOFF, window=("kaiser", room.PATH_KAISER_BETA),
                      fs=1.0)
    for rate in (44100, 48000, 96000):
        assert np.array_equal(room.path_filter(rate), designed)


def test_reflections_are_delayed_by_their_paths() -> None:
    court = room.Room("courtyard", 48000)
    taps = court.taps(7.0, -2.0)
    direct = taps[0][0] / 48000 * room.SPEED_OF_SOUND
    assert direct == pytest.approx(np.hypot(7.0, 13.0), abs=0.01)
    assert all(d > taps[0][0] for d, _, _ in taps[1:])
    east = taps[2]
    assert east[2] > east[1]  # the east wall's image is on the right
    assert room.Room("dry", 48000).taps(7.0, -2.0) == ((0, *pan_gains(7.0, -2.0)),)


@pytest.mark.parametrize("mode", ["dry", "courtyard"])
def test_the_estimate_holds_for_drums(tmp_path: Path, mode: str) -> None:
    """The 射節's drums at −30 LUFS (no limiting): the written render is within 0.5 LU (in
    the courtyard the drums' low modes add with their reflections in amplitude: measured per
    note and place, ``instruments.mix.room_energy``)."""
    wav = tmp_path / "she.wav"
    assert cli.main(["render", "xiang-she", "--from", "she-jie", "--until", "she-jie",
                     "--jie-seconds", "2", "-o", str(wav), "--room", mode,
                     "--loudness", "-30"]) == 0
    data, rate = sf.read(str(wav), dtype="float64")
    assert pyloudnorm.Meter(rate).integrated_loudness(data) == pytest.approx(-30.0, abs=0.5)

"""The courtyard with air and the mastering that keeps the 節 (issue 25), read back: a sine
through the courtyard comes out alone, its impulse response decays as published courtyards
do, a 射節 render has no digital silence, its 節 keeps its accent at the default loudness, its
true peak stays under −1 dBTP, its loudness is the target's (FluidSynth's too), and no DC."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
from scipy.signal import butter, sosfilt
from scipy.signal.windows import blackmanharris

import cli
from instruments.mix.blocks import heard
from instruments.mix.limiter import LIMITER_CEILING_DBTP, true_peak
from instruments.mix.room import Room
from sequencer.outputs.render import DEFAULT_LOUDNESS_LUFS

pytestmark = pytest.mark.render

RATE = 48000
SHE = ["xiang-she", "--from", "she-jie", "--until", "she-jie"]
PLACES = {"the drums": (-1.5, -2.0), "the east bells": (6.0, -4.0), "the hall": (0.0, 2.0)}


def _room(place: tuple[float, float]) -> Room:
    room = Room("courtyard", RATE)
    room.start_at_nearest({place}, {place})
    return room


@pytest.mark.parametrize("hz", [200.0, 1000.0, 2900.0, 3700.0, 4500.0, 5500.0, 9000.0])
def test_a_sine_comes_out_of_the_courtyard_alone(hz: float) -> None:
    """Before: a 4.5 kHz tone came back mostly as 1.5 kHz at −12.8 dB (the low-rate path's
    crude resampling).  Now every other component is ≥ 60 dB under the tone (measured
    80–100 dB)."""
    place = PLACES["the drums"]
    x = np.sin(2 * np.pi * hz * np.arange(3 * RATE) / RATE).astype(np.float32)
    y = heard(x, place, _room(place))[:, RATE:3 * RATE].astype(np.float64)
    freqs = np.fft.rfftfreq(y.shape[1], 1 / RATE)
    for ear in y:
        spectrum = np.abs(np.fft.rfft(ear * blackmanharris(ear.size)))
        assert freqs[spectrum.argmax()] == pytest.approx(hz, abs=1.0)
        others = spectrum[np.abs(freqs - hz) > 20.0]
        assert 20 * np.log10(others.max() / spectrum.max()) <= -60.0


def _band_decay(ir: np.ndarray, centre: float) -> tuple[float, float]:
    """(EDT, T30) in seconds of an impulse response (2, n) in the octave band at ``centre``
    (ISO 3382-1: Schroeder's backward integral, 0 to −10 dB and −5 to −35 dB fitted)."""
    sos = butter(3, [centre / np.sqrt(2), centre * np.sqrt(2)], btype="band", fs=RATE,
                 output="sos")
    energy = (sosfilt(sos, ir.astype(np.float64), axis=1) ** 2).sum(axis=0)
    decay = np.cumsum(energy[::-1])[::-1]
    db = 10 * np.log10(decay / decay[0])
    t = np.arange(db.size) / RATE

    def fit(top: float, bottom: float) -> float:
        inside = (db <= top) & (db >= bottom)
        return -60.0 / np.polyfit(t[inside], db[inside], 1)[0]

    return fit(0.0, -10.0), fit(-5.0, -35.0)


@pytest.mark.parametrize("where", sorted(PLACES))
def test_the_courtyard_decays_as_published_courtyards_do(where: str) -> None:
    """Mid-frequency (the 500 Hz and 1 kHz octaves' mean) EDT 0.6–0.74 s and T30 ≈ 0.7 s:
    Zhang, Wang & Mao, Buildings 14 (9): 2747 (2024), courtyard Yue-opera theatres, EDT
    0.6–0.7 s and T30 around 0.7 s in the main viewing areas; Yang & Kang (JAES 51 (11),
    2003), garden courtyard theatres, mean EDT 0.74 s.  Before: T60 0.7 s but the direct
    sound 14.6 dB over everything reflected."""
    place = PLACES[where]
    impulse = np.zeros(1, dtype=np.float32)
    impulse[0] = 1.0
    ir = heard(impulse, place, _room(place))
    edt, t30 = np.mean([_band_decay(ir, hz) for hz in (500.0, 1000.0)], axis=0)
    assert 0.6 <= edt <= 0.74
    assert 0.63 <= t30 <= 0.77


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The renders of this module, each made once and shared (read only)."""
    return {"dir": tmp_path_factory.mktemp("air")}


def _render(renders: dict, *settings: str) -> tuple[np.ndarray, Path]:
    if settings not in renders:
        out = renders["dir"] / f"she{len(renders)}.wav"
        assert cli.main(["render", *SHE, *settings, "-o", str(out)]) == 0
        renders[settings] = (sf.read(str(out), dtype="float64")[0], out)
    return renders[settings]


def _longest_zero_run(data: np.ndarray) -> int:
    zero = np.concatenate([[False], (data == 0.0).all(axis=1), [False]])
    edges = np.flatnonzero(np.diff(zero.astype(np.int8)))
    return int((edges[1::2] - edges[0::2]).max(initial=0))


def test_no_digital_silence_in_a_she_jie(renders: dict) -> None:
    """Before: exact zeros filled 33–45 % of a 射節 (no room tone anywhere; after the drums'
    own work 3.2 %, the longest run 0.35 s).  Now the courtyard's air is under everything:
    no run of exact zeros longer than 1 ms."""
    data, _ = _render(renders, "--jie-seconds", "4")
    assert _longest_zero_run(data) <= RATE // 1000


def _strokes(path: Path, settings: tuple[str, ...]) -> np.ndarray:
    """Each drum stroke's level: dB RMS of the mono mix over 100 ms from its tick."""
    from sequencer.timeline.compiler import compile_rite

    args = cli._build_parser().parse_args(["render", *SHE, *settings, "-o", "x.wav"])
    timeline = compile_rite(*cli._load(args))
    data, rate = sf.read(str(path), dtype="float64")
    mono = data.sum(axis=1)
    ticks = sorted({n.tick for n in timeline.notes if n.instrument in ("鼓", "鼙")})
    out = []
    for tick in ticks:
        i = round(tick / 960 * rate)
        out.append(10 * np.log10((mono[i:i + rate // 10] ** 2).mean()))
    return np.array(out)


def test_the_jie_keeps_its_accent_at_the_default_loudness(renders: dict) -> None:
    """Before: at the default −18 LUFS the limiter took 6.9 dB off every 節 stroke, the accent
    fell from 6.5 to 2.8 dB (smallest 0.9).  Now (−23 LUFS: the limiter does not touch the
    射節) each 節's stroke is ≥ 3 dB over the other strokes of its 節 (their mean power;
    measured 3.5 dB at the least, 5.7 on average; over the loudest of them 3.0 and 4.9)."""
    settings = ("--jie-seconds", "4")
    data, path = _render(renders, *settings)
    assert 20 * np.log10(true_peak(data.T)) < LIMITER_CEILING_DBTP - 1.0  # not limited
    levels = _strokes(path, settings)
    jie = len(levels) // 4
    per_jie = levels[:4 * jie].reshape(jie, 4)
    others = 10 * np.log10((10 ** (per_jie[:, 1:] / 10)).mean(axis=1))
    accents = per_jie[:, 0] - others
    assert accents.min() >= 3.0, accents


@pytest.mark.parametrize("loudness", [(), ("--loudness", "-14")])
def test_the_true_peak_stays_under_the_ceiling(renders: dict, loudness: tuple[str, ...]) -> None:
    """4× oversampled (scipy's polyphase, as BS.1770-4 Annex 2): ≤ −1 dBTP, also where the
    limiter works hard (−14 LUFS).  Before: +0.73 to +0.89 dBTP."""
    data, _ = _render(renders, "--jie-seconds", "4", *loudness)
    assert 20 * np.log10(true_peak(data.T)) <= LIMITER_CEILING_DBTP


@pytest.mark.parametrize("engine", ["yuezheng", "fluidsynth"])
def test_both_engines_meet_the_loudness(renders: dict, engine: str) -> None:
    """Within 0.5 LU of the target, and no DC (each channel's mean ≤ −100 dBFS).  Before:
    FluidSynth ignored --loudness (−45 LUFS) and every mix had a DC offset of −63 to
    −78 dBFS."""
    data, _ = _render(renders, "--jie-seconds", "4", "--engine", engine)
    measured = pyloudnorm.Meter(RATE).integrated_loudness(data)
    assert measured == pytest.approx(DEFAULT_LOUDNESS_LUFS, abs=0.5)
    assert 20 * np.log10(true_peak(data.T)) <= LIMITER_CEILING_DBTP
    assert (20 * np.log10(np.abs(data.mean(axis=0)) + 1e-30) <= -100.0).all()

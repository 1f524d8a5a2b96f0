"""The struck voices measured: the bells' strike point, the stones, the drums, a living 射節."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import cli
from instruments.voices import models as voice_models
from instruments.voices import notes as voices
from instruments.voices.struck_models import drum_mode_amplitudes
from sequencer.check.made_with import CheckRequest, check_request
from sequencer.check.tempo import check_audio

pytestmark = pytest.mark.render

SR = 48000


def _spectrum(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = x.astype(np.float64)
    n = 1 << (len(x) - 1).bit_length() + 1
    return np.fft.rfftfreq(n, 1 / SR), np.abs(np.fft.rfft(x * np.hanning(len(x)), n))


def _peak_db(freqs: np.ndarray, mag: np.ndarray, target: float, rel: float = 0.03) -> float:
    band = (freqs > target * (1 - rel)) & (freqs < target * (1 + rel))
    return 20 * float(np.log10(mag[band].max()))


@pytest.mark.parametrize("interval", ["minor", "major"])
@pytest.mark.parametrize("variant", range(voice_models.STROKE_VARIANTS))
def test_the_strike_point_picks_the_bells_tone(interval: str, variant: int) -> None:
    nominal = voice_models.BELL_INTERVALS[interval]
    zheng = 300.0
    # a 正鼓 stroke: the 側鼓音 is a trace at least 15 dB down
    x = voices.render_note("編鐘", zheng, 1.0, 100, bell_interval=interval, variant=variant)
    freqs, mag = _spectrum(x[:SR])
    assert _peak_db(freqs, mag, zheng * nominal) <= _peak_db(freqs, mag, zheng, 0.01) - 15
    # a 側鼓 stroke on the same bell: the reverse
    ce = zheng * nominal
    y = voices.render_note("編鐘", ce, 1.0, 100, bell_interval=interval, strike="側鼓",
                           variant=variant)
    freqs, mag = _spectrum(y[:SR])
    assert _peak_db(freqs, mag, zheng) <= _peak_db(freqs, mag, ce, 0.01) - 15


def test_each_bell_has_its_own_interval_and_pair_inside_the_measured_ranges() -> None:
    from instruments.voices.struck_models import bell_tones

    ratios = set()
    for hz in (200.0, 233.0, 262.0, 294.0, 330.0, 392.0, 440.0):
        key = voices.note_key("編鐘", hz, 1.0)
        zheng, ratio, _ = bell_tones(key)
        assert zheng == hz
        low, high = voice_models.BELL_INTERVAL_RANGE
        assert low <= ratio <= high
        ratios.add(round(ratio, 4))
        # the (3,0) pair and the upper partials are in the spectrum of a hard stroke
        x = voices.render_note("編鐘", hz, 1.0, 127)
        freqs, mag = _spectrum(x[: SR // 4])
        floor = 20 * np.log10(np.median(mag))
        pair = (freqs > 2.32 * hz) & (freqs < 3.29 * hz)
        assert 20 * np.log10(mag[pair].max()) > floor + 30
        upper = (freqs > 3.5 * hz) & (freqs < 10.5 * hz)
        assert 20 * np.log10(mag[upper].max()) > floor + 20
    assert len(ratios) == 7  # no two bells alike


def test_bell_decay_is_short_and_upper_partials_die_first() -> None:
    f = voice_models.REFERENCE_HZ
    t60 = 6.91 * voice_models.bianzhong_tau_s(f)
    assert t60 < 7.6 / 2  # half the old T60 at C4
    x = voices.render_note("編鐘", f, 1.0, 100).astype(np.float64)
    early_f, early = _spectrum(x[: SR // 4])
    late_f, late = _spectrum(x[SR // 2: SR // 2 + SR // 4])
    upper = voice_models.BELL_UPPER[0][0]
    drop_low = _peak_db(early_f, early, f, 0.01) - _peak_db(late_f, late, f, 0.01)
    drop_high = _peak_db(early_f, early, f * upper, 0.02) - _peak_db(late_f, late, f * upper,
                                                                       0.02)
    assert drop_high > drop_low + 6


def test_bo_is_two_tone_longer_and_quieter_than_bianzhong() -> None:
    """The large 鑮 rings longer than a 編鐘 of its pitch (it decayed faster: 0.35 against
    0.5 s at C4), and sits under it and the 建鼓 in the balance."""
    from cues.catalog import ENSEMBLE_BALANCE_LU

    f = 200.0
    assert voice_models.bo_tau_s(f) > voice_models.bianzhong_tau_s(f)
    assert ENSEMBLE_BALANCE_LU["鑮"] < ENSEMBLE_BALANCE_LU["編鐘"]
    assert ENSEMBLE_BALANCE_LU["鑮"] < ENSEMBLE_BALANCE_LU["建鼓"]
    x = voices.render_note("鑮", f, 1.0, 100)
    freqs, mag = _spectrum(x[:SR])
    assert _peak_db(freqs, mag, f * 1.2) <= _peak_db(freqs, mag, f, 0.01) - 15


def _t60(x: np.ndarray, hz: float) -> float:
    """The decay (T60, s) of the band around ``hz``: Schroeder's backward integral, −5 to −25
    dB, extrapolated."""
    from scipy.signal import butter, sosfilt

    y = sosfilt(butter(4, [hz * 0.92, hz * 1.08], btype="band", fs=SR, output="sos"),
                x.astype(np.float64))
    energy = np.cumsum((y ** 2)[::-1])[::-1]
    level = 10 * np.log10(energy / energy[0] + 1e-30)
    return 3.0 * (np.argmax(level < -25) - np.argmax(level < -5)) / SR


@pytest.mark.parametrize("hz", [130.81, 261.63, 523.25])
def test_stone_rings_shorter_than_bronze_and_the_bo_longer(hz: float) -> None:
    """At every pitch the stone's fundamental dies before the bronze bell's (stone damps more
    than bronze; it rang 1.6× longer), and the 鑮's after the 編鐘's (measured T60)."""
    t60 = {name: _t60(voices.render_note(name, hz, 1.0, 100), hz)
           for name in ("編鐘", "鑮", "編磬")}
    assert t60["編磬"] < 0.7 * t60["編鐘"]
    assert t60["鑮"] > 1.15 * t60["編鐘"]
    tau = voice_models.qing_tau_s(hz)  # the stated constant Q, measured
    assert t60["編磬"] == pytest.approx(6.91 * tau, rel=0.1)


def _peaks(x: np.ndarray, lo: float, hi: float) -> list[tuple[float, float]]:
    """(Hz, dB) of the spectral peaks of ``x`` between ``lo`` and ``hi`` (10 dB prominence)."""
    from scipy.signal import find_peaks

    freqs, mag = _spectrum(x)
    db = 20 * np.log10(mag + 1e-12)
    found, _ = find_peaks(db, prominence=10)
    return [(float(freqs[i]), float(db[i])) for i in found if lo <= freqs[i] <= hi]


@pytest.mark.parametrize("strike", ["正鼓", "側鼓"])
def test_the_upper_partials_come_in_pairs_3_to_10_percent_apart(strike: str) -> None:
    """Rossing et al. (1988): a two-tone bell's modes come in pairs 3–10 % apart, one member
    at each strike point.  Measured on a hard stroke: around each upper pair's centre two
    partials, 3–10 % apart, the struck point's the louder."""
    zheng = 300.0
    hz = zheng * (voice_models.BELL_INTERVALS["minor"] if strike == "側鼓" else 1.0)
    x = voices.render_note("編鐘", hz, 1.0, 127, strike=strike)[: SR // 4]
    from instruments.voices.struck_models import bell_tones

    zheng_hz = bell_tones(voices.note_key("編鐘", hz, 1.0, strike=strike))[0]
    for centre, _ in voice_models.BELL_UPPER[:6]:
        near = _peaks(x, centre * zheng_hz * 0.94, centre * zheng_hz * 1.06)
        assert len(near) >= 2, (centre, near)
        (f1, d1), (f2, d2) = sorted(sorted(near, key=lambda p: -p[1])[:2])
        assert 0.029 <= f2 / f1 - 1 <= 0.101, (centre, f1, f2)
        assert (d1 > d2) == (strike == "正鼓")  # the lower member answers the 正鼓 point


def test_the_bells_strike_is_bright() -> None:
    """The attack of a 編鐘 at C4 (velocity 96, as the 金奏 struck it): its first 50 ms centre
    of spectral brightness well above the struck tone (was 299 Hz) and tonal partials above
    3.5 kHz within 60 dB of it (nothing tonal was above 2.6 kHz)."""
    x = voices.render_note("編鐘", 261.63, 1.0, 96).astype(np.float64)
    head = x[: SR // 20]
    power = np.abs(np.fft.rfft(head, 1 << 15)) ** 2
    freqs = np.fft.rfftfreq(1 << 15, 1 / SR)
    assert float((power * freqs).sum() / power.sum()) > 500.0
    top = max(_peaks(x[: SR // 4], 200.0, 20000.0), key=lambda p: p[1])[1]
    assert any(f > 3500.0 and d > top - 60.0 for f, d in _peaks(x[: SR // 4], 3500.0, 9000.0))


def test_the_jin_zou_is_led_by_the_bells(tmp_path: Path) -> None:
    """「以鐘鏄播之，鼓磬應之」: in the 金奏 (《肆夏》, the 燕禮's ensemble) the bells (編鐘 and 鑮)
    are louder than the 建鼓, integrated and at their loudest moment (the 建鼓 was 7.3 LU over
    them integrated, 7.6 at the loudest 400 ms)."""
    from instruments.mix.loudness import integrated_loudness, k_weighted

    stems = tmp_path / "stems"
    assert cli.main(["render", "肆夏", "--ensemble", "jin-zou", "-o", str(tmp_path / "j.wav"),
                     "--stems", str(stems)]) == 0
    parts = {f.stem: sf.read(str(f))[0] for f in stems.glob("*.wav")}
    bells, drum = parts["編鐘"] + parts["鑮"], parts["建鼓"]

    def loudest(x: np.ndarray) -> float:  # the largest momentary (400 ms) loudness
        power = np.concatenate([[0.0], np.cumsum(sum(k_weighted(c, SR) ** 2 for c in x.T))])
        width = SR * 4 // 10
        window = (power[width:] - power[:-width])[:: SR // 10] / width
        return -0.691 + 10 * np.log10(window.max())

    assert integrated_loudness(bells, SR) >= integrated_loudness(drum, SR) + 2.0
    assert loudest(bells) >= loudest(drum) + 2.0


def test_stone_partials_are_the_l_shaped_model_not_a_bar() -> None:
    f = 300.0
    x = voices.render_note("編磬", f, 1.0, 110)
    freqs, mag = _spectrum(x[: int(0.3 * SR)])
    second = voice_models.QING_MODE_RATIOS[1]
    assert second < 2.5  # far under a uniform bar's 2.756
    band = (freqs > f * 1.8) & (freqs < f * 3.0)
    found = float(freqs[band][np.argmax(mag[band])]) / f
    assert found == pytest.approx(second, rel=0.01)


def test_drum_modes_01_decays_fastest_11_longest() -> None:
    taus = {mode: rel for mode, _, rel, _ in voice_models.MEMBRANE_MODES}
    assert min(taus, key=taus.get) == "(0,1)"
    assert max(taus, key=taus.get) == "(1,1)"
    centre, edge = drum_mode_amplitudes(0.0), drum_mode_amplitudes(0.6)
    assert centre[1] == 0.0 and edge[1] > 0.5 * max(edge)  # (1,1) only off centre
    # measured: the (0,1) mode has faded more than the (1,1) after 0.6 s
    f0 = voice_models.DRUMS["建鼓"][0]
    x = voices.render_note("建鼓", None, 1.0, 100, variant=5).astype(np.float64)
    early_f, early = _spectrum(x[int(0.1 * SR): int(0.6 * SR)])
    late_f, late = _spectrum(x[int(0.9 * SR): int(1.4 * SR)])
    drop01 = _peak_db(early_f, early, f0, 0.05) - _peak_db(late_f, late, f0, 0.05)
    drop11 = _peak_db(early_f, early, 1.47 * f0, 0.04) - _peak_db(late_f, late, 1.47 * f0, 0.04)
    assert drop01 > drop11 + 6


def test_stroke_variants_differ_and_are_seeded() -> None:
    strokes = [voices.render_note("鼓", None, 0.5, 100, variant=v)
               for v in range(voice_models.STROKE_VARIANTS)]
    for i, a in enumerate(strokes):
        for b in strokes[i + 1:]:
            assert not np.array_equal(a, b)
    assert voice_models.stroke_variant(12345) == voice_models.stroke_variant(12345)
    levels = {round(voice_models.stroke_variant(s)[1], 6) for s in range(50)}
    assert len(levels) > 40
    limit = voice_models.STROKE_LEVEL_DB + 0.01
    assert all(10 ** (-limit / 20) <= g <= 10 ** (limit / 20) for g in levels)


SHE = ["xiang-she", "--from", "she-jie", "--until", "she-jie", "--jie-seconds", "4"]


@pytest.fixture(scope="module")
def she_jie(tmp_path_factory) -> Path:
    wav = tmp_path_factory.mktemp("she") / "she.wav"
    # at −26 LUFS the limiter never acts, so the strokes keep their own levels (at −18 the
    # loudest 節 strokes of a drum-only passage are limited)
    assert cli.main(["render", *SHE, "-o", str(wav), "--room", "dry", "--loudness", "-26"]) == 0
    return wav


def _stroke_levels(wav: Path) -> tuple[np.ndarray, list[np.ndarray]]:
    """Per stroke of the 射節 (onsets from the compiled timeline): its level (dB RMS over
    100 ms) and its first 100 ms of samples."""
    from sequencer.timeline.compiler import compile_rite

    rite, settings = cli._load(cli._build_parser().parse_args(["render", *SHE, "-o", "x.wav"]))
    timeline = compile_rite(rite, settings)
    data, rate = sf.read(str(wav), dtype="float64")
    mono = data.sum(axis=1)
    onsets = sorted({n.tick for n in timeline.notes if n.instrument in ("鼓", "鼙")})
    peaks, heads = [], []
    for tick in onsets:
        i = round(tick / 960 * rate)
        seg = mono[i: i + int(0.1 * rate)]
        peaks.append(10 * np.log10((seg ** 2).mean()))
        heads.append(seg)
    return np.array(peaks), heads


def test_the_jie_stroke_is_accented_and_no_two_strokes_are_alike(she_jie: Path) -> None:
    peaks, heads = _stroke_levels(she_jie)
    assert len(peaks) >= 20
    jie, others = peaks[0::4], np.concatenate([peaks[1::4], peaks[2::4], peaks[3::4]])
    assert jie.min() >= others.max() + 3.0
    for i, a in enumerate(heads):
        for b in heads[i + 1:]:
            assert not np.array_equal(a, b)


@pytest.mark.parametrize("room", ["courtyard", "dry"])
def test_a_she_jie_of_four_seconds_passes_check(tmp_path: Path, room: str) -> None:
    wav = tmp_path / "she.wav"
    assert cli.main(["render", *SHE, "-o", str(wav), "--room", room]) == 0
    assert check_audio(str(wav)).ok


@pytest.mark.parametrize("room", ["courtyard", "dry"])
def test_a_she_jie_passes_check_in_either_room(tmp_path: Path, room: str) -> None:
    wav = tmp_path / "she.wav"
    args = [*SHE[:-1], "1.5", "-o", str(wav), "--room", room]
    assert cli.main(["render", *args]) == 0
    assert check_request(CheckRequest(str(wav))).ok  # by its provenance, as `check` reads it

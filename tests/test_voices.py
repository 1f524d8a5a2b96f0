"""The synthesis voices, checked by measuring the rendered audio (FFT peaks, lengths, levels)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cues.catalog import CATALOG
from cues.errors import UserError
from instruments.voices import models as voice_models
from instruments.voices import notes as voices

SR = 48000


def _spectrum(x: np.ndarray, sr: int = SR) -> tuple[np.ndarray, np.ndarray]:
    x = x.astype(np.float64)
    n = 1 << (len(x) - 1).bit_length() + 1  # zero-pad for a fine frequency grid
    mag = np.abs(np.fft.rfft(x * np.hanning(len(x)), n))
    return np.fft.rfftfreq(n, 1 / sr), mag


def _peak_near(freqs: np.ndarray, mag: np.ndarray, target: float, rel: float = 0.03
               ) -> tuple[float, float]:
    """(frequency, magnitude) of the strongest bin within ±rel of target."""
    band = (freqs > target * (1 - rel)) & (freqs < target * (1 + rel))
    i = np.flatnonzero(band)[np.argmax(mag[band])]
    return float(freqs[i]), float(mag[i])


@pytest.mark.parametrize(("interval", "ratio"), [("minor", 6 / 5), ("major", 5 / 4)])
def test_bianzhong_strike_tone_and_its_trace(interval: str, ratio: float) -> None:
    f = 440.0
    x = voices.render_note("編鐘", f, 1.0, 100, SR, bell_interval=interval)
    freqs, mag = _spectrum(x[: SR])
    floor = float(np.median(mag))
    zheng, zm = _peak_near(freqs, mag, f)
    ce, cm = _peak_near(freqs, mag, f * ratio)
    assert abs(zheng / f - 1) < 0.001
    # the 側鼓音 is a trace: within this bell's own interval (±30 cents), ≥ 15 dB down
    assert abs(1200 * np.log2(ce / (f * ratio))) < 35
    assert cm > 10 * floor and zm > 5.6 * cm


def test_bianqing_partials_follow_the_stated_model() -> None:
    f = 300.0
    x = voices.render_note("編磬", f, 1.0, 110)
    freqs, mag = _spectrum(x[: int(0.3 * SR)])
    floor = float(np.median(mag))
    found = []
    for r in voice_models.QING_MODE_RATIOS:
        fr, m = _peak_near(freqs, mag, f * r, rel=0.02)
        assert m > 30 * floor, r
        found.append(fr / f)
    assert found == pytest.approx(list(voice_models.QING_MODE_RATIOS), rel=0.01)
    # not harmonic: nothing at the 2nd or 3rd harmonic
    for h in (2.0, 3.0):
        _, m = _peak_near(freqs, mag, f * h, rel=0.01)
        assert m < 0.05 * mag.max()
    assert "PROJECT ESTIMATE" in voices.describe("磬")


def test_decay_higher_partials_faster() -> None:
    f = 300.0
    x = voices.render_note("編鐘", f, 1.0, 100).astype(np.float64)
    early_f, early = _spectrum(x[: SR // 4])
    late_f, late = _spectrum(x[SR // 2: SR // 2 + SR // 4])
    upper = voice_models.BELL_UPPER[0][0]
    ratio_low = _peak_near(late_f, late, f)[1] / _peak_near(early_f, early, f)[1]
    ratio_high = (_peak_near(late_f, late, upper * f)[1]
                  / _peak_near(early_f, early, upper * f)[1])
    assert ratio_high < ratio_low < 1


def test_he_sounds_an_octave_above_sheng_and_softer() -> None:
    f = 220.0
    sheng = voices.render_note("笙", f, 0.5, 100)
    he = voices.render_note("和", f, 0.5, 100)
    sf, sm = _spectrum(sheng[SR // 10: SR // 2])
    hf, hm = _spectrum(he[SR // 10: SR // 2])
    found, m = _peak_near(sf, sm, f)
    assert found == pytest.approx(f, rel=0.01) and m > 0.2 * sm.max()
    found, m = _peak_near(hf, hm, 2 * f)
    assert found == pytest.approx(2 * f, rel=0.01) and m > 0.2 * hm.max()
    assert _peak_near(hf, hm, f)[1] < 0.01 * hm.max()  # nothing at the 笙's pitch
    assert np.sqrt(np.mean(he.astype(np.float64) ** 2)) < np.sqrt(
        np.mean(sheng.astype(np.float64) ** 2))


def test_lengths_are_exact_and_end_in_silence() -> None:
    for name in voices.voice_names():
        f = None if not CATALOG[name].pitched else 220.0
        x = voices.render_note(name, f, 0.4, 90)
        assert x.dtype == np.float32 and x.ndim == 1
        assert len(x) == voices.note_length_samples(name, f, 0.4, 90)
        assert x[-1] == 0.0
        assert 0.05 < float(np.abs(x).max()) < 1.0, name
        assert not x.flags.writeable  # cached arrays cannot be corrupted by a caller
    # sustained voices hold for the duration; struck ones ring their own length
    def length(name: str, duration: float) -> int:
        return len(voices.render_note(name, 220.0, duration))
    assert length("歌", 2.0) - length("歌", 1.0) == SR
    assert length("編磬", 2.0) == length("編磬", 1.0)


def test_drums_ignore_pitch_and_velocity_scales_level() -> None:
    a = voices.render_note("建鼓", None, 0.5, 100)
    b = voices.render_note("建鼓", 123.0, 0.5, 100)
    assert a is b  # the same cache entry: pitch is not part of a drum's key
    soft = voices.render_note("建鼓", None, 0.5, 50)
    assert np.abs(soft).max() < 0.5 * np.abs(a).max()
    # the small drum sounds higher than the big one (spectral centroid)
    def centroid(x: np.ndarray) -> float:
        freqs, mag = _spectrum(x[: SR // 4])
        return float((freqs * mag).sum() / mag.sum())
    assert centroid(voices.render_note("朔鼙", None, 0.5)) > 1.5 * centroid(a)


@pytest.mark.render
def test_rendering_is_deterministic_in_a_fresh_cache_and_process() -> None:
    first = voices.render_note("瑟", 196.0, 1.0, 100).copy()
    voices.clear_cache()
    voices.render_note("鼗", None, 1.0, 80)  # other notes rendered before must not matter
    again = voices.render_note("瑟", 196.0, 1.0, 100)
    assert np.array_equal(first, again)
    code = ("import hashlib; from instruments.voices.notes import render_note; "
            "print(hashlib.sha256(render_note('瑟', 196.0, 1.0, 100).tobytes()).hexdigest())")
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    assert out == hashlib.sha256(first.tobytes()).hexdigest()


@pytest.mark.parametrize(("args", "kwargs", "words"), [
    (("琵琶", 220.0, 1.0), {}, "no voice"),
    (("編鐘", None, 1.0), {}, "needs a frequency"),
    (("編鐘", 30000.0, 1.0), {}, "outside"),
    (("瑟", 220.0, 0.0), {}, "positive"),
    (("瑟", 220.0, 1.0, 0), {}, "velocity"),
    (("編鐘", 220.0, 1.0), {"bell_interval": "fourth"}, "bell_interval"),
    (("編鐘", 220.0, 1.0), {"strike": "top"}, "strike"),
])
def test_bad_notes_are_user_errors(args: tuple, kwargs: dict, words: str) -> None:
    with pytest.raises(UserError, match=words):
        voices.render_note(*args, **kwargs)


def test_every_catalog_instrument_has_a_described_voice() -> None:
    assert set(voices.voice_names()) == set(CATALOG)
    for name in CATALOG:
        assert len(voices.describe(name)) > 40
    assert voices.describe("编钟") == voices.describe("編鐘")  # aliases work

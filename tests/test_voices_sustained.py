"""The sustained and plucked voices (歌 笙 管 瑟), measured on real renders with numpy."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from instruments.mix import mixer
from instruments.mix.room import Room
from instruments.voices import notes as voices
from instruments.voices import strings, sung, winds

pytestmark = pytest.mark.render

SR = 48000
SHIPU_SEMITONES = (0, 2, 4, 5, 6, 7, 9, 10, 11, 12, 14, 19)  # every pitch the 詩譜 sing
HUANGZHONG = 261.63


def _held(x: np.ndarray, a: float = 0.3, b: float = 0.8) -> np.ndarray:
    return np.asarray(x[int(a * SR):int(b * SR)], dtype=np.float64)


def _power_spectrum(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.fft.rfftfreq(len(x), 1 / SR), np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2


def _band_share_db(x: np.ndarray, lo: float, hi: float) -> float:
    freqs, power = _power_spectrum(x)
    return float(10 * np.log10(power[(freqs >= lo) & (freqs < hi)].sum() / power.sum()))


def _rms_db(x: np.ndarray) -> float:
    return float(20 * np.log10(np.sqrt(np.mean(np.square(x)))))


def _strongest_harmonic(x: np.ndarray, f0: float, lo: float, hi: float) -> float:
    """The frequency of the strongest harmonic of f0 between lo and hi Hz."""
    freqs, power = _power_spectrum(x)
    best, where = -1.0, 0.0
    for h in range(1, int(hi / f0) + 1):
        if lo <= h * f0 < hi:
            band = np.abs(freqs - h * f0) < 0.3 * f0
            if power[band].max() > best:
                best, where = float(power[band].max()), h * f0
    return where


def test_ge_formants_follow_the_syllable() -> None:
    f0 = 130.81
    yi = _held(voices.render_note("歌", f0, 1.0, lyric="衣"))  # -.i: /i/ F1 270, F2 2290
    ma = _held(voices.render_note("歌", f0, 1.0, lyric="馬"))  # m.a: /ɑ/ F1 730, F2 1090
    # the strongest harmonic from 400 Hz to 2.7 kHz (above /i/'s F1, under the F3–F4
    # cluster): near F2 for 衣, near F1/F2 of /ɑ/ for 馬
    assert 1900 < _strongest_harmonic(yi, f0, 400, 2700) < 2700
    assert 550 < _strongest_harmonic(ma, f0, 400, 2700) < 1300
    # and the band of /ɑ/'s F1 holds far more of 馬 than of 衣; the balance of /i/'s F2 band
    # against /ɑ/'s F1 band differs by more than 15 dB between the vowels
    assert _band_share_db(ma, 600, 900) - _band_share_db(yi, 600, 900) > 10

    def balance(x: np.ndarray) -> float:
        return _band_share_db(x, 1800, 2350) - _band_share_db(x, 600, 900)

    assert balance(yi) - balance(ma) > 15
    assert voices.note_key("歌", f0, 1.0, lyric="衣") != voices.note_key("歌", f0, 1.0, lyric="馬")


def test_ge_consonant_onset_and_tilted_source() -> None:
    si = np.asarray(voices.render_note("歌", 196.0, 1.0, lyric="四"), dtype=np.float64)  # s.i
    yi = np.asarray(voices.render_note("歌", 196.0, 1.0, lyric="衣"), dtype=np.float64)
    onset = slice(0, int(0.1 * SR))
    # the /s/ is a burst of high noise before the vowel: 4–9 kHz carries far more of it
    assert _band_share_db(si[onset], 4000, 9000) > _band_share_db(yi[onset], 4000, 9000) + 15
    # a tilted source: the 8–24 kHz band of a held vowel is ≥ 40 dB under the total (the old
    # flat pulse: 21–23 dB)
    for lyric in ("衣", "馬", "關", "子"):
        held = _held(voices.render_note("歌", 196.0, 1.0, lyric=lyric))
        assert _band_share_db(held, 8000, 24000) < -40, lyric


@pytest.mark.parametrize("lyric", ["之", "衣", "馬"])
def test_ge_level_even_across_the_shipu_range(lyric: str) -> None:
    levels = [_rms_db(_held(voices.render_note("歌", HUANGZHONG * 2 ** (s / 12), 1.0,
                                                lyric=lyric)))
              for s in SHIPU_SEMITONES]
    mean = float(np.mean(levels))
    assert max(abs(v - mean) for v in levels) <= 3.0, levels


def _vibrato_track(x: np.ndarray, f0: float) -> np.ndarray:
    """Instantaneous frequency (Hz) of the fundamental: an FFT band-pass and analytic signal."""
    spec = np.fft.fft(x)
    freqs = np.fft.fftfreq(len(x), 1 / SR)
    spec[(freqs < 0.9 * f0) | (freqs > 1.1 * f0)] = 0
    phase = np.unwrap(np.angle(np.fft.ifft(spec) * 2))
    return np.diff(phase) * SR / (2 * np.pi)


def _fit_vibrato(track: np.ndarray, t: np.ndarray, rate: float) -> tuple[float, float]:
    """(amplitude Hz, phase in cycles at absolute time 0) of the best sinusoid at ``rate``."""
    basis = np.column_stack([np.sin(2 * np.pi * rate * t), np.cos(2 * np.pi * rate * t),
                             np.ones_like(t)])
    (a, b, _), *_ = np.linalg.lstsq(basis, track, rcond=None)
    return float(np.hypot(a, b)), float(np.arctan2(b, a) / (2 * np.pi))


def test_ge_vibrato_runs_on_across_syllables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sung, "SINGERS", sung.SINGERS[:1])  # one singer: one clean track
    f0, dur = 220.0, 0.9
    n = int((dur + 0.3) * SR)
    one = sung.sing(f0, dur, n, SR, sung.syllable_key(None), 1.0).astype(np.float64)
    rate = round(dur * sung.SINGERS[0].vibrato_hz) / dur
    track = _vibrato_track(one, f0)
    t = np.arange(track.size) / SR
    # the end of syllable 1's held part, and syllable 2 (the same note one syllable later)
    end = (t > 0.45) & (t < dur - 0.05)
    start = (t > 0.08) & (t < 0.45)
    amp_end, phase_end = _fit_vibrato(track[end], t[end], rate)
    amp_start, phase_next = _fit_vibrato(track[start], t[start] + dur, rate)
    # full depth at once (no restart with a delayed onset) and the same phase in absolute time
    assert amp_start > 0.8 * amp_end > 0
    assert abs((phase_next - phase_end + 0.5) % 1.0 - 0.5) < 0.05


@pytest.mark.parametrize("hz", [261.63, 293.66, 329.63, 392.0, 440.0, 523.25])
def test_guan_pipes_beat_gently(hz: float) -> None:
    """The level over 50 ms windows of a held 管 note swings by the two unequal pipes' beat
    (3.1 dB) and the breath's slow drift: 3.0–3.9 dB measured at these six pitches, what
    docs/voices.md states (it said 2.8 while the files swung 3.1–3.4); not the old 12 dB
    tremolo."""
    x = np.asarray(voices.render_note("管", hz, 3.0), dtype=np.float64)
    w = int(0.05 * SR)
    held = x[int(0.3 * SR):int(2.8 * SR)]
    rms = np.sqrt(np.mean(held[: held.size // w * w].reshape(-1, w) ** 2, axis=1))
    swing = 20 * np.log10(rms.max() / rms.min())
    softer = winds.GUAN_PIPES[1][1]
    beat_db = 20 * np.log10((1 + softer) / (1 - softer))  # the two pipes' beat: 3.1 dB
    assert beat_db - 0.3 < swing < beat_db + 2 * winds.GUAN_MOTION_DB
    assert 2.9 <= round(swing, 1) <= 3.9  # the figure docs/voices.md gives


def test_guan_is_a_blown_pipe_with_edge_noise() -> None:
    """Harmonics up to 3 kHz within 35 dB of the fundamental (the old tone had four, then
    nothing: −90 dB), and between them the jet's noise, 30–60 dB under the harmonics (the old
    tone: clean to −80 dB and more)."""
    f = 523.25
    x = _held(voices.render_note("管", f, 1.5), 0.3, 1.3)
    freqs, power = _power_spectrum(x)
    db = 10 * np.log10(power + 1e-30)

    def at(target: float) -> float:
        return float(db[np.abs(freqs - target) < 0.05 * f].max())

    first = at(f)
    assert all(at(h * f) > first - 35 for h in range(1, int(3000 / f) + 1))
    between = [float(np.median(db[np.abs(freqs - (h + 0.5) * f) < 0.1 * f])) for h in (1, 2, 3)]
    assert all(first - 60 < b < first - 30 for b in between), (first, between)


def test_the_sheng_breathes_and_never_loops() -> None:
    """A 笙 drone held a minute: its level moves with the breath (over 400 ms windows a range of
    at least 1.5 dB: main moved 0.07 dB) and no stretch repeats — neither at the chord's loop
    nor at the old breath loop (1.37 s): a repeat would leave no difference."""
    f = 261.63
    x = np.asarray(voices.render_note("笙", f, 60.0), dtype=np.float64)[SR: 59 * SR]
    w = int(0.4 * SR)
    levels = 10 * np.log10(np.mean(x[: x.size // w * w].reshape(-1, w) ** 2, axis=1))
    assert levels.max() - levels.min() >= 1.5
    from instruments.voices import tone_dsp

    loop = tone_dsp.loop_length(f, SR, periods_multiple=2)[0]
    for lag in (loop, 1 << 16):
        a, b = x[: 20 * SR], x[lag: lag + 20 * SR]
        assert 10 * np.log10(np.mean((a - b) ** 2) / np.mean(a ** 2)) > -40.0, lag


def test_se_plucks_vary_with_force_and_point() -> None:
    """The 瑟 of the 升歌: the plucks of one pitch are not one copy — four pluck points and
    forces (their sounds correlate under 0.99 with each other) and levels within ±1 dB."""
    from instruments.voices import models

    notes = [mixer.RenderNote(t, "瑟", 196.0, 1.0, 80, t, 0.0, "瑟", seed=seed)  # 5 strings
             for t, seed in ((0.0, 11), (2.0, 12), (4.0, 13), (6.0, 14), (8.0, 15))]
    placed = mixer._plan(notes, SR, Room("dry", SR))
    assert len({p.key for p in placed}) >= 3
    waves = [np.asarray(voices.render_key(k), dtype=np.float64)
             for k in {p.key: None for p in placed}]
    for i, a in enumerate(waves):
        for b in waves[i + 1:]:
            n = min(a.size, b.size)
            assert np.dot(a[:n], b[:n]) / np.sqrt(np.dot(a, a) * np.dot(b, b)) < 0.99
    gains = [20 * np.log10(models.stroke_gain("瑟", s)) for s in range(200)]
    assert max(gains) <= models.SE_LEVEL_DB and min(gains) >= -models.SE_LEVEL_DB
    assert np.std(gains) > 0.4


def test_sheng_sounds_a_chord_of_pipes() -> None:
    f = 220.0
    x = _held(voices.render_note("笙", f, 1.0), 0.2, 0.9)
    freqs, power = _power_spectrum(x)

    def peak(target: float) -> float:
        return float(power[np.abs(freqs - target) < 3].max())

    floor = float(np.median(power))
    assert peak(1.5 * f) > 0.05 * peak(f) and peak(1.5 * f) > 1e4 * floor  # the fifth pipe


def test_se_repluck_damps_the_ringing_string() -> None:
    notes = [mixer.RenderNote(0.0, "瑟", 196.0, 0.5, 100, 0.0, 0.0, "瑟"),
             mixer.RenderNote(0.5, "瑟", 196.0, 0.5, 100, 0.0, 0.0, "瑟"),
             mixer.RenderNote(0.5, "瑟", 294.0, 0.5, 100, 0.0, 0.0, "瑟"),
             mixer.RenderNote(1.0, "瑟", 294.0, 0.5, 100, 3.0, 0.0, "瑟")]
    keys = [p.key for p in mixer._plan(notes, SR, Room("dry", SR, (0.0, -15.0)))]
    stopped = [k for k in keys if k.duration_s is not None]
    assert len(stopped) == 1 and stopped[0].duration_s == pytest.approx(0.5)
    assert strings.repluck_stops([(n.instrument, n.freq_hz, n.start_s, n.x, n.y)
                                  for n in notes]) == {0: 0.5}  # another place: another 瑟
    damped = np.asarray(voices.render_key(stopped[0]), dtype=np.float64)
    free = np.asarray(voices.render_note("瑟", 196.0, 0.5), dtype=np.float64)
    after = slice(int(0.56 * SR), int(0.58 * SR))
    assert damped.size < int(0.6 * SR) < free.size
    peak = np.abs(free).max()
    assert np.abs(damped[after]).max() < 1e-2 * peak < np.abs(free[after]).max()


def test_se_highs_decay_first() -> None:
    f = 196.0
    x = np.asarray(voices.render_note("瑟", f, 1.0), dtype=np.float64)

    def level(seg: np.ndarray, h: int) -> float:
        freqs, power = _power_spectrum(seg)
        return float(power[np.abs(freqs - h * f) < 0.2 * f].max())

    early, late = x[: SR // 4], x[SR: SR + SR // 4]
    assert level(late, 6) / level(early, 6) < level(late, 1) / level(early, 1) < 1


def test_sustained_voices_are_deterministic_across_processes() -> None:
    code = ("import hashlib; from instruments.voices.notes import render_note; h = hashlib.sha256(); "
            "[h.update(render_note(n, 196.0, 0.8, lyric=l).tobytes()) for n, l in "
            "(('歌', '關'), ('笙', None), ('管', None), ('瑟', None))]; print(h.hexdigest())")
    root = Path(__file__).resolve().parent.parent
    out = [subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, check=True).stdout.strip() for _ in range(2)]
    here = hashlib.sha256()
    for name, lyric in (("歌", "關"), ("笙", None), ("管", None), ("瑟", None)):
        here.update(voices.render_note(name, 196.0, 0.8, lyric=lyric).tobytes())
    assert out[0] == out[1] == here.hexdigest()

"""The struck voices computed in closed form (instruments.voices.modal) against the pyo graph they
replace (tests/pyo_struck.py, an offline pyo server per note): the modes sample for sample, the
strike noise by its energy and spectral centroid (pyo's noise generator cannot be seeded alike)."""

from __future__ import annotations

import numpy as np
import pytest

from instruments.voices import modal, synthesis
from instruments.voices import notes as voices
from instruments.voices.models import key_length
from instruments.voices.struck_models import STRUCK_VOICES, NoiseBurst, struck_note
from tests.pyo_struck import render_pyo

SR = 48000
# pyo starts a delayed strike (the 鼗's pellets) at a block boundary: every strike time of the
# model is a whole number of 16-sample blocks at 48 kHz, so the reference is exact
REFERENCE_BLOCK = 16

CASES = [
    ("編鐘", 300.0, "正鼓", 0, 100), ("編鐘", 360.0, "側鼓", 3, 127), ("編鐘", 82.0, "正鼓", 5, 60),
    ("編鐘", 1400.0, "正鼓", 2, 100), ("鑮", 200.0, "正鼓", 1, 100), ("鑮", 130.0, "側鼓", 4, 90),
    ("編磬", 440.0, "正鼓", 2, 110), ("編磬", 1500.0, "正鼓", 4, 70), ("編磬", 150.0, "正鼓", 0, 100),
    ("建鼓", None, "正鼓", 5, 127), ("鼓", None, "正鼓", 0, 100), ("朔鼙", None, "正鼓", 1, 80),
    ("應鼙", None, "正鼓", 2, 100), ("鼙", None, "正鼓", 3, 40), ("鼗", None, "正鼓", 2, 100),
    ("鼗", None, "正鼓", 5, 127),
]


def _key(instrument: str, hz: float | None, strike: str, variant: int, velocity: int):
    return voices.note_key(instrument, hz, 1.0, velocity, SR, strike=strike, variant=variant)


def test_every_struck_voice_is_covered() -> None:
    assert {case[0] for case in CASES} == STRUCK_VOICES


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}-v{c[3]}" for c in CASES])
def test_the_modes_match_the_pyo_graph(case: tuple) -> None:
    key = _key(*case)
    note, n = struck_note(key), key_length(key)
    ours = modal.modes_only(note, n, SR)
    ref = render_pyo(note, n, SR, noise=False, buffersize=REFERENCE_BLOCK)
    assert np.corrcoef(ours, ref)[0, 1] >= 0.999
    level_db = 10 * np.log10(np.sum(ours ** 2) / np.sum(ref ** 2))
    assert abs(level_db) < 0.05
    # and over the note's last half, where only the slowest modes are left
    tail = slice(n // 2, n)
    assert np.corrcoef(ours[tail], ref[tail])[0, 1] >= 0.99
    assert abs(10 * np.log10(np.sum(ours[tail] ** 2) / np.sum(ref[tail] ** 2))) < 0.5


@pytest.mark.parametrize("case", [c for c in CASES if struck_note(_key(*c)).noise is not None],
                         ids=lambda c: f"{c[0]}-{c[1]}-v{c[4]}")
def test_the_strike_noise_is_the_pyo_graphs_on_the_same_noise(case: tuple) -> None:
    """pyo's noise generator cannot be seeded like numpy's: given the very noise pyo drew, the
    burst (envelope, Butterworth filter) is pyo's sample for sample."""
    key = _key(*case)
    note, n = struck_note(key), SR // 2
    ref = render_pyo(note, n, SR, modes=False, seed=5)
    drawn = render_pyo(note, n, SR, modes=False, noise=False, raw_noise=True, seed=5)
    m = int(np.ceil((note.noise.attack_s + 12 * note.noise.tau_s) * SR))
    ours = modal.shaped_burst(note.noise, drawn[:m], n, SR)
    assert np.max(np.abs(ours - ref)) < 1e-4 * np.max(np.abs(ref))


def test_the_noise_is_white_and_as_strong_as_pyos() -> None:
    note = struck_note(_key("鼓", None, "正鼓", 0, 100))
    n = 4 * SR
    theirs = render_pyo(note, n, SR, modes=False, noise=False, raw_noise=True, seed=3)
    ours = np.random.default_rng(3).uniform(-1.0, 1.0, n)
    assert abs(10 * np.log10(np.var(ours) / np.var(theirs))) < 0.1
    for x in (ours, theirs):
        power = np.abs(np.fft.rfft(x)) ** 2
        halves = np.array_split(power[1:], 8)  # flat: every eighth of the band alike
        levels = [10 * np.log10(h.mean() / power[1:].mean()) for h in halves]
        assert max(map(abs, levels)) < 0.2


@pytest.mark.parametrize("burst", [NoiseBurst(0.003, 1.0, lowpass_hz=600.0),
                                   NoiseBurst(0.01, 1.0, bandpass=(1500.0, 2.0))])
def test_the_burst_filter_is_pyos_causal_biquad(burst: NoiseBurst) -> None:
    """The FFT filter gives what the biquad's recursion gives on the same enveloped noise."""
    n = 4000
    ours = modal.noise_burst(burst, n, SR, 7)
    m = int(np.ceil((burst.attack_s + 12 * burst.tau_s) * SR))
    t = np.arange(m) / SR
    x = np.random.default_rng(7).uniform(-1.0, 1.0, m)
    x *= burst.amp * np.minimum(t / burst.attack_s, 1.0) * np.exp(-t / burst.tau_s)
    (b0, b1, b2), (a1, a2) = modal.biquad(burst, SR)
    y = np.zeros(n)
    x1 = x2 = y1 = y2 = 0.0
    for i in range(n):
        xi = x[i] if i < m else 0.0
        y[i] = b0 * xi + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
        x2, x1, y2, y1 = x1, xi, y1, y[i]
    assert np.max(np.abs(ours - y)) < 1e-9 * np.max(np.abs(y))


def test_the_struck_voices_keep_the_contract_and_are_deterministic() -> None:
    for case in CASES:
        key = _key(*case)
        a, b = synthesis.synthesize(key), synthesis.synthesize(key)
        assert a.dtype == np.float32 and a.size == key_length(key)
        assert a[-1] == 0.0 and np.array_equal(a, b)
        assert np.all(np.isfinite(a)) and 0.01 < np.max(np.abs(a)) < 1.0

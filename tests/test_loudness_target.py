"""The loudness target where the limiter works and where sounds add in amplitude: the room's
low band per note (``instruments.mix.room_energy``), notes struck together
(``instruments.mix.note_pairs``) and the limiter's loss (``instruments.mix.limiter_estimate``), each
against the real thing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf

import cli
from instruments.mix import loudness
from instruments.mix.blocks import raw_blocks
from instruments.mix.limiter import LIMITER_CEILING, PeakLimiter, true_peak
from instruments.mix.limiter_estimate import chunk_squares, frame_gain_squared
from instruments.mix.loudness_estimate import note_energy
from instruments.mix.note_pairs import pair_energy, shares
from instruments.mix.room import Room
from instruments.mix.room_energy import RoomEnergy
from instruments.voices import notes as voices

pytestmark = pytest.mark.render

RATE = 48000
SHE_JIE = ["render", "xiang-she", "--from", "she-jie", "--until", "she-jie"]


@pytest.mark.parametrize(("mode", "jie"), [("dry", "1.5"), ("courtyard", "4")])
def test_the_target_holds_where_the_limiter_works(tmp_path: Path, mode: str, jie: str) -> None:
    """The 射節 at −18 LUFS: its drums peak over the ceiling and the limiter works (the file
    peaks at the ceiling); the written file is still within 0.5 LU of the target (it was
    −19.1 dry, before the limiter was predicted)."""
    wav = tmp_path / "she.wav"
    assert cli.main([*SHE_JIE, "--jie-seconds", jie, "--room", mode, "-o", str(wav),
                     "--loudness", "-18"]) == 0
    data, rate = sf.read(str(wav), dtype="float64")
    assert true_peak(data.T) == pytest.approx(LIMITER_CEILING, abs=0.01)  # the limiter works
    assert pyloudnorm.Meter(rate).integrated_loudness(data) == pytest.approx(-18.0, abs=0.5)


@dataclass(frozen=True)
class _Note:
    start: int
    key: voices.NoteKey
    gain: float
    place: tuple[float, float]
    stem: str
    end: int


def _k_energy(x: np.ndarray) -> float:
    weighted = loudness.k_weighted(np.asarray(x, dtype=np.float64), RATE)
    return float((weighted ** 2).sum())


@pytest.mark.parametrize("instrument", ["建鼓", "鼓", "瑟"])
def test_the_rooms_low_band_is_measured_as_the_mix_hears_it(instrument: str) -> None:
    """One note through the courtyard, mixed for real: its K-weighted energy is the direct
    sound's and the ground reflection's plus ``wet_energy`` to 0.1 dB (the energies' sum was
    up to 1.3 dB off)."""
    freq = 147.0 if instrument == "瑟" else None
    key = voices.note_key(instrument, freq, 1.0, 100, RATE)
    wave = voices.render_key(key)
    room = Room("courtyard", RATE)
    place = (6.5, -3.2)
    note = _Note(0, key, 1.0, place, "", wave.size)
    mixed = np.concatenate([b[""] for _, b in raw_blocks([note], wave.size + room.extra, RATE,
                                                        room, merged=True)], axis=1)
    _, left, right = room.taps(*place)[0]
    _, ground_left, ground_right = room.ground(*place) or (0, 0.0, 0.0)
    direct = _k_energy(wave) * (left * left + right * right + ground_left * ground_left
                                + ground_right * ground_right)
    wet = RoomEnergy(room).wet_energy(wave, [place])[place]
    assert 10 * np.log10((direct + wet) / _k_energy(mixed.T)) == pytest.approx(0.0, abs=0.1)


def test_notes_struck_together_add_their_cross_term() -> None:
    """A 瑟 an octave under a 歌 note, struck together: ``pair_energy`` is their K-weighted
    cross term 2·⟨a, b⟩ to 20 % (the upper note's K-weighting stands for the shared
    partials'), and it is not small (the notes share partials)."""
    low = voices.render_key(voices.note_key("瑟", 196.0, 1.0, 80, RATE))
    high_key = voices.note_key("歌", 392.0, 1.0, 80, RATE, lyric="關")
    high = voices.render_key(high_key)
    n = max(low.size, high.size)
    a, b = (loudness.k_weighted(np.pad(x.astype(np.float64), (0, n - x.size)), RATE)
            for x in (low, high))
    true = 2.0 * float(a @ b)
    weights = shares(note_energy(high, RATE))
    found = float(pair_energy(low, high, 480, weights)[0].sum())
    assert abs(true) > 0.02 * (float(a @ a) + float(b @ b))
    assert found == pytest.approx(true, rel=0.2)


def test_the_limiters_loss_is_predicted_from_the_peaks() -> None:
    """Drum strokes played 6 dB over the ceiling: the limiter's mean gain² per 10 ms frame
    predicted from the chunk peaks is the one the limiter applies."""
    stroke = voices.render_key(voices.note_key("鼓", None, 1.0, 127, RATE))
    x = np.zeros(stroke.size + 4 * RATE, dtype=np.float32)  # a stroke rings 4.4 s now
    for start in range(0, x.size - stroke.size, RATE // 2):
        x[start:start + stroke.size] += stroke
    gain = 2.0 * LIMITER_CEILING / float(np.abs(x).max())
    stereo = np.stack([x, x])
    limiter = PeakLimiter(RATE)
    req = PeakLimiter.required(stereo, gain)
    assert req is not None
    applied = limiter.gains(req, 1.0, x.size).astype(np.float64) ** 2
    frame = RATE // 100
    frames = x.size // frame
    actual = applied[:frames * frame].reshape(frames, frame).mean(axis=1)
    predicted = frame_gain_squared(np.sqrt(chunk_squares(x)), gain, RATE, frame, frames)
    assert predicted is not None
    np.testing.assert_allclose(predicted, actual, atol=5e-3)
    energy = x[:frames * frame].astype(np.float64).reshape(frames, frame) ** 2
    loss = 10 * np.log10((energy.sum(axis=1) * predicted).sum() / energy.sum())
    assert loss < -0.5  # the test limits for real

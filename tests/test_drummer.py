"""The drummer: every stroke its own, tails that ring out, and human timing on request."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import cli
from instruments.mix.mixer import _plan
from instruments.mix.room import Room
from instruments.voices import models
from instruments.voices import notes as voices
from sequencer.outputs.render import render_notes
from sequencer.timeline.compiler import compile_rite
from sequencer.timeline.humanize import Drummer
from sequencer.timeline.settings import make_settings
from sequencer.timeline.timebase import TICKS_PER_SECOND

pytestmark = pytest.mark.render

SR = 48000
SHE = {"xiang-she": ["--from", "she-jie", "--until", "she-jie"],
       "da-she": ["--from", "she-jie", "--until", "she-jie"]}


def _timeline(rite: str, *settings: str):
    args = cli._build_parser().parse_args(["render", rite, *SHE[rite], *settings, "-o", "x.wav"])
    return compile_rite(*cli._load(args))


@pytest.mark.parametrize("rite", sorted(SHE))
def test_no_two_strokes_of_a_drum_are_alike(rite: str) -> None:
    """Every stroke of a 射節 is its own: after level normalisation no two strokes of a drum
    correlate at 0.999 or more (on main 111 of 120 strokes equalled another)."""
    placed = _plan(render_notes(_timeline(rite)), SR, Room("dry", SR))
    by_drum: dict[str, list] = {}
    for p in placed:
        if p.key.instrument in models.DRUMS:
            by_drum.setdefault(p.key.instrument, []).append(p.key)
    assert sum(len(k) for k in by_drum.values()) >= 100
    for drum, keys in by_drum.items():
        waves = np.array([np.asarray(voices.render_key(k), dtype=np.float64) for k in keys])
        waves /= np.linalg.norm(waves, axis=1)[:, None]  # level normalised
        corr = waves @ waves.T
        np.fill_diagonal(corr, 0.0)
        assert corr.max() < 0.999, (drum, float(corr.max()))
    # and the level varies within the drummer's ±1.5 dB, seeded: the same stroke twice alike
    gains = [20 * np.log10(models.stroke_gain("鼓", k)) for k in range(200)]
    assert max(gains) <= models.DRUM_FORCE_DB and min(gains) >= -models.DRUM_FORCE_DB
    assert np.std(gains) == pytest.approx(models.DRUM_FORCE_DB / 6 ** 0.5, rel=0.15)
    assert models.drum_stroke(7) == models.drum_stroke(7 + models.DRUM_STROKES)


def test_a_drum_rings_out_into_the_noise_floor(tmp_path: Path) -> None:
    """The 射節's drum stem at the default loudness: where a stroke's ring ends (a run of exact
    zeros follows) it is already at −80 dBFS or under — no cut 41–51 dB under the stroke, and
    its last second falls smoothly (on main the ring stopped 46–55 dB under its peak and fell
    to digital zero within 50 ms)."""
    stems = tmp_path / "stems"
    assert cli.main(["render", "xiang-she", *SHE["xiang-she"], "--room", "dry",
                     "-o", str(tmp_path / "she.wav"), "--stems", str(stems)]) == 0
    drum, rate = sf.read(str(stems / "鼓.wav"))
    mono = np.abs(drum).max(axis=1)
    zero = mono == 0
    ends = np.flatnonzero(~zero[:-1] & zero[1:]) + 1  # where a run of zeros starts
    runs = [e for e in ends if zero[e: e + rate // 1000].all()]
    assert len(runs) >= 20
    peak_db = 20 * np.log10(mono.max())
    assert peak_db > -3.0
    for e in runs:
        fade = int(models.FADE_S * rate)  # the note's end fade: before it, the ring itself
        last = 20 * np.log10(mono[e - fade - rate // 100: e - fade].max())
        assert last <= -80.0
        # half a second earlier it was only a few dB louder: it decayed into the floor, not cut
        before = 20 * np.log10(mono[e - fade - rate // 2 - rate // 100:
                                    e - fade - rate // 2].max())
        assert before - last < 20.0
    for name in models.DRUMS:  # every drum's note: its last sample before the fade is 80 dB
        x = np.abs(np.asarray(voices.render_note(name, None, 1.0, 127, variant=3)))
        fade = int(models.FADE_S * SR)
        assert 20 * np.log10(x[-fade - SR // 100: -fade].max() / x.max()) <= -80.0


def test_humanize_is_off_by_default_and_measured_when_asked() -> None:
    exact = _timeline("xiang-she")
    assert exact.notes == _timeline("xiang-she", "--humanize", "0").notes
    human = _timeline("xiang-she", "--humanize", "10")
    assert human.notes == _timeline("xiang-she", "--humanize", "10").notes  # seeded
    ms = _applied_ms(exact, human)
    assert ms.size == 120
    assert 6.0 < ms.std() < 14.0 and np.abs(ms).max() <= 30.0 + 1.1
    # the others play each 節 with the drum that strikes it (the 瑟 here), ending on the tick
    jie = {m.tick: h.tick for m, h in zip(exact.markers, human.markers, strict=True)
           if m.kind == "jie"}
    followed = [n._replace(tick=jie.get(n.tick, n.tick), duration=n.end - jie.get(n.tick, n.tick))
                for n in exact.notes if n.instrument != "鼓"]
    assert sorted(followed) == sorted(n for n in human.notes if n.instrument != "鼓")
    assert any(a != b for a, b in jie.items())
    # the errors are long-range correlated (1/f), not independent: a long run of them
    drummer = Drummer("鼓", 10)
    long = np.array([drummer.next_ms() for _ in range(4096)])
    assert long.std() == pytest.approx(10.0, rel=0.25)
    spectrum = np.abs(np.fft.rfft(long - long.mean())) ** 2
    freqs = np.fft.rfftfreq(long.size)
    band = (freqs > 1 / 512) & (freqs < 0.4)
    slope = np.polyfit(np.log(freqs[band]), np.log(spectrum[band]), 1)[0]
    assert -1.4 < slope < -0.6  # 1/f^β, β ≈ 1
    with pytest.raises(Exception, match="humanize"):
        make_settings(None, {"humanize_ms": "60"})


def _applied_ms(exact, human, drum: str = "鼓") -> np.ndarray:
    """Each stroke's error (ms) in ``human`` against ``exact``, stroke by stroke."""
    due = [n.tick for n in exact.notes if n.instrument == drum]
    played = [n.tick for n in human.notes if n.instrument == drum]
    return np.array([(p - d) * 1000 / TICKS_PER_SECOND
                     for d, p in zip(due, played, strict=True)])


def test_check_reports_a_humanized_drummer_as_it_is(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """With --humanize the strokes are off the grid by design: the MIDI file's 節 markers and
    the render, checked against the rite, show the drummer's errors (not hidden), and the
    report says why."""
    args = ["xiang-she", *SHE["xiang-she"], "--jie-seconds", "2", "--humanize", "8"]
    wav, mid = tmp_path / "she.wav", tmp_path / "she.mid"
    assert cli.main(["render", *args, "--room", "dry", "-o", str(wav)]) == 0
    assert cli.main(["midi", *args, "-o", str(mid)]) == 0
    capsys.readouterr()
    assert cli.main(["check", str(mid)]) == 4  # the 節 markers are where the 節 was struck
    capsys.readouterr()
    assert cli.main(["check", str(wav), "--rite", *args, "--tolerance-ms", "0.5",
                     "--json"]) == 4
    report = json.loads(capsys.readouterr().out)
    assert any("--humanize 8" in n for n in report["notes"])
    (block,) = report["blocks"]
    assert block["count"] == block["expected_count"] == 120
    found = {v["index"]: v["deviation_ms"] for v in block["violations"]}
    timeline = _timeline("xiang-she", "--jie-seconds", "2", "--humanize", "8")
    exact = _timeline("xiang-she", "--jie-seconds", "2")
    applied = _applied_ms(exact, timeline)
    shown = np.array([found.get(i, 0.0) for i in range(120)])
    assert len(found) > 90  # almost every stroke is reported off by more than 0.5 ms
    # what check reports is what the drummer did, up to the grid it fits (offset, slope)
    idx = np.arange(120)
    residual = applied - np.polyval(np.polyfit(idx, applied, 1), idx)
    assert np.corrcoef(residual, shown)[0, 1] > 0.95
    diff = np.abs(residual - shown)
    assert diff.max() < 2.5

"""The stroke detector that decides as the sound comes in (``live --hear``), on a real render of
the 鄉射's 射節 (courtyard, the 瑟 drone playing with the drum) fed in JACK-sized periods:
every stroke, none false, placed as the timeline has it, decided within a few milliseconds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from sequencer.check.stroke_stream import LOOKAHEAD_S, StrokeStream
from sequencer.outputs.render import render_timeline
from sequencer.timeline.timebase import TICKS_PER_SECOND

pytestmark = pytest.mark.render

LEAD_IN = 24000  # half a second of silence before the 射節
PERIOD = 256


@pytest.fixture(scope="module")
def she_jie(tmp_path_factory: pytest.TempPathFactory) -> tuple[np.ndarray, int, np.ndarray]:
    """The 射節 rendered (1 s 節, courtyard): its mono signal after LEAD_IN silent samples,
    the rate, and the drum's strokes (samples) as the timeline places them."""
    from tests.human_drummer import she_jie_timeline

    timeline = she_jie_timeline("1")
    path = Path(tmp_path_factory.mktemp("stroke")) / "she.wav"
    render_timeline(timeline, path)
    x, rate = sf.read(str(path), always_2d=True)
    signal = np.concatenate([np.zeros(LEAD_IN), x.mean(axis=1)])
    start = timeline.span("she-jie").start
    strokes = sorted({n.tick for n in timeline.notes if n.instrument == "鼓"})
    due = LEAD_IN + np.array([(t - start) / TICKS_PER_SECOND * rate for t in strokes])
    return signal, rate, due


def _feed(stream: StrokeStream, signal: np.ndarray) -> list:
    found = []
    for i in range(0, len(signal), PERIOD):
        found += stream.feed(signal[i:i + PERIOD])
    return found


def _matched(found: list, due: np.ndarray, rate: int) -> tuple[np.ndarray, int, int]:
    """(errors in ms of the strokes found for each due one, missed, false)."""
    at = np.array([s.at for s in found])
    errors, missed = [], 0
    for d in due:
        near = np.abs(at - d)
        if near.size and near.min() < 0.03 * rate:
            errors.append((at[near.argmin()] - d) / rate * 1000)
        else:
            missed += 1
    return np.array(errors), missed, len(found) - len(errors)


def test_every_stroke_once_on_its_sample(she_jie) -> None:
    signal, rate, due = she_jie
    found = _feed(StrokeStream(rate, refractory_s=0.125), signal)
    errors, missed, false = _matched(found, due, rate)
    assert (len(due), missed, false) == (120, 0, 0)
    # the render places each stroke on its tick; the stream finds it within a tenth of a ms
    assert np.abs(errors).max() < 0.2, np.abs(errors).max()
    # decided LOOKAHEAD_S after the millisecond it came in, at the end of the period then
    delays = [(s.decided - s.at) / rate for s in found]
    assert max(delays) <= LOOKAHEAD_S + 0.002 + PERIOD / rate


def test_the_same_strokes_whatever_the_gain_and_the_period(she_jie) -> None:
    signal, rate, due = she_jie
    quiet = _feed(StrokeStream(rate), signal * 10 ** (-30 / 20))
    errors, missed, false = _matched(quiet, due, rate)
    assert (missed, false) == (0, 0) and np.abs(errors).max() < 0.2
    stream, found = StrokeStream(rate), []
    for i in range(0, len(signal), 1024):  # a bigger period: the same strokes
        found += stream.feed(signal[i:i + 1024])
    same = _feed(StrokeStream(rate), signal)
    assert [round(s.at, 3) for s in found] == [round(s.at, 3) for s in same]


def test_a_gap_loses_what_was_in_it_and_nothing_else(she_jie) -> None:
    signal, rate, due = she_jie
    stream, found = StrokeStream(rate), []
    lost = (int(due[10]) // PERIOD) * PERIOD  # the period holding the 11th stroke is lost
    for i in range(0, len(signal), PERIOD):
        if i == lost:
            stream.gap(PERIOD)
            continue
        found += stream.feed(signal[i:i + PERIOD])
    assert stream.pos == len(signal)  # the count of samples goes on through the gap
    errors, missed, false = _matched(found, np.delete(due, 10), rate)
    assert (missed, false) == (0, 0) and np.abs(errors).max() < 0.2


def test_silence_and_steady_noise_are_no_strokes() -> None:
    rate = 48000
    rng = np.random.default_rng(1)
    assert _feed(StrokeStream(rate), np.zeros(rate * 2)) == []
    assert _feed(StrokeStream(rate), rng.normal(0, 0.01, rate * 10)) == []
    with pytest.raises(ValueError):
        StrokeStream(4000)

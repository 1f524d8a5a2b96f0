"""The parts of hearing and following the drum that need no clock: the drummer's fitted grid,
a cycle kept straight on it, the cue list's retime at a cycle boundary, the followed 射節's
schedule, and the sending process's retime with a move."""

from __future__ import annotations

import numpy as np
import pytest

from sequencer.live.cuelist import CueInfo, CueList
from sequencer.live.hearing.drum_grid import DrumFit, JieShape, cycle_line
from sequencer.live.hearing.follow import followed_schedule
from sequencer.live.hearing.source import parse_hear
from sequencer.live.protocol import CancelCue, RetimeCue, StartCue

SHAPE = JieShape(n=5, listen=1, per_jie=4, jie_s=1.0, cycles=6, fractions=(0, .25, .5, .75))


def test_the_shape_numbers_each_stroke() -> None:
    assert SHAPE.place(0) == (0, 1, 0) and SHAPE.place(23) == (1, 1, 3)
    assert SHAPE.index(1, 1, 3) == 23 and SHAPE.strokes == 120
    assert SHAPE.compiled_s(23) == pytest.approx(5.75)


def test_the_fit_finds_a_drifting_grid_and_counts_through_a_missing_stroke() -> None:
    spacing = 0.25 * (1 + 0.03 * np.arange(120) / 119)
    grid = 10.0 + np.concatenate([[0.0], np.cumsum(spacing)[:-1]])
    fit = DrumFit(0.25)
    for i, t in enumerate(grid):
        if i != 50:  # a stroke not heard: the next is numbered past it
            assert fit.add(float(t)) == i
    fitted = fit.grid()
    assert fitted is not None and fitted.count == 119
    assert max(abs(fitted.at(i) - t) for i, t in enumerate(grid)) < 0.002
    assert fitted.spacing(119) / fitted.spacing(0) == pytest.approx(1.03, abs=0.002)


def test_one_stroke_gives_the_compiled_spacing_and_a_cycle_is_straight() -> None:
    fit = DrumFit(0.25)
    assert fit.grid() is None
    fit.add(3.0)
    one = fit.grid()
    assert one is not None and one.at(4) == pytest.approx(4.0)
    for i in range(1, 40):
        fit.add(3.0 + 0.26 * i)
    start, jie = cycle_line(fit.grid(), SHAPE, 1)  # type: ignore[arg-type]
    # (the priors on the spacing and the drift move a straight run by microseconds)
    assert start == pytest.approx(3.0 + 0.26 * 20, abs=1e-5)
    assert jie == pytest.approx(1.04, abs=1e-5)


def test_retime_moves_and_stretches_from_a_cycle_boundary() -> None:
    m = CueList([CueInfo("j", 30.0, "go", cycle_s=10.0, rest_points=(10.0, 20.0, 30.0)),
                 CueInfo("k", 5.0, "follow")])
    m.go(0.0)
    m.tick(12.0)
    actions = m.retime("j", 20.0, 1.1, 0.5)
    assert actions == [RetimeCue("j", 20.0, 1.1, 0.5), CancelCue("k"), StartCue("k", 31.5)]
    run = m.runs["j"]
    assert run.starts == pytest.approx([0.0, 10.0, 20.5])  # the third cycle starts later …
    assert run.bounds == pytest.approx([10.0, 20.0, 31.5])  # … the second ends where it did
    assert run.end == pytest.approx(31.5)
    assert m.cycles("j") == [pytest.approx((0.0, 10.0)), pytest.approx((10.0, 20.0)),
                             pytest.approx((20.5, 31.5))]
    with pytest.raises(ValueError):
        m.retime("j", 20.0, 3.0, 0.0)


def test_the_followed_schedule_leaves_the_drum_and_the_listening_jie_to_the_drummer() -> None:
    from sequencer.outputs.cue_schedule import cue_schedules
    from tests.human_drummer import she_jie_timeline

    timeline = she_jie_timeline("1")
    sched = cue_schedules(timeline)["she-jie"]
    drum = {n.channel for n in timeline.notes if n.instrument == "鼓"}
    followed = followed_schedule(sched, SHAPE, frozenset(drum))
    assert not any(m and m[0] < 0xF0 and (m[0] & 0x0F) in drum and m[0] & 0xF0 in (0x80, 0x90)
                   for m in followed.messages)
    assert min(followed.times) == pytest.approx(1.0)  # nothing before the first shooting 節
    setup = [m for t, m in zip(followed.times, followed.messages, strict=True) if t == 1.0
             and m[0] & 0xF0 in (0xB0, 0xC0)]
    assert setup  # the channels' programs and controllers, moved to it
    assert [(j.cycle, j.k) for j in followed.jie][:2] == [(0, 2), (0, 3)]
    assert len(followed.jie) == 29
    assert list(followed.times) == sorted(followed.times)


def test_hear_specs() -> None:
    assert parse_hear("jack:system:capture_1").port == "system:capture_1"
    assert parse_hear("jack:").port is None
    from cues.errors import UserError

    with pytest.raises(UserError, match="no such file"):
        parse_hear("/nonexistent/drum.wav")
    with pytest.raises(UserError, match="expected jack:PORT"):
        parse_hear("alsa:hw:0")

"""The live cue state machine, driven with a FakeClock: exact expected actions."""

from __future__ import annotations

import pytest

from sequencer.live.cuelist import CueInfo, CueList
from sequencer.live.protocol import (
    CancelCue,
    CueLogEntry,
    EndCueAt,
    HoldOutput,
    PanicOutput,
    ResumeOutput,
    RetimeCue,
    StartCue,
)


class FakeClock:
    """Virtual time for exact scheduling tests: waiting moves the clock, nothing sleeps."""

    def __init__(self, start: float = 0.0) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def wait_until(self, deadline: float) -> None:
        self.t = max(self.t, deadline)

    def advance(self, seconds: float) -> None:
        self.t += seconds


def _show(**kw) -> CueList:
    cues = [
        CueInfo("a", 10.0, "go", pre_wait_s=1.0, post_wait_s=0.5),
        CueInfo("b", 5.0, "follow", pre_wait_s=0.25),
        CueInfo("c", 4.0, "go", loops=True, rest_points=(1.0, 2.0, 4.0)),
        CueInfo("d", 3.0, "after", target="c"),
        CueInfo("e", 2.0, "go"),
    ]
    return CueList(cues, **kw)


def test_go_follow_and_waits() -> None:
    clock = FakeClock(100.0)
    m = _show()
    assert m.standby.id == "a"
    # GO: a starts after its pre-wait; b's exact start is known at once (a's end + post + pre)
    assert m.go(clock.now()) == [StartCue("a", 101.0), StartCue("b", 111.75)]
    assert m.standby.id == "c"
    assert m.waiting() == ["a", "b"]
    assert m.next_deadline() == 101.0
    clock.wait_until(101.0)
    m.tick(clock.now())
    assert m.running() == ["a"]
    clock.wait_until(111.75)
    m.tick(clock.now())
    assert m.running() == ["b"]
    assert m.log == [CueLogEntry("start", "a", 101.0), CueLogEntry("end", "a", 111.0),
                     CueLogEntry("start", "b", 111.75)]


def test_double_go_is_ignored() -> None:
    m = _show()
    m.pos = 4
    assert m.go(0.0)
    m.back()
    assert m.go(0.5) == []  # within the 1 s guard: an accident
    assert m.standby.id == "e"
    m.tick(2.0)  # e has ended
    assert m.go(2.0)[0] == StartCue("e", 2.0)


def test_stop_ends_a_looping_cue_at_its_next_rest_point_and_after_follows() -> None:
    m = _show()
    m.pos = 2
    assert m.go(10.0) == [StartCue("c", 10.0)]  # loops: no end, so d waits
    assert m.standby.id == "d"
    m.tick(19.5)  # 9.5 s in: the third pass, 1.5 s into it
    assert m.running() == ["c"]
    # next rest point after 9.5 + 0.05: pass 2 (8 s) + 2.0 = 10 s → absolute 20.0
    assert m.stop(19.5) == [EndCueAt("c", 20.0), StartCue("d", 20.0)]
    assert m.standby.id == "e"
    # a second stop ends it at once and moves d
    assert m.stop(19.6) == [CancelCue("c"), CancelCue("d"), StartCue("d", 19.6)]


def test_stop_of_a_fixed_cue_is_immediate() -> None:
    m = _show()
    m.go(0.0)
    m.tick(2.0)
    assert m.stop(3.0) == [CancelCue("a"), CancelCue("b"), StartCue("b", 3.75)]


def test_hold_and_resume_move_what_is_ahead() -> None:
    clock = FakeClock()
    m = _show()
    m.go(clock.now())
    clock.advance(5.0)
    m.tick(clock.now())
    assert m.hold(clock.now()) == [HoldOutput()]
    assert m.go(clock.now() + 1) == []  # GO is ignored while held
    assert m.next_deadline() is None
    clock.advance(2.0)
    assert m.resume(clock.now()) == [ResumeOutput()]
    assert m.runs["a"].end == 13.0
    assert m.runs["b"].start == 13.75


def test_skip_and_back() -> None:
    m = _show()
    m.skip()
    m.skip()
    assert m.standby.id == "c"
    m.back()
    assert m.standby.id == "b"
    assert m.go(0.0)[0] == StartCue("b", 0.25)


def test_two_stage_panic() -> None:
    m = _show()
    m.go(0.0)
    assert m.panic(1.0) == [PanicOutput(1)]
    assert m.running() == [] and m.waiting() == []
    assert m.panic(1.5) == [PanicOutput(2)]
    m.go(3.0)
    assert m.panic(4.0) == [PanicOutput(1)]  # a GO between starts over


def test_auto_runs_like_the_offline_timeline() -> None:
    clock = FakeClock()
    m = _show(auto=True, go_gap_s=2.0)
    starts = m.begin(clock.now())
    while not m.done:
        deadline = m.next_deadline()
        assert deadline is not None
        clock.wait_until(deadline)
        starts += m.tick(clock.now())
    # a 1+10, post .5, b .25+5, gap 2, c one pass 4, gap 2 (after), d 3, gap 2, e 2
    assert [a for a in starts if isinstance(a, StartCue)] == [
        StartCue("a", 1.0), StartCue("b", 11.75), StartCue("c", 18.75),
        StartCue("d", 24.75), StartCue("e", 29.75)]
    assert m.finished_at == 31.75


def test_nudge_applies_from_the_next_cycle() -> None:
    m = CueList([CueInfo("j", 30.0, "go", cycle_s=10.0, rest_points=(10.0, 20.0, 30.0))])
    m.go(0.0)
    m.tick(12.0)
    assert m.nudge(1.1, 12.0) == [RetimeCue("j", 20.0, 1.1)]
    assert m.runs["j"].end == pytest.approx(31.0)
    assert m.runs["j"].bounds == pytest.approx([10.0, 20.0, 31.0])

"""GO safety (sequencer.live.go_safety, through the cue state machine): the guard between GOs,
a confirming second press to cut sounding music, follow cues before the next GO, a confirmed
quit. Exact times on a virtual clock."""

from __future__ import annotations

import time

import pytest

from cues.sheet.loader import parse_sheet
from sequencer.live.cuelist import CueInfo, CueList
from sequencer.live.player.plan import plan_show
from sequencer.live.player.player import Player
from sequencer.live.protocol import CancelCue, Go, StartCue
from sequencer.timeline.compiler import select_cues
from tests.test_live_player import SETTINGS, SHEET

pytestmark = pytest.mark.live

# as 鄉射禮: 合樂 (music), then 告備 follows it (no music), then 獻 and a 射節 wait for GO
CUES = [
    CueInfo("he-yue", 10.0, "go"),
    CueInfo("gao-bei", 0.0, "follow"),
    CueInfo("xian", 0.0, "go"),
    CueInfo("she-jie", 8.0, "go"),
    CueInfo("gai", 6.0, "go", loops=True, rest_points=(2.0, 4.0, 6.0)),
    CueInfo("after-gai", 0.0, "follow"),
]


def _show(**kw) -> CueList:
    return CueList(CUES, **kw)


def test_a_go_half_a_second_after_another_does_nothing() -> None:
    m = _show()
    m.pos = 2
    assert m.go(0.0) == [StartCue("xian", 0.0)]
    assert m.go(0.5) == []
    assert "within 1 s" in m.go_refusal
    assert m.standby.id == "she-jie"
    assert m.go(1.0) == [StartCue("she-jie", 1.0)]  # a whole guard later: it counts


def test_the_guard_is_configurable() -> None:
    m = _show(go_guard_s=0.2)
    m.pos = 2
    m.go(0.0)
    assert m.go(0.3) == [StartCue("she-jie", 0.3)]


def test_a_follow_cue_runs_before_the_next_go() -> None:
    m = _show()
    assert m.go(0.0) == [StartCue("he-yue", 0.0), StartCue("gao-bei", 10.0)]
    m.tick(3.0)
    for t in (3.0, 4.5, 6.0):  # four taps: none starts 獻 ahead of 告備, none cuts the 合樂
        assert m.go(t) == []
        assert "gao-bei follows first" in m.go_refusal
    assert m.running() == ["he-yue"] and m.standby.id == "xian"
    m.tick(10.0)
    assert [e.cue for e in m.log] == ["he-yue", "he-yue", "gao-bei", "gao-bei"]
    assert m.go(10.5) == [StartCue("xian", 10.5)]


def test_a_go_over_sounding_music_needs_a_second_press() -> None:
    m = _show()
    m.pos = 3
    m.go(0.0)
    m.tick(0.0)
    assert m.sounding() == ["she-jie"]
    m.pos = 2  # standby 獻 while the 射節 drums
    assert m.go(2.0) == []
    assert m.go_refusal.startswith("GO again to cut she-jie")
    assert m.go(2.5) == []  # a bounce is not a confirmation
    assert m.go(3.5) == [CancelCue("she-jie"), StartCue("xian", 3.5)]
    assert m.runs["she-jie"].end == 3.5


def test_the_confirmation_lapses() -> None:
    m = _show()
    m.pos = 3
    m.go(0.0)
    m.tick(0.0)
    m.pos = 2
    assert m.go(1.0) == []
    assert m.go(7.0) == []  # too late: this press asks again
    assert m.go_refusal.startswith("GO again")


def test_go_cuts_cuts_at_the_first_press() -> None:
    m = _show(go_cuts=True)
    m.pos = 3
    m.go(0.0)
    m.tick(0.0)
    m.pos = 2
    assert m.go(2.0) == [CancelCue("she-jie"), StartCue("xian", 2.0)]


def test_cutting_a_looping_cue_runs_its_follow_cue_instead() -> None:
    m = _show()
    m.pos = 4
    m.go(0.0)
    m.tick(0.0)
    assert m.standby.id == "after-gai"  # its end is not known: the follow cue waits
    assert m.go(2.0) == []
    assert m.go(3.0) == [CancelCue("gai"), StartCue("after-gai", 3.0)]
    assert m.standby is None


def test_quit_while_music_sounds_needs_a_second_press() -> None:
    m = _show()
    assert m.may_quit(0.0)  # nothing sounds
    m.go(0.0)
    m.tick(0.0)
    assert not m.may_quit(1.0)
    assert m.go_refusal.startswith("q again to quit: he-yue")
    assert m.may_quit(2.0)


def test_the_player_runs_a_follow_cue_before_the_next_go() -> None:
    """Live (memory output): GO a, then GO presses while it plays start nothing; b follows it,
    and only then does a GO start c. Each press is logged with its origin."""
    rite = select_cues(parse_sheet(SHEET), "a", "c")
    player = Player(plan_show(rite, SETTINGS), "memory:", client_name="yztest", go_guard_s=0.1)
    with player:
        player.put(Go(), origin="osc")
        player.step(0.01)
        for _ in range(3):
            time.sleep(0.15)
            player.put(Go(), origin="key")
            player.step(0.01)
            assert "b follows first" in player.status.message
        deadline = time.perf_counter() + 15
        while "b" not in {e.cue for e in player.machine.log if e.event == "start"}:
            assert time.perf_counter() < deadline
            player.step(0.01)
        player.put(Go(), origin="key")
        player.step(0.01)
        assert "GO again to cut b" in player.status.message  # b sounds: confirm
        time.sleep(0.15)
        player.put(Go(), origin="key")
        player.step(0.01)
    starts = [e.cue for e in player.machine.log if e.event == "start"]
    assert starts == ["a", "b", "c"]
    presses = [(r["origin"], r["result"]) for r in player.log.records if r["event"] == "operator"]
    assert presses[0] == ("osc", "start a, b")
    assert presses[-1] == ("key", "cut b; start c")  # the confirmed GO says what it cut

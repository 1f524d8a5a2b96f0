"""A command's reply and log line carry its own words, whatever another thread says meanwhile.

Found by running the real-time tests beside a CPU-bound job: the remote control's pump thread
reported a flood of bad messages ("OSC: ignored 2 bad message(s) …") between a GO's start and
its reply, and the reply to ``/go`` said that instead of "start gai".
"""

from __future__ import annotations

import threading

import pytest

from cues.sheet.loader import parse_sheet
from sequencer.live.player.plan import plan_show
from sequencer.live.player.player import Player
from sequencer.live.player.status import ShowStatus
from sequencer.live.protocol import Go
from sequencer.timeline.compiler import select_cues
from tests.test_live_player import SETTINGS, SHEET

FLOOD = "OSC: ignored 2 bad message(s); last: /Go"


def _say_from_another_thread(status: ShowStatus, text: str) -> None:
    other = threading.Thread(target=status.say, args=(text,))
    other.start()
    other.join()


def test_what_another_thread_says_is_shown_but_is_not_the_result() -> None:
    status = ShowStatus()
    with status.command():
        _say_from_another_thread(status, FLOOD)
        assert status.message == FLOOD and status.result == ""
        status.message = "start a"
        _say_from_another_thread(status, FLOOD)
    assert status.result == "start a" and status.message == FLOOD
    status.message = "after the command"  # the player's own line, not a command's result
    assert status.result == "start a"
    with status.command():
        assert status.result == "" and status.refusal == ""


@pytest.mark.live
def test_a_go_answers_with_its_own_outcome_when_a_report_comes_between(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rite = select_cues(parse_sheet(SHEET), "a", "c")
    player = Player(plan_show(rite, SETTINGS), "memory:", client_name="yzwords")
    replies: list[dict] = []
    obey = player.operator.obey

    def obey_while_reported(*args, **kwargs):
        actions = obey(*args, **kwargs)
        _say_from_another_thread(player.status, FLOOD)  # the pump's report, mid-command
        return actions

    monkeypatch.setattr(player.operator, "obey", obey_while_reported)
    with player:
        player.put(Go(), replies.append, origin="osc")
        player.step(0.01)
    assert len(replies) == 1
    assert replies[0]["acted"] is True and replies[0]["message"] == "start a, b"
    pressed = [r for r in player.log.records if r["event"] == "operator"]
    assert [(r["origin"], r["result"]) for r in pressed] == [("osc", "start a, b")]
    assert player.status.message == "osc GO: start a, b"

"""A cue's ``rules`` on the live screens: 「樂作，大夫不入」 (the 鄉飲酒 and 鄉射 記) shown while
its cue stands by — what the texts bind once it begins — and in force from its GO on: on the
console, in the plain console's lines and in the web pages' state."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cues.model import Rite
from cues.sheet.loader import load_rite
from sequencer.live.player.plan import plan_show
from sequencer.live.player.player import Player
from sequencer.live.protocol import Go
from sequencer.live.screens.announce import changes
from sequencer.live.screens.console import MIN_HEIGHT, MIN_WIDTH, screen
from sequencer.live.screens.player_adapter import show_state
from sequencer.timeline.compiler import make_settings, select_cues

RULE = "樂作，大夫不入"


def _first_music(rite_id: str) -> tuple[Rite, Rite]:
    """The rite and its part from the cue with the rule to the cue after it."""
    rite = load_rite(rite_id)
    ids = [c.id for c in rite.cues]
    i = next(i for i, c in enumerate(rite.cues) if c.rules)
    return rite, select_cues(rite, ids[i], ids[i + 1])


@pytest.mark.parametrize("rite_id", ["xiang-yin-jiu", "xiang-she"])
def test_the_standby_cue_says_what_it_binds(rite_id: str) -> None:
    rite, part = _first_music(rite_id)
    player = Player(plan_show(part, make_settings(rite.settings)), "memory:",
                    client_name="yztest")
    snap = player.snapshot()
    assert snap.standby == part.cues[0].id
    assert snap.standby_rules == (RULE,) and snap.rules == ()
    lines = screen(snap, 80, 24)
    assert f"  once it begins: 「{RULE}」" in lines
    assert not any("in force" in line for line in lines)
    small = screen(snap, MIN_WIDTH, MIN_HEIGHT)  # the must-shows first: it gives way
    assert len(small) <= MIN_HEIGHT - 1 and all(len(line) < MIN_WIDTH for line in small)
    state = show_state(player, 0.0)
    assert state.standby_rules == (RULE,) and state.to_json()["standby_rules"] == (RULE,)
    said = [a.text for a in changes(None, state)]
    assert said[-1] == f"once {part.cues[0].id} begins: 「{RULE}」", said


@pytest.mark.live
def test_after_its_go_the_rule_is_in_force() -> None:
    rite, part = _first_music("xiang-she")
    player = Player(plan_show(part, make_settings(rite.settings)), "memory:",
                    client_name="yztest")
    with player:
        before = show_state(player, 0.0)
        player.put(Go(), origin="key")
        player.step(0.01)
        snap = player.snapshot()
        after = show_state(player, 0.0)
    assert snap.rules == (RULE,)
    assert snap.standby_rules == ()  # the next cue (告備, following it) binds nothing more
    assert f"in force: 「{RULE}」" in screen(snap, 80, 24)
    said = [a.text for a in changes(before, after)]
    assert said[:2] == [f"GO {part.cues[0].id}: {part.cues[0].title}", f"in force: 「{RULE}」"]
    assert not [a for a in changes(after, replace(after, message="x")) if "force" in a.text]

"""The web's adapter on the live player, over the memory output (no JACK): the pages' commands
are the player's typed commands, with the console's guards (double GO, two-stage panic), and
each is logged with its origin; a looping 射節 gives the pages its 節 on every pass; the plain
console's words."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from cues.sheet.loader import parse_sheet
from sequencer.live.player.plan import plan_show
from sequencer.live.player.player import Player
from sequencer.live.protocol import Go, Nudge, Panic, Quit, Stop
from sequencer.live.screens.announce import Announcer
from sequencer.live.screens.plain import plain_command
from sequencer.live.screens.player_adapter import PlayerView, screen_options
from sequencer.live.screens.show_state import ShowState
from sequencer.timeline.compiler import make_settings, select_cues
from tests.test_live_player import SHEET, _step_until
from tests.timing import on_time, timing_flaky

pytestmark = pytest.mark.live

# 《南陔》 (a: 1 s, go) and the 射節 c of 5 節, here of 0.5 s and played again until stopped
# (shorter 節 would put the last strokes' note-offs past the pass, which the next pass then
# waits for)
SETTINGS = make_settings({}, {"tempo_bpm": 600, "jie_seconds": "0.5", "lost_zhong_seconds": 1})


def _view(tmp_path: Path, first: str = "a") -> PlayerView:
    rite = select_cues(parse_sheet(SHEET), first, "c")
    rite = replace(rite, cues=tuple(replace(c, operator_ends=c.id == "c") for c in rite.cues))
    player = Player(plan_show(rite, SETTINGS), f"memory:{tmp_path / 'sent.jsonl'}", client_name="yztest")
    return PlayerView(player)


def _records(player: Player, event: str) -> list[dict]:
    return [r for r in player.log.records if r["event"] == event]


def _web(player: Player) -> list[dict]:
    """The operator records of commands that came from the web pages."""
    return [r for r in _records(player, "operator") if r["origin"].startswith("web:")]


def test_web_commands_take_the_consoles_path_and_are_logged(tmp_path: Path) -> None:
    view = _view(tmp_path)
    player = view.player
    with player:
        view.attach()
        assert view.snapshot() is not None and view.snapshot().standby == "a"
        view.command("go", "web:10.0.0.2:5000")
        view.command("go", "web:10.0.0.3:5001")  # within the double-GO guard: ignored
        _step_until(player, lambda: len(_web(player)) == 2)
        _step_until(player, lambda: bool(view.snapshot().current))
        view.command("panic", "web:10.0.0.2:5000")
        view.command("panic", "web:10.0.0.2:5000")
        _step_until(player, lambda: len(_web(player)) == 4)
    commands = _web(player)
    assert [(r["action"], r["origin"]) for r in commands] == [
        ("GO", "web:10.0.0.2:5000"), ("GO", "web:10.0.0.3:5001"),
        ("panic", "web:10.0.0.2:5000"), ("panic", "web:10.0.0.2:5000")]
    assert "ignored" not in commands[0]["result"] and "ignored" in commands[1]["result"]
    assert [r["cue"] for r in _records(player, "start")] == ["a"]
    assert [r["stage"] for r in _records(player, "panic")] == [1, 2]
    assert view.snapshot().panic_stage == 2 and view.snapshot().current is None


@timing_flaky
def test_a_looping_jie_is_on_the_pages_every_pass(tmp_path: Path) -> None:
    view = _view(tmp_path, "c")
    player = view.player
    states: list[tuple[float, ShowState]] = []
    view.listeners.append(lambda state: states.append((time.perf_counter(), state)))
    with player:
        view.attach()
        player.put(Go())
        _step_until(player, lambda: len(_records(player, "jie")) >= 11)
        player.put(Stop())  # 樂闋: at the next rest point
        _step_until(player, lambda: player.machine.done)
    run = player.machine.runs["c"]
    assert run.loops
    shown = {(m.pass_index, m.cycle, m.k): m.t
             for _, state in states if state.shooting for m in state.shooting.marks}
    logged = _records(player, "jie")
    passes = {p for p, _, _ in shown}
    assert len(passes) >= 3
    stopped = [state.shooting for _, state in states if state.shooting and state.shooting.end]
    assert stopped and all(m.t < s.end for s in stopped for m in s.marks)  # none after 樂闋
    for i, record in enumerate(logged):  # each 節 the sender reached was on the pages first
        key = (i // 5, record["cycle"], record["k"])
        # the log's 節 is when the sending process reached it; the pages', when it was due
        on_time(abs(shown[key] - record["t"]) < 0.02, f"節 {key} reached "
                f"{1000 * (record['t'] - shown[key]):.1f} ms from its time: {record}")
        first_shown = min(t for t, state in states if state.shooting and any(
            (m.pass_index, m.cycle, m.k) == key for m in state.shooting.marks))
        # known before it falls: the next passes a pass ahead; the first from the GO, whose
        # lead (50 ms) a busy machine's step can use up: that is the machine's
        if key[0]:
            assert first_shown < record["t"] - 1.0, key
        else:
            on_time(first_shown < shown[key], f"節 {key} shown {first_shown - shown[key]:.3f} s "
                    "after it fell")
    said = []
    announcer = Announcer()
    for t, state in states:
        said += [a.text for a in announcer.news(state, t) if a.kind == "jie"]
    assert said[:6] == ["節 1 / 5，先以聽　上耦", "節 2 / 5　上耦", "節 3 / 5　上耦",
                        "節 4 / 5　上耦", "節 5 / 5　上耦", "節 1 / 5，先以聽　上耦"]
    assert len(said) >= len(logged) - 1  # every 節 but (at most) one fallen between two steps


def test_plain_words_and_keys_are_the_players_commands() -> None:
    class Queue:
        def __init__(self) -> None:
            self.put_commands: list[object] = []

        def put(self, command: object, reply: object = None, origin: str = "") -> None:
            assert origin == "key"  # typed on the console, as a key is
            self.put_commands.append(command)

    queue = Queue()
    for line in ("go\n", " PANIC \n", "faster\n", "slower\n", "q\n", "x\n", "\n", "quit\n"):
        plain_command(queue, line)  # type: ignore[arg-type]
    assert queue.put_commands == [Go(), Panic(), Nudge(faster=True), Nudge(faster=False), Quit(),
                                  Quit()]


def test_screen_options() -> None:
    assert not screen_options().wanted
    assert screen_options(plain=True).wanted
    options = screen_options("0.0.0.0:8080", token="tok-0123456789")
    assert options.wanted and options.web == ("0.0.0.0", 8080)
    assert options.token == "tok-0123456789" and not options.token_made
    assert screen_options(None, token="tok").token is None  # a token without pages: none


def test_a_web_command_is_answered_with_what_it_did(tmp_path: Path) -> None:
    """The page's command gets the player's words once done: "nothing to hold …" (acted
    false), then the hold of a running cue; the feed wraps them as ``result`` messages."""
    from sequencer.live.screens.web.feed import Session, answer

    view = _view(tmp_path)
    player = view.player
    results: list[dict] = []
    session = Session("web:10.0.0.2:5000", control=True)
    with player:
        view.attach()
        assert answer('{"type": "command", "name": "hold"}', session, view, "tok",
                      results.append) == {"type": "ok", "name": "hold"}
        _step_until(player, lambda: len(results) == 1)
        view.command("go", "web:10.0.0.2:5000")
        _step_until(player, lambda: bool(view.snapshot().current))
        answer('{"type": "command", "name": "hold"}', session, view, "tok", results.append)
        _step_until(player, lambda: len(results) == 2)
    assert results == [
        {"type": "result", "name": "hold", "acted": False,
         "message": "nothing to hold: no cue is running or waiting"},
        {"type": "result", "name": "hold", "acted": True, "message": "held: a, b (r resumes)"}]  # b waits to follow a
    assert [(r["action"], r["acted"]) for r in _web(player)] == [
        ("hold", False), ("GO", True), ("hold", True)]

"""The adapter from ``sequencer.live.Player`` to ``ShowView`` (kept small: it follows the
player's interface), and ``start_screens``: a player's show served on ``--web``, spoken on
``--speak``.

The player publishes: after each of its steps (its own thread) the adapter builds a frozen
``ShowState`` and swaps it in; the server thread only reads that reference. Commands go through
``Player.put`` — the queue the console, OSC and MIDI use, so the same guards hold (double GO,
two-stage panic) — and are written to the show log, with their origin, in the player's thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sequencer.live import Player
from sequencer.web.announce import Announcer, Speaker
from sequencer.web.view import WEB_COMMANDS, CueLine, Current, JieAt, Shooting, ShowState


class PlayerView:
    """``ShowView`` of a ``Player`` (see the module docstring)."""

    def __init__(self, player: Player) -> None:
        self.player = player
        self._state: ShowState | None = None
        self.listeners: list[Callable[[ShowState], None]] = []  # called in the player's thread

    def snapshot(self) -> ShowState | None:
        return self._state

    def show_clock(self) -> float:
        return time.perf_counter()

    def command(self, name: str, origin: str) -> None:
        if name not in WEB_COMMANDS:
            raise ValueError(f"not a web command: {name!r}")

        def logged(what: str, state: dict[str, Any]) -> None:
            self.player.log.write({"event": "command", "command": what, "origin": origin,
                                   "t": time.perf_counter(), "message": self.player.message})

        self.player.put(name, logged)

    def publish(self) -> None:
        """Build the state (in the player's thread) and make it the one pages see."""
        self._state = state = show_state(self.player)
        for listener in self.listeners:
            listener(state)

    def attach(self) -> None:
        """Publish after every step of the player (and now)."""
        step = self.player.step

        def step_and_publish(timeout: float = 0.05) -> None:
            step(timeout)
            self.publish()

        self.player.step = step_and_publish  # type: ignore[method-assign]
        self.publish()


def show_state(player: Player) -> ShowState:
    snap = player.snapshot()
    m = player.machine
    running = m.running()
    cues = tuple(CueLine(cid, kind, title, status, cid == snap.standby, cid in running)
                 for cid, kind, title, status in snap.cues)
    waiting = [m.runs[cid].start for cid in m.waiting()]
    current = _current(player, running[-1]) if running else None
    shooting = next((_shooting(player, cid) for cid in reversed(running)
                     if player.schedules[cid].jie), None)
    return ShowState(
        rite=snap.rite, cues=cues, standby=snap.standby, standby_at=snap.standby_at,
        standby_trigger=snap.standby_trigger, next_start=min(waiting) if waiting else None,
        current=current, shooting=None if snap.held else shooting, held=snap.held,
        panic_stage=snap.panic_stage, done=snap.done, message=snap.message, tally=snap.tally)


def _current(player: Player, cid: str) -> Current:
    cue = player.rite.cue(cid)
    run = player.machine.runs[cid]
    return Current(cid, cue.title, cue.at, tuple(f"{p.title}（{p.by}）" for p in cue.pieces),
                   run.start, run.end)


def _shooting(player: Player, cid: str) -> Shooting:
    """The 射節's 節 on the show clock; a nudge stretches whole 耦 cycles (``CueRun.bounds``:
    each cycle's end in cue time), so each 節 is 1/N of its cycle."""
    cue = player.rite.cue(cid)
    assert cue.shooting is not None
    run = player.machine.runs[cid]
    n = cue.shooting.jie
    marks = []
    for mark in player.schedules[cid].jie:
        t = mark.t
        if mark.cycle < len(run.bounds):
            begin = run.bounds[mark.cycle - 1] if mark.cycle else 0.0
            t = begin + (mark.k - 1) * (run.bounds[mark.cycle] - begin) / n
        marks.append(JieAt(mark.k, mark.cycle, run.start + t))
    return Shooting(cid, cue.shooting.song, n, cue.shooting.listen,
                    tuple((o.name, o.upper, o.lower) for o in cue.shooting.ou), tuple(marks),
                    run.end)


def start_screens(player: Player, web: str | None, token: str | None,
                  speaker: Speaker | None) -> tuple[PlayerView, str | None]:
    """Publish ``player``'s states; serve them on ``web`` (``[ADDR:]PORT``) and speak the calls
    with ``speaker`` until the player closes. Returns the view and the pages' URL."""
    view = PlayerView(player)
    view.attach()
    url = None
    if web is not None:
        from sequencer.web.server import WebServer, parse_web_address

        host, port = parse_web_address(web)
        server = WebServer(view, host, port, token=token)
        url = server.start()
        player.add_closer(server.close)
    if speaker is not None:
        announcer = Announcer()
        view.listeners.append(
            lambda state: speaker.announce(announcer.news(state, time.perf_counter())))
        player.add_closer(speaker.close)
    return view, url

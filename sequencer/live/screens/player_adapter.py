"""The adapter from the live ``Player`` to ``ShowView`` (kept small: it follows the player's
interface), and the screens of a show: ``screen_options`` (``--web``, its token, ``--speak``,
``--plain``, checked before the show opens) and ``start_screens``.

The player publishes: after each of its steps (its own thread, ``Player.add_watcher``) the
adapter builds a frozen ``ShowState`` and swaps it in; the server thread only reads that
reference. Commands are the player's typed commands, queued with ``Player.put`` — the queue the
console, OSC and MIDI use, so the same guards hold (double GO, two-stage panic) — and written
to the show log, with their origin, in the player's thread once the player has taken them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sequencer.live.player.player import Player
from sequencer.live.player.snapshot import Snapshot
from sequencer.live.screens.announce import Announcer, Speaker
from sequencer.live.screens.show_state import (
    WEB_COMMANDS,
    CueLine,
    Current,
    JieAt,
    Shooting,
    ShowState,
)


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

    def command(self, name: str, origin: str,
                reply: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Queue the command as the console's keys and OSC do; the player logs it (an
        ``operator`` record with this origin) once it has taken it, and answers ``reply``."""
        self.player.put(WEB_COMMANDS[name], reply, origin)

    def report(self, record: dict[str, Any]) -> None:
        """The web server's refusals: in the show log and on the console's message line."""
        self.player.log.write(record)
        self.player.status.say(f"web: refused {record.get('count')} ({record.get('why')}) "
                               f"from {record.get('peer')}")

    def publish(self) -> None:
        """Build the state (in the player's thread) and make it the one pages see."""
        self._state = state = show_state(self.player, time.perf_counter())
        for listener in self.listeners:
            listener(state)

    def attach(self) -> None:
        """Publish after every step of the player (and now)."""
        self.player.add_watcher(self.publish)
        self.publish()


def show_state(player: Player, now: float) -> ShowState:
    """The player's state for the pages at ``now`` (show clock)."""
    snap = player.snapshot()
    m = player.machine
    running = m.running()
    cues = tuple(CueLine(cid, kind, title, status, cid == snap.standby, cid in running)
                 for cid, kind, title, status in snap.cues)
    waiting = [m.runs[cid].start for cid in m.waiting()]
    current = _current(player, running[-1]) if running else None
    shooting = next((_shooting(player, cid, now) for cid in reversed(running)
                     if player.schedules[cid].jie), None)
    return ShowState(
        rite=snap.rite, cues=cues, standby=snap.standby, standby_at=snap.standby_at,
        standby_trigger=snap.standby_trigger, next_start=min(waiting) if waiting else None,
        current=current, shooting=None if snap.held else shooting, held=snap.held,
        panic_stage=snap.panic_stage, done=snap.done, message=snap.message, tally=snap.tally,
        message_seq=snap.message_seq, piece=_piece_text(snap),
        stop_at=next((at for _, at, ending, _ in snap.stops if at and not ending), ""),
        heard=player.status.view("heard"), standby_rules=snap.standby_rules, rules=snap.rules)


def _piece_text(snap: Snapshot) -> str:
    p = snap.piece
    if p is None:
        return ""
    return (f"《{p.title}》 {p.number}/{p.count}　next 《{p.next_title}》"
            f"{'（chosen）' if p.chosen else ''}")


def _current(player: Player, cid: str) -> Current:
    cue = player.rite.cue(cid)
    run = player.machine.runs[cid]
    return Current(cid, cue.title, cue.at, tuple(f"{p.title}（{p.by}）" for p in cue.pieces),
                   run.start, run.end)


def _shooting(player: Player, cid: str, now: float) -> Shooting:
    """The 射節's 節 on the show clock. A nudge stretches whole 耦 cycles and the drum followed
    (``live --follow``) moves and stretches them (``CueRun.starts`` and ``bounds``: each cycle's
    start and end in cue time), so each 節 is 1/N of its cycle from its start. A looping 射節
    (one that runs until stopped) plays its music again every ``CueRun.length``: the 節 of the
    pass now playing and of the next one, so that a page has each 節 before it falls."""
    cue = player.rite.cue(cid)
    assert cue.shooting is not None
    run = player.machine.runs[cid]
    n = cue.shooting.jie
    one_pass = []
    if run.starts:
        for cycle, (begin, end) in enumerate(zip(run.starts, run.bounds, strict=False)):
            one_pass += [(k, cycle, begin + (k - 1) * (end - begin) / n) for k in range(1, n + 1)]
    else:
        one_pass = [(mark.k, mark.cycle, mark.t) for mark in player.schedules[cid].jie]
    passes = [0]
    if run.loops and run.length > 0:
        now_pass = int(player.machine.cue_time(cid, now) // run.length)
        passes = [now_pass, now_pass + 1]
    end = math.inf if run.end is None else run.end  # a stopped loop: no 節 from its end on
    marks = tuple(JieAt(k, cycle, at, p) for p in passes for k, cycle, t in one_pass
                  if (at := run.start + p * run.length + t) < end)
    return Shooting(cid, cue.shooting.song, n, cue.shooting.listen,
                    tuple((o.name, o.upper, o.lower) for o in cue.shooting.ou), marks, run.end)


@dataclass(frozen=True)
class ScreenOptions:
    """The screens a show was asked for: the web pages on (host, port), the operator's token,
    the backstage calls, the plain console."""

    web: tuple[str, int] | None = None
    token: str | None = None
    speaker: Speaker | None = None
    plain: bool = False
    token_made: bool = False  # no token was given: ``token`` was made for this show

    @property
    def wanted(self) -> bool:
        return self.web is not None or self.speaker is not None or self.plain


def screen_options(web: str | None = None, token: str | None = None,
                   token_file: str | None = None, speak: bool = False,
                   plain: bool = False) -> ScreenOptions:
    """``--web``, ``--web-token``/``--web-token-file``, ``--speak``, ``--plain`` checked
    (``UserError``: a bad address, an unreadable token file, a token too short to guard the
    operator page, no espeak-ng). With the pages and no token, one is made (128 bits)."""
    address = None
    made = False
    if web is not None:
        from sequencer.live.screens.web.guard import checked_token
        from sequencer.live.screens.web.server import parse_web_address, read_web_token

        address = parse_web_address(web)
        given = read_web_token(token, token_file)
        made = given is None
        token = checked_token(given, f"--web-token-file {token_file}" if token_file
                              else "--web-token")
    return ScreenOptions(address, token if address else None,
                         Speaker() if speak else None, plain, made and address is not None)


def start_screens(player: Player, options: ScreenOptions) -> tuple[PlayerView, str | None]:
    """Publish ``player``'s states; serve them on the web address and speak the calls until the
    player closes. Returns the view and the pages' URL (None: no web pages)."""
    view = PlayerView(player)
    view.attach()
    url = None
    if options.web is not None:
        from sequencer.live.screens.web.server import WebServer

        server = WebServer(view, *options.web, token=options.token)
        url = server.start()
        player.add_closer(server.close)
    if options.speaker is not None:
        speaker, announcer = options.speaker, Announcer()
        view.listeners.append(
            lambda state: speaker.announce(announcer.news(state, time.perf_counter())))
        player.add_closer(speaker.close)
    return view, url

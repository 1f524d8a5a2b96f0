"""Between a remote control (OSC, MIDI input) and the player: commands coalesced and paced, so
that no flood of control messages can starve the player, the sender or the console, and bad
messages reported, rate-limited.

- Each kind of command has at most one request in the player's queue (a panic: two, its two
  stages) and is passed on at most once every ``PACE_S``; what comes meanwhile waits, the
  latest replacing the one before (hold and resume are one kind: the last asked wins). So a
  burst of 10,000 ``/hold /resume`` costs the player a few dozen commands, and a ``/panic``
  finds at most one request of each other kind before it: it jumps the flood.
- Releases the judge marks are events, not states: up to ``RELEASES_WAITING`` wait in order,
  the rest are dropped and reported.
- Every requester of a coalesced command gets its reply (the state after the command that
  replaced theirs), at most ``REPLY_CLIENTS`` distinct addresses per command.
- ``complain(text, count)``: dropped messages (a flood's are counted by the caller and handed
  over in one call). At most one report a ``COMPLAINT_EVERY_S``, with the
  count since the last: on the console's message line and in the show log as ``{"event":
  "ignored", "source", "count", "last", "t"}``.

A pump thread passes on what waits; it ends when the player closes.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from sequencer.live.player.player import Player
from sequencer.live.protocol import Hold, MarkRelease, Panic, PlayerCommand, Resume

Reply = Callable[[dict[str, Any]], None]

PACE_S = 0.02  # a kind of command is passed on at most this often (a panic: at once)
PANICS_IN_FLIGHT = 2  # a panic's two stages
RELEASES_WAITING = 32
REPLY_CLIENTS = 16
COMPLAINT_EVERY_S = 1.0
SHOWN_CHARS = 80  # of a bad message, in a report


def coalescing_kind(command: PlayerCommand) -> str:
    """Commands of one kind replace each other while they wait (hold and resume: one kind)."""
    return "hold" if isinstance(command, Hold | Resume) else type(command).__name__


def shown(value: object) -> str:
    """A bad message for a report: its repr (control characters escaped), cut short."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"


class ControlGate:
    """See the module docstring. ``offer()`` from any thread; ``close()`` ends the pump."""

    def __init__(self, player: Player, source: str, origin: str) -> None:
        self.player = player
        self.source = source
        self.origin = origin  # who asks, in the show log's operator records (osc, midi)
        self.dropped = 0
        self.passed = 0
        self._lock = threading.Condition()
        self._busy: dict[str, int] = {}  # kind → its requests in the player's queue
        self._last_pass: dict[str, float] = {}
        self._waiting: dict[str, deque[tuple[PlayerCommand, list[Reply]]]] = {}
        self._unreported = 0
        self._last_bad = ""
        self._last_report = -math.inf
        self._closed = False
        self._pump = threading.Thread(target=self._pump_loop, name=f"yuezheng-{source}-gate",
                                      daemon=True)
        self._pump.start()
        player.add_closer(self.close)

    # the commands --------------------------------------------------------------------------
    def offer(self, command: PlayerCommand, reply: Reply | None = None) -> None:
        """Pass ``command`` on to the player now, or let it wait (coalesced)."""
        kind = coalescing_kind(command)
        replies = [reply] if reply is not None else []
        with self._lock:
            if self._may_pass(kind, time.perf_counter()):
                self._mark_passed(kind)
            else:
                self._wait(kind, command, replies)
                return
        self._pass_on(kind, command, replies)

    def _may_pass(self, kind: str, now: float) -> bool:
        if kind == Panic.__name__:
            return self._busy.get(kind, 0) < PANICS_IN_FLIGHT
        return (not self._busy.get(kind) and not self._waiting.get(kind)
                and now - self._last_pass.get(kind, -math.inf) >= PACE_S)

    def _mark_passed(self, kind: str) -> None:
        self._busy[kind] = self._busy.get(kind, 0) + 1
        self._last_pass[kind] = time.perf_counter()
        self.passed += 1

    def _wait(self, kind: str, command: PlayerCommand, replies: list[Reply]) -> None:
        waiting = self._waiting.setdefault(kind, deque())
        if isinstance(command, MarkRelease):
            if len(waiting) >= RELEASES_WAITING:
                self._count_bad(f"release dropped: {RELEASES_WAITING} already wait")
                return
            waiting.append((command, replies))
        else:
            earlier = waiting[0][1] if waiting else []
            waiting.clear()
            waiting.append((command, (earlier + replies)[-REPLY_CLIENTS:]))
        self._lock.notify()

    def _pass_on(self, kind: str, command: PlayerCommand, replies: list[Reply]) -> None:
        def done(state: dict[str, Any]) -> None:  # in the player's thread, after the command
            for reply in replies:
                try:
                    reply(state)
                except Exception:  # a reply that cannot be sent must not stop the show
                    pass
            with self._lock:
                self._busy[kind] -= 1
                self._lock.notify()

        self.player.put(command, done, self.origin)

    def _pump_loop(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                now = time.perf_counter()
                ready = [kind for kind, waiting in self._waiting.items() if waiting
                         and not self._busy.get(kind)
                         and now - self._last_pass.get(kind, -math.inf) >= PACE_S]
                due = [(kind, *self._waiting[kind].popleft()) for kind in ready]
                for kind in ready:
                    self._mark_passed(kind)
                report = self._due_report(now)
                if not due and report is None:
                    self._lock.wait(PACE_S)
            for kind, command, replies in due:
                self._pass_on(kind, command, replies)
            if report is not None:
                self._report(*report)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            report = self._due_report(math.inf)
            self._lock.notify()
        if report is not None:
            self._report(*report)

    # bad messages --------------------------------------------------------------------------
    def complain(self, text: str, count: int = 1) -> None:
        """``count`` messages were dropped (``text``: why, the last); reported at most once a
        second."""
        with self._lock:
            self._count_bad(text, count)

    def _count_bad(self, text: str, count: int = 1) -> None:
        self.dropped += count
        self._unreported += count
        self._last_bad = text
        self._lock.notify()

    def _due_report(self, now: float) -> tuple[int, str] | None:
        if not self._unreported or now - self._last_report < COMPLAINT_EVERY_S:
            return None
        count, self._unreported = self._unreported, 0
        self._last_report = time.perf_counter()
        return count, self._last_bad

    def _report(self, count: int, last: str) -> None:
        self.player.status.say(f"{self.source}: ignored {count} bad message(s); last: {last}")
        try:
            self.player.log.write({"event": "ignored", "source": self.source, "count": count,
                                   "last": last, "t": time.perf_counter()})
        except Exception:  # the log reports its own failures; the show goes on
            pass

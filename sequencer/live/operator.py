"""The operator's commands as the player carries them out (``Player`` has these methods): each
one queued from a key, OSC or MIDI is done on the player's thread, shown on the console
(``message``: who asked, what, and what came of it) and logged with its origin as an
``operator`` record. A command that did nothing says why in ``refusal`` (an OSC reply carries
it as ``message``): a GO within the guard, a GO that waits for a ``follow`` cue, "GO again to
cut …", "q again to quit …".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from cues.errors import UserError
from cues.model import Rite
from sequencer.cueschedule import CueSchedule
from sequencer.events import Timeline
from sequencer.judge import Release, ShootingSetup, Tally, shooting_setup
from sequencer.live.cuelist import CueList
from sequencer.live.protocol import (
    Back,
    Begin,
    CueAction,
    Go,
    GoCue,
    Hold,
    MarkRelease,
    Nudge,
    Panic,
    PlayerCommand,
    Quit,
    Request,
    Resume,
    RetimeCue,
    Skip,
    StartCue,
    Stop,
    TakeOver,
)
from sequencer.live.showlog import ShowLog

NUDGE = 1.02  # a tempo nudge stretches (slower) or shrinks (faster) the 射節 by this factor


def action_name(command: PlayerCommand) -> str:
    """What the operator asked, in words (the console and the log)."""
    if isinstance(command, GoCue):
        return f"GO {command.cue}"
    if isinstance(command, Nudge):
        return f"nudge {'faster' if command.faster else 'slower'}"
    if isinstance(command, MarkRelease):
        return f"release {command.side} {'hit' if command.hit else 'miss'}"
    return "GO" if isinstance(command, Go) else type(command).__name__.lower()


def outcome(actions: list[CueAction]) -> str:
    """What a command's actions did, in words ("" when nothing was sent)."""
    started = [a.key for a in actions if isinstance(a, StartCue)]
    retimed = [f"{a.key} ×{a.factor:.3f} from {a.at_s:.2f} s" for a in actions
               if isinstance(a, RetimeCue)]
    words = [f"start {', '.join(dict.fromkeys(started))}"] if started else []
    return "; ".join(words + retimed)


class PeerHooks(Protocol):
    """A hot-standby peer link (``sequencer.live.standby``), asked before every command is
    carried out: ``offer`` returns None to go ahead (a main has mirrored it to its backup) or
    why not (a backup standing by takes its commands from its main)."""

    def offer(self, command: PlayerCommand, at: float, origin: str) -> str | None: ...

    def status(self) -> dict[str, Any]: ...


class OperatorCommands:
    """The operator's commands (mixed into ``sequencer.live.player.Player``)."""

    rite: Rite
    machine: CueList
    schedules: dict[str, CueSchedule]
    timeline: Timeline
    log: ShowLog
    lead_s: float
    message: str
    refusal: str
    asking: str  # the origin of the command being done
    quit: bool
    judge_tolerance_s: float
    releases: dict[str, list[Release]]
    tallies: dict[str, Tally]
    _setups: dict[str, ShootingSetup]
    _jie_sent: dict[str, Any]
    state: Callable[[], dict[str, Any]]
    _act: Callable[[list[CueAction]], None]
    _take_over: Callable[[TakeOver, float], list[CueAction]]
    peer: PeerHooks | None
    begun: bool

    def _obey(self, command: PlayerCommand, now: float) -> list[CueAction]:
        handlers: dict[type, Callable[[Any, float], list[CueAction]]] = {
            Go: self._go, GoCue: self._go_cue, Stop: self._stop, Hold: self._hold,
            Resume: self._resume, Skip: self._skip, Back: self._back, Panic: self._panic,
            Nudge: self._nudge, MarkRelease: self._mark_release, Quit: self._quit,
            Begin: self._begin, TakeOver: self._take_over,
        }
        return handlers[type(command)](command, now)

    def _do(self, request: Request) -> None:
        """Carry out one operator command; show it, log it, answer it."""
        self.refusal = ""
        self.message = ""
        self.asking = request.origin
        at = request.at if request.at is not None else time.perf_counter() + self.lead_s
        refusal = self.peer.offer(request.command, at, request.origin) if self.peer else None
        if refusal:
            self.refusal, actions = refusal, []
        else:
            actions = self._obey(request.command, at)
        self._act(actions)
        result = self.refusal or self.message or outcome(actions) or "done"
        name = action_name(request.command)
        self.log.operator(name, request.origin, time.perf_counter(), result)
        self.message = f"{request.origin or 'operator'} {name}: {result}"
        if request.reply is not None:
            state = self.state()
            request.reply({**state, "message": self.refusal} if self.refusal else state)

    def _begin(self, command: Begin, now: float) -> list[CueAction]:
        if self.begun:
            self.refusal = "the show has begun"
            return []
        self.begun = True
        return self.machine.begin(now)

    def _go(self, command: Go, now: float) -> list[CueAction]:
        actions = self.machine.go(now)
        self.refusal = self.machine.go_refusal
        return actions

    def _go_cue(self, command: GoCue, now: float) -> list[CueAction]:
        try:
            actions = self.machine.start_cue(command.cue, now)
        except KeyError:
            self.refusal = f"no cue {command.cue!r}"
            return []
        self.refusal = self.machine.go_refusal
        return actions

    def _stop(self, command: Stop, now: float) -> list[CueAction]:
        actions = self.machine.stop(now)
        self.log.moment("stop", now)
        return actions

    def _hold(self, command: Hold, now: float) -> list[CueAction]:
        return self.machine.hold(now)

    def _resume(self, command: Resume, now: float) -> list[CueAction]:
        return self.machine.resume(now)

    def _skip(self, command: Skip, now: float) -> list[CueAction]:
        actions = self.machine.skip()
        standby = self.machine.standby
        self.message = f"standby {standby.id if standby else 'end of the show'}"
        return actions

    def _back(self, command: Back, now: float) -> list[CueAction]:
        actions = self.machine.back()
        standby = self.machine.standby
        self.message = f"standby {standby.id if standby else 'end of the show'}"
        return actions

    def _panic(self, command: Panic, now: float) -> list[CueAction]:
        actions = self.machine.panic(time.perf_counter())  # at once, not after the lead
        self.message = f"panic stage {self.machine.panic_stage}"
        return actions

    def _nudge(self, command: Nudge, now: float) -> list[CueAction]:
        actions = self.machine.nudge(1 / NUDGE if command.faster else NUDGE, now)
        if not actions:
            self.refusal = "a nudge needs a running 射節 with a 耦 cycle still ahead"
        return actions

    def _quit(self, command: Quit, now: float) -> list[CueAction]:
        """Quit; from the console's key only once confirmed while music sounds."""
        if self.asking == "key" and not self.machine.may_quit(now):
            self.refusal = self.machine.go_refusal
            return []
        self.quit = True
        return []

    def _mark_release(self, command: MarkRelease, now: float) -> list[CueAction]:
        """An archer's release, marked by the judge: judged 「不鼓不釋」 against the running
        射節's drum accords, tallied, logged."""
        now = time.perf_counter()  # when it was marked, not after the lead
        shooting = [c for c in self.machine.running() if self.schedules[c].jie]
        if not shooting:
            self.refusal = "no 射節 is running: the release is not judged"
            return []
        cid = shooting[0]
        setup = self._setups.get(cid)
        if setup is None:
            setup = self._setups[cid] = shooting_setup(self.rite.cue(cid),
                                                       self.timeline.span(cid))
        sent = self._jie_sent.get(cid)
        if sent is not None:  # anchored on the last 節 actually sent (holds and nudges apply)
            mark, at = sent
            t = (mark.cycle * setup.cycle_s + (mark.k - 1) * setup.jie_s
                 + (now - at) / self.machine.runs[cid].factor)
        else:
            t = self.machine.cue_time(cid, now)
        try:
            release = Release(t, command.side, command.hit)
        except UserError as exc:
            self.refusal = str(exc)
            return []
        self.releases.setdefault(cid, []).append(release)
        tally = self.tallies[cid] = setup.judge(self.releases[cid], self.judge_tolerance_s)
        decision = tally.decisions[-1]
        self.log.release(cid, t, decision, tally)
        self.message = (f"{release.side} {'hit' if release.hit else 'miss'} at {t:.2f} s: "
                        f"{'釋' if decision.counted else '不釋'} ({decision.reason})")
        return []

"""The operator's commands on the cue list (``Operator``): each one queued from a key, OSC, MIDI
or the web is done on the player's thread, shown on the console (the status's ``message``: who
asked, what, and what came of it) and logged with its origin as an ``operator`` record by the
player. Every command says what it did — "he-yue ends at its next rest point, in 1.2 s (樂闋)",
"held: he-yue (r resumes)" — or, in the status's ``refusal``, that it did nothing and why: a GO
within the guard, a GO that waits for a ``follow`` cue, "GO again to cut …", "q again to quit
…", "nothing to hold: no cue is running or waiting", "nothing to resume: the show is not held",
"nothing to stop: no cue is running". An OSC reply and the web page's answer carry the same
words as ``message``, and the log's ``operator`` record as ``result`` (with ``acted``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from cues.errors import UserError
from sequencer.judge.tally import Release
from sequencer.live.cuelist import CueList
from sequencer.live.player.judging import Judging
from sequencer.live.player.marks import JieMarks
from sequencer.live.player.show_log import ShowLog
from sequencer.live.player.status import ShowStatus
from sequencer.live.protocol import (
    Back,
    CancelCue,
    CueAction,
    EndCueAt,
    Go,
    GoCue,
    Hold,
    JumpCue,
    MarkRelease,
    Nudge,
    Panic,
    PickPiece,
    PlayerCommand,
    Quit,
    Resume,
    RetimeCue,
    Skip,
    StartCue,
    Stop,
)
from sequencer.outputs.cue_schedule import CueSchedule

NUDGE = 1.02  # a tempo nudge stretches (slower) or shrinks (faster) the 射節 by this factor


def action_name(command: PlayerCommand) -> str:
    """What the operator asked, in words (the console and the log)."""
    if isinstance(command, GoCue):
        return f"GO {command.cue}"
    if isinstance(command, Nudge):
        return f"nudge {'faster' if command.faster else 'slower'}"
    if isinstance(command, MarkRelease):
        return f"release {command.side} {'hit' if command.hit else 'miss'}"
    if isinstance(command, PickPiece):
        return (f"piece {command.index}" if command.index is not None else
                f"piece {'next' if command.step >= 0 else 'back'}")
    return "GO" if isinstance(command, Go) else type(command).__name__.lower()


def outcome(actions: list[CueAction], cut: tuple[str, ...] = ()) -> str:
    """What a command's actions did, in words ("" when nothing was sent); ``cut``: the cues a
    confirmed GO cut."""
    started = [a.key for a in actions if isinstance(a, StartCue)]
    retimed = [f"{a.key} ×{a.factor:.3f} from {a.at_s:.2f} s" for a in actions
               if isinstance(a, RetimeCue)]
    words = [f"cut {', '.join(cut)}"] if cut else []
    words += [f"start {', '.join(dict.fromkeys(started))}"] if started else []
    return "; ".join(words + retimed)


def _seconds(s: float) -> str:
    """A short time in seconds ("1.2 s"), a longer one as minutes:seconds ("1:40.6")."""
    s = max(0.0, s)
    return f"{s:.1f} s" if s < 60 else f"{int(s // 60)}:{s % 60:04.1f}"


class PeerHooks(Protocol):
    """A hot-standby peer link (``sequencer.live.standby.pair``), asked before every command is
    carried out: ``offer`` returns None to go ahead (a main has mirrored it to its backup) or
    why not (a backup standing by takes its commands from its main)."""

    def offer(self, command: PlayerCommand, at: float, origin: str) -> str | None: ...

    def status(self) -> dict[str, Any]: ...


class Operator:
    """The operator's commands on the cue list, the judge's marks and the console's status.
    ``obey`` returns the actions to carry out; ``quit`` turns true once the show is to end."""

    def __init__(self, machine: CueList, schedules: Mapping[str, CueSchedule],
                 judging: Judging, marks: JieMarks, status: ShowStatus, log: ShowLog) -> None:
        self.machine = machine
        self.schedules = schedules  # the player's: a Link follower may reload one
        self.judging = judging
        self.marks = marks
        self.status = status
        self.log = log
        self.quit = False
        # where a release at a show-clock instant falls in a 射節's compiled time by the drum
        # heard (``live --hear``: sequencer.live.hearing.heard); None, or None returned: by
        # the last 節 sent
        self.anchor: Callable[[str, float], float | None] | None = None
        self._handlers: dict[type, Callable[[Any, float, str], list[CueAction]]] = {
            Go: self._go, GoCue: self._go_cue, Stop: self._stop, Hold: self._hold,
            Resume: self._resume, Skip: self._skip, Back: self._back, Panic: self._panic,
            Nudge: self._nudge, MarkRelease: self._mark_release, PickPiece: self._pick,
            Quit: self._quit,
        }

    def obeys(self, command: PlayerCommand) -> bool:
        return type(command) in self._handlers

    def obey(self, command: PlayerCommand, now: float, origin: str) -> list[CueAction]:
        """The actions ``command`` (asked by ``origin``) calls for at ``now``."""
        return self._handlers[type(command)](command, now, origin)

    def _refuse(self, why: str) -> list[CueAction]:
        self.status.refusal = why
        return []

    def _go(self, command: Go, now: float, origin: str) -> list[CueAction]:
        sounding = self.machine.sounding()
        actions = self.machine.go(now)
        self._say_go(actions, sounding)
        return actions

    def _go_cue(self, command: GoCue, now: float, origin: str) -> list[CueAction]:
        sounding = self.machine.sounding()
        try:
            actions = self.machine.start_cue(command.cue, now)
        except KeyError:
            return self._refuse(f"no cue {command.cue!r}")
        self._say_go(actions, sounding)
        return actions

    def _say_go(self, actions: list[CueAction], sounding: list[str]) -> None:
        self.status.refusal = self.machine.go_refusal
        if actions:
            cut = tuple(a.key for a in actions if isinstance(a, CancelCue) and a.key in sounding)
            self.status.message = outcome(actions, cut)

    def _stop(self, command: Stop, now: float, origin: str) -> list[CueAction]:
        """樂闋 — says which cues end and how (at their next rest point, or cut at once), and
        which cue follows."""
        running = self.machine.running()
        if not running:
            waiting = self.machine.waiting()
            return self._refuse("nothing to stop: no cue is running" + (
                f" ({', '.join(waiting)} waits to start; p panic cancels it)" if waiting else ""))
        actions = self.machine.stop(now)
        self.log.moment("stop", now)
        words = []
        for action in actions:
            if isinstance(action, EndCueAt):
                words.append(f"{action.key} ends at its next rest point, in "
                             f"{_seconds(action.t - now)} (樂闋)")
            elif isinstance(action, CancelCue) and action.key in running:
                words.append(f"{action.key} cut at once")
        follows = [a.key for a in actions if isinstance(a, StartCue) and a.key not in running]
        if follows:
            words.append(f"then {', '.join(dict.fromkeys(follows))} follows")
        self.status.message = "; ".join(words) or f"{', '.join(running)} already ending"
        return actions

    def _hold(self, command: Hold, now: float, origin: str) -> list[CueAction]:
        if self.machine.held:
            return self._refuse("already held (r resumes)")
        busy = self.machine.running() + self.machine.waiting()
        if not busy:
            return self._refuse("nothing to hold: no cue is running or waiting")
        actions = self.machine.hold(now)
        self.status.message = f"held: {', '.join(busy)} (r resumes)"
        return actions

    def _resume(self, command: Resume, now: float, origin: str) -> list[CueAction]:
        held_at = self.machine.held_at
        if held_at is None:
            return self._refuse("nothing to resume: the show is not held")
        busy = self.machine.running() + self.machine.waiting()
        actions = self.machine.resume(now)
        self.status.message = (f"resumed after {_seconds(now - held_at)} held"
                               + (f": {', '.join(busy)}" if busy else ""))
        return actions

    def _skip(self, command: Skip, now: float, origin: str) -> list[CueAction]:
        if self.machine.standby is None:
            return self._refuse("nothing to skip: the end of the show is at standby")
        skipped = self.machine.standby.id
        actions = self.machine.skip()
        self._say_standby(f"skipped {skipped}; ")
        return actions

    def _back(self, command: Back, now: float, origin: str) -> list[CueAction]:
        if self.machine.pos == 0:
            return self._refuse(f"nothing to go back to: {self.machine.cues[0].id} is the "
                                "first cue")
        actions = self.machine.back()
        self._say_standby("")
        return actions

    def _say_standby(self, before: str) -> None:
        standby = self.machine.standby
        self.status.message = f"{before}standby {standby.id if standby else 'end of the show'}"

    def _panic(self, command: Panic, now: float, origin: str) -> list[CueAction]:
        busy = self.machine.running() + self.machine.waiting()
        actions = self.machine.panic(time.perf_counter())  # at once, not after the lead
        if self.machine.panic_stage >= 2:
            self.status.message = ("panic 2: all notes off and all sound off (CC 123, 120) on "
                                   "all 16 channels")
        else:
            self.status.message = ("panic 1: " + (f"ended {', '.join(busy)}" if busy else
                                                  "nothing was running") +
                                   "; notes released (p again: all off on every channel)")
        return actions

    def _nudge(self, command: Nudge, now: float, origin: str) -> list[CueAction]:
        actions = self.machine.nudge(1 / NUDGE if command.faster else NUDGE, now)
        if not actions:
            return self._refuse("a nudge needs a running 射節 with a 耦 cycle still ahead")
        self.status.message = outcome(actions)
        return actions

    def _pick(self, command: PickPiece, now: float, origin: str) -> list[CueAction]:
        """無算樂: the piece to play when the sounding one ends."""
        cid = self.machine.choosing()
        if cid is None:
            return self._refuse("no piece to choose: no 無算樂 runs until stopped"
                                + (" (--auto plays it once)" if self.machine.auto else ""))
        sections = self.machine.cues[self.machine.index[cid]].sections
        sounding, _, chosen, _ = self.machine.piece(cid, now)
        if command.index is not None:
            if not 1 <= command.index <= len(sections):
                return self._refuse(f"no piece {command.index}: {cid} has {len(sections)} "
                                    f"(1–{len(sections)})")
            to = command.index - 1
        else:
            to = (chosen + command.step) % len(sections)
        actions = self.machine.pick(cid, to, now)
        jump = actions[0]
        assert isinstance(jump, JumpCue)
        self.status.message = (f"{cid}: after 《{sections[sounding][0]}》 (in "
                               f"{_seconds(jump.t - now)}), 《{sections[to][0]}》 "
                               f"({to + 1}/{len(sections)})")
        return actions

    def _quit(self, command: Quit, now: float, origin: str) -> list[CueAction]:
        """Quit; from the console's key only once confirmed while music sounds."""
        if origin == "key" and not self.machine.may_quit(now):
            return self._refuse(self.machine.go_refusal)
        self.quit = True
        sounding = self.machine.sounding()
        self.status.message = "quit: the show ends" + (
            f", cutting {', '.join(sounding)}" if sounding else "")
        return []

    def _mark_release(self, command: MarkRelease, now: float, origin: str) -> list[CueAction]:
        """An archer's release, marked by the judge: the judge's delay taken off the press,
        judged 「不鼓不釋」 against the running 射節's drum accords, tallied, logged."""
        pressed = time.perf_counter()
        now = pressed - self.judging.mark_delay_s  # the release, before the press
        shooting = [c for c in self.machine.running() if self.schedules[c].jie]
        if not shooting:
            return self._refuse("no 射節 is running: the release is not judged")
        cid = shooting[0]
        corrected = self.judging.correct(cid, command.side, command.hit, pressed)
        if corrected is not None:  # the other outcome of the mark just made
            decision, tally = corrected
            self.log.release(cid, decision.release.time_s, decision, tally,
                             self.judging.mark_delay_s, corrected=True)
            self.status.message = "corrected: " + self.judging.verdict(cid, decision)
            return []
        setup = self.judging.setup(cid)
        sent = self.marks.sent.get(cid)
        heard = self.anchor(cid, now) if self.anchor is not None else None
        if heard is not None:  # anchored on the drum as it was heard
            t = heard
        elif sent is not None:  # anchored on the last 節 actually sent (holds, nudges apply)
            mark, at = sent
            t = (mark.cycle * setup.cycle_s + (mark.k - 1) * setup.jie_s
                 + (now - at) / self.machine.runs[cid].factor)
        else:
            t = self.machine.cue_time(cid, now)
        try:
            release = Release(t, command.side, command.hit)
        except UserError as exc:
            return self._refuse(str(exc))
        decision, tally = self.judging.mark(cid, release)
        self.judging.pressed(cid, release.side, pressed)
        self.log.release(cid, t, decision, tally, self.judging.mark_delay_s)
        self.status.message = (self.judging.verdict(cid, decision)
                               + (" — by the drum heard" if heard is not None else ""))
        return []

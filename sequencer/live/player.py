"""The live player: the cue state machine (``sequencer.live.cuelist``) driving one sending
process (``sequencer.live.sender``) for the whole show, with a show log and remote controls.

Why one sender for the whole show, fed per cue: every cue's schedule is loaded into the sending
process before the show starts (nothing large crosses the pipe while music plays); a GO is one
small command carrying an absolute start time; a ``follow`` cue's exact start is handed over
while the previous cue still plays, so cues join without a gap and, at equal deadlines, in
order; one port knows every sounding note, so hold, stop and both panic stages reach everything.
A sender per cue would start a process and a JACK client at each GO, race its first messages
against the previous cue's last ones from another client, and panic could not reach a finished
process's port.

Player commands (``sequencer.live.protocol``) come from the console's keys, OSC and MIDI input
through one thread-safe queue; only ``Player.step()`` (the caller's thread) touches the state
machine. Every way out — the end of the show, quit, an exception, SIGINT, SIGTERM — closes the
sender, which silences what it started (an exception or a signal: both panic stages). The show
log (``sequencer.live.showlog``) records the show; ``--resume LOG`` starts again at the last cue
the log started.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cues.errors import UserError
from cues.model import Rite
from instruments.midi import CLOCK, CONTINUE, START, STOP
from sequencer.compiler import CompileSettings, compile_rite
from sequencer.cueschedule import CueSchedule, JieMark, cue_schedules
from sequencer.events import Timeline
from sequencer.judge import DEFAULT_TOLERANCE_MS, Release, ShootingSetup, Tally, shooting_setup
from sequencer.live.cuelist import CueInfo, CueList
from sequencer.live.protocol import (
    CLOCK_KEY,
    Back,
    CancelCue,
    CueAction,
    CueEnded,
    Go,
    GoCue,
    Hold,
    HoldOutput,
    MarkPassed,
    MarkRelease,
    Nudge,
    OutputLost,
    OutputReconnected,
    Panic,
    PanicOutput,
    PlayerCommand,
    Quit,
    Request,
    Resume,
    ResumeOutput,
    SenderEvent,
    SenderFailed,
    SendNow,
    Skip,
    StartCue,
    Stop,
)
from sequencer.live.schedule import marked_schedule, output_options
from sequencer.live.sender import ShowSender
from sequencer.live.showlog import ShowLog
from sequencer.live.views import PlayerViews

LEAD_S = 0.05  # a command takes effect this long after it is given (time to reach the sender)
NUDGE = 1.02  # a tempo nudge stretches (slower) or shrinks (faster) the 射節 by this factor
CLOCK_START, CLOCK_CONTINUE, CLOCK_STOP = bytes((START,)), bytes((CONTINUE,)), bytes((STOP,))


def cue_infos(rite: Rite, schedules: dict[str, CueSchedule]) -> list[CueInfo]:
    """What the state machine needs of each cue of the rite."""
    out = []
    for cue in rite.cues:
        sched = schedules[cue.id]
        loops = bool(sched.messages) and (cue.stop is not None or cue.operator_ends)
        stop_text = f"「{cue.stop.event}」 at 「{cue.stop.at}」" if cue.stop else (
            "the operator ends it" if cue.operator_ends else "")
        out.append(CueInfo(
            id=cue.id, length_s=sched.length_s, trigger=cue.trigger.kind,
            target=cue.trigger.target, loops=loops, pre_wait_s=cue.pre_wait_s,
            post_wait_s=cue.post_wait_s, rest_points=sched.rest_points, cycle_s=sched.cycle_s,
            kind=cue.kind, title=cue.title, at=cue.at, stop_text=stop_text,
        ))
    return out


class Player(PlayerViews):
    """A live show (see the module docstring). ``open()``, then ``step()`` in a loop (or
    ``run()``), then ``close()``; or ``with``."""

    def __init__(self, rite: Rite, settings: CompileSettings, spec: str, *, auto: bool = False,
                 log_path: str | Path | None = None, clock_out: bool = False,
                 client_name: str = "yuezheng", lead_s: float = LEAD_S) -> None:
        self.rite = rite
        self.settings = settings
        self.timeline: Timeline = compile_rite(rite, settings)
        self.schedules = cue_schedules(self.timeline)
        self.machine = CueList(cue_infos(rite, self.schedules), auto=auto,
                               go_gap_s=float(settings.go_gap_s))
        self.sender = ShowSender(spec, client_name=client_name,
                                 options=output_options(spec, self.timeline))
        self.log = ShowLog(log_path)
        self.clock_out = clock_out
        self.lead_s = lead_s
        self.requests: queue.Queue[Request] = queue.Queue()
        self.message = ""
        self.control = ""  # the remote control's address, for the console
        self.quit = False
        self.judge_tolerance_s = DEFAULT_TOLERANCE_MS / 1000.0
        self.releases: dict[str, list[Release]] = {}
        self.tallies: dict[str, Tally] = {}
        self.last_jie: dict[str, JieMark] = {}  # the last 節 each cue sent
        self._jie_sent: dict[str, tuple[JieMark, float]] = {}  # ... and when it went out
        self._marks: dict[tuple[str, int], JieMark] = {}  # (cue, index of its mark) → 節
        self._setups: dict[str, ShootingSetup] = {}
        self._logged = 0
        self._clock_running = False
        self._closers: list[Callable[[], None]] = []
        self._watchers: list[Callable[[], None]] = []
        self._started: set[str] = set()
        self._ended: set[str] = set()
        self._obey: dict[type, Callable[[Any, float], list[CueAction]]] = {
            Go: self._go, GoCue: self._go_cue, Stop: self._stop, Hold: self._hold,
            Resume: self._resume, Skip: self._skip, Back: self._back, Panic: self._panic,
            Nudge: self._nudge, MarkRelease: self._mark_release, Quit: self._quit,
        }
        self._carry_out: dict[type, Callable[[Any], None]] = {
            StartCue: self._start_cue, HoldOutput: self._hold_output,
            ResumeOutput: self._resume_output, PanicOutput: self._panic_output,
        }
        self._on_event: dict[type, Callable[[Any], None]] = {
            MarkPassed: self._on_mark, CueEnded: self._on_ended, SenderFailed: self._on_failed,
            OutputLost: self._on_output_change, OutputReconnected: self._on_output_change,
        }

    # lifecycle -----------------------------------------------------------------------------
    def open(self) -> Player:
        self.sender.open()
        for info in self.machine.cues:
            sched = self.schedules[info.id]
            times, messages, marks = marked_schedule(sched)
            self._marks.update({(sched.cue, i): mark for i, mark in marks.items()})
            self.sender.load(info.id, times, messages,
                             sched.length_s if info.loops and not self.machine.auto else None)
        if self.clock_out:
            bpm = float(self.settings.tempo_bpm)
            self.sender.load(CLOCK_KEY, [0.0], [bytes((CLOCK,))], 60.0 / (24 * bpm))
        self.log.show(self.rite.id, self.rite.title, [c.id for c in self.rite.cues],
                      time.perf_counter())
        self._act(self.machine.begin(time.perf_counter() + self.lead_s))
        return self

    def close(self, *, panic: bool = False) -> None:
        for closer in self._closers:
            try:
                closer()
            except Exception:  # closing the rest matters more
                pass
        self._closers.clear()
        try:
            if self._clock_running and self.sender.alive:
                self._stop_clock()
            self.sender.close(panic=panic)
            self._drain_sender()
        finally:
            self.log.close()

    def __enter__(self) -> Player:
        return self.open()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(panic=exc_type is not None)

    def add_closer(self, closer: Callable[[], None]) -> None:
        """Call ``closer`` when the player closes (a remote control's server)."""
        self._closers.append(closer)

    def add_watcher(self, watcher: Callable[[], None]) -> None:
        """Call ``watcher`` after every step, in the player's thread (the web screens publish
        the state so)."""
        self._watchers.append(watcher)

    # the loop ------------------------------------------------------------------------------
    def put(self, command: PlayerCommand,
            reply: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Queue a command (any thread); ``reply`` receives the state after it (OSC)."""
        self.requests.put(Request(command, reply))

    def step(self, timeout: float = 0.05) -> None:
        """Wait up to ``timeout`` for a command, do what is due, log what happened."""
        deadline = self.machine.next_deadline()
        if deadline is not None:
            timeout = max(0.0, min(timeout, deadline - time.perf_counter()))
        try:
            request: Request | None = (self.requests.get(timeout=timeout) if timeout > 0
                                       else self.requests.get_nowait())
        except queue.Empty:
            request = None
        while request is not None:
            self._do(request)
            try:
                request = self.requests.get_nowait()
            except queue.Empty:
                request = None
        self._act(self.machine.tick(time.perf_counter()))
        self._flush_log()
        self._drain_sender()
        for watcher in self._watchers:
            watcher()
        if not self.sender.alive:
            raise UserError("the sending process ended unexpectedly")

    def run(self, stop: Callable[[], bool] | None = None) -> None:
        """Step until the show is done (auto), quit, or ``stop()`` is true."""
        while not self.quit and not (stop and stop()):
            if self.machine.auto and self.machine.done:
                break
            self.step()
        # the state machine ends a cue at its nominal end; let the sender finish its last
        # messages (a quit now would cut them short) — at most a second
        grace = time.perf_counter() + self.lead_s + 1.0
        while (not self.quit and self._started - self._ended - {CLOCK_KEY}
               and time.perf_counter() < grace):
            time.sleep(0.01)
            self._drain_sender()
        self._flush_log()
        self.log.moment("done", time.perf_counter())

    # player commands -----------------------------------------------------------------------
    def _do(self, request: Request) -> None:
        self.message = ""
        self._act(self._obey[type(request.command)](request.command,
                                                    time.perf_counter() + self.lead_s))
        if request.reply is not None:
            request.reply(self.state())

    def _go(self, command: Go, now: float) -> list[CueAction]:
        before = self.machine.pos
        actions = self.machine.go(now)
        if not actions and self.machine.pos == before:
            self.message = "GO ignored (held, double GO, or no cue at standby)"
        return actions

    def _go_cue(self, command: GoCue, now: float) -> list[CueAction]:
        try:
            return self.machine.start_cue(command.cue, now)
        except KeyError:
            self.message = f"no cue {command.cue!r}"
            return []

    def _stop(self, command: Stop, now: float) -> list[CueAction]:
        actions = self.machine.stop(now)
        self.log.moment("stop", now)
        return actions

    def _hold(self, command: Hold, now: float) -> list[CueAction]:
        return self.machine.hold(now)

    def _resume(self, command: Resume, now: float) -> list[CueAction]:
        return self.machine.resume(now)

    def _skip(self, command: Skip, now: float) -> list[CueAction]:
        return self.machine.skip()

    def _back(self, command: Back, now: float) -> list[CueAction]:
        return self.machine.back()

    def _panic(self, command: Panic, now: float) -> list[CueAction]:
        return self.machine.panic(time.perf_counter())  # at once, not after the lead

    def _nudge(self, command: Nudge, now: float) -> list[CueAction]:
        actions = self.machine.nudge(1 / NUDGE if command.faster else NUDGE, now)
        if not actions:
            self.message = "a nudge needs a running 射節 with a 耦 cycle still ahead"
        return actions

    def _quit(self, command: Quit, now: float) -> list[CueAction]:
        self.quit = True
        return []

    def _mark_release(self, command: MarkRelease, now: float) -> list[CueAction]:
        """An archer's release, marked by the judge: judged 「不鼓不釋」 against the running
        射節's drum accords, tallied, logged."""
        now = time.perf_counter()  # when it was marked, not after the lead
        shooting = [c for c in self.machine.running() if self.schedules[c].jie]
        if not shooting:
            self.message = "no 射節 is running: the release is not judged"
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
            self.message = str(exc)
            return []
        self.releases.setdefault(cid, []).append(release)
        tally = self.tallies[cid] = setup.judge(self.releases[cid], self.judge_tolerance_s)
        decision = tally.decisions[-1]
        self.log.release(cid, t, decision, tally)
        self.message = (f"{release.side} {'hit' if release.hit else 'miss'} at {t:.2f} s: "
                        f"{'釋' if decision.counted else '不釋'} ({decision.reason})")
        return []

    # the state machine's actions, carried out ----------------------------------------------
    def _act(self, actions: list[CueAction]) -> None:
        for action in actions:
            self._carry_out.get(type(action), self.sender.send)(action)
        if self.machine.done and self._clock_running:
            self._stop_clock()

    def _start_cue(self, action: StartCue) -> None:
        if self.clock_out and not self._clock_running:
            self.sender.send(SendNow(CLOCK_START))
            self.sender.send(StartCue(CLOCK_KEY, action.t0))
            self._clock_running = True
        self.sender.send(action)
        self._started.add(action.key)
        self._ended.discard(action.key)

    def _hold_output(self, action: HoldOutput) -> None:
        self.sender.send(action)
        if self._clock_running:
            self.sender.send(SendNow(CLOCK_STOP))
        self.log.moment("hold", time.perf_counter())

    def _resume_output(self, action: ResumeOutput) -> None:
        if self._clock_running:
            self.sender.send(SendNow(CLOCK_CONTINUE))
        self.sender.send(action)
        self.log.moment("resume", time.perf_counter())

    def _panic_output(self, action: PanicOutput) -> None:
        self.sender.send(action)
        if self._clock_running:
            self._stop_clock()
        self.log.panic(action.stage, time.perf_counter())

    def _stop_clock(self) -> None:
        self.sender.send(CancelCue(CLOCK_KEY))
        self.sender.send(SendNow(CLOCK_STOP))
        self._clock_running = False

    # what the sender reports ---------------------------------------------------------------
    def _drain_sender(self) -> None:
        for event in self.sender.new_events():
            handler = self._on_event.get(type(event))
            if handler is not None:
                handler(event)

    def _on_mark(self, event: MarkPassed) -> None:
        mark = self._marks.get((event.key, event.index))
        if mark is not None:
            self.last_jie[event.key] = mark
            self._jie_sent[event.key] = (mark, event.t)
            self.log.jie(event.key, event.t, mark.k, mark.n, mark.cycle)

    def _on_ended(self, event: CueEnded) -> None:
        self._ended.add(event.key)
        if event.key != CLOCK_KEY and event.lateness.count:
            self.log.sent(event)

    def _on_failed(self, event: SenderFailed) -> None:
        self.message = f"sender: {event.text}"

    def _on_output_change(self, event: SenderEvent) -> None:
        self.message = f"output {'lost' if isinstance(event, OutputLost) else 'reconnected'}"

    def _flush_log(self) -> None:
        for entry in self.machine.log[self._logged:]:
            self.log.cue(entry)
        self._logged = len(self.machine.log)

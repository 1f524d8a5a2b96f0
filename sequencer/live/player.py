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

from cues.model import Rite
from instruments.midi import CLOCK, CONTINUE, START, STOP
from sequencer.compiler import CompileSettings, compile_rite
from sequencer.cueschedule import CueSchedule, JieMark, cue_schedules
from sequencer.events import Timeline
from sequencer.groups import NoteSelection, select_notes
from sequencer.judge import DEFAULT_TOLERANCE_MS, Release, ShootingSetup, Tally
from sequencer.live.cuelist import CueInfo, CueList
from sequencer.live.delivery import ShowDelivery
from sequencer.live.go_safety import DEFAULT_GO_GUARD_S
from sequencer.live.operator import OperatorCommands, PeerHooks
from sequencer.live.protocol import (
    CLOCK_KEY,
    Begin,
    CancelCue,
    CueAction,
    CueEnded,
    HoldOutput,
    MarkPassed,
    MessagesLate,
    MuteOutput,
    OutputLost,
    OutputReconnected,
    OutputUnmuted,
    PanicOutput,
    PlayerCommand,
    Request,
    ResumeOutput,
    SenderFailed,
    SendNow,
    StartCue,
    TakeOver,
)
from sequencer.live.schedule import marked_schedule, output_options
from sequencer.live.sender import ShowSender
from sequencer.live.showlog import ShowLog
from sequencer.live.views import PlayerViews

LEAD_S = 0.05  # a command takes effect this long after it is given (time to reach the sender)
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


class Player(OperatorCommands, PlayerViews):
    """A live show (see the module docstring). ``open()``, then ``step()`` in a loop (or
    ``run()``), then ``close()``; or ``with``."""

    def __init__(self, rite: Rite, settings: CompileSettings, spec: str, *, auto: bool = False,
                 log_path: str | Path | None = None, clock_out: bool = False,
                 client_name: str = "yuezheng", lead_s: float = LEAD_S,
                 go_guard_s: float = DEFAULT_GO_GUARD_S, go_cuts: bool = False,
                 only: NoteSelection | None = None, muted: bool = False) -> None:
        self.rite = rite
        self.settings = settings
        whole = compile_rite(rite, settings)
        # ``only`` (--only/--except) sends a part of the ensemble; the cues' lengths, loops and
        # rest points stay the whole's, so a station playing a part stops where the rest does
        self.timeline: Timeline = select_notes(whole, only)
        self.schedules = cue_schedules(self.timeline)
        shape = self.schedules if only is None else cue_schedules(whole)
        self.machine = CueList(cue_infos(rite, shape), auto=auto,
                               go_gap_s=float(settings.go_gap_s), go_guard_s=go_guard_s,
                               go_cuts=go_cuts)
        self.sender = ShowSender(spec, client_name=client_name,
                                 options=output_options(spec, self.timeline), muted=muted)
        self.live = not muted  # a hot-standby backup is muted until it takes over
        self.peer: PeerHooks | None = None  # the hot-standby link (sequencer.live.standby)
        self.begun = False
        self.log = ShowLog(log_path)
        self.clock_out = clock_out
        self.lead_s = lead_s
        self.requests: queue.Queue[Request] = queue.Queue()
        self.message = ""  # the console's line: the last action and what came of it
        self.refusal = ""  # why the last command did nothing ("": it did what was asked)
        self.asking = ""  # the origin of the command being done
        self.delivery = ShowDelivery()  # what was not delivered on time
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
        self._mark_listeners: list[Callable[[MarkPassed, JieMark], None]] = []
        self.link_line = ""  # the console's Link line ("": no Link)
        self._started: set[str] = set()
        self._ended: set[str] = set()
        self._carry_out: dict[type, Callable[[Any], None]] = {
            StartCue: self._start_cue, HoldOutput: self._hold_output,
            ResumeOutput: self._resume_output, PanicOutput: self._panic_output,
        }
        self._on_event: dict[type, Callable[[Any], None]] = {
            MarkPassed: self._on_mark, CueEnded: self._on_ended, SenderFailed: self._on_failed,
            OutputLost: self._on_output_lost, OutputReconnected: self._on_output_regained,
            MessagesLate: self._on_late, OutputUnmuted: self._on_unmuted,
        }

    # lifecycle -----------------------------------------------------------------------------
    def open(self) -> Player:
        self.sender.open()
        for info in self.machine.cues:
            self._load(self.schedules[info.id])
        if self.clock_out:
            bpm = float(self.settings.tempo_bpm)
            self.sender.load(CLOCK_KEY, [0.0], [bytes((CLOCK,))], 60.0 / (24 * bpm))
        self.delivery.t0 = time.perf_counter()
        self.log.show(self.rite.id, self.rite.title, [c.id for c in self.rite.cues],
                      self.delivery.t0)
        at = time.perf_counter() + self.lead_s
        if self.peer is None or self.peer.offer(Begin(), at, "show") is None:
            self._act(self._begin(Begin(), at))  # a backup begins when its main does
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

    def add_mark_listener(self, listener: Callable[[MarkPassed, JieMark], None]) -> None:
        """Call ``listener`` with each 節 the sending process reached (Link), in the player's
        thread."""
        self._mark_listeners.append(listener)

    def reload_cue(self, sched: CueSchedule) -> None:
        """Replace a cue's schedule before it starts (Link follow: a retimed 射節)."""
        self.schedules[sched.cue] = sched
        self._load(sched)

    def _load(self, sched: CueSchedule) -> None:
        """Hand a cue's schedule (with its 節 marks) to the sending process."""
        info = self.machine.cues[self.machine.index[sched.cue]]
        times, messages, marks = marked_schedule(sched)
        self._marks.update({(sched.cue, i): mark for i, mark in marks.items()})
        self.sender.load(sched.cue, times, messages,
                         sched.length_s if info.loops and not self.machine.auto else None)

    # the loop ------------------------------------------------------------------------------
    def put(self, command: PlayerCommand,
            reply: Callable[[dict[str, Any]], None] | None = None, origin: str = "",
            at: float | None = None) -> None:
        """Queue a command (any thread); ``reply`` receives the state after it (OSC);
        ``origin``: who asks (key, osc, midi, peer); ``at``: when it takes effect on the show
        clock (a main's action on its backup), else the lead from when it is done."""
        self.requests.put(Request(command, reply, origin, at))

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
        self.sender.check()

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

    def _take_over(self, command: TakeOver, now: float) -> list[CueAction]:
        """A muted backup goes live (the sender unmutes at once, where it is)."""
        if self.live:
            self.refusal = "this machine is live already"
            return []
        self.live = True
        self.sender.muted = False
        self.sender.send(MuteOutput(False))
        self.message = "LIVE: this backup has taken over"
        return []

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
            for listener in self._mark_listeners:
                listener(event, mark)

    def _on_ended(self, event: CueEnded) -> None:
        self._ended.add(event.key)
        if event.key != CLOCK_KEY and event.lateness.count:
            self.log.sent(event)

    def _on_failed(self, event: SenderFailed) -> None:
        self.message = f"sender: {event.text}"

    def _on_output_lost(self, event: OutputLost) -> None:
        self.delivery.output_lost(event.t)
        self.log.moment("output-lost", event.t)
        self.message = "OUTPUT LOST: nothing is heard (reconnecting)"

    def _on_output_regained(self, event: OutputReconnected) -> None:
        self.delivery.output_regained(event.t)
        self.log.moment("output-regained", event.t)
        self.message = "output regained"

    def _on_unmuted(self, event: OutputUnmuted) -> None:
        self.log.write({"event": "unmuted", "t": event.t, "chased": event.chased,
                        "silent": event.silent})

    def _on_late(self, event: MessagesLate) -> None:
        if event.key != CLOCK_KEY:
            self.delivery.late.append(event)
            self.log.late(event)

    def _flush_log(self) -> None:
        for entry in self.machine.log[self._logged:]:
            self.log.cue(entry)
        self._logged = len(self.machine.log)

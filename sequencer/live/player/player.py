"""The live player: the cue state machine (``sequencer.live.cuelist``) driving one sending
process (``sequencer.live.sending.sender``) for the whole show, with a show log and remote controls.

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
log (``sequencer.live.player.show_log``) records the show; ``--resume LOG`` starts again at the
last cue the log started.

The player is built from a ``ShowPlan`` (``sequencer.live.player.plan``: compiled once) and
composed of parts: the cue state machine, the sending process, the operator's commands
(``operator``), the judge (``judging``), the 節 reached (``marks``), MIDI clock out
(``clock_out``), the console's status (``status``) and the show log. A hot-standby peer is
attached as an observer of every command (``attach_peer``); remote controls, screens and Link
hook in through ``add_closer``, ``add_watcher``, ``add_mark_listener`` and ``status.provide``.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sequencer.live.cuelist import CueList
from sequencer.live.go_safety import DEFAULT_GO_GUARD_S
from sequencer.live.player.clock_out import ClockOut
from sequencer.live.player.judging import DEFAULT_MARK_DELAY_S, Judging
from sequencer.live.player.marks import JieMarks
from sequencer.live.player.operator import Operator, PeerHooks, action_name, outcome
from sequencer.live.player.plan import ShowPlan
from sequencer.live.player.show_log import ShowLog
from sequencer.live.player.snapshot import Snapshot, snapshot_of, state_of
from sequencer.live.player.status import ShowStatus
from sequencer.live.protocol import (
    CLOCK_KEY,
    Begin,
    CueAction,
    CueEnded,
    HoldOutput,
    MarkPassed,
    MessagesLate,
    MuteOutput,
    OutputLost,
    OutputReconnected,
    OutputResumed,
    OutputUnmuted,
    PanicOutput,
    PlayerCommand,
    Request,
    ResumeOutput,
    SenderFailed,
    StartCue,
    TakeOver,
)
from sequencer.live.sending.delivery import ShowDelivery
from sequencer.live.sending.schedule import marked_schedule, output_options
from sequencer.live.sending.sender import ShowSender
from sequencer.outputs.cue_schedule import CueSchedule, JieMark

LEAD_S = 0.05  # a command takes effect this long after it is given (time to reach the sender)


class Player:
    """A live show (see the module docstring). ``open()``, then ``step()`` in a loop (or
    ``run()``), then ``close()``; or ``with``."""

    def __init__(self, plan: ShowPlan, spec: str, *, auto: bool = False,
                 log_path: str | Path | None = None, clock_out: bool = False,
                 client_name: str = "yuezheng", lead_s: float = LEAD_S,
                 go_guard_s: float = DEFAULT_GO_GUARD_S, go_cuts: bool = False,
                 muted: bool = False, mark_delay_s: float = DEFAULT_MARK_DELAY_S,
                 loudness: float | None = None) -> None:
        self.plan = plan
        self.rite = plan.rite
        self.timeline = plan.timeline
        self.schedules: dict[str, CueSchedule] = dict(plan.schedules)  # Link may retime one
        self.machine = CueList(list(plan.infos), auto=auto,
                               go_gap_s=float(plan.settings.go_gap_s), go_guard_s=go_guard_s,
                               go_cuts=go_cuts)
        self.sender = ShowSender(spec, client_name=client_name,
                                 options=output_options(spec, plan.timeline, loudness),
                                 muted=muted)
        self.log = ShowLog(log_path)
        self.lead_s = lead_s
        self.live = not muted  # a hot-standby backup is muted until it takes over
        self.resumed: dict[str, str] | None = None  # --resume: {"log", "cue"}
        self.begun = False
        self.begun_at: float | None = None  # the show's first instant (its Begin), show clock
        self.peer: PeerHooks | None = None  # the hot-standby link (attach_peer)
        self.delivery = ShowDelivery()  # what was not delivered on time
        self.judging = Judging(plan, mark_delay_s=mark_delay_s)
        self.marks = JieMarks()
        self.status = ShowStatus()
        self.clock = ClockOut(self.sender, float(plan.settings.tempo_bpm), clock_out)
        self.operator = Operator(self.machine, self.schedules, self.judging, self.marks,
                                 self.status, self.log)
        self.requests: queue.Queue[Request] = queue.Queue()
        self._logged = 0
        self._sounding: set[str] = set()  # cues the sender started and has not ended
        self._closers: list[Callable[[], None]] = []
        self._watchers: list[Callable[[], None]] = []
        self._mark_listeners: list[Callable[[MarkPassed, JieMark], None]] = []
        self._carry_out: dict[type, Callable[[Any], None]] = {
            StartCue: self._start_cue, HoldOutput: self._hold_output,
            ResumeOutput: self._resume_output, PanicOutput: self._panic_output,
        }
        self._on_event: dict[type, Callable[[Any], None]] = {
            MarkPassed: self._on_mark, CueEnded: self._on_ended, SenderFailed: self._on_failed,
            OutputLost: self._on_output_lost, OutputReconnected: self._on_output_regained,
            MessagesLate: self._on_late, OutputUnmuted: self._on_unmuted,
            OutputResumed: self._on_output_resumed,
        }

    @property
    def settings(self) -> Any:
        return self.plan.settings

    @property
    def quit(self) -> bool:
        """The show is to end (the operator quit)."""
        return self.operator.quit

    # lifecycle -----------------------------------------------------------------------------
    def open(self) -> Player:
        self.sender.open()
        for info in self.machine.cues:
            self._load(self.schedules[info.id])
        self.clock.load()
        self.delivery.t0 = time.perf_counter()
        self.log.show(self.rite.id, self.rite.title, [c.id for c in self.rite.cues],
                      self.delivery.t0, resumed=self.resumed)
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
            if self.clock.running and self.sender.alive:
                self.clock.stop()
            self.sender.close(panic=panic)
            self._drain_sender()
        finally:
            self.log.close()

    def __enter__(self) -> Player:
        return self.open()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:  # a signal (Ctrl-C, a kill) or an error ends the show
            self.log.write({"event": "interrupted", "t": time.perf_counter(),
                            "why": getattr(exc_type, "__name__", str(exc_type))})
        self.close(panic=exc_type is not None)

    def attach_peer(self, peer: PeerHooks) -> None:
        """Ask ``peer`` before every command (the hot-standby link, before ``open()``)."""
        self.peer = peer

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

    def act(self, actions: list[CueAction]) -> None:
        """Carry out the cue state machine's ``actions`` (a part that drives it, in the
        player's thread: the drum followed retimes a 射節)."""
        self._act(actions)

    def reload_cue(self, sched: CueSchedule) -> None:
        """Replace a cue's schedule before it starts (Link follow: a retimed 射節; the drum
        followed: a 射節 whose listening 節 the drum plays alone)."""
        self.schedules[sched.cue] = sched
        self._load(sched)

    def _load(self, sched: CueSchedule) -> None:
        """Hand a cue's schedule (with its 節 marks) to the sending process."""
        info = self.machine.cues[self.machine.index[sched.cue]]
        times, messages, marks = marked_schedule(sched)
        self.marks.add(sched.cue, marks)
        self.sender.load(sched.cue, times, messages,
                         sched.length_s if info.loops and not self.machine.auto else None)

    # what it shows -------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The state an OSC reply carries."""
        return state_of(self)

    def snapshot(self) -> Snapshot:
        """What the console shows."""
        return snapshot_of(self)

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
        while (not self.quit and self._sounding - {CLOCK_KEY}
               and time.perf_counter() < grace):
            time.sleep(0.01)
            self._drain_sender()
        self._flush_log()
        self.log.moment("done", time.perf_counter())

    # a command, carried out ----------------------------------------------------------------
    def _do(self, request: Request) -> None:
        """Carry out one command; show it, log it, answer it."""
        status = self.status
        with status.command():  # its own words, not what another thread says meanwhile
            at = request.at if request.at is not None else time.perf_counter() + self.lead_s
            refusal = (self.peer.offer(request.command, at, request.origin) if self.peer
                       else None)
            actions: list[CueAction] = []
            if refusal:
                status.refusal = refusal
            elif self.operator.obeys(request.command):
                actions = self.operator.obey(request.command, at, request.origin)
            elif isinstance(request.command, Begin):
                actions = self._begin(request.command, at)
                status.message = status.result or "the show begins"
            elif isinstance(request.command, TakeOver):
                self._take_over()
            self._act(actions)
        acted = not status.refusal
        result = status.refusal or status.result or outcome(actions) or "done"
        name = action_name(request.command)
        self.log.operator(name, request.origin, time.perf_counter(), result, acted)
        status.message = f"{request.origin or 'operator'} {name}: {result}"
        if request.reply is not None:
            request.reply({**self.state(), "message": result, "acted": acted})

    def _begin(self, command: Begin, now: float) -> list[CueAction]:
        if self.begun:
            self.status.refusal = "the show has begun"
            return []
        self.begun = True
        self.begun_at = now
        return self.machine.begin(now)

    def _take_over(self) -> None:
        """A muted backup goes live (the sender unmutes at once, where it is)."""
        if self.live:
            self.status.refusal = "this machine is live already"
            return
        self.live = True
        self.sender.muted = False
        self.sender.send(MuteOutput(False))
        self.status.message = "LIVE: this backup has taken over"

    # the state machine's actions, carried out ----------------------------------------------
    def _act(self, actions: list[CueAction]) -> None:
        for action in actions:
            self._carry_out.get(type(action), self.sender.send)(action)
        if self.machine.done:
            self.clock.stop()

    def _start_cue(self, action: StartCue) -> None:
        self.clock.start(action.t0)
        self.sender.send(action)
        self._sounding.add(action.key)

    def _hold_output(self, action: HoldOutput) -> None:
        self.sender.send(action)
        self.clock.hold()
        self.log.moment("hold", time.perf_counter())

    def _resume_output(self, action: ResumeOutput) -> None:
        self.clock.resume()
        self.sender.send(action)
        self.log.moment("resume", time.perf_counter())

    def _panic_output(self, action: PanicOutput) -> None:
        self.sender.send(action)
        self.clock.stop()
        self.log.panic(action.stage, time.perf_counter())

    # what the sender reports ---------------------------------------------------------------
    def _drain_sender(self) -> None:
        for event in self.sender.new_events():
            handler = self._on_event.get(type(event))
            if handler is not None:
                handler(event)

    def _on_mark(self, event: MarkPassed) -> None:
        mark = self.marks.passed(event)
        if mark is not None:
            self.log.jie(event.key, event.t, mark.k, mark.n, mark.cycle)
            for listener in self._mark_listeners:
                listener(event, mark)

    def _on_ended(self, event: CueEnded) -> None:
        self._sounding.discard(event.key)
        if event.key != CLOCK_KEY and event.lateness.count:
            self.log.sent(event)

    def _on_failed(self, event: SenderFailed) -> None:
        self.status.say(f"sender: {event.text}")

    def _on_output_lost(self, event: OutputLost) -> None:
        self.delivery.output_lost(event.t)
        self.log.moment("output-lost", event.t)
        self.status.say("OUTPUT LOST: nothing is heard (reconnecting)")

    def _on_output_regained(self, event: OutputReconnected) -> None:
        self.delivery.output_regained(event.t)
        self.log.moment("output-regained", event.t)
        self.status.say("output regained")

    def _on_output_resumed(self, event: OutputResumed) -> None:
        self.log.output_resumed(event.t, event.shift)

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

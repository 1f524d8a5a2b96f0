"""One sending process for a whole live show, fed cue by cue: the parent's handle on it.

A live show does not know its start times in advance (the operator's GO). ``ShowSender`` runs
one child process (``sequencer.live.sending.process``) with absolute deadlines on
``time.perf_counter()`` (CLOCK_MONOTONIC, shared by all processes); SIGINT/SIGTERM or any
exception there panic the port. The parent:

- ``load(key, times, messages, loop_s=None)``: hands over a cue's schedule (cue-relative
  seconds) ahead of time, at standby, in small chunks so that no single command takes long to
  read;
- ``send(command)``: any other sender command of ``sequencer.live.protocol`` — ``StartCue(key,
  t0)`` (a tiny command: a GO costs nothing in the loop; a ``follow`` cue is given its exact
  start before the previous cue ends, so cues join without a gap and in order: at equal
  deadlines the cue started first goes first), ``EndCueAt``, ``CancelCue``, ``RetimeCue``,
  ``HoldOutput``/``ResumeOutput``, ``PanicOutput(stage)``, ``SendNow(data)``;
- ``events()`` / ``new_events()`` / ``wait_for(kind)``: the sender events it reported.

If the process dies (killed, crashed), ``check()`` silences the destination from a new client
of the parent's own (``jack:``/``alsa:``; a virtual output died with the process) and raises
``SenderDied`` saying so; ``close()`` does the same for a process that had to be killed.

With ``record=True`` each ``CueEnded`` carries the (index, deadline, sent) of every message sent
(tests); otherwise an empty tuple.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import signal
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any, Self, TypeVar, cast

from cues.errors import UserError
from instruments.midi import check_message
from instruments.ports import (
    DEFAULT_CLIENT_NAME,
    DEFAULT_PORT_NAME,
    PortError,
    open_output,
    parse_spec,
)
from sequencer.live.protocol import (
    LoadCue,
    PanicOutput,
    QuitSender,
    Ready,
    SenderClosed,
    SenderCommand,
    SenderEvent,
    SenderFailed,
)
from sequencer.live.sending.parent_watch import reap
from sequencer.live.sending.process import run_sending_process

Schedule = Sequence[tuple[float, bytes]]
EventT = TypeVar("EventT")

CHUNK = 512  # messages per load command
REALTIME_PRIORITY = 20  # SCHED_FIFO if allowed (0: none)


class ScheduleError(UserError):
    """A schedule that cannot be sent: unsorted, negative or non-finite times, bad messages."""


class SenderError(RuntimeError):
    """The sending process failed (not the user's fault)."""


class SenderDied(UserError):
    """The sending process ended in the middle of the show (the message says whether the
    output could be silenced)."""


def check_schedule(schedule: Schedule) -> tuple[list[float], list[bytes]]:
    """Validate a cue's schedule (cue-relative seconds, sorted; complete MIDI messages or
    ``b""`` marks); returns its times and messages as two lists."""
    times: list[float] = []
    messages: list[bytes] = []
    previous = 0.0
    for i, item in enumerate(schedule):
        try:
            t, message = item
            t = float(t)
        except (TypeError, ValueError) as exc:
            raise ScheduleError(f"schedule[{i}]: expected (time_s, message bytes), got "
                                f"{item!r}") from exc
        if not math.isfinite(t) or t < 0:
            raise ScheduleError(f"schedule[{i}]: time {t!r} must be finite and >= 0 (times are "
                                "seconds from the cue's start, not deltas or clock times)")
        if t < previous:
            raise ScheduleError(f"schedule[{i}]: time {t} is before the previous {previous}: "
                                "the schedule must be sorted by time (seconds from the cue's "
                                "start, not deltas)")
        try:
            messages.append(b"" if message == b"" else check_message(message))
        except (TypeError, ValueError) as exc:
            raise ScheduleError(f"schedule[{i}] at {t} s: {exc}") from exc
        times.append(t)
        previous = t
    return times, messages


def check_ready(event: SenderEvent | None, timeout: float) -> Ready:
    """The sending process's first event: ``Ready``, or the failure it reported (a PortError
    when the user's output spec is at fault), or a time-out."""
    if event is None:
        raise SenderError(f"the sending process did not get ready in {timeout} s")
    if isinstance(event, SenderFailed):
        raise PortError(event.text) if event.user_fault else SenderError(event.text)
    assert isinstance(event, Ready)
    return event


class ShowSender:
    """The parent's handle on the show's sending process (see the module docstring)."""

    def __init__(self, spec: str, *, client_name: str = DEFAULT_CLIENT_NAME,
                 port_name: str = DEFAULT_PORT_NAME, realtime: int = REALTIME_PRIORITY,
                 options: dict[str, Any] | None = None, record: bool = False,
                 muted: bool = False) -> None:
        parse_spec(spec)
        self.muted = muted  # a hot-standby backup's: sends nothing until MuteOutput(False)
        self.spec = spec
        self.client_name, self.port_name = client_name, port_name
        self.realtime = realtime
        self.options = options
        self.record = record
        self.ready: Ready | None = None
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._ctrl: Connection | None = None
        self._events: list[SenderEvent] = []
        self._seen = 0
        self._rescued = False

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def open(self, timeout: float = 60.0) -> Self:
        if self._proc is not None:
            return self
        parent, child = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(target=run_sending_process, name="yuezheng-show-sender",
                                 daemon=True,
                                 args=(child, self.spec, self.client_name, self.port_name,
                                       self.realtime, self.options, self.record, self.muted))
        proc.start()
        child.close()
        self._proc, self._ctrl = proc, parent
        event = self.wait_for((Ready, SenderFailed), timeout)
        if event is None or isinstance(event, SenderFailed):
            self.close(1.0)
        self.ready = check_ready(event, timeout)
        return self

    def check(self) -> None:
        """Raise ``SenderDied`` if the process has ended on its own — after silencing the
        destination from a new client (see the module docstring)."""
        if self.alive or self._proc is None:
            return
        self._drain()
        code = self._proc.exitcode
        how = (f"killed by {signal.Signals(-code).name}" if code is not None and code < 0
               else f"exit status {code}")
        rescued = self._rescue()
        raise SenderDied(f"the sending process ended unexpectedly ({how}); " + (
            "the output was silenced from a new client" if rescued
            else "nothing could be silenced: its own output went with it"))

    # commands ------------------------------------------------------------------------------
    def load(self, key: str, times: Sequence[float], messages: Sequence[bytes],
             loop_s: float | None = None) -> None:
        """Hand over a cue's schedule (checked: ScheduleError names the first bad entry)."""
        if len(times) != len(messages):
            raise ScheduleError(f"cue {key}: {len(times)} times but {len(messages)} messages")
        checked_times, checked = check_schedule(list(zip(times, messages, strict=True)))
        for lo in range(0, max(len(checked_times), 1), CHUNK):
            self.send(LoadCue(key, loop_s, tuple(checked_times[lo:lo + CHUNK]),
                              tuple(checked[lo:lo + CHUNK]), lo == 0))

    def send(self, command: SenderCommand) -> None:
        if self._ctrl is None:
            raise SenderError("the sending process is not open")
        try:
            self._ctrl.send(command)
        except (OSError, EOFError):
            pass  # the child has gone; closing cleans up

    # events --------------------------------------------------------------------------------
    def events(self) -> list[SenderEvent]:
        """Every event the process has reported so far."""
        self._drain()
        return list(self._events)

    def new_events(self) -> list[SenderEvent]:
        """The events not returned by an earlier call."""
        self._drain()
        out = self._events[self._seen:]
        self._seen = len(self._events)
        return out

    def _first(self, since: int, kinds: type[EventT] | tuple[type, ...]) -> EventT | None:
        """The first event from ``since`` on of the class(es) ``kinds``."""
        for event in self._events[since:]:
            if isinstance(event, kinds):
                return cast(EventT, event)  # an instance of the class asked for
        return None

    def wait_for(self, kinds: type[EventT] | tuple[type, ...],
                 timeout: float) -> EventT | None:
        """The first event of the class(es) ``kinds`` reported from now on, or None after
        ``timeout`` (or once the process has ended and reported nothing more)."""
        deadline = time.perf_counter() + timeout
        since = len(self._events)
        while True:
            self._drain()
            found = self._first(since, kinds)
            since = len(self._events)
            if found is not None:
                return found
            left = deadline - time.perf_counter()
            if left <= 0 or self._ctrl is None or not self.alive:
                self._drain()
                return self._first(since, kinds)
            self._ctrl.poll(min(left, 0.05))

    def _drain(self) -> None:
        ctrl = self._ctrl
        if ctrl is None:
            return
        try:
            while ctrl.poll():
                self._events.append(ctrl.recv())
        except (EOFError, OSError):
            pass

    # the end -------------------------------------------------------------------------------
    def close(self, timeout: float = 3.0, *, panic: bool = False) -> None:
        """End the process: every cue ends with note-offs (``panic``: both panic stages first),
        then the port closes. Escalates to SIGTERM (the child panics) and SIGKILL."""
        proc = self._proc
        if proc is None:
            return
        if proc.is_alive():
            if panic:
                self.send(PanicOutput(2))
            self.send(QuitSender())
        reap(proc, timeout)
        self._drain()
        kinds = {type(e) for e in self._events}
        if Ready in kinds and SenderClosed not in kinds:
            self._rescue()  # it opened its port and did not close it: it was killed

    def _rescue(self) -> bool:
        """Silence the destination from a new client (not possible for a virtual output,
        which died with the process): both panic stages. True if it was done (once)."""
        spec = parse_spec(self.spec)
        if spec.virtual or self.muted:  # a muted backup's output never sounded
            return False
        if not self._rescued:
            try:
                with open_output(spec, client_name=f"{self.client_name}-rescue") as port:
                    port.panic()
            except (UserError, OSError):
                return False
            self._rescued = True
        return True

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close(panic=exc[0] is not None)

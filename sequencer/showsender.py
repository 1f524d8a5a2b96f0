"""One sending process for a whole live show, fed cue by cue.

A live show does not know its start times in advance (the operator's GO). ``ShowSender`` runs a
child process with absolute deadlines on ``time.perf_counter()`` (CLOCK_MONOTONIC, shared by all
processes): it sleeps in ``select`` on the control pipe until a little before each deadline,
then spins (with ``sched_yield`` when the output's audio callback, JACK or pyo, runs in the
same process and needs the GIL); GC is frozen and disabled; SIGINT/SIGTERM or any exception
panic the port. The parent can:

- ``load(key, times, messages, loop_s=None)``: hand over a cue's schedule (cue-relative seconds)
  ahead of time, at standby, in small chunks so that no single command takes long to read;
- ``go(key, t0)``: start it at the absolute time ``t0`` (a tiny command: a GO costs nothing in
  the loop); a ``follow`` cue is given its exact start before the previous cue ends, so cues
  join without a gap and in order (equal deadlines: the cue started first goes first);
- ``end_at(key, t)``: end a (looping) cue at absolute time ``t`` — what is sent before ``t`` is
  sent, then the cue's sounding notes get note-offs (a 樂闋 stop at a rest point);
- ``cancel(key)``: end it now (note-offs for its notes);
- ``retime(key, at_s, factor)``: from cue-relative ``at_s`` on, the rest of the cue is stretched
  by ``factor`` (a tempo nudge from the next 耦 cycle of a 射節);
- ``hold()`` / ``resume()``: stop and release the sounding notes; on resume every later
  deadline moves by the time held;
- ``panic(stage)``: stage 1 ends every cue with note-offs for what sounds; stage 2 also sends CC
  123 and 120 on all 16 channels;
- ``send_now(data)``: one message at once (MIDI clock start/stop).

A cue with ``loop_s`` starts over every ``loop_s`` seconds until ended. When a cue ends (run out,
``end_at``, ``cancel``), channels it bent are set back to the centre unless another running cue
uses them, so the next cue starts from the state a MIDI file assumes.

With ``record=True`` each "ended" event carries the cue's (index, deadline, sent) of every
message sent (tests); otherwise an empty tuple. ``missed`` counts the messages a frame-accurate
output could not put on their frame (handed over too late) since the show began.

Marks: a message ``b""`` in a schedule is not sent; the child reports ``("mark", key, index,
deadline, t)`` when it passes it (``t`` the time it got there: the 節 of the show log).

Events (child → parent, ``events()``): ("ready",), ("started", key, t), ("mark", …),
("ended", key, t, (count, p50, p99, max lateness in s), records, missed), ("held", t),
("resumed", t, shift), ("panicked", stage, t), ("closed", t),
("error", kind, text).
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Self

from cues.errors import UserError
from instruments.midi import all_off_messages, check_message
from instruments.ports import (
    DEFAULT_CLIENT_NAME,
    DEFAULT_PORT_NAME,
    OutputPort,
    open_output,
    parse_spec,
)
from sequencer.childproc import ChildHandle, SendingChild, check_ready

Schedule = Sequence[tuple[float, bytes]]

CHUNK = 512  # messages per load command
SLACK_S = 0.003  # housekeeping only when the next deadline is at least this far away
MAINTAIN_EVERY_S = 0.5
REALTIME_PRIORITY = 20  # SCHED_FIFO if allowed (0: none)
# spin the last 2 ms before a send: wake-ups from select() on this shared VM came up to 2.5 ms
# late with the 1 ms of sequencer.clock.SPIN_S (p99 send lateness 2.5 ms; 2 ms: see README)
SPIN_S = 0.002
YIELD_SPIN_S = 0.002  # before a deadline, when the port's callback needs the GIL (_loop)


class ScheduleError(UserError):
    """A schedule that cannot be sent: unsorted, negative or non-finite times, bad messages."""


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


@dataclass
class _Cue:
    key: str
    seq: int
    times: list[float]
    messages: list[bytes]
    loop_s: float | None
    origin: float | None = None  # absolute start (before the held shift)
    i: int = 0
    end_at: float | None = None
    sounding: set[tuple[int, int]] = field(default_factory=set)
    bent: set[int] = field(default_factory=set)
    late: list[float] = field(default_factory=list)  # send lateness of each message, seconds
    sent: list[tuple[int, float, float]] = field(default_factory=list)  # when recording

    def deadline(self, shift: float) -> float:
        assert self.origin is not None
        if self.i < len(self.times):
            d = self.origin + self.times[self.i] + shift
        elif self.loop_s:
            d = self.origin + self.loop_s + shift  # wraps (never reached: wrap() is eager)
        else:
            d = -math.inf  # ran out: end now
        if self.end_at is not None and self.end_at + shift <= d:
            return self.end_at + shift
        return d


class _Child(SendingChild):
    def __init__(self, spec: str, client_name: str, port_name: str, ctrl: Connection,
                 realtime: int = 0, options: dict[str, Any] | None = None,
                 record: bool = False) -> None:
        super().__init__(ctrl, spec, client_name, port_name, realtime, options)
        self.record = record
        self.cues: dict[str, _Cue] = {}
        self.active: list[_Cue] = []
        self.seq = 0
        self.shift = 0.0
        self.held_at: float | None = None
        self.outbox: list[tuple[Any, ...]] = []

    def _flush(self, final: bool = False) -> None:
        for event in self.outbox:
            self._event(*event)
        self.outbox.clear()

    def _run(self) -> bool:
        return self._loop()

    def _handle(self, cmd: tuple[Any, ...]) -> bool | None:
        """Do one command; returns True/False to end the loop (normal/abnormal)."""
        what = cmd[0]
        perf = time.perf_counter
        port = self.port
        if what == "load":
            _, key, loop_s, times, messages, first = cmd
            cue = self.cues.get(key)
            if first or cue is None:
                self.seq += 1
                cue = self.cues[key] = _Cue(key, self.seq, [], [], loop_s)
            cue.times.extend(times)
            cue.messages.extend(messages)
        elif what == "go":
            _, key, t0 = cmd
            cue = self.cues.get(key)
            if cue is not None and cue not in self.active:
                self.seq += 1
                cue.seq, cue.origin, cue.i, cue.end_at = self.seq, float(t0) - self.shift, 0, None
                self.active.append(cue)
                self.outbox.append(("started", key, float(t0)))
        elif what == "end_at":
            cue = self.cues.get(cmd[1])
            if cue is not None and cue in self.active:
                cue.end_at = float(cmd[2]) - self.shift
        elif what == "cancel":
            cue = self.cues.get(cmd[1])
            if cue is not None and cue in self.active:
                self._end(cue, perf())
        elif what == "retime":
            _, key, at_s, factor = cmd
            cue = self.cues.get(key)
            if cue is not None:
                times = cue.times
                for j in range(cue.i, len(times)):
                    if times[j] >= at_s:
                        times[j] = at_s + (times[j] - at_s) * factor
                if cue.loop_s is not None and cue.loop_s > at_s:
                    cue.loop_s = at_s + (cue.loop_s - at_s) * factor
        elif what == "hold":
            if self.held_at is None:
                port.release_notes()
                for cue in self.active:
                    cue.sounding.clear()
                self.held_at = perf()
                self.outbox.append(("held", self.held_at))
        elif what == "resume":
            if self.held_at is not None:
                self.shift += perf() - self.held_at
                self.held_at = None
                self.outbox.append(("resumed", perf(), self.shift))
        elif what == "send":
            port.send(check_message(cmd[1]))
        elif what == "panic":
            now = perf()
            for cue in list(self.active):
                self._end(cue, now, center=False)
            port.release_notes()
            if cmd[1] >= 2:
                for data in all_off_messages():
                    port.send(data)
            self.outbox.append(("panicked", cmd[1], perf()))
        elif what == "quit":
            for cue in list(self.active):
                self._end(cue, perf())
            return True
        elif what == "signal":
            return False
        return None

    def _end(self, cue: _Cue, now: float, center: bool = True) -> None:
        port = self.port
        for ch, key in sorted(cue.sounding):
            port.send(bytes((0x80 | ch, key, 0)))
        cue.sounding.clear()
        self.active.remove(cue)
        if center:
            busy = {ch for other in self.active for ch in other.bent}
            for ch in sorted(cue.bent - busy):
                port.send(bytes((0xE0 | ch, 0, 0x40)))
        cue.bent.clear()
        late = sorted(cue.late)
        stats = (len(late), late[len(late) // 2], late[min(len(late) - 1, int(0.99 * len(late)))],
                 late[-1]) if late else (0, 0.0, 0.0, 0.0)
        cue.late = []
        sent, cue.sent = tuple(cue.sent), []
        missed = int(getattr(self.port, "late", 0))  # a frame-accurate port's late messages
        self.outbox.append(("ended", cue.key, now, stats, sent, missed))

    # the loop ------------------------------------------------------------------------------
    def _loop(self) -> bool:
        perf = time.perf_counter
        port: OutputPort = self.port
        # a port with an audio callback in this process (JACK through ctypes, pyo) needs the
        # GIL once a period: the last stretch is spun with sched_yield, which lets go of it at
        # every turn (a frame-accurate port also absorbs any lateness into its latency)
        yielding = port.callback_needs_gil
        spin = YIELD_SPIN_S if yielding else SPIN_S
        sched_yield = os.sched_yield
        last_maintain = perf()
        while True:
            nxt: _Cue | None = None
            deadline = math.inf
            if self.held_at is None:
                for cue in self.active:
                    d = cue.deadline(self.shift)
                    if d < deadline or (d == deadline and nxt is not None and cue.seq < nxt.seq):
                        deadline, nxt = d, cue
            now = perf()
            remaining = deadline - now
            if remaining > spin:
                if remaining >= SLACK_S:
                    if self.outbox:
                        self._flush()
                        continue
                    if now - last_maintain >= MAINTAIN_EVERY_S:
                        change = port.maintain()
                        if change:
                            self.outbox.append((change, perf()))
                        last_maintain = perf()
                        continue
                timeout = min(remaining - spin, 0.25)
                if self._readable(timeout):
                    if perf() >= deadline:
                        continue  # a message fell due meanwhile: it goes before the command
                    cmd = self._command()
                    if cmd is not None:
                        done = self._handle(cmd)
                        if done is not None:
                            return done
                continue
            assert nxt is not None
            if yielding:
                while perf() < deadline:
                    sched_yield()
            else:
                while perf() < deadline:
                    pass
            self._step(nxt, deadline)

    def _step(self, cue: _Cue, deadline: float) -> None:
        """Send the cue's next message (or end or wrap it) at ``deadline``."""
        if cue.end_at is not None and cue.end_at + self.shift <= deadline:
            self._end(cue, time.perf_counter())
            return
        if cue.i >= len(cue.times):
            if cue.loop_s:
                assert cue.origin is not None
                cue.origin += cue.loop_s
                cue.i = 0
            else:
                self._end(cue, time.perf_counter())
            return
        data = cue.messages[cue.i]
        index = cue.i
        cue.i += 1
        if data:
            self.port.send(data, deadline)
            sent = time.perf_counter()
            cue.late.append(sent - deadline)
            if self.record:
                cue.sent.append((index, deadline, sent))
            kind, ch = data[0] & 0xF0, data[0] & 0x0F
            if kind == 0x90 and data[2]:
                cue.sounding.add((ch, data[1]))
            elif kind == 0x80 or kind == 0x90:
                cue.sounding.discard((ch, data[1]))
            elif kind == 0xE0:
                cue.bent.add(ch)
        else:
            self.outbox.append(("mark", cue.key, index, deadline, time.perf_counter()))
        if cue.i >= len(cue.times) and cue.loop_s:
            assert cue.origin is not None
            cue.origin += cue.loop_s
            cue.i = 0


def _child_entry(spec: str, client_name: str, port_name: str, ctrl: Connection,
                 realtime: int, options: dict[str, Any] | None = None,
                 record: bool = False) -> None:
    _Child(spec, client_name, port_name, ctrl, realtime, options, record).main()


class ShowSender(ChildHandle):
    """The parent's handle on the show's sending process (see the module docstring)."""

    def __init__(self, spec: str, *, client_name: str = DEFAULT_CLIENT_NAME,
                 port_name: str = DEFAULT_PORT_NAME, realtime: int = REALTIME_PRIORITY,
                 options: dict[str, Any] | None = None, record: bool = False) -> None:
        parse_spec(spec)
        self.realtime = realtime
        self.options = options
        self.record = record
        self.spec = spec
        self.client_name, self.port_name = client_name, port_name
        super().__init__()
        self._ctx = mp.get_context("spawn")
        self._seen = 0
        self.ready_info: tuple[Any, ...] | None = None

    def open(self, timeout: float = 60.0) -> Self:
        if self._proc is not None:
            return self
        parent, child = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(target=_child_entry, name="yuezheng-show-sender", daemon=True,
                                 args=(self.spec, self.client_name, self.port_name, child,
                                       self.realtime, self.options, self.record))
        proc.start()
        child.close()
        self._proc, self._ctrl = proc, parent
        event = self._wait_event(("ready", "error"), timeout)
        if event is None or event[0] == "error":
            self.close(1.0)
        self.ready_info = check_ready(event, timeout)
        return self

    # commands ------------------------------------------------------------------------------
    def load(self, key: str, times: list[float] | tuple[float, ...],
             messages: list[bytes] | tuple[bytes, ...], loop_s: float | None = None) -> None:
        """Hand over a cue's schedule (checked: ScheduleError names the first bad entry)."""
        if len(times) != len(messages):
            raise ScheduleError(f"cue {key}: {len(times)} times but {len(messages)} messages")
        times, messages = check_schedule(list(zip(times, messages, strict=True)))
        n = len(times)
        for lo in range(0, max(n, 1), CHUNK):
            self._command("load", key, loop_s, list(times[lo:lo + CHUNK]),
                          list(messages[lo:lo + CHUNK]), lo == 0)

    def go(self, key: str, t0: float) -> None:
        self._command("go", key, t0)

    def end_at(self, key: str, t: float) -> None:
        self._command("end_at", key, t)

    def cancel(self, key: str) -> None:
        self._command("cancel", key)

    def retime(self, key: str, at_s: float, factor: float) -> None:
        self._command("retime", key, at_s, factor)

    def hold(self) -> None:
        self._command("hold")

    def resume(self) -> None:
        self._command("resume")

    def panic(self, stage: int) -> None:
        self._command("panic", stage)

    def send_now(self, data: bytes) -> None:
        self._command("send", bytes(data))

    # state ---------------------------------------------------------------------------------
    def new_events(self) -> list[tuple[Any, ...]]:
        """The events not returned by an earlier call."""
        self._drain()
        out = self._events[self._seen:]
        self._seen = len(self._events)
        return out

    def fileno(self) -> int | None:
        return None if self._ctrl is None else self._ctrl.fileno()

    def close(self, timeout: float = 3.0, *, panic: bool = False) -> None:
        """End the process: every cue ends with note-offs (``panic``: both panic stages first),
        then the port closes. Escalates to SIGTERM (the child panics) and SIGKILL."""
        proc = self._proc
        if proc is None:
            return
        if proc.is_alive():
            if panic:
                self._command("panic", 2)
            self._command("quit")
        proc.join(timeout)
        if proc.is_alive():
            proc.terminate()
            proc.join(1.0)
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)
            self._rescue()
        self._drain()

    def _rescue(self) -> None:
        """The child was killed: silence the destination from a new client (not possible for a
        virtual output, which died with the child)."""
        spec = parse_spec(self.spec)
        if spec.virtual:
            return
        try:
            with open_output(spec, client_name=f"{self.client_name}-rescue") as port:
                port.panic()
                for data in all_off_messages():
                    port.send(data)
        except (UserError, OSError):
            pass

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close(panic=exc[0] is not None)

"""The sending loop: a pre-compiled schedule sent on time, in its own process.

A schedule is a sequence of ``(time_s, message_bytes)`` sorted by time, relative to a start
time. ``Sender`` runs it in a child process (another Python thread in the same process costs up
to 5 ms per event through the GIL): the child opens the port, reports ready, waits for an
absolute start time on ``time.perf_counter()`` (CLOCK_MONOTONIC, shared by all processes),
freezes and disables the garbage collector, and waits for each deadline by sleeping (in
``select`` on its control pipe, so a command wakes it at once) to about a millisecond before,
then spinning.

Control (parent → child, a pipe): start, hold (stop sending, release the sounding notes),
resume (the rest of the schedule moves later by the time held), panic (both panic stages at
once, then end), stop (end; note-offs for what is sounding). SIGINT, SIGTERM or any exception
in the child also panic and close. The parent's ``stop()`` always joins the child, escalating to
SIGTERM then SIGKILL, and after a SIGKILL it silences the destination itself.

Reports (child → parent, a second pipe, written non-blocking in batches when the loop has time
to spare): for each message its index, its deadline (start + time + held time) and the moment
of the send call; ``SentRecord.lateness`` is the difference. Status events (ready, lost,
reconnected, held, resumed, panicked, done, closed, error) come back on the control pipe.

``send_schedule(port, schedule, clock)`` is the same loop in the calling thread, with an
injectable clock; tests use it with ``FakeClock`` for exact expected orders.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import struct
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Literal, Self

from cues.errors import UserError
from instruments.ports import (
    DEFAULT_CLIENT_NAME,
    DEFAULT_PORT_NAME,
    OutputPort,
    check_message,
    open_output,
    parse_spec,
)
from sequencer.childproc import ChildHandle, SendingChild, check_ready
from sequencer.clock import SPIN_S, Clock

Schedule = Sequence[tuple[float, bytes]]
StartMethod = Literal["spawn", "fork", "forkserver"]

MAINTAIN_EVERY_S = 0.5  # connection check when the loop has slack; forced after 1 s
MAINTAIN_FORCE_S = 1.0
SLACK_S = 0.003  # housekeeping only when the next deadline is at least this far away
FLUSH_EVERY_S = 0.1
FLUSH_BATCH = 256
_RECORD = struct.Struct("<Idd")  # index, deadline, sent


class ScheduleError(UserError):
    """A schedule that cannot be sent: unsorted, negative or non-finite times, bad messages."""


@dataclass(frozen=True)
class SentRecord:
    """One message as sent: its index in the schedule, its deadline and the send call time
    (absolute seconds on ``time.perf_counter()`` or the clock given)."""

    index: int
    deadline: float
    sent: float

    @property
    def lateness(self) -> float:
        return self.sent - self.deadline


def check_schedule(schedule: Schedule) -> tuple[list[float], list[bytes]]:
    """Validate a schedule; returns its times and messages as two lists."""
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
                                "seconds from the start, not deltas or absolute clock times)")
        if t < previous:
            raise ScheduleError(f"schedule[{i}]: time {t} is before the previous {previous}: "
                                "the schedule must be sorted by time (absolute times from the "
                                "start, not deltas)")
        try:
            messages.append(check_message(message))
        except (TypeError, ValueError) as exc:
            raise ScheduleError(f"schedule[{i}] at {t} s: {exc}") from exc
        times.append(t)
        previous = t
    return times, messages


# ── same process ───────────────────────────────────────────────────────────────────────────────

def send_schedule(
    port: OutputPort, schedule: Schedule, clock: Clock, *, start: float | None = None,
    cancel: threading.Event | None = None, maintain_every: float = MAINTAIN_EVERY_S,
) -> list[SentRecord]:
    """Send ``schedule`` on ``port`` (already open) in this thread, at ``start`` + time.

    ``start`` defaults to ``clock.now()``. Returns a record per message sent. When ``cancel``
    is set, or anything raises, the port is panicked (note-offs, then CC 123/120) before
    returning or re-raising; the port stays open (its owner closes it).
    """
    times, messages = check_schedule(schedule)
    t0 = clock.now() if start is None else start
    records: list[SentRecord] = []
    last_maintain = clock.now()
    try:
        for i, (t, message) in enumerate(zip(times, messages, strict=True)):
            deadline = t0 + t
            now = clock.now()
            if now - last_maintain >= maintain_every and deadline - now >= SLACK_S:
                port.maintain()
                last_maintain = now
            if not clock.wait_until(deadline, cancel):
                port.panic()
                break
            sent = clock.now()
            port.send(message)
            records.append(SentRecord(i, deadline, sent))
    except BaseException:
        port.panic()
        raise
    return records


# ── the child process ──────────────────────────────────────────────────────────────────────────

@dataclass(frozen=True)
class _Options:
    spec: str
    client_name: str
    port_name: str
    maintain_every: float
    realtime: int  # SCHED_FIFO priority, 0 for none
    spin_s: float


class _Child(SendingChild):
    """Runs in the sender process."""

    def __init__(self, opts: _Options, times: list[float], messages: list[bytes],
                 ctrl: Connection, reports: Connection) -> None:
        super().__init__(ctrl, opts.spec, opts.client_name, opts.port_name, opts.realtime)
        self.opts = opts
        self.times = times
        self.messages = messages
        self.report_fd = reports.fileno()
        os.set_blocking(self.report_fd, False)
        self._reports_conn = reports  # keep the fd open
        self.pending = bytearray()

    def _flush(self, final: bool = False) -> None:
        deadline = time.perf_counter() + 1.0
        while self.pending:
            try:
                n = os.write(self.report_fd, self.pending)
            except BlockingIOError:
                n = 0
            except OSError:  # the parent is gone
                self.pending.clear()
                return
            del self.pending[:n]
            if not final or time.perf_counter() > deadline:
                return
            if n == 0:
                time.sleep(0.005)

    def _run(self) -> bool:
        t0 = self._wait_start()
        if t0 is not None:
            return self._play(t0)
        return self.signalled is None

    def _wait_start(self) -> float | None:
        while True:
            self._readable(1.0)
            cmd = self._command()
            if cmd is None:
                continue
            if cmd[0] == "start":
                return float(cmd[1])
            if cmd[0] in ("stop", "panic", "signal"):
                return None
            # hold/resume before the start are meaningless: ignore them

    def _play(self, t0: float) -> bool:
        """The loop. Returns True when it ended normally (schedule done or stopped)."""
        port = self.port
        assert port is not None
        perf = time.perf_counter
        times, messages = self.times, self.messages
        n = len(times)
        spin = 0.0 if port.frame_accurate else self.opts.spin_s  # see ShowSender._loop
        pack = _RECORD.pack
        pending = self.pending
        i = 0
        shift = 0.0
        held_at: float | None = None
        last_maintain = last_flush = perf()
        unflushed = 0
        while True:
            if held_at is None:
                if i >= n:
                    self._event("done", perf())
                    return True
                deadline = t0 + times[i] + shift
            else:
                deadline = math.inf
            now = perf()
            remaining = deadline - now
            if remaining > spin:
                if remaining >= SLACK_S:
                    if now - last_maintain >= self.opts.maintain_every:
                        self._maintain()
                        last_maintain = perf()
                        continue
                    if unflushed and (unflushed >= FLUSH_BATCH
                                      or now - last_flush >= FLUSH_EVERY_S):
                        self._flush()
                        unflushed = 0
                        last_flush = perf()
                        continue
                timeout = min(remaining - spin,
                              max(0.0, last_maintain + self.opts.maintain_every - now) + 0.001,
                              0.5)
                if self._readable(timeout):
                    if perf() >= deadline:
                        continue  # a message fell due meanwhile: it goes before the command
                    cmd = self._command()
                    if cmd is None:
                        continue
                    what = cmd[0]
                    if what == "hold":
                        if held_at is None:
                            port.release_notes()
                            held_at = perf()
                            self._event("held", held_at)
                    elif what == "resume":
                        if held_at is not None:
                            shift += perf() - held_at
                            held_at = None
                            self._event("resumed", perf(), shift)
                    elif what == "panic":
                        port.panic()
                        self._event("panicked", perf())
                        return True
                    elif what == "stop":
                        return True
                    elif what == "signal":
                        return False
                continue
            while perf() < deadline:
                pass
            sent = perf()
            port.send(messages[i], deadline)
            pending += pack(i, deadline, sent)
            unflushed += 1
            i += 1
            if sent - last_maintain >= MAINTAIN_FORCE_S:  # a dense schedule: check anyway
                self._maintain()
                last_maintain = perf()

    def _maintain(self) -> None:
        assert self.port is not None
        change = self.port.maintain()
        if change:
            self._event(change, time.perf_counter())


def _child_entry(opts: _Options, times: list[float], messages: list[bytes], ctrl: Connection,
                 reports: Connection, parent_ends: tuple[Connection, ...]) -> None:
    for conn in parent_ends:  # fork copies the parent's ends; close them so EOF can be seen
        conn.close()
    _Child(opts, times, messages, ctrl, reports).main()


# ── the parent's handle ────────────────────────────────────────────────────────────────────────

class Sender(ChildHandle):
    """A schedule sent by a child process. Building it checks the spec and the schedule; the
    process starts with ``open()`` (or ``start()``, or ``with``).

    >>> with Sender("jack:synth:in", [(0.0, b"\\x90\\x3c\\x64"), (0.5, b"\\x80\\x3c\\x00")]) as s:
    ...     s.start()
    ...     s.wait()
    """

    def __init__(
        self, spec: str, schedule: Schedule, *, client_name: str = DEFAULT_CLIENT_NAME,
        port_name: str = DEFAULT_PORT_NAME, method: StartMethod = "spawn",
        realtime: int = 0, maintain_every: float = MAINTAIN_EVERY_S, spin_s: float = SPIN_S,
    ) -> None:
        parse_spec(spec)
        self._times, self._messages = check_schedule(schedule)
        if not 0 < maintain_every <= MAINTAIN_FORCE_S:
            raise ValueError("maintain_every must be in (0, 1] seconds")
        self._opts = _Options(spec, client_name, port_name, maintain_every, realtime, spin_s)
        super().__init__()
        self._ctx = mp.get_context(method)
        self._reports_r: Connection | None = None
        self._buf = bytearray()
        self._records: list[SentRecord] = []
        self.start_time: float | None = None
        self.ready_info: tuple[Any, ...] | None = None

    # lifecycle ---------------------------------------------------------------------------
    def open(self, timeout: float = 20.0) -> Self:
        """Start the process and wait until its port is open."""
        if self._proc is not None:
            return self
        ctrl_parent, ctrl_child = self._ctx.Pipe(duplex=True)
        rep_r, rep_w = self._ctx.Pipe(duplex=False)
        parent_ends = (ctrl_parent, rep_r) if self._ctx.get_start_method() == "fork" else ()
        proc = self._ctx.Process(
            target=_child_entry, name="yuezheng-sender", daemon=True,
            args=(self._opts, self._times, self._messages, ctrl_child, rep_w, parent_ends),
        )
        proc.start()
        ctrl_child.close()
        rep_w.close()
        os.set_blocking(rep_r.fileno(), False)
        self._proc, self._ctrl, self._reports_r = proc, ctrl_parent, rep_r
        event = self._wait_event(("ready", "error"), timeout)
        if event is None or event[0] == "error":
            self._join(1.0)
        self.ready_info = check_ready(event, timeout)
        return self

    def start(self, at: float | None = None, *, lead: float = 0.05) -> float:
        """Begin sending at absolute time ``at`` (``time.perf_counter()``), by default ``lead``
        seconds from now. Opens the process first if needed. Returns the start time."""
        self.open()
        t0 = time.perf_counter() + lead if at is None else float(at)
        self._command("start", t0)
        self.start_time = t0
        return t0

    def hold(self) -> None:
        """Stop sending and release the sounding notes; ``resume()`` continues later."""
        self._command("hold")

    def resume(self) -> None:
        """Continue after ``hold()``; the rest of the schedule moves by the time held."""
        self._command("resume")

    def panic(self, timeout: float = 0.2) -> None:
        """Silence now (note-offs, then CC 123 and 120 on every channel) and end the run."""
        if self.alive:
            self._command("panic")
            if self._wait_event(("panicked", "closed"), timeout) is None:
                self._proc.terminate()  # SIGTERM: the child panics on its way out
        self.stop()

    def stop(self, timeout: float = 2.0) -> list[SentRecord]:
        """End the run (note-offs for what is sounding), join the process, return all
        reports. Escalates to SIGTERM, then SIGKILL; after a SIGKILL silences it itself."""
        if self._proc is None:
            return list(self._records)
        if self._proc.is_alive():
            self._command("stop")
        self._join(timeout)
        self.reports()
        return list(self._records)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the schedule to finish; True if the process has ended."""
        if self._proc is None:
            return True
        deadline = None if timeout is None else time.perf_counter() + timeout
        while self._proc.is_alive():
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0:
                return False
            self._proc.join(0.1 if left is None else min(left, 0.1))
            self.reports()  # keep the report pipe drained
        self._join(1.0)
        return True

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # state -------------------------------------------------------------------------------
    @property
    def exitcode(self) -> int | None:
        return None if self._proc is None else self._proc.exitcode

    def reports(self) -> list[SentRecord]:
        """All send reports received so far (drains the report pipe)."""
        r = self._reports_r
        if r is not None:
            fd = r.fileno()
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except (BlockingIOError, OSError):
                    break
                if not chunk:
                    break
                self._buf += chunk
            size = _RECORD.size
            whole = len(self._buf) - len(self._buf) % size
            for index, deadline, sent in _RECORD.iter_unpack(bytes(self._buf[:whole])):
                self._records.append(SentRecord(index, deadline, sent))
            del self._buf[:whole]
        return list(self._records)

    # internals ---------------------------------------------------------------------------
    def _join(self, timeout: float) -> None:
        proc = self._proc
        proc.join(timeout)
        if proc.is_alive():
            proc.terminate()
            proc.join(1.0)
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)
            self.reports()
            self._silence_after_kill()
        self._drain()
        self.reports()

    def _silence_after_kill(self) -> None:
        """The child died without closing: silence the destination from here (only possible
        for outputs that connect to an existing port)."""
        spec = parse_spec(self._opts.spec)
        if spec.virtual:
            return
        sounding: set[tuple[int, int]] = set()
        for rec in self._records:
            data = self._messages[rec.index]
            kind, ch = data[0] & 0xF0, data[0] & 0x0F
            if kind == 0x90 and data[2] > 0:
                sounding.add((ch, data[1]))
            elif kind in (0x80, 0x90):
                sounding.discard((ch, data[1]))
        try:
            with open_output(spec, client_name=f"{self._opts.client_name}-rescue") as port:
                for ch, key in sorted(sounding):
                    port.send(bytes((0x80 | ch, key, 0)))
                port.panic()
        except (UserError, OSError):
            pass

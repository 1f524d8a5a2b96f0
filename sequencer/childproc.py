"""The plumbing of a sending process (``showsender.ShowSender``), both sides of it.

A sending process opens its MIDI output, raises itself to SCHED_FIFO when asked (falling back
silently), freezes and disables garbage collection, and runs its loop; SIGINT and SIGTERM wake
its ``select`` through a wake-up pipe, and whatever way it ends it silences what it started
(panic on an abnormal end) and closes the port. Subclasses fill ``_run`` (the loop; True when it
ended normally) and, if they batch reports, ``_flush``.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

from cues.errors import UserError
from instruments.ports import OutputPort, PortError, open_output


class SenderError(RuntimeError):
    """A sending process failed (not the user's fault)."""


def check_ready(event: tuple[Any, ...] | None, timeout: float) -> tuple[Any, ...]:
    """The parent's view of a child's first event: its ("ready", …) event, or the error it
    reported (a PortError when the user's output spec is at fault), or a time-out."""
    if event is None:
        raise SenderError(f"the sending process did not get ready in {timeout} s")
    if event[0] == "error":
        if event[1] == "user":
            raise PortError(str(event[2]))
        raise SenderError(str(event[2]))
    return event


def set_realtime(priority: int) -> bool:
    """SCHED_FIFO at ``priority`` for this process (0: leave it); False where refused."""
    if not priority:
        return False
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return True
    except (OSError, AttributeError):
        return False


class ChildHandle:
    """The parent's side of a sending process: its control pipe and the events it reports.

    Subclasses start ``_proc`` and set ``_ctrl`` (the parent's end of the duplex pipe)."""

    def __init__(self) -> None:
        self._proc: Any = None
        self._ctrl: Connection | None = None
        self._events: list[tuple[Any, ...]] = []

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def events(self) -> list[tuple[Any, ...]]:
        """Every status event the child has reported so far (("ready", …), ("lost", t),
        ("reconnected", t), ("panicked", t), ("closed", t), ("error", …), …)."""
        self._drain()
        return list(self._events)

    def _command(self, *cmd: object) -> None:
        if self._ctrl is None:
            raise SenderError("the sending process is not open")
        try:
            self._ctrl.send(cmd)
        except (OSError, EOFError):
            pass  # the child has gone; stopping cleans up

    def _drain(self) -> None:
        ctrl = self._ctrl
        if ctrl is None:
            return
        try:
            while ctrl.poll():
                self._events.append(tuple(ctrl.recv()))
        except (EOFError, OSError):
            pass

    def _wait_event(self, kinds: tuple[str, ...], timeout: float) -> tuple[Any, ...] | None:
        """The first event of one of ``kinds`` reported from now on, or None after ``timeout``
        (or once the process has ended and reported nothing more)."""
        deadline = time.perf_counter() + timeout
        since = len(self._events)
        while True:
            self._drain()
            for event in self._events[since:]:
                if event[0] in kinds:
                    return event
            since = len(self._events)
            left = deadline - time.perf_counter()
            if left <= 0 or self._ctrl is None or not self.alive:
                self._drain()
                for event in self._events[since:]:
                    if event[0] in kinds:
                        return event
                return None
            self._ctrl.poll(min(left, 0.05))


class SendingChild:
    """Runs in a sending process: the control pipe, signals, the port's life."""

    #: the command read when the parent's end of the control pipe is gone
    eof_command: tuple[str, ...] = ("quit",)

    def __init__(self, ctrl: Connection, spec: str, client_name: str, port_name: str,
                 realtime: int = 0, options: dict[str, Any] | None = None) -> None:
        self.ctrl = ctrl
        self.spec, self.client_name, self.port_name = spec, client_name, port_name
        self.options = dict(options or {})  # for open_output (the pyo output's notes)
        self.realtime = realtime
        self.signalled: int | None = None
        self.wake_r = -1
        self.port: OutputPort | None = None

    # to fill in ----------------------------------------------------------------------------
    def _run(self) -> bool:
        """The loop; True when it ended normally (nothing to silence beyond closing)."""
        raise NotImplementedError

    def _flush(self, final: bool = False) -> None:
        """Send batched reports to the parent (``final``: the process is ending)."""

    # plumbing ------------------------------------------------------------------------------
    def _on_signal(self, signum: int, frame: Any) -> None:
        self.signalled = signum

    def _event(self, *event: object) -> None:
        try:
            self.ctrl.send(event)
        except (OSError, EOFError):
            pass

    def _readable(self, timeout: float | None) -> bool:
        """Wait for a control message or a signal; True if one is there."""
        if self.signalled is not None:
            return True
        try:
            ready, _, _ = select.select([self.ctrl, self.wake_r], [], [], timeout)
        except InterruptedError:
            return True
        if self.wake_r in ready:
            try:
                os.read(self.wake_r, 512)
            except BlockingIOError:
                pass
        return bool(ready)

    def _command(self) -> tuple[Any, ...] | None:
        """The next control command; ("signal",) after a signal, ``eof_command`` when the
        parent is gone, None if nothing is there."""
        if self.signalled is not None:
            return ("signal",)
        try:
            if self.ctrl.poll():
                return tuple(self.ctrl.recv())
        except (EOFError, OSError):
            return self.eof_command
        return None

    # main ----------------------------------------------------------------------------------
    def main(self) -> None:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        self.wake_r = wake_r
        try:
            port = open_output(self.spec, client_name=self.client_name, port_name=self.port_name,
                               **self.options)
            port.open()
        except UserError as exc:
            self._event("error", "user", str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
            self._event("error", "internal", f"{type(exc).__name__}: {exc}")
            return
        self.port = port
        # a JACK port's process callback (another thread here) needs the GIL once a period:
        # hand it over within 0.5 ms rather than the default 5 ms
        sys.setswitchinterval(0.0005)
        abnormal = True
        try:
            rt = set_realtime(self.realtime)
            self._event("ready", getattr(port, "own_name", None),
                        getattr(port, "destination", None), rt)
            gc.collect()
            gc.freeze()
            gc.disable()
            abnormal = not self._run()
        except BaseException as exc:
            self._event("error", "internal", f"{type(exc).__name__}: {exc}")
            raise
        finally:
            try:
                if abnormal:
                    port.panic()
                port.close()
            finally:
                self._flush(final=True)
                self._event("closed", time.perf_counter())

"""The parent's handle on the hearing process (``sequencer.live.hearing.process``): start it,
read the strokes it reports, end it.

``open()`` waits for the input to be ready (``HearingReady``) and raises ``UserError`` with the
child's words when ``--hear`` names something that cannot be heard (no such JACK port, an
unreadable file); ``new_events()`` returns what came since the last call; ``close()`` asks the
process to end and escalates to SIGTERM and SIGKILL.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from multiprocessing.connection import Connection
from typing import Any, Self

from cues.errors import UserError
from sequencer.check.stroke_stream import DEFAULT_REFRACTORY_S
from sequencer.live.hearing.process import run_hearing_process
from sequencer.live.hearing.source import HearSpec
from sequencer.live.protocol import (
    HearFrom,
    HearingEvent,
    HearingFailed,
    HearingReady,
    QuitHearing,
)
from sequencer.live.sending.parent_watch import reap

CLIENT_NAME = "yuezheng-hear"


class HearingError(RuntimeError):
    """The hearing process failed (not the user's fault)."""


class Hearer:
    """The parent's handle (see the module docstring)."""

    def __init__(self, spec: HearSpec, *, extra_latency_s: float = 0.0,
                 refractory_s: float = DEFAULT_REFRACTORY_S,
                 client_name: str = CLIENT_NAME) -> None:
        self.spec = spec
        self.extra_latency_s = extra_latency_s
        self.refractory_s = refractory_s
        self.client_name = client_name
        self.ready: HearingReady | None = None
        self.failed: HearingFailed | None = None  # what ended it while the show ran
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._ctrl: Connection | None = None
        self._pending: list[HearingEvent] = []

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def open(self, timeout: float = 30.0) -> Self:
        parent, child = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(target=run_hearing_process, name="yuezheng-hear", daemon=True,
                                 args=(child, self.spec, self.client_name, self.refractory_s,
                                       self.extra_latency_s))
        proc.start()
        child.close()
        self._proc, self._ctrl = proc, parent
        deadline = time.perf_counter() + timeout
        while self.ready is None:
            left = deadline - time.perf_counter()
            if left <= 0 or not (self.alive or parent.poll()):
                self.close()
                raise HearingError(f"the hearing process did not get ready in {timeout:g} s")
            if not parent.poll(min(left, 0.1)):
                continue
            try:
                event = parent.recv()
            except (EOFError, OSError):
                self.close()
                raise HearingError("the hearing process ended before its input was ready"
                                   ) from None
            if isinstance(event, HearingFailed):
                self.close()
                if event.user_fault:
                    raise UserError(event.text)
                raise HearingError(event.text)
            if isinstance(event, HearingReady):
                self.ready = event
            else:
                self._pending.append(event)
        return self

    def hear_from(self, t0: float) -> None:
        """A file's first sample sounds at ``t0`` (show clock); nothing for a JACK input."""
        self._send(HearFrom(t0))

    def new_events(self) -> list[HearingEvent]:
        """What the process reported since the last call (a failure also in ``failed``)."""
        out, self._pending = self._pending, []
        ctrl = self._ctrl
        if ctrl is None:
            return out
        try:
            while ctrl.poll():
                event = ctrl.recv()
                if isinstance(event, HearingFailed):
                    self.failed = event
                out.append(event)
        except (EOFError, OSError):
            pass
        return out

    def _send(self, command: Any) -> None:
        if self._ctrl is not None:
            try:
                self._ctrl.send(command)
            except (OSError, EOFError):
                pass

    def close(self, timeout: float = 3.0) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.is_alive():
            self._send(QuitHearing())
        reap(proc, timeout)
        self._proc = None

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

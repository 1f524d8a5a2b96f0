"""``JackMidiClient``: an activated JACK client with one MIDI output port fed with deadlines
(the client of ``instruments.ports.jack``), on the bindings of ``instruments.ports.jacklib``.
Its process callback is Python: it needs the GIL once per period.
"""

from __future__ import annotations

import time
from collections import deque

from instruments.midi import is_all_off, is_note_off
from instruments.ports.jacklib import (
    LATENCY_PERIODS,
    MIDI_TYPE,
    PORT_IS_OUTPUT,
    ActiveClient,
    cycle_on_perf_clock,
)
from instruments.ports.resend import RecentWrites

# messages written in one period at most: the process callback is Python, and thousands of
# writes in one period overrun it (an xrun); 128 a period (24,000 a second at 256 frames /
# 48 kHz, eight times MIDI's wire rate) — a panic's 32 controllers fit with room to spare
MAX_WRITES = 128


class JackMidiClient(ActiveClient):
    """An activated JACK client with one MIDI output port fed with deadlines.

    ``send(data, at)``: queue ``data`` for the frame of ``at + latency`` (``at`` None: now).
    Nothing queued is dropped while the server runs: a message due in a cycle this client did
    not run (an xrun) is written at the start of the next, counted in ``late``; one that does
    not fit a full period (``MAX_WRITES``, or the port buffer) waits, first in line, for the
    next period (``deferred`` counts the periods that were full); after
    an xrun the closing messages of the last cycles are written again, first in line
    (``instruments.ports.resend``; counted in ``xruns`` and ``resent``).
    Also a ``JackWatch`` (listing, connections, connect) on the same client."""

    def __init__(self, client_name: str, port_name: str,
                 latency_periods: int = LATENCY_PERIODS) -> None:
        super().__init__(client_name)
        self.port_name = port_name
        self.latency_periods = latency_periods
        self.latency_s = 0.0
        self.own_name: str | None = None
        self.late = 0  # messages that missed their frame (handed over too late)
        self.deferred = 0  # messages moved to a later period because a buffer was full
        self.cycles = 0
        self.resent = 0  # closing messages written again after an xrun
        self._queue: deque[tuple[float, bytes]] = deque()
        self._again: deque[bytes] = deque()  # to write again, before the queue
        self._recent = RecentWrites()
        self._xruns_seen = 0
        self._followup: int | None = None  # the cycle of the second resend after an xrun
        self._last_target = 0.0
        self._port: int | None = None
        self._frames = 0
        self._rate = 0

    def open(self) -> JackMidiClient:
        super().open()
        self._port, self.own_name = self._register(self.port_name, MIDI_TYPE,
                                                   PORT_IS_OUTPUT)
        self._frames, self._rate = self.period()
        self.latency_s = self.latency_periods * self._frames / self._rate
        self._activate()
        return self

    @property
    def period_s(self) -> float:
        return self._frames / self._rate if self._rate else 0.0


    def pending(self) -> int:
        return len(self._queue) + len(self._again)

    def closing_pending(self) -> list[bytes]:
        """The note-offs and all-offs still queued (carried to a new client when the server
        went away: ``instruments.ports.jack``)."""
        return [data for data in (*self._again, *(d for _, d in self._queue))
                if is_note_off(data) or is_all_off(data)]

    def send(self, data: bytes, at: float | None = None) -> None:
        """Queue one message for the frame of ``at`` (default: now) plus the latency; frames
        never go backwards, so messages leave in the order they were queued."""
        target = (time.perf_counter() if at is None else at) + self.latency_s
        if target < self._last_target:
            target = self._last_target
        self._last_target = target
        self._queue.append((target, bytes(data)))

    def drain(self, timeout: float = 1.0) -> bool:
        """Wait until every queued message has been written to JACK and ``RESEND_CYCLES``
        more cycles have run without an xrun (so the last ones were delivered, or written
        again after the xrun that may have lost them)."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline and not self.server_gone:
            if self.pending() or self.xruns != self._xruns_seen or self._followup is not None:
                time.sleep(0.002)
                continue
            # cycles counted, not timed: a late cycle under load still counts once
            cycles, xruns = self.cycles + self._recent.cycles, self.xruns
            while (self.cycles < cycles and self.xruns == xruns and not self.pending()
                   and time.perf_counter() < deadline and not self.server_gone):
                time.sleep(0.001)
            if self.cycles >= cycles and self.xruns == xruns and not self.pending():
                break
        return not self.pending()

    # the JACK thread ---------------------------------------------------------------------------
    def _process(self, nframes: int, _arg: object) -> int:
        try:
            lib = self._lib
            buf = lib.jack_port_get_buffer(self._port, nframes)
            lib.jack_midi_clear_buffer(buf)
            self.cycles += 1
            recent = self._recent
            recent.forget_before(self.cycles)
            if self.xruns != self._xruns_seen:  # now, and once more after the window: the
                self._xruns_seen = self.xruns  # cycle after the notice can be lost too
                self._followup = self.cycles + recent.cycles - 1  # (this cycle in its window)
                self._resend()
            elif self._followup == self.cycles:
                self._followup = None
                self._resend()
            queue = self._queue
            if not (queue or self._again):
                return 0
            room = self._write_again(buf, MAX_WRITES)
            if room:
                self._write_due(buf, nframes, room)
        except Exception:  # nothing may escape into JACK's thread
            return 0
        return 0

    def _write_due(self, buf: int, nframes: int, room: int) -> None:
        """Write the queue's messages due in this period, each on its frame, at most
        ``room`` of them (the rest wait for the next period, first in line)."""
        queue, recent = self._queue, self._recent
        start, span = cycle_on_perf_clock(self._lib, self._client or 0, nframes, self._rate)
        end = start + span
        last = 0
        write = self._lib.jack_midi_event_write
        while queue and queue[0][0] < end:
            target, data = queue[0]
            if target < start:
                offset = 0
                if target < start - 1.0 / self._rate:
                    self.late += 1
            else:
                offset = min(nframes - 1, int((target - start) / span * nframes))
            if offset < last:
                offset = last
            if not room or write(buf, offset, data, len(data)) != 0:
                self.deferred += 1  # the period is full: the rest go next period
                return
            room -= 1
            last = offset
            queue.popleft()
            recent.wrote(self.cycles, data)

    def _resend(self) -> None:
        again = self._again
        for data in self._recent.closing():
            if data not in again:
                again.append(data)
                self.resent += 1

    def _write_again(self, buf: int, room: int) -> int:
        """Write what an xrun may have lost at frame 0, at most ``room`` messages; the room
        left (0: the period is full, the rest and the queue wait for the next)."""
        again, write = self._again, self._lib.jack_midi_event_write
        while again:
            data = again[0]
            if not room or write(buf, 0, data, len(data)) != 0:
                self.deferred += 1
                return 0
            room -= 1
            again.popleft()
            self._recent.wrote(self.cycles, data)
        return room

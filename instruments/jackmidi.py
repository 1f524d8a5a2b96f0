"""A JACK MIDI output that places every message on the frame of its deadline.

rtmidi's JACK output writes each message at frame 0 of the first period after it was sent, so
what a synth receives is quantized to the period (5.33 ms at 256 frames / 48 kHz) and carries
the sender's wake-up jitter. This client does what a DAW does instead: a message handed over
with its deadline ``t`` (a ``time.perf_counter()`` time) is written at the frame of ``t +
latency`` in the period that holds it, the latency being a constant ``LATENCY_PERIODS`` periods
(16 ms at 256 frames / 48 kHz: sound travels 5.5 m in that time). A message handed over up to
``latency − 1 period`` (10.7 ms) after its deadline — a sender woken late by a busy machine —
still lands on its exact frame; later than that it goes out at the start of the next period
and is counted in ``late``. (Two periods left too little room on this shared VM: a wake-up
5.8 ms late was seen.)

Messages leave in the order they were handed over (a frame is never earlier than the previous
message's), so a panic's note-offs, handed over after the notes they end, always follow them.

The JACK process callback is Python (ctypes): it needs the GIL once per period, so the sending
loop using this port must not hold the GIL while it waits (``callback_needs_gil``: ShowSender's
loop sleeps in ``select`` and spins its last 2 ms with ``sched_yield``, which lets the GIL go
at every turn; exactness comes from the frame placement, not from the wake-up).

Clock: JACK's cycle times are in ``jack_get_time()`` microseconds; each period maps them to
``perf_counter`` by reading both clocks together, so the two need not share an epoch.
"""

from __future__ import annotations

import ctypes
import time
from collections import deque

from instruments.ports import JackWatch, PortError, RtMidiOutput, _choose

LATENCY_PERIODS = 3
_JACK_PORT_IS_OUTPUT = 0x2
_JACK_PORT_IS_INPUT = 0x1
_MIDI_TYPE = b"8 bit raw midi"

_PROCESS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)


class _MidiEvent(ctypes.Structure):
    _fields_ = [("time", ctypes.c_uint32), ("size", ctypes.c_size_t),
                ("buffer", ctypes.c_void_p)]


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    if getattr(lib, "_yz_midi_bound", False):
        return lib
    lib.jack_port_register.restype = ctypes.c_void_p
    lib.jack_port_register.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                       ctypes.c_ulong, ctypes.c_ulong]
    lib.jack_port_name.restype = ctypes.c_char_p
    lib.jack_port_name.argtypes = [ctypes.c_void_p]
    lib.jack_set_process_callback.argtypes = [ctypes.c_void_p, _PROCESS, ctypes.c_void_p]
    lib.jack_activate.argtypes = [ctypes.c_void_p]
    lib.jack_deactivate.argtypes = [ctypes.c_void_p]
    lib.jack_port_get_buffer.restype = ctypes.c_void_p
    lib.jack_port_get_buffer.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.jack_midi_clear_buffer.argtypes = [ctypes.c_void_p]
    lib.jack_midi_event_write.restype = ctypes.c_int
    lib.jack_midi_event_write.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_char_p,
                                          ctypes.c_size_t]
    lib.jack_midi_get_event_count.restype = ctypes.c_uint32
    lib.jack_midi_get_event_count.argtypes = [ctypes.c_void_p]
    lib.jack_get_cycle_times.restype = ctypes.c_int
    lib.jack_get_cycle_times.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64),
        ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_float)]
    lib.jack_get_time.restype = ctypes.c_uint64
    lib.jack_get_time.argtypes = []
    lib.jack_last_frame_time.restype = ctypes.c_uint32
    lib.jack_last_frame_time.argtypes = [ctypes.c_void_p]
    lib.jack_midi_event_get.restype = ctypes.c_int
    lib.jack_midi_event_get.argtypes = [ctypes.POINTER(_MidiEvent), ctypes.c_void_p,
                                        ctypes.c_uint32]
    lib._yz_midi_bound = True
    return lib


def cycle_on_perf_clock(lib: ctypes.CDLL, client: int, nframes: int,
                        rate: int) -> tuple[float, float]:
    """(start, length) in seconds of the current period on ``time.perf_counter``'s clock, by
    JACK's estimate of its cycle times (call it from the process callback)."""
    frames = ctypes.c_uint32()
    cur = ctypes.c_uint64()
    nxt = ctypes.c_uint64()
    per = ctypes.c_float()
    perf_now = time.perf_counter()
    jack_now = lib.jack_get_time()
    if lib.jack_get_cycle_times(client, ctypes.byref(frames), ctypes.byref(cur),
                                ctypes.byref(nxt), ctypes.byref(per)) != 0:
        return perf_now, nframes / rate
    return cur.value * 1e-6 + (perf_now - jack_now * 1e-6), (nxt.value - cur.value) * 1e-6


class ActiveClient(JackWatch):
    """A JACK client with ports and a Python process callback ``_process(nframes, arg)``."""

    def __init__(self, client_name: str) -> None:
        super().__init__(client_name)
        self._callback = _PROCESS(self._process)  # kept: JACK calls it until close
        self._active = False

    def _process(self, nframes: int, _arg: object) -> int:
        return 0

    def _register(self, name: str, kind: bytes, flags: int) -> tuple[int, str]:
        """Register a port; (its handle, its full name). Closes the client on failure."""
        lib = _bind(self._load())
        port = lib.jack_port_register(self._client, name.encode(), kind, flags, 0)
        if not port:
            super().close()
            raise PortError(f"JACK refused the port {name!r}")
        return port, lib.jack_port_name(port).decode("utf-8", "replace")

    def _activate(self) -> None:
        lib = self._load()
        if (lib.jack_set_process_callback(self._client, self._callback, None) != 0
                or lib.jack_activate(self._client) != 0):
            super().close()
            raise PortError("JACK refused to activate the client")
        self._active = True

    def close(self) -> None:
        if self._client and self._active:
            self._load().jack_deactivate(self._client)
            self._active = False
        super().close()


class JackMidiClient(ActiveClient):
    """An activated JACK client with one MIDI output port fed with deadlines.

    ``send(data, at)``: queue ``data`` for the frame of ``at + latency`` (``at`` None: now).
    Also a ``JackWatch`` (listing, connections, connect) on the same client."""

    frame_accurate = True

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
        self._queue: deque[tuple[float, bytes]] = deque()
        self._last_target = 0.0
        self._port: int | None = None
        self._frames = 0
        self._rate = 0

    def open(self) -> JackMidiClient:
        super().open()
        self._port, self.own_name = self._register(self.port_name, _MIDI_TYPE,
                                                   _JACK_PORT_IS_OUTPUT)
        self._frames, self._rate = self.period()
        self.latency_s = self.latency_periods * self._frames / self._rate
        self._activate()
        return self

    @property
    def period_s(self) -> float:
        return self._frames / self._rate if self._rate else 0.0

    def pending(self) -> int:
        return len(self._queue)

    def send(self, data: bytes, at: float | None = None) -> None:
        """Queue one message for the frame of ``at`` (default: now) plus the latency; frames
        never go backwards, so messages leave in the order they were queued."""
        target = (time.perf_counter() if at is None else at) + self.latency_s
        if target < self._last_target:
            target = self._last_target
        self._last_target = target
        self._queue.append((target, bytes(data)))

    def drain(self, timeout: float = 1.0) -> bool:
        """Wait until every queued message has been written to JACK (and one more period has
        passed, so the last one has been delivered)."""
        deadline = time.perf_counter() + timeout
        while self._queue and time.perf_counter() < deadline:
            time.sleep(0.002)
        time.sleep(2 * self.period_s)
        return not self._queue

    # the JACK thread ---------------------------------------------------------------------------
    def _process(self, nframes: int, _arg: object) -> int:
        try:
            lib = self._lib
            buf = lib.jack_port_get_buffer(self._port, nframes)
            lib.jack_midi_clear_buffer(buf)
            self.cycles += 1
            queue = self._queue
            if not queue:
                return 0
            start, span = cycle_on_perf_clock(lib, self._client, nframes, self._rate)
            end = start + span
            last = 0
            write = lib.jack_midi_event_write
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
                if write(buf, offset, data, len(data)) != 0:
                    self.deferred += 1  # the port buffer is full: the rest go next period
                    break
                last = offset
                queue.popleft()
        except Exception:  # noqa: BLE001 - nothing may escape into JACK's thread
            return 0
        return 0


class JackMidiInput(ActiveClient):
    """A JACK MIDI input that stamps each message with its exact frame (for tests and the
    jitter benchmark): ``messages`` holds (frame, bytes, perf, t), the frame being JACK's frame
    counter at the message (``last_frame_time`` + its offset), ``perf`` the
    ``time.perf_counter()`` of the period that brought it, and ``t`` the frame's time on the
    ``perf_counter`` clock by JACK's own estimate of its cycle times (what a listener hears:
    an audio clock runs a little faster or slower than its nominal rate, the dummy driver's
    by about 40 ppm here, so frame / rate drifts from real time)."""

    def __init__(self, client_name: str, port_name: str = "in") -> None:
        super().__init__(client_name)
        self.port_name = port_name
        self.own_name: str | None = None
        self.messages: list[tuple[int, bytes, float, float]] = []
        self._port: int | None = None
        self.rate = 0

    def open(self) -> JackMidiInput:
        super().open()
        self._port, self.own_name = self._register(self.port_name, _MIDI_TYPE,
                                                   _JACK_PORT_IS_INPUT)
        self.rate = self.period()[1]
        self._activate()
        return self

    def _process(self, nframes: int, _arg: object) -> int:
        try:
            lib = self._lib
            buf = lib.jack_port_get_buffer(self._port, nframes)
            n = lib.jack_midi_get_event_count(buf)
            if n:
                now = time.perf_counter()
                start, span = cycle_on_perf_clock(lib, self._client, nframes, self.rate)
                step = span / nframes
                base = lib.jack_last_frame_time(self._client)
                event = _MidiEvent()
                for i in range(n):
                    if lib.jack_midi_event_get(ctypes.byref(event), buf, i) == 0:
                        self.messages.append(
                            (base + event.time, ctypes.string_at(event.buffer, event.size), now,
                             start + event.time * step))
        except Exception:  # noqa: BLE001 - nothing may escape into JACK's thread
            return 0
        return 0


class JackOutput(RtMidiOutput):
    """A ``jack:`` or ``jack-virtual:`` output on ``JackMidiClient``: frame-accurate sends with
    a constant latency, and the connection upkeep of ``RtMidiOutput`` (the client itself watches
    its connection)."""

    frame_accurate = True
    callback_needs_gil = True

    def _open(self) -> None:
        try:
            client = JackMidiClient(self.client_name, self.port_name).open()
        except OSError as exc:
            raise PortError(f"libjack is not usable ({exc}): install JACK "
                            "(Debian: jackd2)") from exc
        try:
            if not self.spec.virtual:
                inputs = client.midi_ports(inputs=True)
                self.destination = inputs[_choose(inputs, self.spec.name, "jack")]
                if not client.connect(str(client.own_name), self.destination):
                    raise PortError(f"JACK refused to connect {client.own_name} to "
                                    f"{self.destination}")
        except BaseException:
            client.close()
            raise
        self._out = self._watch = client
        self.own_name = client.own_name
        self._drain_s = max(0.01, 3 * client.period_s + 0.005)
        self._connected = True
        self._cut = set()
        self._settle()

    @property
    def latency_s(self) -> float:
        return self._out.latency_s if self._out is not None else 0.0

    @property
    def late(self) -> int:
        return self._out.late if self._out is not None else 0

    def _send(self, data: bytes) -> None:
        self._out.send(data)

    def _send_at(self, data: bytes, at: float | None) -> None:
        self._out.send(data, at)

    def _close(self) -> None:
        client, self._out, self._watch = self._out, None, None
        self._connected = False
        if client is not None:
            client.drain(timeout=1.0)
            client.close()

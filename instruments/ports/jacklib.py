"""libjack through ctypes: the bindings (one function), ``JackWatch`` (a client that lists
ports and connections and connects them), the activated client with a Python process callback,
the mapping of JACK's cycle times onto ``time.perf_counter``, and ``JackMidiInput`` (a receiver
that stamps each message with its frame: the tests' and the jitter benchmark's). The MIDI
output fed with deadlines is ``instruments.ports.jackout.JackMidiClient``.

The process callbacks are Python: they need the GIL once per period.

A JACK server that goes away (killed, restarted) tells each activated client through its
shutdown callback: ``server_gone`` is then True, and that client is only dropped (closing it
is skipped: libjack can crash there); a new one has to be opened. libjack's own error and info
messages (such as "Cannot connect to server socket" while a server is down) are not printed:
a failure is reported by the caller, once. ``connect()`` counts a connection that already
exists (a patchbay made it first) as made.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import time
from collections import deque
from typing import Any, Self

from instruments.ports.base import NO_JACK_ADVICE, PortError

LATENCY_PERIODS = 3
XRUN_TIMES_KEPT = 10_000  # the moments of the last xruns a client keeps (80 KB at most)
NO_START_SERVER = 0x01
PORT_IS_INPUT = 0x1
PORT_IS_OUTPUT = 0x2
MIDI_TYPE = b"8 bit raw midi"
AUDIO_TYPE = b"32 bit float mono audio"

_PROCESS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)
_SHUTDOWN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_MESSAGE = ctypes.CFUNCTYPE(None, ctypes.c_char_p)
XRUN_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class _MidiEvent(ctypes.Structure):
    _fields_ = [("time", ctypes.c_uint32), ("size", ctypes.c_size_t),
                ("buffer", ctypes.c_void_p)]


_P = ctypes.c_void_p
_U32 = ctypes.c_uint32
_U64_P = ctypes.POINTER(ctypes.c_uint64)
#: libjack's functions used here: name → (result type, argument types)
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "jack_client_open": (_P, [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]),
    "jack_client_close": (ctypes.c_int, [_P]),
    "jack_get_ports": (ctypes.POINTER(ctypes.c_char_p),
                       [_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong]),
    "jack_port_by_name": (_P, [_P, ctypes.c_char_p]),
    "jack_port_get_all_connections": (ctypes.POINTER(ctypes.c_char_p), [_P, _P]),
    "jack_connect": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p]),
    "jack_free": (None, [_P]),
    "jack_get_buffer_size": (_U32, [_P]),
    "jack_get_sample_rate": (_U32, [_P]),
    "jack_port_register": (_P, [_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                                ctypes.c_ulong]),
    "jack_port_name": (ctypes.c_char_p, [_P]),
    "jack_set_process_callback": (ctypes.c_int, [_P, _PROCESS, _P]),
    "jack_on_shutdown": (None, [_P, _SHUTDOWN, _P]),
    "jack_set_xrun_callback": (ctypes.c_int, [_P, XRUN_CALLBACK, _P]),
    "jack_set_error_function": (None, [_MESSAGE]),
    "jack_set_info_function": (None, [_MESSAGE]),
    "jack_activate": (ctypes.c_int, [_P]),
    "jack_deactivate": (ctypes.c_int, [_P]),
    "jack_port_get_buffer": (_P, [_P, _U32]),
    "jack_midi_clear_buffer": (None, [_P]),
    "jack_midi_event_write": (ctypes.c_int, [_P, _U32, ctypes.c_char_p, ctypes.c_size_t]),
    "jack_midi_get_event_count": (_U32, [_P]),
    "jack_get_cycle_times": (ctypes.c_int, [_P, ctypes.POINTER(_U32), _U64_P, _U64_P,
                                            ctypes.POINTER(ctypes.c_float)]),
    "jack_get_time": (ctypes.c_uint64, []),
    "jack_last_frame_time": (_U32, [_P]),
    "jack_midi_event_get": (ctypes.c_int, [ctypes.POINTER(_MidiEvent), _P, _U32]),
}


@_MESSAGE
def _quiet(message: bytes) -> None:
    """libjack's error and info messages, not printed (see the module docstring)."""


@functools.cache
def libjack() -> Any:
    """libjack with the signatures of every function used here (OSError when missing)."""
    lib = ctypes.CDLL(ctypes.util.find_library("jack") or "libjack.so.0")
    for name, (restype, argtypes) in _SIGNATURES.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    lib.jack_set_error_function(_quiet)
    lib.jack_set_info_function(_quiet)
    return lib


class JackWatch:
    """A libjack client that lists MIDI and audio ports and their connections and connects
    ports (the pyo output finds and connects its ports with one; the activated clients below
    build on it). Opening it never starts a server."""

    def __init__(self, client_name: str = "yuezheng-watch") -> None:
        self._client: int | None = None
        self._name = client_name
        self._lib: Any = None

    def open(self) -> Self:
        """Open the client (loads libjack: OSError when it is not installed)."""
        lib = self._lib = libjack()
        status = ctypes.c_int(0)
        client = lib.jack_client_open(self._name.encode(), NO_START_SERVER,
                                      ctypes.byref(status))
        if not client:
            raise PortError(f"the JACK server is not running: {NO_JACK_ADVICE}")
        self._client = client
        return self

    def close(self) -> None:
        if self._client:
            self._lib.jack_client_close(self._client)
            self._client = None

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _strings(self, ptr: Any) -> list[str]:
        if not ptr:
            return []
        out: list[str] = []
        i = 0
        while ptr[i]:
            out.append(ptr[i].decode("utf-8", "replace"))
            i += 1
        self._lib.jack_free(ctypes.cast(ptr, ctypes.c_void_p))
        return out

    def _ports(self, kind: bytes, inputs: bool) -> list[str]:
        flags = PORT_IS_INPUT if inputs else PORT_IS_OUTPUT
        return self._strings(self._lib.jack_get_ports(self._client, None, kind, flags))

    def midi_ports(self, *, inputs: bool) -> list[str]:
        return self._ports(MIDI_TYPE, inputs)

    def audio_ports(self, *, inputs: bool) -> list[str]:
        return self._ports(AUDIO_TYPE, inputs)

    def connections(self, port_name: str) -> list[str]:
        lib = self._lib
        port = lib.jack_port_by_name(self._client, port_name.encode())
        if not port:
            return []
        return self._strings(lib.jack_port_get_all_connections(self._client, port))

    def connect(self, source: str, destination: str) -> bool:
        """Connect two ports; True also when they already were (EEXIST)."""
        result = self._lib.jack_connect(self._client, source.encode(), destination.encode())
        return result in (0, errno.EEXIST)

    def period(self) -> tuple[int, int]:
        """(frames per period, sample rate) of the running server."""
        lib = self._lib
        return lib.jack_get_buffer_size(self._client), lib.jack_get_sample_rate(self._client)


def jack_running() -> bool:
    """Whether a JACK server answers (never starts one)."""
    try:
        with JackWatch("yuezheng-probe"):
            return True
    except (PortError, OSError):
        return False


def jack_period() -> tuple[int, int]:
    """(frames per period, sample rate) of the running JACK server."""
    with JackWatch("yuezheng-probe") as watch:
        return watch.period()


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
    """A JACK client with ports and a Python process callback ``_process(nframes, arg)``;
    ``xruns`` counts the xruns the server reported while it ran (JACK's own count: a timing
    test tells a dropout of the machine's from a fault of ours by it); ``xrun_times`` holds
    the ``time.perf_counter()`` of the last ``XRUN_TIMES_KEPT`` notices (a little after each
    xrun: JACK tells its clients from another thread), to tell which moments it spoiled."""

    def __init__(self, client_name: str) -> None:
        super().__init__(client_name)
        self._callback = _PROCESS(self._process)  # kept: JACK calls it until close
        self._on_shutdown = _SHUTDOWN(self._server_gone)
        self._on_xrun = XRUN_CALLBACK(self._xrun)  # kept too
        self._active = False
        self.server_gone = False
        self.xruns = 0
        self.xrun_times: deque[float] = deque(maxlen=XRUN_TIMES_KEPT)

    def _server_gone(self, _arg: object) -> None:
        self.server_gone = True

    def _xrun(self, _arg: object) -> int:
        self.xruns += 1
        self.xrun_times.append(time.perf_counter())
        return 0

    def _process(self, nframes: int, _arg: object) -> int:
        return 0

    def _register(self, name: str, kind: bytes, flags: int) -> tuple[int, str]:
        """Register a port; (its handle, its full name). Closes the client on failure."""
        lib = self._lib
        port = lib.jack_port_register(self._client, name.encode(), kind, flags, 0)
        if not port:
            super().close()
            raise PortError(f"JACK refused the port {name!r}")
        return port, lib.jack_port_name(port).decode("utf-8", "replace")

    def _activate(self) -> None:
        lib = self._lib
        lib.jack_on_shutdown(self._client, self._on_shutdown, None)
        lib.jack_set_xrun_callback(self._client, self._on_xrun, None)
        if (lib.jack_set_process_callback(self._client, self._callback, None) != 0
                or lib.jack_activate(self._client) != 0):
            super().close()
            raise PortError("JACK refused to activate the client")
        self._active = True

    def close(self) -> None:
        if self.server_gone:  # libjack may crash closing a client of a dead server: let it be
            self._client = None
        if self._client and self._active:
            self._lib.jack_deactivate(self._client)
            self._active = False
        super().close()


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
        self._port, self.own_name = self._register(self.port_name, MIDI_TYPE,
                                                   PORT_IS_INPUT)
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
                start, span = cycle_on_perf_clock(lib, self._client or 0, nframes, self.rate)
                step = span / nframes
                base = lib.jack_last_frame_time(self._client)
                event = _MidiEvent()
                for i in range(n):
                    if lib.jack_midi_event_get(ctypes.byref(event), buf, i) == 0:
                        self.messages.append(
                            (base + event.time, ctypes.string_at(event.buffer, event.size), now,
                             start + event.time * step))
        except Exception:  # nothing may escape into JACK's thread
            return 0
        return 0

"""JACK audio ports through ctypes (on ``instruments.ports.jacklib``): ``JackAudioInput``, one
audio input read on JACK's own cycle (the drum heard, ``live --hear jack:PORT``), and
``JackAudioPlayer``, one audio output that plays a signal from a given frame (a drum recording
fed into a port: rehearsal, tests, benchmarks).

Why ctypes and not the JACK-Client package: the MIDI output and the tests' receivers already
stand on these bindings (one libjack, one way of mapping JACK's frames onto
``time.perf_counter``, one way of telling a dead server); an audio port is four more functions.

``JackAudioInput``'s process callback copies each period out with what places it in time — the
period's first frame (JACK's frame counter), and the period's start and length on the
``perf_counter`` clock by JACK's own estimate of its cycle times — and wakes the reader through
a pipe; nothing else happens in JACK's thread. A period the client did not run (an xrun) leaves a
gap in the frame numbers, which the reader sees (``Period.frame``) and counts; the server's own
xruns are counted in ``xruns`` (``ActiveClient``) and their frames kept in ``xrun_frames``.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from instruments.ports.base import PortError
from instruments.ports.jacklib import (
    AUDIO_TYPE,
    PORT_IS_INPUT,
    PORT_IS_OUTPUT,
    ActiveClient,
    cycle_on_perf_clock,
    libjack,
)

CAPTURE_LATENCY = 0  # jack_latency_callback_mode_t: JackCaptureLatency
MAX_QUEUED = 4096  # periods kept for a reader that fell behind (21 s at 256 / 48 kHz)


class _LatencyRange(ctypes.Structure):
    _fields_ = [("min", ctypes.c_uint32), ("max", ctypes.c_uint32)]


def _latency_function() -> Any:
    lib = libjack()
    function = lib.jack_port_get_latency_range
    function.restype = None
    function.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(_LatencyRange)]
    return function


def _frame_time_function() -> Any:
    lib = libjack()
    function = lib.jack_frame_time
    function.restype = ctypes.c_uint32
    function.argtypes = [ctypes.c_void_p]
    return function


def _stamped_xrun(client: ActiveClient, frames: list[int]) -> None:
    """Count an xrun (``ActiveClient``) and keep the JACK frame it came at."""
    try:
        frames.append(int(_frame_time_function()(client._client)))
    except Exception:  # nothing may escape into JACK's thread
        pass


@dataclass(frozen=True)
class Period:
    """One period of audio as the input got it: its first frame (JACK's frame counter, which
    wraps at 2³²), its samples, and its start and length on the ``perf_counter`` clock."""

    frame: int
    samples: np.ndarray
    start: float
    span: float


class JackAudioInput(ActiveClient):
    """One JACK audio input (see the module docstring). ``open()``, then ``periods()`` from the
    reader's thread, woken through ``wake_fd``; ``close()``."""

    def __init__(self, client_name: str, port_name: str = "in") -> None:
        super().__init__(client_name)
        self.port_name = port_name
        self.own_name: str | None = None
        self.rate = 0
        self.frames = 0  # per period
        self.xrun_frames: list[int] = []  # the frame of each xrun the server reported
        self.dropped = 0  # periods lost because the reader fell MAX_QUEUED behind
        self._port: int | None = None
        self._queue: deque[Period] = deque()
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    @property
    def wake_fd(self) -> int:
        """Readable when a period has come (select on it, then call ``periods``)."""
        return self._wake_r

    def open(self) -> JackAudioInput:
        super().open()
        self._port, self.own_name = self._register(self.port_name, AUDIO_TYPE, PORT_IS_INPUT)
        self.frames, self.rate = self.period()
        self._activate()
        return self

    def close(self) -> None:
        super().close()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self._wake_r = self._wake_w = -1

    def connect_from(self, source: str) -> None:
        """Connect ``source`` (an audio output port, e.g. ``system:capture_1``) to this input
        (PortError naming the ports there are when it is not one)."""
        assert self.own_name is not None
        if source not in self.audio_ports(inputs=False):
            there = ", ".join(self.audio_ports(inputs=False)) or "none"
            raise PortError(f"no JACK audio output {source!r} to hear (there are: {there})")
        if not self.connect(source, self.own_name):
            raise PortError(f"JACK refused to connect {source} to {self.own_name}")

    def capture_latency(self) -> tuple[int, int]:
        """(min, max) frames between a sound at the system's edge and this port's buffer, as
        JACK computes it through the connections (0 for a port fed by another client)."""
        rng = _LatencyRange()
        if self._port:
            _latency_function()(self._port, CAPTURE_LATENCY, ctypes.byref(rng))
        return int(rng.min), int(rng.max)

    def periods(self) -> list[Period]:
        """The periods come since the last call, in order (the reader's thread)."""
        try:
            os.read(self._wake_r, 4096)
        except (BlockingIOError, OSError):
            pass
        with self._lock:
            out = list(self._queue)
            self._queue.clear()
        return out

    def _xrun(self, arg: object) -> int:
        _stamped_xrun(self, self.xrun_frames)
        return super()._xrun(arg)

    # the JACK thread -----------------------------------------------------------------------
    def _process(self, nframes: int, _arg: object) -> int:
        try:
            lib = self._lib
            ptr = ctypes.cast(lib.jack_port_get_buffer(self._port, nframes),
                              ctypes.POINTER(ctypes.c_float))
            samples = np.ctypeslib.as_array(ptr, shape=(nframes,)).copy()
            start, span = cycle_on_perf_clock(lib, self._client or 0, nframes, self.rate)
            period = Period(int(lib.jack_last_frame_time(self._client)), samples, start, span)
            with self._lock:
                if len(self._queue) >= MAX_QUEUED:
                    self._queue.popleft()
                    self.dropped += 1
                self._queue.append(period)
            try:
                os.write(self._wake_w, b"\0")
            except (BlockingIOError, OSError):  # the pipe is full: the reader is awake anyway
                pass
        except Exception:  # nothing may escape into JACK's thread
            return 0
        return 0


class JackAudioPlayer(ActiveClient):
    """One JACK audio output that plays ``signal`` (mono float32) once, from the first period
    after ``play()`` (or from ``at_frame``); ``first_frame`` is then the JACK frame of its
    sample 0, so that sample ``i`` went out at frame ``first_frame + i``."""

    def __init__(self, client_name: str, signal: np.ndarray, port_name: str = "out") -> None:
        super().__init__(client_name)
        self.port_name = port_name
        self.signal = np.ascontiguousarray(signal, dtype=np.float32)
        self.own_name: str | None = None
        self.first_frame: int | None = None
        self.rate = 0
        self.xrun_frames: list[int] = []  # the frame of each xrun the server reported
        self._port: int | None = None
        self._at: int | None = None  # the frame to start on (None: not asked to play)
        self._armed = False
        self._played = 0  # samples of the signal gone out
        self.written: list[int] = []  # the first frame of every period it wrote the signal in

    def open(self) -> JackAudioPlayer:
        super().open()
        self._port, self.own_name = self._register(self.port_name, AUDIO_TYPE, PORT_IS_OUTPUT)
        self.rate = self.period()[1]
        self._activate()
        return self

    def _xrun(self, arg: object) -> int:
        _stamped_xrun(self, self.xrun_frames)
        return super()._xrun(arg)

    def play(self, at_frame: int | None = None) -> None:
        """Start at JACK frame ``at_frame`` (None: the next period's first frame)."""
        self._at = at_frame
        self._armed = True

    @property
    def done(self) -> bool:
        """Every sample has gone out."""
        return self.first_frame is not None and self._played >= len(self.signal)

    def _process(self, nframes: int, _arg: object) -> int:
        try:
            lib = self._lib
            ptr = ctypes.cast(lib.jack_port_get_buffer(self._port, nframes),
                              ctypes.POINTER(ctypes.c_float))
            out = np.ctypeslib.as_array(ptr, shape=(nframes,))
            out[:] = 0.0
            if not self._armed:
                return 0
            frame = int(lib.jack_last_frame_time(self._client))
            if self.first_frame is None:
                at = frame if self._at is None else self._at
                if (at - frame) % 2**32 >= nframes and (at - frame) % 2**32 < 2**31:
                    return 0  # its first frame is in a later period
                self.first_frame = at
            begin = (frame - self.first_frame) % 2**32  # the signal's index at this period
            if begin >= 2**31:  # the first frame lies inside this period
                offset = -begin % 2**32
                begin = 0
            else:
                offset = 0
            piece = self.signal[begin:begin + nframes - offset]
            out[offset:offset + len(piece)] = piece
            if len(piece):
                self.written.append(frame)
            self._played = begin + len(piece)
        except Exception:  # nothing may escape into JACK's thread
            return 0
        return 0

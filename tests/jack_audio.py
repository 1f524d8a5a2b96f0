"""A JACK audio recorder for the tests: two audio inputs, every period copied out in JACK's
thread (ctypes on libjack, like ``instruments.ports.jacklib``) with its first frame, so that a
period the recorder missed (an xrun on a busy machine) is silence in its place, not a jump in
time."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import numpy as np

from instruments.ports.jacklib import AUDIO_TYPE, PORT_IS_INPUT, ActiveClient, cycle_on_perf_clock


class JackRecorder(ActiveClient):
    def __init__(self, client_name: str, channels: int = 2) -> None:
        super().__init__(client_name)
        self.channels = channels
        self.ports: list[int] = []
        self.port_names: list[str] = []
        # (first frame, samples, the period's start on the perf_counter clock) of each period
        self.blocks: list[tuple[int, np.ndarray, float]] = []
        self.rate = 0

    def open(self) -> JackRecorder:
        super().open()
        for i in range(self.channels):
            port, name = self._register(f"in_{i + 1}", AUDIO_TYPE, PORT_IS_INPUT)
            self.ports.append(port)
            self.port_names.append(name)
        self.rate = self.period()[1]
        self._activate()
        return self

    @property
    def name_of_client(self) -> str:
        """The client's name as JACK knows it (from its first port)."""
        return self.port_names[0].split(":", 1)[0]

    def audio(self) -> np.ndarray:
        """Everything recorded so far, (frames, channels) float32."""
        blocks = list(self.blocks)
        if not blocks:
            return np.zeros((0, self.channels), dtype=np.float32)
        first = blocks[0][0]
        out = np.zeros((_end(blocks), self.channels), dtype=np.float32)
        for frame, block, _ in blocks:
            at = (frame - first) % 2**32
            out[at:at + len(block)] = block
        return out

    def perf_times(self, seconds: Sequence[float]) -> np.ndarray:
        """Moments of ``audio()`` (seconds into it) on ``time.perf_counter``'s clock: when JACK
        ran the period that holds each, by its own estimate of its cycle times (what a device
        plays; the dummy driver's frame count loses the time its timer stalls in an xrun, so
        frame / rate alone drifts from real time by tens of ms in an xrun storm)."""
        blocks = list(self.blocks)
        times = np.array([t for _, _, t in blocks])
        first = blocks[0][0]
        at = np.array([(frame - first) % 2**32 for frame, _, _ in blocks]) / self.rate
        order = np.argsort(at)
        at, times = at[order], times[order]
        x = np.asarray(seconds, dtype=float)
        i = np.clip(np.searchsorted(at, x, side="right") - 1, 0, len(at) - 1)
        return times[i] + x - at[i]

    @property
    def missed_frames(self) -> int:
        """Frames between the first and the last period that no period brought."""
        blocks = list(self.blocks)
        if not blocks:
            return 0
        return _end(blocks) - len({frame for frame, _, _ in blocks}) * len(blocks[0][1])

    def _process(self, nframes: int, _arg: object) -> int:
        try:
            lib = self._lib
            block = np.empty((nframes, self.channels), dtype=np.float32)
            for i, port in enumerate(self.ports):
                ptr = ctypes.cast(lib.jack_port_get_buffer(port, nframes),
                                  ctypes.POINTER(ctypes.c_float))
                block[:, i] = np.ctypeslib.as_array(ptr, shape=(nframes,))
            start, _ = cycle_on_perf_clock(lib, self._client or 0, nframes, self.rate)
            self.blocks.append((lib.jack_last_frame_time(self._client), block, start))
        except Exception:  # nothing may escape into JACK's thread
            return 0
        return 0


def _end(blocks: list[tuple[int, np.ndarray, float]]) -> int:
    """Frames from the first period's first frame to the last period's end (the frame counter
    wraps at 2³²)."""
    first = blocks[0][0]
    return max((frame - first) % 2**32 + len(block) for frame, block, _ in blocks)

"""A JACK audio recorder for the tests: two audio inputs, every period copied out in JACK's
thread (ctypes on libjack, like ``instruments.ports.jacklib``) with its first frame, so that a period
the recorder missed (an xrun on a busy machine) is silence in its place, not a jump in time."""

from __future__ import annotations

import ctypes

import numpy as np

from instruments.ports.jacklib import ActiveClient

_AUDIO = b"32 bit float mono audio"


class JackRecorder(ActiveClient):
    def __init__(self, client_name: str, channels: int = 2) -> None:
        super().__init__(client_name)
        self.channels = channels
        self.ports: list[int] = []
        self.port_names: list[str] = []
        self.blocks: list[tuple[int, np.ndarray]] = []
        self.rate = 0

    def open(self) -> JackRecorder:
        super().open()
        for i in range(self.channels):
            port, name = self._register(f"in_{i + 1}", _AUDIO, 0x1)
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
        for frame, block in blocks:
            at = (frame - first) % 2**32
            out[at:at + len(block)] = block
        return out

    @property
    def missed_frames(self) -> int:
        """Frames between the first and the last period that no period brought."""
        blocks = list(self.blocks)
        if not blocks:
            return 0
        return _end(blocks) - len({frame for frame, _ in blocks}) * len(blocks[0][1])

    def _process(self, nframes: int, _arg: object) -> int:
        try:
            lib = self._lib
            block = np.empty((nframes, self.channels), dtype=np.float32)
            for i, port in enumerate(self.ports):
                ptr = ctypes.cast(lib.jack_port_get_buffer(port, nframes),
                                  ctypes.POINTER(ctypes.c_float))
                block[:, i] = np.ctypeslib.as_array(ptr, shape=(nframes,))
            self.blocks.append((lib.jack_last_frame_time(self._client), block))
        except Exception:  # noqa: BLE001 - nothing may escape into JACK's thread
            return 0
        return 0


def _end(blocks: list[tuple[int, np.ndarray]]) -> int:
    """Frames from the first period's first frame to the last period's end (the frame counter
    wraps at 2³²)."""
    first = blocks[0][0]
    return max((frame - first) % 2**32 + len(block) for frame, block in blocks)

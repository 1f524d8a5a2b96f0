"""A JACK audio recorder for the tests: two audio inputs, every period copied out in JACK's
thread (ctypes on libjack, like ``instruments.jackmidi``)."""

from __future__ import annotations

import ctypes

import numpy as np

from instruments.jackmidi import _PROCESS, _bind
from instruments.ports import JackWatch, PortError

_AUDIO = b"32 bit float mono audio"


class JackRecorder(JackWatch):
    def __init__(self, client_name: str, channels: int = 2) -> None:
        super().__init__(client_name)
        self.channels = channels
        self.ports: list[int] = []
        self.port_names: list[str] = []
        self.blocks: list[np.ndarray] = []
        self.rate = 0
        self._callback = _PROCESS(self._process)

    def open(self) -> JackRecorder:
        super().open()
        lib = _bind(self._load())
        for i in range(self.channels):
            port = lib.jack_port_register(self._client, f"in_{i + 1}".encode(), _AUDIO, 0x1, 0)
            if not port:
                super().close()
                raise PortError("JACK refused an audio input")
            self.ports.append(port)
            self.port_names.append(lib.jack_port_name(port).decode())
        self.rate = self.period()[1]
        lib.jack_set_process_callback(self._client, self._callback, None)
        lib.jack_activate(self._client)
        return self

    def close(self) -> None:
        if self._client:
            self._load().jack_deactivate(self._client)
        super().close()

    @property
    def name_of_client(self) -> str:
        """The client's name as JACK knows it (from its first port)."""
        return self.port_names[0].split(":", 1)[0]

    def audio(self) -> np.ndarray:
        """Everything recorded so far, (frames, channels) float32."""
        blocks = list(self.blocks)
        if not blocks:
            return np.zeros((0, self.channels), dtype=np.float32)
        return np.concatenate(blocks, axis=0)

    def _process(self, nframes: int, _arg: object) -> int:
        try:
            lib = self._lib
            block = np.empty((nframes, self.channels), dtype=np.float32)
            for i, port in enumerate(self.ports):
                ptr = ctypes.cast(lib.jack_port_get_buffer(port, nframes),
                                  ctypes.POINTER(ctypes.c_float))
                block[:, i] = np.ctypeslib.as_array(ptr, shape=(nframes,))
            self.blocks.append(block)
        except Exception:  # noqa: BLE001 - nothing may escape into JACK's thread
            return 0
        return 0

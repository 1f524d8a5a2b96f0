"""The station's listener for the netjack2 tests and benchmark: a JACK MIDI input on the
station's server (``JACK_DEFAULT_SERVER``), connected from the netjack2 driver's MIDI capture
port, stamping each message with its frame (``instruments.ports.jacklib.JackMidiInput``).

    ip netns exec STATION env JACK_DEFAULT_SERVER=NAME python tests/netjack_receiver.py CLIENT SOURCE

(SOURCE ``-``: connect nothing, only count the server's xruns.)

It prints ``ready RATE PERIOD`` once connected, records until its standard input closes (or
SIGTERM), then prints one JSON line: ``{"rate", "period", "xruns", "messages": [[frame, hex,
t], ...]}`` — ``frame`` the station's frame counter at the message, ``t`` its time on this
machine's monotonic clock (``time.perf_counter``, the same clock in every network namespace).
Run as a process of its own so that it lives in the station's namespace.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from instruments.ports.jacklib import JackMidiInput  # noqa: E402

_XRUN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class StationInput(JackMidiInput):
    """A ``JackMidiInput`` that also counts the station server's xruns."""

    def __init__(self, client_name: str) -> None:
        super().__init__(client_name)
        self.xruns = 0
        self._on_xrun = _XRUN(self._xrun)

    def _xrun(self, _arg: object) -> int:
        self.xruns += 1
        return 0

    def _activate(self) -> None:
        setter = self._lib.jack_set_xrun_callback
        setter.restype, setter.argtypes = ctypes.c_int, [ctypes.c_void_p, _XRUN, ctypes.c_void_p]
        setter(self._client, self._on_xrun, None)
        super()._activate()


def main(client: str, source: str) -> int:
    rx = StationInput(client).open()
    try:
        assert rx.own_name is not None
        if source != "-" and not rx.connect(source, rx.own_name):
            print(f"cannot connect {source} -> {rx.own_name}", file=sys.stderr)
            return 1
        frames, rate = rx.period()
        print(f"ready {rate} {frames}", flush=True)
        done = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: done.set())
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
        done.wait()
        got = [[frame, data.hex(), t] for frame, data, _, t in list(rx.messages)]
        print(json.dumps({"rate": rate, "period": frames, "xruns": rx.xruns, "messages": got}),
              flush=True)
    finally:
        rx.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))

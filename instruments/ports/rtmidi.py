"""The rtmidi backend: ``alsa:`` and ``virtual:`` outputs, the listing of MIDI inputs (on
JACK too: ``yuezheng ports --api jack``) and the API numbers the live MIDI input uses.

Losing the destination (an ``alsa:`` port whose destination is gone) is noticed by
``maintain()``, which the sender calls when it has slack and at least once a second; when the
destination comes back the port reconnects and sends note-offs for the notes that were cut
(sounding when the connection was lost, and ended while it was down).
"""

from __future__ import annotations

import os
import time
from typing import Any

from instruments.ports.base import (
    DEFAULT_CLIENT_NAME,
    NO_JACK_ADVICE,
    LinkedOutput,
    PortError,
    choose_port,
)

API_NAMES: tuple[str, ...] = ("jack", "alsa", "default")


def rtmidi_api(api: str) -> int:
    """rtmidi's number of a MIDI API (jack, alsa or default), if this rtmidi has it."""
    import rtmidi

    if api not in API_NAMES:
        raise PortError(f"unknown MIDI API {api!r}: expected one of {', '.join(API_NAMES)}")
    if api == "default":
        return rtmidi.API_UNSPECIFIED
    number = rtmidi.API_UNIX_JACK if api == "jack" else rtmidi.API_LINUX_ALSA
    if number not in rtmidi.get_compiled_api():
        raise PortError(
            f"this python-rtmidi was built without {api.upper()} support; for JACK install it "
            "with `pip install --force-reinstall --no-binary python-rtmidi python-rtmidi` "
            "(needs the Debian package libjack-jackd2-dev)"
        )
    return number


def _midi_out(api: str, client_name: str) -> Any:
    import rtmidi

    number = rtmidi_api(api)
    if api == "jack":
        os.environ.setdefault("JACK_NO_START_SERVER", "1")
    try:
        return rtmidi.MidiOut(number, client_name)
    except (rtmidi.SystemError, RuntimeError) as exc:
        if api == "jack":
            raise PortError("cannot open a JACK MIDI client: the JACK server is not running: "
                            f"{NO_JACK_ADVICE}") from exc
        if api == "alsa":
            raise PortError("cannot open the ALSA sequencer (no /dev/snd/seq on this machine?); "
                            "use a jack: output") from exc
        raise PortError(f"cannot open a MIDI client on the default API: {exc}") from exc


def list_ports(api: str = "jack") -> list[str]:
    """Names of the MIDI inputs an output can connect to, on ``api`` (jack, alsa or default).

    JACK's are listed by a libjack client (``instruments.ports.jacklib``), not rtmidi's:
    python-rtmidi keeps the GIL through its calls, and a JACK server notifies every client of
    a client coming and going and waits for each to answer, so a process holding a libjack
    client whose notifications run Python (an xrun callback) deadlocked with the server when
    an xrun came while rtmidi opened or closed its client (seen: jackd blocked writing to
    the waiting client, every JACK client of the machine stuck)."""
    if api == "jack":
        from instruments.ports.jacklib import JackWatch

        with JackWatch(f"{DEFAULT_CLIENT_NAME}-list") as watch:
            return watch.midi_ports(inputs=True)
    out = _midi_out(api, f"{DEFAULT_CLIENT_NAME}-list")
    try:
        return list(out.get_ports())
    finally:
        out.delete()


class RtMidiOutput(LinkedOutput):
    """An rtmidi output for an ``alsa:`` or ``virtual:`` spec."""

    _out: Any = None  # the rtmidi MidiOut, while open

    def _open(self) -> None:
        out = _midi_out(self.spec.api, self.client_name)
        try:
            if self.spec.virtual:
                out.open_virtual_port(self.port_name)
            else:
                available = out.get_ports()
                index = choose_port(available, self.spec.name, self.spec.api)
                self.destination = available[index]
                out.open_port(index, self.port_name)
        except BaseException:
            out.delete()
            raise
        self._out = out
        self._opened()

    def _send(self, data: bytes) -> None:
        self._out.send_message(data)

    def _close(self) -> None:
        out, self._out = self._out, None
        self._linked_now = False
        if out is not None:
            time.sleep(self.settle_s)  # let the API take what is queued
            out.close_port()
            out.delete()

    def _linked(self) -> bool:
        return self._linked_now and self.destination in self._out.get_ports()

    def _relink(self) -> bool:
        """Reopen the port when the destination reappears in the listing (only a vanished
        destination is noticed this way, not a removed connection)."""
        available = self._out.get_ports()
        if self.destination not in available:
            return False
        time.sleep(self.settle_s)
        self._out.close_port()
        self._out.open_port(list(available).index(self.destination), self.port_name)
        return True


OUTPUT = RtMidiOutput

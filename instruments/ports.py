"""Live MIDI outputs: port specs, a checked and locked base port with a two-stage panic, and the
rtmidi backends (JACK, ALSA, the default API's virtual ports).

A port spec names where the music goes::

    jack:PORT           connect to an existing JACK MIDI input whose name contains PORT
                        (an exact name wins), e.g. ``jack:bar:in``
    jack-virtual:NAME   make a JACK MIDI output NAME that others connect to
    alsa:PORT           connect to an existing ALSA sequencer input whose name contains PORT
    virtual:NAME        a virtual output on rtmidi's default API
    pyo                 the built-in voices through pyo's audio server (instruments.pyoport;
                        pyo:jack, pyo:portaudio, pyo:jack:CLIENT)

Nothing here touches hardware on import or when a port object is built: ``open()`` (or ``with``)
does. The shape follows mido's ``ports.py``: the public ``send()`` checks the message and takes
the lock, subclasses fill ``_open``/``_send``/``_close``. Every port tracks the notes it has
sounding per (channel, key), and ``close()`` always silences what it started.

Losing the destination (a ``jack:`` port whose destination was disconnected or whose client is
gone) is noticed by ``maintain()``, which the sender calls when it has slack and at least once a
second; when the destination comes back the port reconnects and sends note-offs for the notes
that were cut (sounding when the connection was lost, and ended while it was down).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self

from cues.errors import UserError

SpecKind = Literal["jack", "jack-virtual", "alsa", "virtual", "pyo"]
ApiName = Literal["jack", "alsa", "default"]

API_NAMES: tuple[str, ...] = ("jack", "alsa", "default")
DEFAULT_CLIENT_NAME = "yuezheng"
DEFAULT_PORT_NAME = "out"
# what a user does without a JACK server (README: "Play it for real")
NO_JACK_ADVICE = ("start JACK on your sound card (e.g. `jackd -d alsa -d hw:0 -r 48000 &`, or "
                  "QjackCtl) and a synth on it (`fluidsynth -a jack -m jack "
                  "/usr/share/sounds/sf2/FluidR3_GM.sf2`), or play the built-in voices "
                  "straight to the sound card with --output pyo")

NOTE_OFF = 0x80
NOTE_ON = 0x90
CONTROL_CHANGE = 0xB0
CC_ALL_SOUND_OFF = 120
CC_ALL_NOTES_OFF = 123

# Data-byte counts of channel messages by high nibble, and of system common messages.
_CHANNEL_LENGTHS = {0x80: 3, 0x90: 3, 0xA0: 3, 0xB0: 3, 0xC0: 2, 0xD0: 2, 0xE0: 3}
_SYSTEM_LENGTHS = {0xF1: 2, 0xF2: 3, 0xF3: 2, 0xF6: 1, 0xF8: 1, 0xFA: 1, 0xFB: 1, 0xFC: 1,
                   0xFE: 1, 0xFF: 1}


class PortError(UserError):
    """A port that cannot be opened as asked: bad spec, no such destination, no JACK server."""


# ── specs ──────────────────────────────────────────────────────────────────────────────────────

@dataclass(frozen=True)
class PortSpec:
    """A parsed output spec (see the module docstring)."""

    kind: SpecKind
    name: str

    @property
    def api(self) -> ApiName:
        if self.kind in ("jack", "jack-virtual"):
            return "jack"
        if self.kind == "alsa":
            return "alsa"
        return "default"

    @property
    def virtual(self) -> bool:
        """An output of this process's own (nothing to connect to, nothing to rescue)."""
        return self.kind in ("jack-virtual", "virtual", "pyo")

    def __str__(self) -> str:
        return "pyo" if self.kind == "pyo" and not self.name else f"{self.kind}:{self.name}"


_SPEC_KINDS: tuple[SpecKind, ...] = ("jack-virtual", "jack", "alsa", "virtual", "pyo")


def parse_spec(spec: str) -> PortSpec:
    """Parse an output spec such as ``jack:bar:in`` or ``jack-virtual:yuezheng``.

    Only the first colon separates the kind, so JACK names (``client:port``) pass unchanged.
    """
    text = spec.strip()
    kind, sep, name = text.partition(":")
    if kind == "pyo":
        from instruments.pyoport import parse_pyo_spec  # noqa: PLC0415 - a cycle otherwise

        parse_pyo_spec(name.strip())
        return PortSpec("pyo", name.strip())
    if kind not in _SPEC_KINDS or not sep:
        raise PortError(
            f"bad output spec {spec!r}: expected jack:PORT (an existing JACK MIDI input, e.g. "
            "jack:bar:in), jack-virtual:NAME, alsa:PORT, virtual:NAME or pyo (the built-in "
            "voices); `yuezheng ports --api jack` lists the JACK inputs"
        )
    if not name.strip():
        raise PortError(f"bad output spec {spec!r}: the name after {kind + ':'!r} is empty")
    return PortSpec(kind, name.strip())  # type: ignore[arg-type]


# ── message checks ─────────────────────────────────────────────────────────────────────────────

def check_message(message: bytes | bytearray | Sequence[int]) -> bytes:
    """Return ``message`` as bytes if it is one complete MIDI message, else raise ValueError."""
    data = bytes(message)
    if not data:
        raise ValueError("empty MIDI message")
    status = data[0]
    if status < 0x80:
        raise ValueError(f"MIDI message starts with data byte 0x{status:02X}, not a status byte")
    if status == 0xF0:
        if data[-1] != 0xF7 or any(b >= 0x80 for b in data[1:-1]):
            raise ValueError("system exclusive must be F0, data bytes < 0x80, F7")
        return data
    expected = _CHANNEL_LENGTHS.get(status & 0xF0) if status < 0xF0 else _SYSTEM_LENGTHS.get(status)
    if expected is None:
        raise ValueError(f"undefined MIDI status byte 0x{status:02X}")
    if len(data) != expected:
        raise ValueError(
            f"MIDI message with status 0x{status:02X} must be {expected} bytes, got {len(data)}"
        )
    if any(b >= 0x80 for b in data[1:]):
        raise ValueError(f"MIDI data bytes must be < 0x80: {data.hex(' ')}")
    return data


def note_offs(notes: Iterable[tuple[int, int]]) -> list[bytes]:
    """Note-off messages (velocity 0) for (channel, key) pairs, sorted for determinism."""
    return [bytes((NOTE_OFF | ch, key, 0)) for ch, key in sorted(notes)]


def all_off_messages() -> list[bytes]:
    """Stage two of a panic: CC 123 (all notes off) then CC 120 (all sound off) on 16 channels."""
    out: list[bytes] = []
    for ch in range(16):
        out.append(bytes((CONTROL_CHANGE | ch, CC_ALL_NOTES_OFF, 0)))
        out.append(bytes((CONTROL_CHANGE | ch, CC_ALL_SOUND_OFF, 0)))
    return out


# ── the base port ──────────────────────────────────────────────────────────────────────────────

class OutputPort:
    """Base of every live output: checked, locked ``send()``, note tracking, ``panic()``.

    Subclasses implement ``_open()``, ``_send(data)`` and ``_close()`` and may override
    ``maintain()``. Construction never opens anything; ``open()`` or ``with port:`` does.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = True
        self._lock = threading.RLock()
        self._sounding: set[tuple[int, int]] = set()

    # public API --------------------------------------------------------------------------
    def open(self) -> Self:
        with self._lock:
            if self.closed:
                self._open()
                self.closed = False
        return self

    #: True when ``send(data, at=deadline)`` puts the message on the deadline's own frame (a
    #: constant latency later), so a sender need not wake exactly on time
    frame_accurate = False
    #: the constant delay a frame-accurate port adds (0 for the others)
    latency_s = 0.0
    #: True when the port runs an audio callback in this process that needs the GIL (JACK
    #: through ctypes, pyo): a sender must then wait without holding the GIL
    callback_needs_gil = False

    def send(self, message: bytes | bytearray | Sequence[int], at: float | None = None) -> None:
        """Send one MIDI message (raw bytes); tracks note-on/off per channel and key.

        ``at``: the message's deadline (``time.perf_counter()``); a frame-accurate port places
        it there (plus its latency), the others send at once."""
        data = check_message(message)
        with self._lock:
            if self.closed:
                raise ValueError(f"send() on closed port {self.name!r}")
            self._send_at(data, at)
            self._track(data)

    @property
    def sounding(self) -> frozenset[tuple[int, int]]:
        """The (channel, key) pairs this port has turned on and not yet off."""
        with self._lock:
            return frozenset(self._sounding)

    def release_notes(self) -> int:
        """Panic stage one: a note-off for every note sounding. Returns how many were sent."""
        with self._lock:
            if self.closed:
                return 0
            offs = note_offs(self._sounding)
            for data in offs:
                self._send(data)
            self._sounding.clear()
            return len(offs)

    def panic(self) -> None:
        """Silence everything: note-offs for the tracked notes, then CC 123 and CC 120 on all
        16 channels (for notes the tracking could not know about)."""
        with self._lock:
            if self.closed:
                return
            self.release_notes()
            for data in all_off_messages():
                self._send(data)

    def maintain(self) -> str | None:
        """Check the connection; reconnect if possible. Returns ``"lost"``, ``"reconnected"``
        or None when nothing changed. Called by the sender when it has time to spare."""
        return None

    @property
    def connected(self) -> bool:
        return not self.closed

    def close(self) -> None:
        """Silence what this port started (note-offs for every note still sounding) and close
        it. Use ``panic()`` first when the end is abnormal (it also sends CC 123/120)."""
        with self._lock:
            if self.closed:
                return
            try:
                self.release_notes()
            finally:
                self.closed = True
                self._close()

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:  # a forgotten port still silences what it started
        try:
            if not getattr(self, "closed", True):
                self.close()
        except Exception:  # noqa: BLE001 - nothing can be reported from a finalizer
            pass

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<{type(self).__name__} {self.name!r} ({state})>"

    # hooks -------------------------------------------------------------------------------
    def _open(self) -> None:
        raise NotImplementedError

    def _send(self, data: bytes) -> None:
        raise NotImplementedError

    def _send_at(self, data: bytes, at: float | None) -> None:
        self._send(data)

    def _close(self) -> None:
        raise NotImplementedError

    # internals ---------------------------------------------------------------------------
    def _track(self, data: bytes) -> None:
        kind = data[0] & 0xF0
        if kind == NOTE_ON and data[2] > 0:
            self._sounding.add((data[0] & 0x0F, data[1]))
            self._note_started(data[0] & 0x0F, data[1])
        elif kind == NOTE_OFF or kind == NOTE_ON:
            self._sounding.discard((data[0] & 0x0F, data[1]))
        elif kind == CONTROL_CHANGE and data[1] in (CC_ALL_NOTES_OFF, CC_ALL_SOUND_OFF):
            ch = data[0] & 0x0F
            self._sounding = {n for n in self._sounding if n[0] != ch}

    def _note_started(self, channel: int, key: int) -> None:
        """Hook for subclasses that keep more state (cut-note tracking)."""


# ── JACK helpers (ctypes on libjack, for watching connections) ─────────────────────────────────

_JACK_NO_START_SERVER = 0x01
_JACK_PORT_IS_INPUT = 0x1
_JACK_PORT_IS_OUTPUT = 0x2
_JACK_MIDI_TYPE = b"8 bit raw midi"
_JACK_AUDIO_TYPE = b"32 bit float mono audio"


class JackWatch:
    """A small libjack client (never activated) that lists MIDI ports and their connections
    and reconnects them. Used by ``jack:`` ports; opening it never starts a server."""

    _lib: Any = None

    def __init__(self, client_name: str = "yuezheng-watch") -> None:
        self._client: int | None = None
        self._name = client_name

    @classmethod
    def _load(cls) -> Any:
        if cls._lib is None:
            path = ctypes.util.find_library("jack") or "libjack.so.0"
            lib = ctypes.CDLL(path)
            lib.jack_client_open.restype = ctypes.c_void_p
            lib.jack_client_open.argtypes = [ctypes.c_char_p, ctypes.c_int,
                                             ctypes.POINTER(ctypes.c_int)]
            lib.jack_client_close.argtypes = [ctypes.c_void_p]
            lib.jack_get_ports.restype = ctypes.POINTER(ctypes.c_char_p)
            lib.jack_get_ports.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                           ctypes.c_ulong]
            lib.jack_port_by_name.restype = ctypes.c_void_p
            lib.jack_port_by_name.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
            lib.jack_port_get_all_connections.restype = ctypes.POINTER(ctypes.c_char_p)
            lib.jack_port_get_all_connections.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            lib.jack_connect.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
            lib.jack_free.argtypes = [ctypes.c_void_p]
            lib.jack_get_buffer_size.restype = ctypes.c_uint32
            lib.jack_get_buffer_size.argtypes = [ctypes.c_void_p]
            lib.jack_get_sample_rate.restype = ctypes.c_uint32
            lib.jack_get_sample_rate.argtypes = [ctypes.c_void_p]
            cls._lib = lib
        return cls._lib

    def open(self) -> Self:
        lib = self._load()
        status = ctypes.c_int(0)
        client = lib.jack_client_open(self._name.encode(), _JACK_NO_START_SERVER,
                                      ctypes.byref(status))
        if not client:
            raise PortError(f"the JACK server is not running: {NO_JACK_ADVICE}")
        self._client = client
        return self

    def close(self) -> None:
        if self._client:
            self._load().jack_client_close(self._client)
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
        self._load().jack_free(ctypes.cast(ptr, ctypes.c_void_p))
        return out

    def _ports(self, kind: bytes, inputs: bool) -> list[str]:
        flags = _JACK_PORT_IS_INPUT if inputs else _JACK_PORT_IS_OUTPUT
        return self._strings(self._load().jack_get_ports(self._client, None, kind, flags))

    def midi_ports(self, *, inputs: bool) -> list[str]:
        return self._ports(_JACK_MIDI_TYPE, inputs)

    def audio_ports(self, *, inputs: bool) -> list[str]:
        return self._ports(_JACK_AUDIO_TYPE, inputs)

    def connections(self, port_name: str) -> list[str]:
        lib = self._load()
        port = lib.jack_port_by_name(self._client, port_name.encode())
        if not port:
            return []
        return self._strings(lib.jack_port_get_all_connections(self._client, port))

    def connect(self, source: str, destination: str) -> bool:
        return self._load().jack_connect(self._client, source.encode(), destination.encode()) == 0

    def period(self) -> tuple[int, int]:
        """(frames per period, sample rate) of the running server."""
        lib = self._load()
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


# ── rtmidi backends ────────────────────────────────────────────────────────────────────────────

def _rtmidi_api(api: str) -> int:
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

    number = _rtmidi_api(api)
    if api == "jack":
        os.environ.setdefault("JACK_NO_START_SERVER", "1")
    try:
        return rtmidi.MidiOut(number, client_name)
    except (rtmidi.SystemError, RuntimeError) as exc:  # type: ignore[attr-defined]
        if api == "jack":
            raise PortError("cannot open a JACK MIDI client: the JACK server is not running: "
                            f"{NO_JACK_ADVICE}") from exc
        if api == "alsa":
            raise PortError("cannot open the ALSA sequencer (no /dev/snd/seq on this machine?); "
                            "use a jack: output") from exc
        raise PortError(f"cannot open a MIDI client on the default API: {exc}") from exc


def list_ports(api: str = "jack") -> list[str]:
    """Names of the MIDI inputs an output can connect to, on ``api`` (jack, alsa or default)."""
    out = _midi_out(api, f"{DEFAULT_CLIENT_NAME}-list")
    try:
        return list(out.get_ports())
    finally:
        out.delete()


def _choose(available: Sequence[str], wanted: str, api: str) -> int:
    """Index of the port named ``wanted`` (exact) or the only one containing it."""
    if wanted in available:
        return list(available).index(wanted)
    matches = [i for i, name in enumerate(available) if wanted in name]
    if len(matches) == 1:
        return matches[0]
    listing = ", ".join(available) or "none"
    if not matches:
        raise PortError(f"no {api.upper()} MIDI input matching {wanted!r}; available: {listing}")
    names = ", ".join(available[i] for i in matches)
    raise PortError(f"{wanted!r} matches several {api.upper()} MIDI inputs ({names}); "
                    "give the full client:port name")


class RtMidiOutput(OutputPort):
    """An rtmidi output for a ``jack:``, ``jack-virtual:``, ``alsa:`` or ``virtual:`` spec."""

    def __init__(self, spec: PortSpec, *, client_name: str = DEFAULT_CLIENT_NAME,
                 port_name: str = DEFAULT_PORT_NAME) -> None:
        super().__init__(str(spec))
        self.spec = spec
        self.client_name = client_name
        self.port_name = spec.name if spec.virtual else port_name
        self.destination: str | None = None  # full name of the input we connect to
        self.own_name: str | None = None  # our full JACK port name, when known
        self._out: Any = None
        self._watch: JackWatch | None = None
        self._connected = False
        self._cut: set[tuple[int, int]] = set()  # notes sounding since the last good check
        self.lost_count = 0
        self.reconnect_count = 0
        self._reported_losses = 0
        self._drain_s = 0.05  # wait before close_port: rtmidi's JACK close garbles queued data

    # hooks -------------------------------------------------------------------------------
    def _open(self) -> None:
        out = _midi_out(self.spec.api, self.client_name)
        try:
            if self.spec.virtual:
                out.open_virtual_port(self.port_name)
            elif self.spec.api == "jack":
                self._open_jack(out)
            else:
                available = out.get_ports()
                index = _choose(available, self.spec.name, self.spec.api)
                self.destination = available[index]
                out.open_port(index, self.port_name)
        except BaseException:
            out.delete()
            self._close_watch()
            raise
        self._out = out
        self._connected = True
        self._cut = set()

    def _open_jack(self, out: Any) -> None:
        available = out.get_ports()
        index = _choose(available, self.spec.name, "jack")
        self.destination = available[index]
        try:
            self._watch = JackWatch(f"{self.client_name}-watch").open()
        except (OSError, PortError):
            self._watch = None  # fall back to re-listing with rtmidi
        before = set(self._watch.midi_ports(inputs=False)) if self._watch else set()
        out.open_port(index, self.port_name)
        if self._watch:
            new = [p for p in self._watch.midi_ports(inputs=False)
                   if p not in before and p.endswith(":" + self.port_name)]
            self.own_name = new[0] if len(new) == 1 else None
            frames, rate = self._watch.period()
            self._drain_s = max(0.01, 3 * frames / rate + 0.005)
            self._settle()

    def _settle(self) -> None:
        """Wait until JACK shows the new connection and has run a few cycles with it: a
        message sent before the graph is updated is dropped (seen as lost program changes at
        the start of a show)."""
        if self._watch is None or self.own_name is None or self.destination is None:
            return
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            if self.destination in self._watch.connections(self.own_name):
                break
            time.sleep(0.002)
        time.sleep(self._drain_s)

    def _send(self, data: bytes) -> None:
        self._out.send_message(data)

    def _close(self) -> None:
        out, self._out = self._out, None
        self._connected = False
        try:
            if out is not None:
                time.sleep(self._drain_s)  # let JACK take what is queued (see _drain_s)
                out.close_port()
                out.delete()
        finally:
            self._close_watch()

    def _close_watch(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def _note_started(self, channel: int, key: int) -> None:
        self._cut.add((channel, key))

    # connection upkeep -------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return not self.closed and self._connected

    def maintain(self) -> str | None:
        """See ``OutputPort.maintain``; only ``jack:`` and ``alsa:`` outputs can be lost.

        A connection found missing is counted as lost even when it can be restored at once
        (someone ran ``jack_disconnect``): the notes cut meanwhile still need their note-offs.
        """
        with self._lock:
            if self.closed or self.spec.virtual or self.destination is None:
                return None
            linked = self._linked()
            if linked:
                self._cut = set(self._sounding)
                if self._connected:
                    return None
            elif self._connected:
                self._connected = False
                self.lost_count += 1
            if not linked and not self._relink():
                return "lost" if self.lost_count and self._just_lost() else None
            self._connected = True
            self.reconnect_count += 1
            time.sleep(self._drain_s)  # let the new connection take effect (see _settle)
            # the cut notes: sounding when the link went, ended while it was down
            for data in note_offs(self._cut - self._sounding):
                self._send(data)
            self._cut = set(self._sounding)
            return "reconnected"

    def _just_lost(self) -> bool:
        """True once per loss (the first failed check after a good one)."""
        fresh = self._reported_losses < self.lost_count
        self._reported_losses = self.lost_count
        return fresh

    def _linked(self) -> bool:
        if self._watch is not None and self.own_name is not None:
            assert self.destination is not None
            return self.destination in self._watch.connections(self.own_name)
        return self._connected and self.destination in self._out.get_ports()

    def _relink(self) -> bool:
        """Try to connect again (the destination may be back under the same or a new name)."""
        if self._watch is not None and self.own_name is not None:
            inputs = self._watch.midi_ports(inputs=True)
            target = self.destination if self.destination in inputs else None
            if target is None:
                try:
                    target = inputs[_choose(inputs, self.spec.name, "jack")]
                except PortError:
                    return False
            if self._watch.connect(self.own_name, target):
                self.destination = target
                return True
            return False
        return self._check_relist()

    def _check_relist(self) -> bool:
        """Without libjack: reopen the port when the destination reappears in the listing.
        (Only a vanished destination is noticed this way, not a removed connection.)"""
        available = self._out.get_ports()
        if self.destination not in available:
            return False
        time.sleep(self._drain_s)
        self._out.close_port()
        self._out.open_port(list(available).index(self.destination), self.port_name)
        return True


def open_output(spec: str | PortSpec, *, client_name: str = DEFAULT_CLIENT_NAME,
                port_name: str = DEFAULT_PORT_NAME, **options: Any) -> OutputPort:
    """Build (not open) the output port for ``spec``; use ``with`` or ``.open()`` to open it.

    JACK specs get ``instruments.jackmidi.JackOutput`` (frame-accurate, libjack directly),
    ``pyo`` an ``instruments.pyoport.PyoOutput`` (``options``: the notes to prepare, the
    instruments' places), the others an rtmidi port."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    if parsed.kind == "pyo":
        from instruments.pyoport import PyoOutput  # noqa: PLC0415 - pyo only when asked

        return PyoOutput(parsed, client_name=client_name, **options)
    if parsed.api == "jack":
        from instruments.jackmidi import JackOutput  # noqa: PLC0415 - a cycle otherwise

        return JackOutput(parsed, client_name=client_name, port_name=port_name)
    return RtMidiOutput(parsed, client_name=client_name, port_name=port_name)

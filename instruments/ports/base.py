"""The base of every live output: port specs and their grammar, and ``OutputPort`` (a checked and
locked ``send()``, note tracking, a two-stage panic). It imports no backend.

A port spec names where the music goes::

    jack:PORT           connect to an existing JACK MIDI input whose name contains PORT
                        (an exact name wins), e.g. ``jack:bar:in``
    jack-virtual:NAME   make a JACK MIDI output NAME that others connect to
    alsa:PORT           connect to an existing ALSA sequencer input whose name contains PORT
    virtual:NAME        a virtual output on rtmidi's default API
    pyo                 the built-in voices through pyo's audio server (pyo:jack, pyo:portaudio,
                        pyo:jack:CLIENT)
    memory:[PATH]       no hardware: the messages are recorded (and written to PATH on close)

Nothing touches hardware on import or when a port object is built: ``open()`` (or ``with``)
does. The shape follows mido's ``ports.py``: the public ``send()`` checks the message and takes
the lock, backends fill ``_open``/``_send``/``_close``. Every port tracks the notes it has
sounding per (channel, key), and ``close()`` always silences what it started.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Literal, Self

from cues.errors import UserError
from instruments.midi import (
    SoundingNotes,
    all_off_messages,
    check_message,
    equal_tuning,
    note_offs,
)

SpecKind = Literal["jack", "jack-virtual", "alsa", "virtual", "pyo", "memory"]
ApiName = Literal["jack", "alsa", "default"]

DEFAULT_CLIENT_NAME = "yuezheng"
DEFAULT_PORT_NAME = "out"
# what a user does without a JACK server (README: "Play it for real")
NO_JACK_ADVICE = ("start JACK on your sound card (e.g. `jackd -d alsa -d hw:0 -r 48000 &`, or "
                  "QjackCtl) and a synth on it (`fluidsynth -a jack -m jack "
                  "/usr/share/sounds/sf2/FluidR3_GM.sf2`), or play the built-in voices "
                  "straight to the sound card with --output pyo")

SPEC_KINDS: tuple[SpecKind, ...] = ("jack-virtual", "jack", "alsa", "virtual", "pyo", "memory")
#: the kinds whose name may be empty (``pyo``, ``memory:``)
OPTIONAL_NAME_KINDS: tuple[SpecKind, ...] = ("pyo", "memory")


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
        return self.kind in ("jack-virtual", "virtual", "pyo", "memory")

    def __str__(self) -> str:
        return "pyo" if self.kind == "pyo" and not self.name else f"{self.kind}:{self.name}"


def parse_spec_grammar(spec: str) -> PortSpec:
    """Split an output spec such as ``jack:bar:in`` into its kind and name (no backend's own
    check of the name: ``instruments.ports.parse_spec`` adds that).

    Only the first colon separates the kind, so JACK names (``client:port``) pass unchanged.
    """
    kind, sep, name = spec.strip().partition(":")
    if kind not in SPEC_KINDS or not (sep or kind == "pyo"):
        raise PortError(
            f"bad output spec {spec!r}: expected jack:PORT (an existing JACK MIDI input, e.g. "
            "jack:bar:in), jack-virtual:NAME, alsa:PORT, virtual:NAME, pyo (the built-in "
            "voices) or memory:[PATH] (no hardware: a record of the messages); "
            "`yuezheng ports --api jack` lists the JACK inputs"
        )
    if not name.strip() and kind not in OPTIONAL_NAME_KINDS:
        raise PortError(f"bad output spec {spec!r}: the name after {kind + ':'!r} is empty")
    return PortSpec(kind, name.strip())


def choose_port(available: Sequence[str], wanted: str, api: str) -> int:
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


# ── the base port ──────────────────────────────────────────────────────────────────────────────

class OutputPort:
    """Base of every live output: checked, locked ``send()``, note tracking, ``panic()``.

    Backends implement ``_open()``, ``_send(data)`` and ``_close()`` and may override
    ``_send_at``, ``maintain()`` and ``_note_started``. Construction never opens anything;
    ``open()`` or ``with port:`` does.
    """

    #: True when the port runs an audio callback in this process that needs the GIL (JACK
    #: through ctypes, pyo): a sender must then wait without holding the GIL
    callback_needs_gil = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = True
        self._lock = threading.RLock()
        self._notes = SoundingNotes()

    # public API --------------------------------------------------------------------------
    def open(self) -> Self:
        with self._lock:
            if self.closed:
                self._open()
                self.closed = False
        return self

    def send(self, message: bytes | bytearray | Sequence[int], at: float | None = None) -> None:
        """Send one MIDI message (raw bytes); tracks note-on/off per channel and key.

        ``at``: the message's deadline (``time.perf_counter()``); a frame-accurate port places
        it there (plus its latency), the others send at once."""
        data = check_message(message)
        with self._lock:
            if self.closed:
                raise ValueError(f"send() on closed port {self.name!r}")
            self._send_at(data, at)
            started = self._notes.track(data)
            if started is not None:
                self._note_started(*started)

    @property
    def sounding(self) -> frozenset[tuple[int, int]]:
        """The (channel, key) pairs this port has turned on and not yet off."""
        with self._lock:
            return frozenset(self._notes.notes)

    def release_notes(self) -> int:
        """Panic stage one: a note-off for every note sounding. Returns how many were sent."""
        with self._lock:
            if self.closed:
                return 0
            offs = note_offs(self._notes.notes)
            for data in offs:
                self._send(data)
            self._notes.notes.clear()
            return len(offs)

    def silence_used(self) -> int:
        """CC 123 (all notes off) on every channel used since its last all-off, for notes the
        tracking could not know about (a note-off lost on the way). Returns how many."""
        with self._lock:
            if self.closed:
                return 0
            net = all_off_messages(self._notes.used, sound_off=False)
            for data in net:
                self._send(data)
            self._notes.used.clear()
            return len(net)

    def restore_tuning(self) -> int:
        """Give every key this port took off equal temperament (MTS single-note tuning changes)
        its equal-tempered pitch again, in the non-real-time form: new notes sound untuned,
        what still rings keeps its pitch. Returns how many messages."""
        with self._lock:
            if self.closed:
                return 0
            programs: dict[tuple[int, int], set[int]] = {}
            for bank, program, key in self._notes.tuned:
                programs.setdefault((bank, program), set()).add(key)
            sent = 0
            for (bank, program), keys in sorted(programs.items()):
                for data in equal_tuning(keys, program=program, bank=bank):
                    self._send(data)
                    sent += 1
            self._notes.tuned.clear()
            return sent

    def panic(self) -> None:
        """Silence everything: note-offs for the tracked notes, then CC 123 and CC 120 on all
        16 channels (for notes the tracking could not know about)."""
        with self._lock:
            if self.closed:
                return
            self.release_notes()
            for data in all_off_messages():
                self._send(data)
            self._notes.used.clear()  # every channel is silenced

    def maintain(self) -> str | None:
        """Check the connection; reconnect if possible. Returns ``"lost"``, ``"reconnected"``
        or None when nothing changed. Called by the sender when it has time to spare."""
        return None

    def close(self) -> None:
        """Silence what this port started and close it: note-offs for every note still
        sounding, then the safety net, CC 123 (all notes off) on every channel used since its
        last all-off (``silence_used``), then the keys it tuned back to equal temperament
        (``restore_tuning``: the synth is left as a MIDI file expects to find it). Use
        ``panic()`` first when the end is abnormal (CC 123 and 120 on all 16 channels)."""
        with self._lock:
            if self.closed:
                return
            try:
                self.release_notes()
                self.silence_used()
                self.restore_tuning()
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
        except Exception:  # nothing can be reported from a finalizer
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

    def _note_started(self, channel: int, key: int) -> None:
        """Hook for backends that keep more state (cut-note tracking)."""


class LinkedOutput(OutputPort):
    """An output connected to a destination it may lose (``jack:``, ``alsa:``).

    ``maintain()`` checks the link through the backend's ``_linked()`` and, when it is gone,
    tries ``_relink()``; once the destination is back it sends note-offs for the notes that
    were cut (sounding when the link went, and ended while it was down). Backends set
    ``destination`` when they open (None: a virtual output, nothing to keep unless the backend
    says so in ``_watched()``) and
    ``settle_s``, the wait for a new connection to take effect."""

    def __init__(self, spec: PortSpec, *, client_name: str = DEFAULT_CLIENT_NAME,
                 port_name: str = DEFAULT_PORT_NAME) -> None:
        super().__init__(str(spec))
        self.spec = spec
        self.client_name = client_name
        self.port_name = spec.name if spec.virtual else port_name
        self.destination: str | None = None  # full name of the input we connect to
        self.own_name: str | None = None  # our full port name, when known
        self.lost_count = 0
        self.settle_s = 0.05
        self._linked_now = False
        self._cut: set[tuple[int, int]] = set()  # notes sounding since the last good check
        self._reported_losses = 0

    def _opened(self) -> None:
        """Mark a fresh link (call at the end of ``_open``)."""
        self._linked_now = True
        self._cut = set()

    def maintain(self) -> str | None:
        """See ``OutputPort.maintain``.

        A connection found missing is counted as lost even when it can be restored at once
        (someone ran ``jack_disconnect``): the notes cut meanwhile still need their note-offs.
        """
        with self._lock:
            if self.closed or not self._watched():
                return None
            linked = self._linked()
            if linked and self._linked_now:
                self._cut = set(self._notes.notes)
                return None
            if not linked and self._linked_now:
                self._linked_now = False
                self.lost_count += 1
            # (a link back on its own, as a stalled server's: the cut notes still need ending)
            if not linked and not self._relink():
                return "lost" if self.lost_count and self._just_lost() else None
            self._linked_now = True
            time.sleep(self.settle_s)  # let the new connection take effect
            for data in note_offs(self._cut - self._notes.notes):
                self._send(data)
            self._cut = set(self._notes.notes)
            return "reconnected"

    def _just_lost(self) -> bool:
        """True once per loss (the first failed check after a good one)."""
        fresh = self._reported_losses < self.lost_count
        self._reported_losses = self.lost_count
        return fresh

    def _note_started(self, channel: int, key: int) -> None:
        self._cut.add((channel, key))

    def _watched(self) -> bool:
        """Whether ``maintain()`` has a link to keep: a destination we connected to (a
        virtual output has none; ``jack-virtual:`` keeps its server, see its backend)."""
        return not self.spec.virtual and self.destination is not None

    def _linked(self) -> bool:
        raise NotImplementedError

    def _relink(self) -> bool:
        raise NotImplementedError

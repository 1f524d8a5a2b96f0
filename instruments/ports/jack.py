"""The JACK backend: ``jack:`` and ``jack-virtual:`` outputs that place every message on the
frame of its deadline.

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

A ``jack:`` output holds a ``JackMidiClient`` (``instruments.ports.jacklib``), which is also
its watch on the connection: losing the destination (disconnected, or its client gone) is
noticed by ``maintain()``, and when it comes back the port reconnects and ends the cut notes.
A server that dies or stalls counts as a loss too: libjack's cached graph still shows the
connection then, but JACK no longer runs the client's cycles.
A JACK server that goes away (``JackMidiClient.server_gone``) is rejoined the same way: each
``maintain()`` while it is down tries a new client (port registered again, connected again);
the messages queued on the dead client were due while there was no server and are dropped
(the player reports the output lost and regained) — except note-offs and all-offs, which go to
the new client (they end nothing there, but no closing message is ever dropped).

A ``jack-virtual:`` output has no destination to watch, but it keeps its server the same way:
a server that dies or runs no cycles for ``STALL_S`` is an output lost (reported, counted in
the show's delivery and its log, so ``check LOG`` fails the 節 of the gap), a stalled server
that runs again is the output regained, and a server that comes back after dying gets the
port registered again under its name (whoever listened must connect to it again: a patchbay
does) and the note-offs of the notes cut meanwhile.

Nothing else is dropped: a message due in a cycle the client never ran (an xrun) goes out at
the start of the next, counted in ``late``; one that does not fit a full period's buffer waits
for the next period, first in line; after an xrun the note-offs and all-offs of the last few
cycles are written again (``instruments.ports.resend``), counted in ``resent``.

A connection JACK says already exists (a patchbay that auto-connects new ports made it first)
counts as made.
"""

from __future__ import annotations

import time

from instruments.ports.base import LinkedOutput, PortError, choose_port
from instruments.ports.jackout import JackMidiClient

SETTLE_TIMEOUT_S = 1.0  # longest wait for JACK to show a new connection
STALL_S = 0.25  # no JACK cycle for this long: the server died or stalls (periods are far shorter)


class JackOutput(LinkedOutput):
    """A ``jack:`` or ``jack-virtual:`` output on a ``JackMidiClient``: frame-accurate sends
    with a constant latency, and the connection upkeep of ``LinkedOutput``."""

    callback_needs_gil = True

    _client: JackMidiClient | None = None  # the JACK client (also the watch), while open
    _cycles_seen = -1  # the client's cycle count when it was last seen to move
    _cycles_moved_at = 0.0  # ... and when (time.monotonic())
    _stalled = False  # no cycle for STALL_S
    _late_before = 0  # late messages of the clients before a server restart

    def _open(self) -> None:
        client = self._new_client()
        try:
            if not self.spec.virtual:
                inputs = client.midi_ports(inputs=True)
                self.destination = inputs[choose_port(inputs, self.spec.name, "jack")]
                if not client.connect(str(client.own_name), self.destination):
                    raise PortError(f"JACK refused to connect {client.own_name} to "
                                    f"{self.destination}")
        except BaseException:
            client.close()
            raise
        self._client = client
        self._opened()
        self._settle()

    def _new_client(self) -> JackMidiClient:
        """A new activated client with our port (PortError without a server)."""
        try:
            client = JackMidiClient(self.client_name, self.port_name).open()
        except OSError as exc:
            raise PortError(f"libjack is not usable ({exc}): install JACK "
                            "(Debian: jackd2)") from exc
        self.own_name = client.own_name
        self.settle_s = max(0.01, 3 * client.period_s + 0.005)
        return client

    def _rejoin(self) -> bool:
        """The server went away: open a client on the new one, if there is one yet."""
        old = self._client
        assert old is not None
        try:
            client = self._new_client()
        except PortError:
            return False
        closing = old.closing_pending()
        self._late_before += old.late
        old.close()
        for data in closing:  # note-offs and all-offs are never dropped
            client.send(data)
        self._client = client
        return True

    def _settle(self) -> None:
        """Wait until JACK shows the new connection and has run a few cycles with it: a
        message sent before the graph is updated is dropped (seen as lost program changes at
        the start of a show)."""
        if self.destination is None:
            return
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._linked():
                break
            time.sleep(0.002)
        time.sleep(self.settle_s)

    @property
    def xruns(self) -> int:
        """Xruns JACK reported to the current client."""
        return self._client.xruns if self._client is not None else 0

    @property
    def resent(self) -> int:
        """Closing messages written again after an xrun (current client)."""
        return self._client.resent if self._client is not None else 0

    @property
    def deferred(self) -> int:
        """Messages that waited for a later period because a period's buffer was full."""
        return self._client.deferred if self._client is not None else 0

    @property
    def late(self) -> int:
        """Messages that missed their frame (handed over too late)."""
        return self._late_before + (self._client.late if self._client is not None else 0)

    def _send(self, data: bytes) -> None:
        assert self._client is not None
        self._client.send(data)

    def _send_at(self, data: bytes, at: float | None) -> None:
        assert self._client is not None
        self._client.send(data, at)

    def _close(self) -> None:
        client, self._client = self._client, None
        self._linked_now = False
        if client is not None:
            client.drain(timeout=1.0)
            client.close()

    def _watched(self) -> bool:
        """A ``jack-virtual:`` output keeps its server even with no destination."""
        return self.spec.kind == "jack-virtual" or super()._watched()

    def _linked(self) -> bool:
        assert self._client is not None
        if self._client.server_gone:
            return False
        now, cycles = time.monotonic(), self._client.cycles
        if cycles != self._cycles_seen:  # (checks come every 2 ms while settling: by time)
            self._cycles_seen, self._cycles_moved_at = cycles, now
        self._stalled = now - self._cycles_moved_at > STALL_S
        if self._stalled:
            return False  # the server died or stalls
        if self.destination is None:
            return True  # jack-virtual: the server runs our port's cycles
        return self.destination in self._client.connections(str(self.own_name))

    def _relink(self) -> bool:
        """Connect again (the destination may be back under the same or a new name), on a
        new client if the server went away."""
        assert self._client is not None
        if self._client.server_gone:
            if not self._rejoin():
                return False
            self._cycles_seen, self._stalled = -1, False  # a new client's own cycles
        elif self._stalled:
            return False  # JACK runs no cycles: nothing to connect to
        if self.destination is None:
            return True  # jack-virtual: our port is registered again on the new server
        inputs = self._client.midi_ports(inputs=True)
        target = self.destination if self.destination in inputs else None
        if target is None:
            try:
                target = inputs[choose_port(inputs, self.spec.name, "jack")]
            except PortError:
                return False
        if self._client.connect(str(self.own_name), target):
            self.destination = target
            return True
        return False


OUTPUT = JackOutput

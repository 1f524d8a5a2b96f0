"""QLab-style OSC remote control of a live show, through python-osc's ``Dispatcher``: one
handler per address. ``/go /stop /panic /hold /resume /skip /back``, ``/cue/{id}/start``,
``/release SIDE HIT`` (右|左, 1|0), ``/piece N`` ``/piece/next`` ``/piece/back`` (the 無算樂's
next piece) and ``/quit`` (only with ``--remote-quit``); each gets a reply
``/reply<address>`` with the player's state as JSON, sent to the sender's address once the
command is done.

No packet can stop the show: addresses are matched exactly (an OSC pattern such as ``/*`` is
not expanded), bundles' time tags are not waited for, every argument is checked (a plain
command takes no argument or one finite number — a button's 1.0 —; ``/release`` a known side
and 0/1 or true/false), and whatever is bad — unknown address, wrong types, NaN, infinity, a
string for a number, a packet that does not parse or is not well formed OSC 1.0
(``sequencer.live.control.osc_wire``: bytes left after the arguments, an unknown type tag, a
bundle element that does not fit; python-osc would read a ``/go`` out of those) — is dropped
and reported, rate-limited
(``sequencer.live.control.gate``). One thread serves the socket and only validates and queues:
commands are coalesced and paced by the gate, so floods cannot starve the player, and ``/panic``
jumps them.

Every message that names an address is answered: a command with the state after it and
``message`` (what it did, or why it did nothing) and ``acted``; a message dropped — an unknown
address (``/Go``: "addresses are lower case: /go"), bad arguments, ``/quit`` without
``--remote-quit`` — with ``{"message": why, "acted": false}`` on ``/reply<address>``. Those
answers are rate-limited (``ERROR_REPLIES_PER_S``), so a flood of garbage from a forged sender
cannot turn the show into a reflector. A refused ``/quit`` is also logged as an ``operator``
record (``acted`` false) and shown on the console.
"""

from __future__ import annotations

import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from pythonosc.dispatcher import Dispatcher, Handler
from pythonosc.osc_message_builder import OscMessageBuilder
from pythonosc.osc_packet import OscPacket

from cues.errors import UserError
from sequencer.judge.tally import normalize_side
from sequencer.live.control.gate import ControlGate, shown
from sequencer.live.control.osc_wire import address_of, malformed
from sequencer.live.player.player import Player
from sequencer.live.protocol import (
    Back,
    Go,
    GoCue,
    Hold,
    MarkRelease,
    Panic,
    PickPiece,
    PlayerCommand,
    Quit,
    Resume,
    Skip,
    Stop,
)

DEFAULT_PORT = 53000
ERROR_REPLIES_PER_S = 10  # answers to dropped messages, at most (a forged flood: no reflector)
MAX_SIDE_CHARS = 16
CUE_START_ADDRESS = "/cue/*/start"
#: ``/cue/{id}/start``: an id of printable characters, none of OSC's pattern characters
CUE_START = re.compile(r"/cue/([^/\x00-\x20\x7f*?\[\]{},!]{1,64})/start")
PLAIN_ADDRESSES: dict[str, PlayerCommand] = {
    "/go": Go(), "/stop": Stop(), "/panic": Panic(), "/hold": Hold(), "/resume": Resume(),
    "/skip": Skip(), "/back": Back(), "/quit": Quit(),
    "/piece/next": PickPiece(step=1), "/piece/back": PickPiece(step=-1),
}
MAX_PIECE = 1000


def piece_command(args: tuple[Any, ...]) -> PickPiece | None:
    """``/piece N`` (N: the piece's number in the 無算樂, from 1) → PickPiece, else None."""
    if len(args) != 1 or isinstance(args[0], bool) or not is_plain_argument(args[0]):
        return None
    number = args[0]
    if number != int(number) or not 1 <= number <= MAX_PIECE:
        return None
    return PickPiece(index=int(number))


def parse_control(url: str) -> tuple[str, int]:
    """``osc://HOST:PORT`` → (host, port); the host defaults to 127.0.0.1."""
    if not url.startswith("osc://"):
        raise UserError(f"--control {url!r}: expected osc://HOST:PORT, e.g. osc://127.0.0.1:53000")
    host, sep, port = url[len("osc://"):].rstrip("/").rpartition(":")
    if not sep:
        host, port = port, str(DEFAULT_PORT)
    try:
        number = int(port)
        if not 0 <= number <= 65535:
            raise ValueError
    except ValueError:
        raise UserError(f"--control {url!r}: bad port {port!r}") from None
    return host or "127.0.0.1", number


def is_plain_argument(value: object) -> bool:
    """A finite number (int, float, bool): what a button or fader sends with a plain command."""
    return isinstance(value, bool | int) or (isinstance(value, float) and math.isfinite(value))


def release_command(args: tuple[Any, ...]) -> MarkRelease | None:
    """``/release SIDE HIT`` → MarkRelease, or None when the arguments are bad."""
    if len(args) != 2 or not isinstance(args[0], str) or len(args[0]) > MAX_SIDE_CHARS:
        return None
    side, hit = args
    try:
        normalize_side(side)
    except UserError:
        return None
    if isinstance(hit, bool):
        return MarkRelease(side, hit)
    if isinstance(hit, int | float) and hit in (0, 1):  # NaN and infinity are neither
        return MarkRelease(side, bool(hit))
    return None


class ControlDispatcher(Dispatcher):
    """python-osc's ``Dispatcher``, hardened: exact addresses (plus ``/cue/{id}/start``), no
    waiting for time tags, and every failure — a packet that does not parse, an unknown
    address, a handler's error — complained of to the gate instead of raised."""

    def __init__(self, gate: ControlGate) -> None:
        super().__init__(strict_timing=False)
        self.gate = gate
        self.exact: dict[str, list[Handler]] = {}
        self.reply_socket: socket.socket | None = None  # the server's, once bound
        self._answers: list[float] = []  # when the last refusals were answered
        self._client: tuple[str, int] | None = None  # the sender of the packet being read

    def map(self, address: str, handler: Callable[..., None], *args: Any,
            needs_reply_address: bool = False) -> Handler:
        mapped = super().map(address, handler, *args, needs_reply_address=needs_reply_address)
        self.exact.setdefault(address, []).append(mapped)
        return mapped

    # python-osc's own returns a generator of its Handler with a wider signature
    def handlers_for_address(self, address_pattern: str) -> Iterator[Handler]:  # type: ignore[override]
        handlers = self.exact.get(address_pattern)
        if handlers is None and CUE_START.fullmatch(address_pattern):
            handlers = self.exact.get(CUE_START_ADDRESS)
        if handlers is None:
            why = f"unknown address {shown(address_pattern)}"
            lower = address_pattern.lower()
            if lower != address_pattern and (lower in self.exact or CUE_START.fullmatch(lower)):
                why += f" (addresses are lower case: {shown(lower)[1:-1]})"
            self.refuse(address_pattern, why)
            return iter(())
        return iter(handlers)

    def call_handlers_for_packet(self, data: bytes, client_address: tuple[str, int]) -> list:
        why = malformed(data)
        if why is not None:  # python-osc would guess (a /go with junk after it is a /go)
            address = address_of(data)
            if address is None:
                self.gate.complain(f"not an OSC packet: {shown(data)}")
            else:
                self._client = client_address
                self.refuse(address, f"malformed OSC packet for {shown(address)}: {why}")
                self._client = None
            return []
        try:
            messages = [timed.message for timed in OscPacket(data).messages]
        except Exception:  # python-osc raises more than ParseError on some garbage
            self.gate.complain(f"not an OSC packet: {shown(data)}")
            return []
        self._client = client_address
        for message in messages:
            try:
                for handler in self.handlers_for_address(message.address):
                    handler.invoke(client_address, message)
            except Exception as exc:
                self.gate.complain(f"{shown(message.address)}: {type(exc).__name__}")
        self._client = None
        return []

    def refuse(self, address: str, why: str) -> None:
        """Drop a message (reported by the gate) and tell its sender why on
        ``/reply<address>``, at most ERROR_REPLIES_PER_S a second."""
        self.gate.complain(why)
        client = self._client
        now = time.monotonic()
        self._answers = [t for t in self._answers if now - t < 1.0]
        if client is None or len(self._answers) >= ERROR_REPLIES_PER_S:
            return
        self._answers.append(now)
        self.replier(address, client)({"message": why, "acted": False})

    def replier(self, address: str, client: tuple[str, int]) -> Callable[[dict[str, Any]], None]:
        """Send the state after a command to ``client`` as ``/reply<address>``."""
        def reply(state: dict[str, Any]) -> None:
            if self.reply_socket is None:
                return
            try:
                message = OscMessageBuilder(f"/reply{address}")
                message.add_arg(json.dumps(state, ensure_ascii=False))
                self.reply_socket.sendto(message.build().dgram, client)
            except Exception:  # an address python-osc cannot build, an unreachable client
                pass

        return reply


def dispatcher_for(player: Player, *, remote_quit: bool = False) -> ControlDispatcher:
    """The dispatcher that checks each address's arguments and offers its command to the
    player through a ``ControlGate``; ``/quit`` only when ``remote_quit``."""
    gate = ControlGate(player, "OSC", "osc")
    dispatcher = ControlDispatcher(gate)

    def plain(client: tuple[str, int], address: str, *args: Any) -> None:
        if len(args) > 1 or not all(is_plain_argument(a) for a in args):
            dispatcher.refuse(address, f"{address} {shown(args)}: expected no argument or one "
                              "number")
        elif address == "/quit" and not remote_quit:
            why = "/quit refused: start the show with --remote-quit to allow it"
            player.log.operator("quit", "osc", time.perf_counter(), why, False)
            player.status.say(f"osc quit: {why}")
            dispatcher.refuse(address, why)
        else:
            gate.offer(PLAIN_ADDRESSES[address], dispatcher.replier(address, client))

    def cue_start(client: tuple[str, int], address: str, *args: Any) -> None:
        match = CUE_START.fullmatch(address)
        if match is None or args:
            dispatcher.refuse(address, f"{shown(address)} {shown(args)}: expected /cue/ID/start")
        else:
            gate.offer(GoCue(match[1]), dispatcher.replier(address, client))

    def parsed(parse: Callable[[tuple[Any, ...]], Any], expected: str) -> Callable[..., None]:
        """A handler offering the command ``parse`` makes of the arguments, or refusing."""
        def handle(client: tuple[str, int], address: str, *args: Any) -> None:
            command = parse(args)
            if command is None:
                dispatcher.refuse(address, f"{address} {shown(args)}: expected {expected}")
            else:
                gate.offer(command, dispatcher.replier(address, client))

        return handle

    for address in PLAIN_ADDRESSES:
        dispatcher.map(address, plain, needs_reply_address=True)
    dispatcher.map("/piece", parsed(piece_command, "the piece's number (1, 2, …)"),
                   needs_reply_address=True)
    dispatcher.map(CUE_START_ADDRESS, cue_start, needs_reply_address=True)
    dispatcher.map("/release", parsed(release_command, "SIDE (右/左) and HIT (1/0)"),
                   needs_reply_address=True)
    return dispatcher


def start_osc(player: Player, url: str, *, remote_quit: bool = False) -> tuple[str, int]:
    """Serve OSC control at ``url`` (``osc://HOST:PORT``) on one thread until the player
    closes; returns the bound (host, port)."""
    from pythonosc.osc_server import BlockingOSCUDPServer

    host, port = parse_control(url)
    dispatcher = dispatcher_for(player, remote_quit=remote_quit)
    try:
        server = BlockingOSCUDPServer((host, port), dispatcher)
    except OSError as exc:
        raise UserError(f"--control {url}: cannot bind {host}:{port}: "
                        f"{exc.strerror or exc}") from None
    dispatcher.reply_socket = server.socket
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              name="yuezheng-osc", daemon=True)
    thread.start()

    def close() -> None:
        server.shutdown()
        server.server_close()

    player.add_closer(close)
    bound_host, bound_port = str(server.server_address[0]), int(server.server_address[1])
    address = f"osc://{bound_host}:{bound_port}"
    player.status.provide("control", lambda: address)
    return bound_host, bound_port

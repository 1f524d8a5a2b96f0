"""QLab-style OSC remote control of a live show, through python-osc's ``Dispatcher``: one
handler per address. ``/go /stop /panic /hold /resume /skip /back``, ``/cue/{id}/start``,
``/release SIDE HIT`` (右|左, 1|0) and ``/quit`` (only with ``--remote-quit``); each gets a reply
``/reply<address>`` with the player's state as JSON, sent to the sender's address once the
command is done.

No packet can stop the show: addresses are matched exactly (an OSC pattern such as ``/*`` is
not expanded), bundles' time tags are not waited for, every argument is checked (a plain
command takes no argument or one finite number — a button's 1.0 —; ``/release`` a known side
and 0/1 or true/false), and whatever is bad — unknown address, wrong types, NaN, infinity, a
string for a number, a packet that does not parse — is dropped and reported, rate-limited
(``sequencer.live.control_gate``). One thread serves the socket and only validates and queues:
commands are coalesced and paced by the gate, so floods cannot starve the player, and ``/panic``
jumps them.
"""

from __future__ import annotations

import json
import math
import re
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from pythonosc.dispatcher import Dispatcher, Handler
from pythonosc.osc_message_builder import OscMessageBuilder
from pythonosc.osc_packet import OscPacket

from cues.errors import UserError
from sequencer.judge import normalize_side
from sequencer.live.control_gate import ControlGate, shown
from sequencer.live.player import Player
from sequencer.live.protocol import (
    Back,
    Go,
    GoCue,
    Hold,
    MarkRelease,
    Panic,
    PlayerCommand,
    Quit,
    Resume,
    Skip,
    Stop,
)

DEFAULT_PORT = 53000
MAX_SIDE_CHARS = 16
CUE_START_ADDRESS = "/cue/*/start"
#: ``/cue/{id}/start``: an id of printable characters, none of OSC's pattern characters
CUE_START = re.compile(r"/cue/([^/\x00-\x20\x7f*?\[\]{},!]{1,64})/start")
PLAIN_ADDRESSES: dict[str, PlayerCommand] = {
    "/go": Go(), "/stop": Stop(), "/panic": Panic(), "/hold": Hold(), "/resume": Resume(),
    "/skip": Skip(), "/back": Back(), "/quit": Quit(),
}


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

    def map(self, address: str, handler: Callable[..., None], *args: Any,  # type: ignore[override]
            needs_reply_address: bool = False) -> Handler:
        mapped = super().map(address, handler, *args, needs_reply_address=needs_reply_address)
        self.exact.setdefault(address, []).append(mapped)
        return mapped

    def handlers_for_address(self, address_pattern: str) -> Iterator[Handler]:  # type: ignore[override]
        handlers = self.exact.get(address_pattern)
        if handlers is None and CUE_START.fullmatch(address_pattern):
            handlers = self.exact.get(CUE_START_ADDRESS)
        if handlers is None:
            self.gate.complain(f"unknown address {shown(address_pattern)}")
            return iter(())
        return iter(handlers)

    def call_handlers_for_packet(self, data: bytes, client_address: tuple[str, int]) -> list:
        try:
            messages = [timed.message for timed in OscPacket(data).messages]
        except Exception:  # python-osc raises more than ParseError on some garbage
            self.gate.complain(f"not an OSC packet: {shown(data)}")
            return []
        for message in messages:
            try:
                for handler in self.handlers_for_address(message.address):
                    handler.invoke(client_address, message)
            except Exception as exc:
                self.gate.complain(f"{shown(message.address)}: {type(exc).__name__}")
        return []

    def replier(self, address: str, client: tuple[str, int]) -> Callable[[dict[str, Any]], None]:
        """Send the state after a command to ``client`` as ``/reply<address>``."""
        def reply(state: dict[str, Any]) -> None:
            if self.reply_socket is None:
                return
            message = OscMessageBuilder(f"/reply{address}")
            message.add_arg(json.dumps(state, ensure_ascii=False))
            try:
                self.reply_socket.sendto(message.build().dgram, client)
            except OSError:
                pass

        return reply


def dispatcher_for(player: Player, *, remote_quit: bool = False) -> ControlDispatcher:
    """The dispatcher that checks each address's arguments and offers its command to the
    player through a ``ControlGate``; ``/quit`` only when ``remote_quit``."""
    gate = ControlGate(player, "OSC", "osc")
    dispatcher = ControlDispatcher(gate)

    def plain(client: tuple[str, int], address: str, *args: Any) -> None:
        if len(args) > 1 or not all(is_plain_argument(a) for a in args):
            gate.complain(f"{address} {shown(args)}: expected no argument or one number")
        elif address == "/quit" and not remote_quit:
            gate.complain("/quit refused: start with --remote-quit to allow it")
        else:
            gate.offer(PLAIN_ADDRESSES[address], dispatcher.replier(address, client))

    def cue_start(client: tuple[str, int], address: str, *args: Any) -> None:
        match = CUE_START.fullmatch(address)
        if match is None or args:
            gate.complain(f"{shown(address)} {shown(args)}: expected /cue/ID/start")
        else:
            gate.offer(GoCue(match[1]), dispatcher.replier(address, client))

    def release(client: tuple[str, int], address: str, *args: Any) -> None:
        command = release_command(args)
        if command is None:
            gate.complain(f"/release {shown(args)}: expected SIDE (右/左) and HIT (1/0)")
        else:
            gate.offer(command, dispatcher.replier(address, client))

    for address in PLAIN_ADDRESSES:
        dispatcher.map(address, plain, needs_reply_address=True)
    dispatcher.map(CUE_START_ADDRESS, cue_start, needs_reply_address=True)
    dispatcher.map("/release", release, needs_reply_address=True)
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
    bound = server.server_address[:2]
    player.control = f"osc://{bound[0]}:{bound[1]}"
    return bound[0], bound[1]

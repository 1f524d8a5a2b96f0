"""QLab-style OSC remote control of a live show, through python-osc's ``Dispatcher``: one
handler per address. ``/go /stop /panic /hold /resume /skip /back /quit``,
``/cue/{id}/start`` and ``/release SIDE HIT`` (右|左, 1|0); each gets a reply
``/reply<address>`` with the player's state as JSON, sent to the sender's address once the
command is done. Other addresses are ignored.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from cues.errors import UserError
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


def replier(address: str, client: tuple[str, int]) -> Callable[[dict[str, Any]], None]:
    """Send the state after a command to ``client`` as ``/reply<address>``."""
    from pythonosc.udp_client import SimpleUDPClient

    def reply(state: dict[str, Any]) -> None:
        try:
            SimpleUDPClient(client[0], client[1]).send_message(
                f"/reply{address}", json.dumps(state, ensure_ascii=False))
        except OSError:
            pass

    return reply


def dispatcher_for(player: Player) -> Any:
    """The python-osc ``Dispatcher`` that queues each address's command to ``player``."""
    from pythonosc.dispatcher import Dispatcher

    def plain(client: tuple[str, int], address: str, *args: Any) -> None:
        player.put(PLAIN_ADDRESSES[address], replier(address, client), "osc")

    def cue_start(client: tuple[str, int], address: str, *args: Any) -> None:
        parts = address.strip("/").split("/")
        if len(parts) == 3:  # /cue/{id}/start
            player.put(GoCue(parts[1]), replier(address, client), "osc")

    def release(client: tuple[str, int], address: str, *args: Any) -> None:
        if len(args) != 2:
            return
        try:
            hit = bool(int(args[1]))
        except (TypeError, ValueError):
            return
        player.put(MarkRelease(str(args[0]), hit), replier(address, client), "osc")

    dispatcher = Dispatcher()
    for address in PLAIN_ADDRESSES:
        dispatcher.map(address, plain, needs_reply_address=True)
    dispatcher.map("/cue/*/start", cue_start, needs_reply_address=True)
    dispatcher.map("/release", release, needs_reply_address=True)
    return dispatcher


def start_osc(player: Player, url: str) -> tuple[str, int]:
    """Serve OSC control at ``url`` (``osc://HOST:PORT``) until the player closes; returns the
    bound (host, port)."""
    from pythonosc.osc_server import ThreadingOSCUDPServer

    host, port = parse_control(url)
    try:
        server = ThreadingOSCUDPServer((host, port), dispatcher_for(player))
    except OSError as exc:
        raise UserError(f"--control {url}: cannot bind {host}:{port}: "
                        f"{exc.strerror or exc}") from None
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

"""The web server of ``live --web``: the bundled pages over HTTP and the feed over a WebSocket,
served by ``websockets`` in a thread of its own with its own event loop.

Off the player's loop: the server only reads the state the player publishes and queues
commands; the sending process (``sequencer.live.sending.sender``) is another process, so nothing
here can delay a message. Pages and scripts come from ``sequencer/live/screens/web/static`` (no
internet assets). What guards the operator page and the server — the token's length, wrong
tokens by peer, the messages' size and depth, a page's Origin, the connections held — is
``sequencer.live.screens.web.guard``; its refusals are reported through ``ShowView.report``.
"""

from __future__ import annotations

import asyncio
import json
import mimetypes
import threading
from http import HTTPStatus
from pathlib import Path

from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from cues.errors import UserError
from cues.limits import SECRET_BYTES, InputFileError, read_text_limited
from sequencer.live.screens.show_state import ShowView
from sequencer.live.screens.web.feed import Session, answer, state_text
from sequencer.live.screens.web.guard import (
    MAX_MESSAGE_BYTES,
    MAX_PER_PEER,
    REPORT_EVERY_S,
    Refusals,
    TryLimiter,
    connection_cap,
    origin_allowed,
)

STATIC = Path(__file__).resolve().parent / "static"
PAGES = {"/": "performers.html", "/operator": "operator.html"}
FEED_PATH = "/feed"
PUSH_INTERVAL_S = 0.05  # how often a connection looks for a new state


def parse_web_address(text: str) -> tuple[str, int]:
    """``[ADDR:]PORT`` → (host, port); the host defaults to loopback (127.0.0.1)."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]") if sep else "127.0.0.1"
    try:
        number = int(port)
        if not 0 <= number <= 65535:
            raise ValueError
    except ValueError:
        raise UserError(f"--web {text!r}: expected [ADDR:]PORT, e.g. 8080 or "
                        "0.0.0.0:8080") from None
    return host or "127.0.0.1", number


def read_web_token(token: str | None, token_file: str | None) -> str | None:
    """The operator token: ``--web-token`` or the first line of ``--web-token-file``."""
    if token and token_file:
        raise UserError("give --web-token or --web-token-file, not both")
    if token_file:
        try:
            token = read_text_limited(token_file, SECRET_BYTES, "a file holding the token",
                                      "utf-8").strip()
        except InputFileError as exc:
            raise UserError(f"cannot read --web-token-file {exc}") from None
        if not token:
            raise UserError(f"--web-token-file {token_file} is empty")
    return token or None


def _plain(status: int, reason: str, text: str) -> Response:
    body = text.encode("utf-8")
    return Response(status, reason, Headers([("Content-Type", "text/plain; charset=utf-8"),
                                             ("Content-Length", str(len(body)))]), body)


_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
         b"Content-Length: 21\r\nConnection: close\r\n\r\ntoo many connections\n")


def _capped(cap: int, per_peer: int, refusals: Refusals) -> type[ServerConnection]:
    """A ServerConnection that is refused (503, closed at once) when ``cap`` connections are
    held, or ``per_peer`` from its address: the descriptor is given back before the next
    ``accept``, so the process never runs out of them."""
    held: dict[str, int] = {}

    class Capped(ServerConnection):
        _counted = ""

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            peer = transport.get_extra_info("peername")
            ip = str(peer[0]) if peer else "?"
            if sum(held.values()) >= cap or held.get(ip, 0) >= per_peer:
                refusals.add(ip, "too many connections")
                assert isinstance(transport, asyncio.Transport)
                transport.write(_BUSY)
                transport.close()
                return
            held[ip] = held.get(ip, 0) + 1
            self._counted = ip

        def connection_lost(self, exc: Exception | None) -> None:
            if self._counted:
                held[self._counted] -= 1
                if not held[self._counted]:
                    del held[self._counted]
                self._counted = ""
            super().connection_lost(exc)

    return Capped


def static_response(path: str) -> Response:
    """A bundled file (``PAGES`` or ``/static/NAME``), or 404."""
    name = PAGES.get(path)
    if name is None and path.startswith("/static/"):
        name = path[len("/static/"):]
    files = {p.name: p for p in STATIC.iterdir() if p.is_file()}
    if name not in files:
        return _plain(404, "Not Found", "not found\n")
    body = files[name].read_bytes()
    kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
    headers = Headers([("Content-Type", f"{kind}; charset=utf-8"),
                       ("Content-Length", str(len(body))), ("Cache-Control", "no-store")])
    return Response(HTTPStatus.OK, "OK", headers, body)


class WebServer:
    """Serve ``view`` on host:port (``start()`` … ``close()``)."""

    def __init__(self, view: ShowView, host: str, port: int, *, token: str | None = None
                 ) -> None:
        self.view = view
        self.host = host
        self.port = port
        self.token = token
        self.tries = TryLimiter()
        self.refusals = Refusals()
        self.cap = connection_cap()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._run, name="yuezheng-web", daemon=True)

    def start(self) -> str:
        """Listen (or raise ``UserError`` when the address cannot be bound); returns the URL."""
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            err = self._error
            raise UserError(f"--web {self.host}:{self.port}: cannot listen: "
                            f"{err.strerror or err}") from None
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def close(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except OSError as exc:  # only before ready: binding failed
            self._error = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with serve(self._feed, self.host, self.port, process_request=self._http,
                         compression=None, max_size=MAX_MESSAGE_BYTES,
                         create_connection=_capped(self.cap, MAX_PER_PEER, self.refusals)
                         ) as server:
            if self.port == 0:
                self.port = next(iter(server.sockets)).getsockname()[1]
            self._ready.set()
            reporter = asyncio.create_task(self._report_loop())
            await self._stop.wait()
            reporter.cancel()
        self._report(force=True)

    async def _report_loop(self) -> None:
        while True:
            await asyncio.sleep(REPORT_EVERY_S)
            self._report()

    def _report(self, force: bool = False) -> None:
        for record in self.refusals.due(force=force):
            try:
                self.view.report(record)
            except Exception:  # the log reports its own failures; the server goes on
                pass

    def _http(self, connection: ServerConnection, request: Request) -> Response | None:
        path = request.path.partition("?")[0]
        if path != FEED_PATH:
            return static_response(path)
        origin = request.headers.get("Origin")
        if not origin_allowed(origin, request.headers.get("Host")):
            peer = connection.remote_address
            self.refusals.add(str(peer[0]) if peer else "?", f"Origin {origin[:80]!r}"
                              if origin else "Origin")
            return _plain(403, "Forbidden", "this feed is for this server's own pages\n")
        return None

    async def _feed(self, ws: ServerConnection) -> None:
        peer = ws.remote_address
        session = Session(origin=f"web:{peer[0]}:{peer[1]}" if peer else "web",
                          peer=str(peer[0]) if peer else "?")
        pusher = asyncio.create_task(self._push(ws))
        loop = asyncio.get_running_loop()

        def on_result(result: dict) -> None:  # in the player's thread
            text = json.dumps(result, ensure_ascii=False)
            asyncio.run_coroutine_threadsafe(self._send(ws, text), loop)

        try:
            async for raw in ws:
                reply = answer(raw, session, self.view, self.token, on_result,
                               tries=self.tries, refusals=self.refusals)
                if reply is not None:
                    await ws.send(json.dumps(reply, ensure_ascii=False))
        except ConnectionClosed:
            pass
        finally:
            pusher.cancel()

    @staticmethod
    async def _send(ws: ServerConnection, text: str) -> None:
        try:
            await ws.send(text)
        except ConnectionClosed:
            pass

    async def _push(self, ws: ServerConnection) -> None:
        """Send the state whenever it changes."""
        last = None
        try:
            while True:
                text = state_text(self.view)
                if text is not None and text != last:
                    await ws.send(text)
                    last = text
                await asyncio.sleep(PUSH_INTERVAL_S)
        except ConnectionClosed:
            pass

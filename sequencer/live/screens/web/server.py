"""The web server of ``live --web``: the bundled pages over HTTP and the feed over a WebSocket,
served by ``websockets`` in a thread of its own with its own event loop.

Off the player's loop: the server only reads the state the player publishes and queues
commands; the sending process (``sequencer.live.sending.sender``) is another process, so nothing
here can delay a message. Pages and scripts come from ``sequencer/live/screens/web/static`` (no
internet assets).
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


def static_response(path: str) -> Response:
    """A bundled file (``PAGES`` or ``/static/NAME``), or 404."""
    name = PAGES.get(path)
    if name is None and path.startswith("/static/"):
        name = path[len("/static/"):]
    files = {p.name: p for p in STATIC.iterdir() if p.is_file()}
    if name not in files:
        body = b"not found\n"
        return Response(404, "Not Found", Headers([("Content-Type", "text/plain"),
                                                    ("Content-Length", str(len(body)))]), body)
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
                         compression=None) as server:
            if self.port == 0:
                self.port = next(iter(server.sockets)).getsockname()[1]
            self._ready.set()
            await self._stop.wait()

    def _http(self, connection: ServerConnection, request: Request) -> Response | None:
        path = request.path.partition("?")[0]
        return None if path == FEED_PATH else static_response(path)

    async def _feed(self, ws: ServerConnection) -> None:
        peer = ws.remote_address
        session = Session(origin=f"web:{peer[0]}:{peer[1]}" if peer else "web")
        pusher = asyncio.create_task(self._push(ws))
        loop = asyncio.get_running_loop()

        def on_result(result: dict) -> None:  # in the player's thread
            text = json.dumps(result, ensure_ascii=False)
            asyncio.run_coroutine_threadsafe(self._send(ws, text), loop)

        try:
            async for raw in ws:
                reply = answer(raw, session, self.view, self.token, on_result)
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

"""What guards the operator page: the token's length (or a token made for the show), the tries
of each peer (rate-limited), the feed's messages (size and depth before parsing), the Origin of
a page, and how many connections are held (below the process's descriptor limit).

- **Token**: one given (``--web-token``, ``--web-token-file``) must be ``MIN_TOKEN_CHARS``
  characters at least; with none, ``live`` makes one of ``TOKEN_BYTES`` random bytes (128 bits,
  ``secrets``), printed once by the command line.
- **Tries**: each peer (IP address) has ``FREE_TRIES`` wrong tokens; after that, each further
  wrong one doubles its wait (1 s, 2 s, … at most ``MAX_WAIT_S``), and a ``hello`` during the
  wait is refused unchecked (even with the right token). A right token clears the peer's count.
  At most ``PEERS_KEPT`` peers are remembered (the oldest forgotten).
- **Messages**: at most ``MAX_MESSAGE_BYTES`` (the server closes a connection that sends more,
  code 1009) and ``MAX_DEPTH`` levels of arrays and objects, counted before ``json`` sees them.
- **Origin**: a page's WebSocket must come from a page of this server (``Origin`` is
  ``http(s)://`` the request's own ``Host``); no ``Origin`` (not a browser) is let through: the
  token guards the commands.
- **Connections**: at most ``connection_cap()`` (``MAX_CONNECTIONS``, and half the process's
  descriptor limit), ``MAX_PER_PEER`` from one address; one more is answered ``503`` and closed
  at once.
- **Reports**: refusals are counted by peer and kind and reported at most once a
  ``REPORT_EVERY_S`` (the show log's ``{"event": "web-refused", "peer", "why", "count"}``, the
  console's message line).
"""

from __future__ import annotations

import math
import resource
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass

from cues.errors import UserError

MIN_TOKEN_CHARS = 12
TOKEN_BYTES = 16  # 128 bits
FREE_TRIES = 5
FIRST_WAIT_S = 1.0
MAX_WAIT_S = 60.0
PEERS_KEPT = 4096
MAX_MESSAGE_BYTES = 4096
MAX_DEPTH = 8
MAX_CONNECTIONS = 256
MAX_PER_PEER = 32
REPORT_EVERY_S = 1.0


def checked_token(token: str | None, where: str = "--web-token") -> str:
    """``token`` if it is long enough; a new one of 128 bits if None (UserError if short)."""
    if token is None:
        return make_token()
    if len(token) < MIN_TOKEN_CHARS:
        raise UserError(f"{where}: a token of {len(token)} character(s) is too short to guard "
                        f"the operator page (at least {MIN_TOKEN_CHARS}); give a longer one, or "
                        f"none and the show makes one of {TOKEN_BYTES * 8} bits")
    return token


def make_token() -> str:
    """A new operator token: TOKEN_BYTES random bytes, URL-safe base64."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def json_depth_ok(raw: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether ``raw`` (JSON text) nests arrays and objects at most ``limit`` deep (strings
    skipped): checked in one pass before ``json`` parses it (which recurses)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def origin_allowed(origin: str | None, host: str | None) -> bool:
    """A page's ``Origin`` is this server's own (``Host``); no Origin: not a browser."""
    if origin is None:
        return True
    return host is not None and origin.lower() in (f"http://{host}".lower(),
                                                   f"https://{host}".lower())


def connection_cap(limit: int | None = None) -> int:
    """How many connections the server holds: MAX_CONNECTIONS, and at most half the
    descriptor limit (``limit``; None: this process's soft RLIMIT_NOFILE)."""
    if limit is None:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        limit = soft if soft != resource.RLIM_INFINITY else 1 << 20
    return max(1, min(MAX_CONNECTIONS, limit // 2))


@dataclass
class _Peer:
    fails: int = 0
    until: float = -math.inf  # no try is checked before this (perf_counter)


class TryLimiter:
    """Wrong tokens by peer (see the module docstring); one event loop's (no lock)."""

    def __init__(self) -> None:
        self._peers: OrderedDict[str, _Peer] = OrderedDict()

    def wait_s(self, peer: str, now: float | None = None) -> float:
        """How long ``peer`` must wait before its next try is checked (0: now)."""
        entry = self._peers.get(peer)
        if entry is None:
            return 0.0
        return max(0.0, entry.until - (time.perf_counter() if now is None else now))

    def failed(self, peer: str, now: float | None = None) -> None:
        entry = self._peers.pop(peer, None) or _Peer()
        self._peers[peer] = entry
        while len(self._peers) > PEERS_KEPT:
            self._peers.popitem(last=False)
        entry.fails += 1
        if entry.fails >= FREE_TRIES:
            wait = min(MAX_WAIT_S, FIRST_WAIT_S * 2 ** (entry.fails - FREE_TRIES))
            entry.until = (time.perf_counter() if now is None else now) + wait

    def succeeded(self, peer: str) -> None:
        self._peers.pop(peer, None)


class Refusals:
    """Refusals counted by (peer, why) until they are reported (``due``)."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str], int] = {}
        self._last = -math.inf
        self.total = 0

    def add(self, peer: str, why: str) -> None:
        key = (peer, why)
        if key not in self._counts and len(self._counts) >= PEERS_KEPT:
            key = ("(others)", why)
        self._counts[key] = self._counts.get(key, 0) + 1
        self.total += 1

    def due(self, now: float | None = None, force: bool = False) -> list[dict[str, object]]:
        """The records to report now (at most once a REPORT_EVERY_S, or ``force``)."""
        now = time.perf_counter() if now is None else now
        if not self._counts or (not force and now - self._last < REPORT_EVERY_S):
            return []
        self._last = now
        records = [{"event": "web-refused", "peer": peer, "why": why, "count": count, "t": now}
                   for (peer, why), count in self._counts.items()]
        self._counts.clear()
        return records

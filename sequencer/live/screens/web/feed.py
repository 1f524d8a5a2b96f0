"""The pages' WebSocket feed, as messages (JSON objects with a ``type``), without the network.

From the server: ``state`` (``ShowState.to_json``, sent whenever it changes), ``pong`` (the
show clock, for the page's NTP-style offset estimate), ``hello`` (whether this page may give
commands), ``ok`` / ``denied`` (a command queued, or refused by the page's rights), then
``result`` ``{"name", "message", "acted"}`` once the player has done it: what it did, or that
it did nothing and why (the console's words).
From a page: ``ping`` ``{"c": page_time}``, ``hello`` ``{"token": …}``, ``command``
``{"name": "go"}``.

A message is checked before it is parsed (``guard``: its size and depth); a wrong token counts
against the page's peer, and while the peer waits its ``hello`` is refused unchecked (the reply
says how long: ``{"type": "hello", "control": false, "error": …}``).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sequencer.live.screens.show_state import WEB_COMMANDS, ShowView
from sequencer.live.screens.web.guard import (
    MAX_DEPTH,
    MAX_MESSAGE_BYTES,
    Refusals,
    TryLimiter,
    json_depth_ok,
)


@dataclass
class Session:
    """One page's connection: who it is (for the show log) and whether it may command."""

    origin: str
    control: bool = False
    peer: str = ""  # its IP address: wrong tokens are counted by it


def token_matches(given: object, token: str | None) -> bool:
    """A token is set and ``given`` is it (compared in constant time)."""
    if not token or not isinstance(given, str):
        return False
    return hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8"))


def answer(raw: str | bytes, session: Session, view: ShowView, token: str | None,
           on_result: Callable[[dict[str, Any]], None] | None = None, *,
           tries: TryLimiter | None = None, refusals: Refusals | None = None
           ) -> dict[str, Any] | None:
    """The reply to one message from a page (None: no reply); a command's ``result`` goes to
    ``on_result`` (any thread) once the player has done it. ``tries`` and ``refusals``: the
    server's count of wrong tokens and its report of refusals."""
    if len(raw) > MAX_MESSAGE_BYTES or not json_depth_ok(raw):
        if refusals is not None:
            refusals.add(session.peer, "message too large or too deep")
        return {"type": "error", "error": f"a message is at most {MAX_MESSAGE_BYTES} bytes "
                                          f"and {MAX_DEPTH} levels deep"}
    try:
        message = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {"type": "error", "error": "not JSON"}
    if not isinstance(message, dict):
        return {"type": "error", "error": "not a JSON object"}
    kind = message.get("type")
    if kind == "ping":
        return {"type": "pong", "c": message.get("c"), "s": view.show_clock()}
    if kind == "hello":
        return _hello(message.get("token"), session, token, tries, refusals)
    if kind == "command":
        name = message.get("name")
        if not session.control:
            return {"type": "denied", "name": name,
                    "error": "view only: control needs the show's --web-token"}
        if not isinstance(name, str) or name not in WEB_COMMANDS:
            return {"type": "denied", "name": name, "error": f"unknown command {name!r}"}
        def done(state: dict[str, Any]) -> None:
            if on_result is not None:
                on_result({"type": "result", "name": name, "message": state.get("message", ""),
                           "acted": state.get("acted", True)})

        view.command(name, session.origin, done)
        return {"type": "ok", "name": name}
    return {"type": "error", "error": f"unknown message type {kind!r}"}


def _hello(given: object, session: Session, token: str | None, tries: TryLimiter | None,
           refusals: Refusals | None) -> dict[str, Any]:
    """A page's token: checked unless its peer must wait; a wrong one counted."""
    wait = tries.wait_s(session.peer) if tries is not None else 0.0
    if wait > 0:
        session.control = False
        if refusals is not None:
            refusals.add(session.peer, "token tried during its wait")
        return {"type": "hello", "control": False,
                "error": f"too many wrong tokens from {session.peer}: wait {wait:.0f} s"}
    session.control = token_matches(given, token)
    if session.control and tries is not None:
        tries.succeeded(session.peer)
    elif given and not session.control:
        if tries is not None:
            tries.failed(session.peer)
        if refusals is not None:
            refusals.add(session.peer, "wrong token")
    return {"type": "hello", "control": session.control}


def state_text(view: ShowView) -> str | None:
    state = view.snapshot()
    if state is None:
        return None
    return json.dumps(state.to_json(), ensure_ascii=False)

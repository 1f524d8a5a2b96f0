"""The console's lines of a live show that are not the cue list: the last action and what came
of it (``message``, with ``refusal`` when a command did nothing), and the lines other parts own
(the remote control's address, the web pages' address, the Link session, the drum heard), each
read from its owner when shown; and the views other parts own for the pages (the drum heard's
strip). ``seq`` counts the messages, so that the same words said twice (a second "nothing to
hold") are news to the screens that announce them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ShowStatus:
    def __init__(self) -> None:
        self._message = ""  # the last action and what came of it
        self.refusal = ""  # why the last command did nothing ("": it did what was asked)
        self.seq = 0  # how many messages have been shown
        self._lines: dict[str, Callable[[], str]] = {}
        self._views: dict[str, Callable[[], Any]] = {}

    @property
    def message(self) -> str:
        return self._message

    @message.setter
    def message(self, text: str) -> None:
        self._message = text
        if text:
            self.seq += 1

    def say(self, text: str) -> None:
        """Show ``text`` as the console's message (a control's warning, a log error)."""
        self.message = text

    def provide(self, name: str, line: Callable[[], str]) -> None:
        """Show ``line()`` as line ``name`` (``control``, ``web``, ``link``) from now on."""
        self._lines[name] = line

    def line(self, name: str) -> str:
        source = self._lines.get(name)
        return source() if source is not None else ""

    def provide_view(self, name: str, view: Callable[[], Any]) -> None:
        """Give the pages ``view()`` as ``name`` (``heard``: the strip) from now on."""
        self._views[name] = view

    def view(self, name: str) -> Any:
        source = self._views.get(name)
        return source() if source is not None else None

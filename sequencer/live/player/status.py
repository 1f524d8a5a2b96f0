"""The console's lines of a live show that are not the cue list: the last action and what came
of it (``message``, with ``refusal`` when a command did nothing), and the lines other parts own
(the remote control's address, the web pages' address, the Link session, the drum heard), each
read from its owner when shown; and the views other parts own for the pages (the drum heard's
strip). ``seq`` counts the messages, so that the same words said twice (a second "nothing to
hold") are news to the screens that announce them.

A command's own words: the player's thread carries out a command inside ``command()``; what it
writes to ``message`` then (or to ``refusal``) is the command's
``result``, which its reply and its log line carry. What another thread says meanwhile (the
remote control's report of bad messages, a hearing failure) is shown on the message line but
is not the command's result: under load the report of a flood could otherwise come between a
GO's start and its reply and be answered as the GO's outcome."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class ShowStatus:
    def __init__(self) -> None:
        self._message = ""  # the last action and what came of it
        self.refusal = ""  # why the last command did nothing ("": it did what was asked)
        self.seq = 0  # how many messages have been shown
        self.result = ""  # what the command being carried out said ("": nothing yet)
        self._commanding: int | None = None  # the thread carrying out a command
        self._lines: dict[str, Callable[[], str]] = {}
        self._views: dict[str, Callable[[], Any]] = {}

    @property
    def message(self) -> str:
        return self._message

    @message.setter
    def message(self, text: str) -> None:
        self._message = text
        if self._commanding is not None and threading.get_ident() == self._commanding:
            self.result = text
        if text:
            self.seq += 1

    @contextmanager
    def command(self) -> Iterator[None]:
        """Within: the calling thread carries out a command (its refusal and result start
        empty); after: what is said is no command's result."""
        self.refusal = self.result = ""
        self._commanding = threading.get_ident()
        try:
            yield
        finally:
            self._commanding = None

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

"""Signals held over a fork, then acted on: so that Ctrl-C during a fork is not lost.

Python runs its own hooks around ``os.fork`` (``logging`` releases its lock in the parent, for
one), and an exception raised inside such a hook is printed as "Exception ignored" and dropped.
A SIGINT whose handler ran there raised its KeyboardInterrupt into the hook: the render went on
to the end and wrote its file, Ctrl-C unheard (seen 2 times in 12 under load).  Within
``held(signals)`` the signals' handlers only note that they came; on the way out the old
handlers are back and the first signal that came is given to its handler then (in the main
thread only: signal handlers live there).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def held(signals: tuple[int, ...] = HELD) -> Iterator[None]:
    """Within: ``signals`` are noted, not acted on; after: the first one noted goes to the
    handler that was there before (a Python handler is called, the default one is sent
    again, an ignored one stays ignored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        came.append(signum)

    # a handler set outside Python (getsignal gives None) could not be put back: left alone
    before = {s: signal.signal(s, note) for s in signals if signal.getsignal(s) is not None}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        if came:
            _act(came[0], before[came[0]])


def _act(signum: int, handler: object) -> None:
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:
        os.kill(os.getpid(), signum)

"""How the sending process learns that its show is over when nobody tells it.

- ``ENDING_SIGNALS``: the signals that end it silenced (SIGHUP: the terminal or SSH session
  went away and took the whole process group with it; SIGQUIT: Ctrl-\\).
- ``die_with_parent(signum)``: Linux's parent-death signal (``prctl(PR_SET_PDEATHSIG)``), so a
  parent killed outright (SIGKILL, the OOM killer) still sends the child ``signum`` — which it
  handles like any ending signal: panic, close the port, exit. The end of the control pipe is
  the second watch (``SendingProcess``): a parent gone means EOF there.
- ``watch_endings(on_signal)``: both at once for a child of the show (the sending and the
  hearing process), with a wake-up pipe so that a ``select`` returns when a signal comes
  (``drain_wake`` empties it).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

from instruments.processes.parent_death import die_with_parent

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
__all__ = ["ENDING_SIGNALS", "die_with_parent", "drain_wake", "watch_endings"]


def watch_endings(on_signal: Callable[[int, Any], None]) -> int:
    """Every ending signal calls ``on_signal`` and writes to a pipe whose reading end is
    returned (to ``select`` on beside the control pipe); the parent's death sends SIGTERM."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    for signum in ENDING_SIGNALS:
        signal.signal(signum, on_signal)
    die_with_parent(signal.SIGTERM)
    return wake_r


def drain_wake(wake_r: int) -> None:
    """Empty the wake-up pipe (a signal's bytes) after a ``select`` found it ready."""
    try:
        os.read(wake_r, 512)
    except BlockingIOError:
        pass


def reap(proc: Any, timeout: float) -> None:
    """Wait ``timeout`` for child ``proc`` (a multiprocessing process) to end, then terminate
    it, then kill it: it is gone when this returns."""
    proc.join(timeout)
    if proc.is_alive():
        proc.terminate()
        proc.join(1.0)
    if proc.is_alive():
        proc.kill()
        proc.join(1.0)

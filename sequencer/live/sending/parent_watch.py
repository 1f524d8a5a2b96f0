"""How the sending process learns that its show is over when nobody tells it.

- ``ENDING_SIGNALS``: the signals that end it silenced (SIGHUP: the terminal or SSH session
  went away and took the whole process group with it; SIGQUIT: Ctrl-\\).
- ``die_with_parent(signum)``: Linux's parent-death signal (``prctl(PR_SET_PDEATHSIG)``), so a
  parent killed outright (SIGKILL, the OOM killer) still sends the child ``signum`` — which it
  handles like any ending signal: panic, close the port, exit. The end of the control pipe is
  the second watch (``SendingProcess``): a parent gone means EOF there.
"""

from __future__ import annotations

import signal
from typing import Any

from instruments.processes.parent_death import die_with_parent

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
__all__ = ["ENDING_SIGNALS", "die_with_parent"]


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

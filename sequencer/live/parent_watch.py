"""How the sending process learns that its show is over when nobody tells it.

- ``ENDING_SIGNALS``: the signals that end it silenced (SIGHUP: the terminal or SSH session
  went away and took the whole process group with it; SIGQUIT: Ctrl-\\).
- ``die_with_parent(signum)``: Linux's parent-death signal (``prctl(PR_SET_PDEATHSIG)``), so a
  parent killed outright (SIGKILL, the OOM killer) still sends the child ``signum`` — which it
  handles like any ending signal: panic, close the port, exit. The end of the control pipe is
  the second watch (``SendingProcess``): a parent gone means EOF there.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing
import os
import signal

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(signum: int = signal.SIGTERM) -> bool:
    """Ask the kernel for ``signum`` when the parent dies; if it is already gone, send it at
    once. False where ``prctl`` is not available (not Linux): the pipe's end still tells."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # it died before prctl
        os.kill(os.getpid(), signum)
    return True

"""A child process that dies with its parent: Linux's parent-death signal
(``prctl(PR_SET_PDEATHSIG)``), used by the live show's sending process and by the render's
mixing processes, so that a parent killed outright (SIGKILL, the OOM killer) leaves no orphan."""

from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing
import os
import signal

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

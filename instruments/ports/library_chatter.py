"""Silence what audio libraries print on the C level while a command probes the hardware.

PortAudio, ALSA and libjack write to file descriptor 2 directly (about 65 lines of "ALSA lib
pcm.c: Unknown PCM cards.pcm.rear" and "Cannot connect to server socket" on a machine without a
sound card or JACK) before yuezheng can say the one useful thing.  :func:`quiet_libraries`
points fd 2 at a temporary file for the duration and keeps Python's own ``sys.stderr`` on the
real standard error, so our messages still arrive.  ``YUEZHENG_DEBUG=1`` turns it off.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

STDERR_FD = 2


def _stderr_is_fd2() -> bool:
    try:
        return sys.stderr.fileno() == STDERR_FD
    except (AttributeError, OSError, ValueError):  # a test's capture object: not fd 2
        return False


@contextmanager
def quiet_libraries() -> Iterator[None]:
    """Within the block, C libraries' writes to fd 2 go to a discarded temporary file;
    ``sys.stderr`` (when it is fd 2) writes to the real standard error."""
    if os.environ.get("YUEZHENG_DEBUG"):
        yield
        return
    sys.stderr.flush()
    saved = os.dup(STDERR_FD)
    own_stderr = sys.stderr
    replace = _stderr_is_fd2()
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), STDERR_FD)
        if replace:
            sys.stderr = os.fdopen(os.dup(saved), "w", buffering=1, encoding=own_stderr.encoding,
                                   errors="backslashreplace")
        try:
            yield
        finally:
            if replace:
                sys.stderr.close()
                sys.stderr = own_stderr
            os.dup2(saved, STDERR_FD)
            os.close(saved)

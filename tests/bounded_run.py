"""The CLI run in a child process, its exit code, output, time and peak memory measured.

Used by the limits and fuzz tests: hostile input must end in exit 0, 2 or 4, with a message and
no traceback, within ``MAX_RSS_MB`` and ``MAX_SECONDS``.  The child's address space is capped
(``RLIMIT_AS``) well above that, so a runaway fails fast instead of taking the machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_RSS_MB = 500
MAX_SECONDS = 30.0
ADDRESS_SPACE_CAP = 3 * 1024 ** 3  # bytes: a safety net far above MAX_RSS_MB
ALLOWED_EXITS = (0, 2, 4)


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str
    seconds: float
    rss_mb: float

    def assert_clean(self, codes: tuple[int, ...] = ALLOWED_EXITS) -> None:
        """Exit code among ``codes``, no traceback nor internal error, bounded memory and time."""
        what = f"exit {self.code}, {self.seconds:.1f} s, {self.rss_mb:.0f} MB\n{self.err[-2000:]}"
        assert self.code in codes, what
        assert "Traceback" not in self.err and "internal error" not in self.err, what
        assert self.rss_mb <= MAX_RSS_MB, what
        assert self.seconds <= MAX_SECONDS, what


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_CAP, ADDRESS_SPACE_CAP))


def run_cli(*args: str, cwd: Path | None = None, timeout: float = MAX_SECONDS * 2) -> Run:
    """``yuezheng ARGS`` in a child process (killed after ``timeout`` s), measured."""
    env = {**os.environ, "JACK_NO_START_SERVER": "1", "MPLBACKEND": "Agg"}
    env.pop("YUEZHENG_DEBUG", None)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        child = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), *args], cwd=cwd or ROOT,
                                 env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                 preexec_fn=_cap_memory)
        timer = threading.Timer(timeout, child.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            timer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)  # already reaped by wait4
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return Run(child.returncode, out.read().decode("utf-8", "replace"),
                   err.read().decode("utf-8", "replace"), seconds, usage.ru_maxrss / 1024)

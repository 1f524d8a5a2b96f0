"""The CLI run in a child process, its exit code, output, time and peak memory measured.

Used by the limits and fuzz tests: hostile input must end in exit 0, 2 or 4, with a message and
no traceback, within ``MAX_RSS_MB`` and ``MAX_SECONDS`` of work — the child's own CPU time,
which another job on the machine does not stretch as it stretches the wall clock (a child that
blocks, on a FIFO say, is killed at its wall-clock ``timeout`` and fails by its exit code).  The
child's address space is capped (``RLIMIT_AS``) well above that, so a runaway fails fast
instead of taking the machine.
"""

from __future__ import annotations

import json
import os
import signal
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
    seconds: float  # on the wall clock
    rss_mb: float
    cpu_seconds: float = 0.0  # the child's own work (user and system time)

    def assert_clean(self, codes: tuple[int, ...] = ALLOWED_EXITS) -> None:
        """Exit code among ``codes``, no traceback nor internal error, bounded memory and time."""
        what = (f"exit {self.code}, {self.seconds:.1f} s ({self.cpu_seconds:.1f} s of CPU), "
                f"{self.rss_mb:.0f} MB\n{self.err[-2000:]}")
        assert self.code in codes, what
        assert "Traceback" not in self.err and "yuezheng: internal error" not in self.err, what
        assert self.rss_mb <= MAX_RSS_MB, what
        assert self.cpu_seconds <= MAX_SECONDS, what


# The CLI is started by a small launcher process, and the launcher reports its child's peak
# memory: a child forked straight from pytest would count pytest's own pages (hundreds of MB
# after a long run) in its peak, since Linux keeps the pre-exec peak across exec.
LAUNCHER = """
import os, resource, subprocess, sys
cap = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
code = subprocess.call(sys.argv[3:])
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as report:
    report.write(f"{code} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
"""


def run_cli(*args: str, cwd: Path | None = None, timeout: float = MAX_SECONDS * 2) -> Run:
    """``yuezheng ARGS`` in a child process (killed after ``timeout`` s), measured."""
    return _run_child([str(ROOT / "cli.py"), *args], cwd, timeout)


# Several commands in one child, each through ``cli.main`` as the script runs it (a case's
# output and messages follow a line naming it on stderr); the exit codes, in order, are the
# last line of stdout.
EACH = """
import json, sys
sys.path.insert(0, sys.argv[1])
import cli
codes = []
for i, argv in enumerate(json.loads(sys.argv[2])):
    print(f"--- case {i}: {argv}", file=sys.stderr, flush=True)
    codes.append(cli.main(argv))
    sys.stdout.flush()
print(); print("exit codes:", json.dumps(codes), flush=True)
"""


def run_cli_each(argvs: list[list[str]], cwd: Path | None = None,
                 timeout: float = MAX_SECONDS * 2) -> tuple[Run, list[int]]:
    """Each of ``argvs`` (``yuezheng ARGV``) in turn in one child process, measured together:
    (the run, each command's exit code; fewer codes than commands if the child died)."""
    run = _run_child(["-c", EACH, str(ROOT), json.dumps(argvs)], cwd, timeout)
    last = run.out.rstrip().rsplit("\n", 1)[-1]
    codes = json.loads(last.split(":", 1)[1]) if last.startswith("exit codes:") else []
    return run, codes


def _run_child(python_args: list[str], cwd: Path | None, timeout: float) -> Run:
    """``python PYTHON_ARGS`` in a child process (killed after ``timeout`` s), measured."""
    env = {**os.environ, "JACK_NO_START_SERVER": "1", "MPLBACKEND": "Agg"}
    env.pop("YUEZHENG_DEBUG", None)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as report:
        start = time.monotonic()
        launcher = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, report.name, str(ADDRESS_SPACE_CAP),
             sys.executable, *python_args],
            cwd=cwd or ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
            start_new_session=True)
        timer = threading.Timer(timeout, os.killpg, (launcher.pid, signal.SIGKILL))
        timer.start()
        try:
            launcher.wait()
        finally:
            timer.cancel()
        seconds = time.monotonic() - start
        fields = report.read().split()
        code, peak_kb, cpu = ((int(fields[0]), int(fields[1]), float(fields[2]))
                              if len(fields) == 3 else (-9, 0, seconds))
        out.seek(0)
        err.seek(0)
        return Run(code, out.read().decode("utf-8", "replace"),
                   err.read().decode("utf-8", "replace"), seconds, peak_kb / 1024, cpu)

"""Ctrl-C during a render's fork is acted on, not lost (``instruments.processes.held_signals``),
and a render's worker processes stopped after an interrupt never wait on their task queue.

Python drops an exception raised in its own fork hooks ("Exception ignored"); a SIGINT whose
handler ran in ``logging``'s hook let a render go on and write its file (seen in CI: the render
killed mid-mix test found the file written).  Here a hook sends the signal at the worst moment,
every time, in a fresh interpreter (a fork hook cannot be taken back).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from instruments.processes.held_signals import held

ROOT = Path(__file__).resolve().parents[1]


def test_a_signal_within_is_acted_on_after() -> None:
    reached_end_of_block = False
    with pytest.raises(KeyboardInterrupt):
        with held():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # the handler has had its chances to run in here
                pass
            reached_end_of_block = True
    assert reached_end_of_block
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_handlers_before_are_back_and_only_the_first_signal_acts() -> None:
    seen: list[int] = []
    before = signal.signal(signal.SIGUSR1, lambda n, f: seen.append(n))
    try:
        with held((signal.SIGUSR1, signal.SIGUSR2)):
            os.kill(os.getpid(), signal.SIGUSR1)
            os.kill(os.getpid(), signal.SIGUSR1)
        assert seen == [signal.SIGUSR1]
        assert signal.getsignal(signal.SIGUSR2) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGUSR1, before)


_FORK_SCRIPT = """
import os, signal, sys
sys.path.insert(0, {root!r})
from instruments.processes.workers import Workers

os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.{name}))
pool = Workers("test", "test", lambda task: task, 2)
whole = False
try:
    pool.start()
    pool.put(7)
    print("went on:", pool.result(), flush=True)
    whole = True
finally:
    pool.stop(whole)
"""


@pytest.mark.parametrize("name, code", [("SIGINT", -signal.SIGINT), ("SIGTERM", -signal.SIGTERM)])
def test_a_signal_during_the_workers_fork_stops_the_parent(name: str, code: int) -> None:
    """Ctrl-C (KeyboardInterrupt: Python ends on it as by the signal) or SIGTERM (its default) that came during the fork ends the
    parent after it; the children are stopped (``Workers.stop``) on the way out."""
    script = textwrap.dedent(_FORK_SCRIPT).format(root=str(ROOT), name=name)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert "went on" not in done.stdout
    assert "Exception ignored" not in done.stderr
    assert done.returncode == code, done.stderr
    if name == "SIGINT":
        assert done.stderr.rstrip().endswith("KeyboardInterrupt")


_LEFT_LOCK_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from instruments.processes.workers import Workers

pool = Workers("test", "test", lambda task: task, 2)
pool.start()
pool.put(1)
pool.tasks._wlock.acquire()  # as a Ctrl-C just after a put's taking of it leaves it
pool.stop(whole=False)
print("stopped", [c.exitcode for c in pool.children], flush=True)
"""


def test_workers_stopped_after_an_interrupt_never_wait_on_the_task_queue() -> None:
    """A Ctrl-C between a ``put``'s taking of the task queue's lock and its block leaves the lock
    taken (seen: a render interrupted while it handed out its tasks hung for ever in ``stop``);
    an interrupted stop kills and reaps the children without a word through that queue."""
    script = textwrap.dedent(_LEFT_LOCK_SCRIPT).format(root=str(ROOT))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"stopped [{-signal.SIGKILL}, {-signal.SIGKILL}]"

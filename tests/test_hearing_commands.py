"""The hearing process reads its parent's commands: a ``select`` on the control pipe that
reported it ready and then left the command unread spun the process (SCHED_FIFO) at full speed
and starved the show on a busy machine — the file never began and no quit was ever heard."""

from __future__ import annotations

import os
import time
from multiprocessing import Pipe

from sequencer.live.hearing.process import HearingProcess
from sequencer.live.hearing.source import HearSpec
from sequencer.live.protocol import HearFrom, QuitHearing


def _process() -> tuple[HearingProcess, object]:
    child, parent = Pipe()
    proc = HearingProcess(child, HearSpec("file", path="drum.wav"), "yz-test", 0.05, 0.0)
    proc.wake_r, _ = os.pipe()
    return proc, parent


def test_a_command_waiting_on_the_pipe_is_read() -> None:
    proc, parent = _process()
    parent.send(HearFrom(12.5))  # type: ignore[attr-defined]
    proc._wait([], 1.0)
    assert proc.t0 == 12.5 and not proc.quit
    parent.send(QuitHearing())  # type: ignore[attr-defined]
    proc._wait([], 1.0)
    assert proc.quit


def test_an_idle_wait_sleeps_once_a_command_is_read() -> None:
    """After the command is read the pipe is quiet: the next wait sleeps its timeout out (a
    generous bound: it returned at once, thousands of times, before)."""
    proc, parent = _process()
    parent.send(HearFrom(1.0))  # type: ignore[attr-defined]
    proc._wait([], 1.0)
    waits, started = 0, time.perf_counter()
    while time.perf_counter() - started < 0.2:
        proc._wait([], 0.05)
        waits += 1
    assert waits <= 10

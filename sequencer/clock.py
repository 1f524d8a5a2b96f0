"""Clocks: absolute deadlines on a monotonic clock, and a fake clock for exact tests.

The scheduler never sleeps for "the time between two events" (relative sleeps drift by about
0.1 ms per event); it waits until an absolute deadline. ``MonotonicClock`` sleeps until about a
millisecond before the deadline and spins the rest, which gives lateness of a few microseconds
when the process has the CPU. Waits can be cancelled (Linux Show Player's ``rwait``).

Times are seconds on ``time.perf_counter()``, which on Linux is CLOCK_MONOTONIC and therefore
the same in every process: an absolute start time can be handed to the sender process.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable

SPIN_S = 0.001  # sleep until this long before a deadline, then spin


@runtime_checkable
class Clock(Protocol):
    """What the scheduler needs from a clock."""

    def now(self) -> float:
        """Seconds on this clock's time line."""
        ...

    def wait_until(self, deadline: float, cancel: threading.Event | None = None) -> bool:
        """Return True at ``deadline`` (at once if it has passed), False if ``cancel`` was set
        first."""
        ...


class MonotonicClock:
    """Real time: ``time.perf_counter()``; waits sleep, then spin the last ``spin_s``."""

    def __init__(self, spin_s: float = SPIN_S) -> None:
        if spin_s < 0:
            raise ValueError("spin_s must be >= 0")
        self.spin_s = spin_s

    def now(self) -> float:
        return time.perf_counter()

    def wait_until(self, deadline: float, cancel: threading.Event | None = None) -> bool:
        perf = time.perf_counter
        spin = self.spin_s
        while True:
            if cancel is not None and cancel.is_set():
                return False
            remaining = deadline - perf()
            if remaining <= 0:
                return True
            if remaining > spin:
                # cancel.wait wakes at once when the event is set
                if cancel is not None:
                    if cancel.wait(remaining - spin):
                        return False
                else:
                    time.sleep(remaining - spin)
            elif cancel is None:
                while perf() < deadline:
                    pass
                return True
            else:
                while perf() < deadline:
                    if cancel.is_set():
                        return False
                return True


class FakeClock:
    """A clock for tests: time moves only through ``wait_until`` (it jumps to the deadline)
    and ``advance``. ``waits`` records every deadline waited for, in order."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()
        self.waits: list[float] = []

    def now(self) -> float:
        with self._lock:
            return self._now

    def wait_until(self, deadline: float, cancel: threading.Event | None = None) -> bool:
        with self._lock:
            if cancel is not None and cancel.is_set():
                return False
            self.waits.append(deadline)
            self._now = max(self._now, deadline)
            return True

    def advance(self, seconds: float) -> float:
        """Move time forward by ``seconds`` (>= 0); returns the new time."""
        if seconds < 0:
            raise ValueError("a FakeClock does not go backwards")
        with self._lock:
            self._now += seconds
            return self._now

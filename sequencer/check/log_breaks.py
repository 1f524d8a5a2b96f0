"""Where the 射節 of a show log stop short or pause, and why — so that ``check LOG`` reports an
operator's stop as a stop, never as a failure of the timing.

A 射節 is cut short by the operator's ``stop`` or ``panic`` (an ``end`` record ``"how":
"panic"`` says the same), by the show interrupted (``interrupted``: a signal such as Ctrl-C, or
an error), by the show started again in the same log (a new ``show`` record: ``--resume``, or a
new run) or by the show's ``done`` — each a stop, not a failure of the timing; or by the log's
own end, where nothing says why (a kill, a crash, a log cut short): the block stays incomplete
and fails, and says so.  ``LogBreaks`` is fed the records in file order with the
number of 節 read so far, and gives the last 節 before each break the reason (``JieOnset.ended``);
a cue that ended by itself (an ``end`` record without ``how``) before the break is not cut by it.

A ``hold`` pauses the sending process: every deadline after it moves by the time held.  The
sending process's own count of all the time held so far is in ``output-resumed`` records
(``"held_s"``); a log without them is estimated from the ``hold`` and ``resume`` records.  Each
節 carries the time held before it (``JieOnset.held_s``): the check takes it out of the
intervals and names the hold.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, TypeGuard

from sequencer.check.jie_blocks import LOG_END, JieOnset


class LogBreaks:
    """The breaks and holds of one log, read in order (see the module docstring)."""

    def __init__(self) -> None:
        self.ended: dict[int, str] = {}  # index of the last 節 before a break → why
        self.held: list[float] = []  # per 節, the time held before it in its run of the show
        self._exact = 0.0  # the sending process's count (output-resumed)
        self._estimate = 0.0  # with the holds it has not counted yet
        self._hold_at: float | None = None
        self._shows = 0
        self._last_cue: str | None = None
        self._closed = True  # the cue of the last 節 ended by itself

    def note(self, record: dict[str, Any], count: int) -> None:
        """One record of the log, ``count`` 節 read before it."""
        event, t = record.get("event"), record.get("t")
        at = f" at {t:.3f} s" if _number(t) else ""
        why = None
        if event == "jie":
            self.held.append(self._estimate)
            self._last_cue, self._closed = record.get("cue"), False
            return
        if event == "stop":
            why = f"the operator stopped the music{at}"
        elif event == "panic" or (event == "end" and record.get("how") == "panic"):
            stage = record.get("stage")
            why = f"the operator's panic{f' (stage {stage})' if stage else ''}{at}"
        elif event == "show":
            self._shows += 1
            self._exact = self._estimate = 0.0  # a new sending process, nothing held yet
            self._hold_at = None
            if self._shows > 1:
                why = f"the show was started again in this log{at} (--resume, or a new run)"
        elif event == "done":
            why = f"the show ended{at}"
        elif event == "interrupted":
            why = f"the show was interrupted{at} ({record.get('why') or 'a signal or an error'})"
        elif event == "end" and record.get("cue") == self._last_cue:
            self._closed = True
        elif event == "hold" and _number(t):
            self._hold_at = float(t)
        elif event == "resume" and _number(t) and self._hold_at is not None:
            self._estimate = self._exact + max(0.0, float(t) - self._hold_at)
            self._hold_at = None
        elif event == "output-resumed" and _number(record.get("held_s")):
            self._exact = self._estimate = record["held_s"]
        if why and count and not self._closed:
            self.ended.setdefault(count - 1, why)
            self._closed = True

    def mark(self, jie: list[JieOnset]) -> list[JieOnset]:
        """``jie`` (every 節 of the log, in order) with the time held before each and the
        reason a break gives the last 節 before it (the log's end, the last of all)."""
        ended = dict(self.ended)
        if jie and not self._closed:
            ended.setdefault(len(jie) - 1, LOG_END)
        return [replace(j, held_s=self.held[i] if i < len(self.held) else 0.0,
                        ended=ended.get(i)) for i, j in enumerate(jie)]


def _number(value: object) -> TypeGuard[int | float]:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))

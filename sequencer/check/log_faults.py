"""Delivery faults in a live show log: the 節 that may not have been heard on time.

A show log (``sequencer.live.player.show_log``) records each 節 when the sending process reached it,
whether or not anyone heard it. Its delivery records tell what went wrong: ``output-lost`` …
``output-regained`` (nothing sent between was heard; a loss is noticed up to
``LOSS_NOTICE_S`` after it happened) and ``late`` (a cue whose messages were not all delivered
on time). ``LogFaults`` is fed the records in file order and marks each 節 concerned with a
``fault``: a 節 inside or just after a loss (the loss fell between it and the 節 before it), and
the 節 of the cue at or before each late message's deadline (the first one after it when none
came before). ``check LOG`` fails their blocks.
"""

from __future__ import annotations

import bisect
import itertools
import math
import sys
from dataclasses import replace
from typing import Any, TypeGuard

from sequencer.check.jie_blocks import JieOnset

LOSS_NOTICE_S = 1.0  # the output's link is checked at least this often during a show


class LogFaults:
    """The delivery records of one log, read in order (see the module docstring)."""

    def __init__(self) -> None:
        self.losses: list[tuple[float, float]] = []  # (from, to) show-clock seconds
        self.late: list[tuple[str, float, str]] = []  # (cue, deadline, why) of late messages

    def note(self, record: dict[str, Any]) -> None:
        """One record of the log (a delivery record is kept; others are passed over)."""
        event, cue, t = record.get("event"), record.get("cue"), record.get("t")
        if event == "output-lost" and _number(t):
            self.losses.append((t - LOSS_NOTICE_S, math.inf))
        elif event == "output-regained" and _number(t) and self.losses:
            if self.losses[-1][1] == math.inf:
                self.losses[-1] = (self.losses[-1][0], t)
        elif event == "late" and isinstance(cue, str):
            count = sum(record.get(k, 0) for k in ("late", "missed", "lost")
                        if _number(record.get(k)))
            why = (f"{cue}: {count} message{'s' if count != 1 else ''} not delivered on time "
                   f"(worst {record.get('worst_ms', '?')} ms late)")
            times = record.get("times")
            for deadline in times if isinstance(times, list) else []:
                if _number(deadline):
                    self.late.append((cue, deadline, why))

    def mark(self, jie: list[JieOnset]) -> list[JieOnset]:
        """``jie`` (the log's 節, in order) with the faults set (in time that grows as
        n log n with the 節 and the delivery records: a log holds hundreds of thousands)."""
        late = self._late_jie(jie)
        losses = _Intervals(self.losses)
        out = []
        for i, j in enumerate(jie):
            since = jie[i - 1].t if i and j.k > 1 else j.t
            lost = losses.overlapping(since, j.t)
            if lost is not None:
                regained = ("never regained" if lost[1] == math.inf
                            else f"regained at {lost[1]:.3f} s")
                j = replace(j, fault=f"the output was lost ({regained}): 節 {j.k} at "
                                     f"{j.t:.3f} s may not have been heard")
            elif i in late:
                j = replace(j, fault=late[i])
            out.append(j)
        return out

    def _late_jie(self, jie: list[JieOnset]) -> dict[int, str]:
        """Index of a 節 → why a message near it was not on time: the last 節 of the message's
        cue (or of no cue) at or before its deadline, else the first one after it."""
        groups: dict[str | None, list[int]] = {}
        for i, j in enumerate(jie):
            groups.setdefault(j.hint, []).append(i)
        found = {hint: _Nearest([jie[i].t for i in own], own) for hint, own in groups.items()}
        unnamed = found.get(None)
        out: dict[int, str] = {}
        for cue, deadline, why in self.late:
            before, after = -1, len(jie)
            for near in (found.get(cue), unnamed):
                if near is not None:
                    b, a = near.around(deadline)
                    before, after = max(before, b), min(after, a)
            if before >= 0 or after < len(jie):
                out.setdefault(before if before >= 0 else after, why)
        return out


class _Nearest:
    """Indices of 節 with their times: the last index at or before a time, the first after."""

    def __init__(self, times: list[float], indices: list[int]) -> None:
        order = sorted(range(len(times)), key=times.__getitem__)
        self.times = [times[o] for o in order]
        by_time = [indices[o] for o in order]
        self.last_upto = list(itertools.accumulate(by_time, max))
        self.first_from = list(itertools.accumulate(reversed(by_time), min))[::-1]

    def around(self, t: float) -> tuple[int, int]:
        """(the largest index at or before ``t`` or -1, the smallest after it or a large one)."""
        p = bisect.bisect_right(self.times, t)
        return (self.last_upto[p - 1] if p else -1,
                self.first_from[p] if p < len(self.first_from) else sys.maxsize)


class _Intervals:
    """Loss intervals (from, to): one that overlaps a span, found by bisection."""

    def __init__(self, spans: list[tuple[float, float]]) -> None:
        self.spans = sorted(spans)
        self.starts = [a for a, _ in self.spans]
        self.latest: list[int] = []  # per span: the one ending latest among it and those before
        for i, (_, end) in enumerate(self.spans):
            best = self.latest[-1] if self.latest else i
            self.latest.append(i if end > self.spans[best][1] else best)

    def overlapping(self, since: float, until: float) -> tuple[float, float] | None:
        """The loss that starts by ``until`` and lasts longest, if it lasts to ``since``."""
        p = bisect.bisect_right(self.starts, until)
        if not p:
            return None
        span = self.spans[self.latest[p - 1]]
        return span if span[1] >= since else None


def _number(value: object) -> TypeGuard[int | float]:
    """A finite number (a record with NaN or infinity where a time belongs is passed over)."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))

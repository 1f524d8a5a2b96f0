"""Delivery faults in a live show log: the 節 that may not have been heard on time.

A show log (``sequencer.live.showlog``) records each 節 when the sending process reached it,
whether or not anyone heard it. Its delivery records tell what went wrong: ``output-lost`` …
``output-regained`` (nothing sent between was heard; a loss is noticed up to
``LOSS_NOTICE_S`` after it happened) and ``late`` (a cue whose messages were not all delivered
on time). ``LogFaults`` is fed the records in file order and marks each 節 concerned with a
``fault``: a 節 inside or just after a loss (the loss fell between it and the 節 before it), and
the 節 of the cue at or before each late message's deadline (the first one after it when none
came before). ``check LOG`` fails their blocks.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from sequencer.jie_blocks import JieOnset

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
        """``jie`` (the log's 節, in order) with the faults set."""
        late = self._late_jie(jie)
        out = []
        for i, j in enumerate(jie):
            since = jie[i - 1].t if i and j.k > 1 else j.t
            lost = next((loss for loss in self.losses if loss[0] <= j.t and loss[1] >= since),
                        None)
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
        """Index of a 節 → why a message near it was not on time."""
        out: dict[int, str] = {}
        for cue, deadline, why in self.late:
            own = [i for i, j in enumerate(jie) if j.hint in (cue, None)]
            before = [i for i in own if jie[i].t <= deadline]
            after = [i for i in own if jie[i].t > deadline]
            if before or after:
                out.setdefault(before[-1] if before else after[0], why)
        return out


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)

"""The show log: JSON lines, one record per event, flushed line by line (a crash loses nothing
written). Its format is a contract (``yuezheng check LOG`` reads the 節 records; ``--resume LOG``
the starts), and every record is written here:

``{"event": "show", "rite", "title", "cues", "t"}``, then ``start`` and ``end`` of each cue
(``{"event", "cue", "t"}``, an end by panic with ``"how": "panic"``); every 節 as ``{"event":
"jie", "t", "k", "n", "cue", "cycle"}`` (``t`` when the sending process reached it); ``sent``
(each cue's send lateness); ``hold``, ``resume``, ``panic`` (with its ``stage``), ``stop``,
``release`` (a release the judge marked, judged) and ``done``. Times ``t`` are seconds on the
monotonic show clock.

What was delivered, not only what was planned (new kinds; the records above are unchanged):

- ``{"event": "output-lost", "t"}``: the output went away (its destination, or the JACK server,
  gone); until ``{"event": "output-regained", "t"}`` nothing sent is heard.
- ``{"event": "late", "cue", "t", "late", "missed", "lost", "worst_ms", "times"}``: when a cue
  ends, its messages not delivered on time — handed to a port that sends at once more than
  10 ms late (``late``), not put on their frame by a frame-accurate (JACK) port (``missed``),
  sent while the output was lost (``lost``); ``worst_ms``: the worst send lateness; ``times``:
  the deadlines of the late and missed ones. ``check LOG`` fails the block of 節 where they
  fell, and every block an output loss overlaps.
- ``{"event": "operator", "action", "origin", "t", "result"}``: every operator command (GO,
  stop, hold, resume, skip, back, panic, nudge, release, quit), who asked (``key``, ``osc``,
  ``midi``) and what came of it (or why it did nothing: "GO again to cut …").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from cues.errors import UserError
from sequencer.judge import Decision, Tally
from sequencer.live.protocol import CLOCK_KEY, CueEnded, CueLogEntry, MessagesLate


def resume_point(log_path: str | Path) -> tuple[str | None, str]:
    """(rite id, the last cue the log started) — for ``--resume LOG``."""
    rite_id: str | None = None
    last: str | None = None
    try:
        with open(log_path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    if number > 1:  # a crash may cut the last line short
                        continue
                    raise UserError(f"{log_path}:{number}: not a JSON line") from None
                if rec.get("event") == "show":
                    rite_id = rec.get("rite")
                elif rec.get("event") == "start" and rec.get("cue") != CLOCK_KEY:
                    last = rec.get("cue")
    except OSError as exc:
        raise UserError(f"cannot read {log_path}: {exc.strerror or exc}") from None
    if last is None:
        raise UserError(f"{log_path}: the log records no cue start to resume from")
    return rite_id, last


class ShowLog:
    """The show log of one show (``path`` None: kept in ``records`` only)."""

    def __init__(self, path: str | Path | None) -> None:
        self._f: TextIO | None = None
        if path is not None:
            try:
                self._f = open(path, "a", encoding="utf-8")  # closed by close()
            except OSError as exc:
                raise UserError(f"cannot write the log {path}: {exc.strerror or exc}") from None
        self.records: list[dict[str, Any]] = []

    def write(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        if self._f is not None:
            self._f.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    # the records ---------------------------------------------------------------------------
    def show(self, rite_id: str, title: str, cues: list[str], t: float) -> None:
        self.write({"event": "show", "rite": rite_id, "title": title, "cues": cues, "t": t})

    def cue(self, entry: CueLogEntry) -> None:
        self.write(entry.to_json())

    def jie(self, cue: str, t: float, k: int, n: int, cycle: int) -> None:
        self.write({"event": "jie", "t": t, "k": k, "n": n, "cue": cue, "cycle": cycle})

    def sent(self, ended: CueEnded) -> None:
        late = ended.lateness
        self.write({"event": "sent", "cue": ended.key, "messages": late.count,
                    "late_p50_ms": round(late.p50 * 1000, 4),
                    "late_p99_ms": round(late.p99 * 1000, 4),
                    "late_max_ms": round(late.worst * 1000, 4),
                    "missed_frames": ended.missed})

    def moment(self, event: str, t: float) -> None:
        """``hold``, ``resume``, ``stop``, ``done``, ``output-lost`` or ``output-regained``."""
        self.write({"event": event, "t": t})

    def late(self, event: MessagesLate) -> None:
        self.write({"event": "late", "cue": event.key, "t": event.t, "late": event.late,
                    "missed": event.missed, "lost": event.lost,
                    "worst_ms": round(event.worst * 1000, 4),
                    "times": [round(t, 6) for t in event.times]})

    def operator(self, action: str, origin: str, t: float, result: str) -> None:
        self.write({"event": "operator", "action": action, "origin": origin, "t": t,
                    "result": result})

    def panic(self, stage: int, t: float) -> None:
        self.write({"event": "panic", "stage": stage, "t": t})

    def release(self, cue: str, t: float, decision: Decision, tally: Tally) -> None:
        release = decision.release
        self.write({"event": "release", "cue": cue, "t": round(t, 4), "side": release.side,
                    "hit": release.hit, "counted": decision.counted,
                    "reason": decision.reason, "右": tally.right, "左": tally.left})

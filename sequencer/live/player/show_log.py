"""The show log: JSON lines, one record per event, flushed line by line (a crash loses nothing
written). Its format is a contract (``yuezheng check LOG`` reads the 節 records; ``--resume LOG``
the starts), and every record is written here:

``{"event": "show", "rite", "title", "cues", "t", "date"}`` (``date``: the wall clock at ``t``,
ISO 8601 with the UTC offset; ``"resumed": {"log", "cue"}`` when ``--resume`` started it again
from an earlier log), then ``start`` and ``end`` of each cue
(``{"event", "cue", "t"}``, an end by panic with ``"how": "panic"``); every 節 as ``{"event":
"jie", "t", "k", "n", "cue", "cycle"}`` (``t`` when the sending process reached it); ``sent``
(each cue's send lateness); ``hold``, ``resume``, ``panic`` (with its ``stage``), ``stop``,
``release`` (a release the judge marked, judged; ``t`` the press less ``delay_ms``, the
judge's delay; ``corrected``: the outcome of the side's last mark, changed) and ``done``
(with its ``date``). Times ``t`` are seconds on the monotonic show clock.

What was delivered, not only what was planned (new kinds; the records above are unchanged):

- ``{"event": "output-lost", "t"}``: the output went away (its destination, or the JACK server,
  gone); until ``{"event": "output-regained", "t"}`` nothing sent is heard.
- ``{"event": "late", "cue", "t", "late", "missed", "lost", "worst_ms", "times"}``: when a cue
  ends, its messages not delivered on time — handed to a port that sends at once more than
  10 ms late (``late``), not put on their frame by a frame-accurate (JACK) port (``missed``),
  sent while the output was lost (``lost``); ``worst_ms``: the worst send lateness; ``times``:
  the deadlines of the late and missed ones. ``check LOG`` fails the block of 節 where they
  fell, and every block an output loss overlaps.
- ``{"event": "interrupted", "t", "why"}``: the show ended by a signal (Ctrl-C, a kill) or an
  error (``why``: the exception's name), its output silenced; ``check LOG`` reports a 射節 it
  cut short as stopped.
- ``{"event": "output-resumed", "t", "held_s"}``: the sending process resumed after a hold;
  ``held_s``: all the time it has held so far (every deadline after it is that much later), as
  it counted it — ``check LOG`` takes it out of the intervals of a 射節 held midway.
- ``{"event": "link", "cue", "t", "k", "n", "cycle", "mode", "peers", "tempo",
  "phase_error_ms", "relead"}`` (``live --link``/``--link-follow``): every 節 in the Link
  session — how many other peers, the session's tempo, and how far the session's beat at the
  節's event time (the deadline its messages went out against) was from the 節's beat
  (``relead``: the leader published again).
- ``{"event": "operator", "action", "origin", "t", "result", "acted"}``: every operator
  command (GO, stop, hold, resume, skip, back, panic, nudge, release, piece, quit), who asked
  (``key``, ``osc``, ``midi``, ``web:ADDR:PORT``) and what came of it — the words the console
  showed: "he-yue ends at its next rest point, in 1.2 s (樂闋)" — with ``acted`` false when it
  did nothing, ``result`` then saying why ("nothing to hold: no cue is running or waiting",
  "GO again to cut …").

The log is not the show: a record that cannot be written (a full disk, an I/O error) does not
stop it. The first failure is kept in ``error`` (and passed to ``on_error``, if set), later
records are not written but counted in ``lost``, and the caller reports it at the end.
Records may come from several threads (the player's, a remote control's): writes are locked.
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from cues.errors import UserError
from cues.limits import LOG_BYTES, json_line, lines_within, read_text_limited
from sequencer.judge.tally import Decision, Tally
from sequencer.live.protocol import CLOCK_KEY, CueEnded, CueLogEntry, MessagesLate


def wall_date(t: float) -> str:
    """The wall-clock date and time (ISO 8601, local time with its UTC offset, to the
    millisecond) of ``t`` on the monotonic show clock."""
    wall = time.time() - (time.perf_counter() - t)
    return datetime.fromtimestamp(wall).astimezone().isoformat(timespec="milliseconds")


def resume_point(log_path: str | Path) -> tuple[str | None, str]:
    """(rite id, the last cue the log started) — for ``--resume LOG``."""
    rite_id: str | None = None
    last: str | None = None
    text = lines_within(log_path, read_text_limited(log_path, LOG_BYTES, "a show log (.jsonl)",
                                                    "utf-8"))
    for number, line in enumerate(io.StringIO(text), 1):  # line by line: no list of them
        if not line.strip():
            continue
        try:
            rec = json_line(line, f"{log_path}:{number}")
        except UserError:
            if number > 1:  # a crash may cut the last line short
                continue
            raise
        if not isinstance(rec, dict):
            continue
        if rec.get("event") == "show":
            rite_id = rec.get("rite")
        elif rec.get("event") == "start" and rec.get("cue") != CLOCK_KEY:
            last = rec.get("cue")
    if last is None:
        raise UserError(f"{log_path}: the log records no cue start to resume from")
    return rite_id, last


def open_log(path: str | Path) -> TextIO:
    """``path`` opened to append the show log, never blocking the show: a regular file (made
    if missing) or a character device as usual; a FIFO only if someone reads it already, and
    then without blocking — a reader that falls behind makes a write fail, which stops the log
    (``ShowLog.error``), not the show; a directory or a FIFO no one reads: UserError now, before
    the show starts."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY
                     | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        why = ("it is a FIFO that no one is reading; start its reader first"
               if exc.errno == errno.ENXIO else exc.strerror or str(exc))
        raise UserError(f"cannot write the log {path}: {why}") from None
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        os.close(fd)
        raise UserError(f"cannot write the log {path}: not a file, a FIFO or a character device")
    if not stat.S_ISFIFO(mode):
        os.set_blocking(fd, True)
    return open(fd, "a", encoding="utf-8")  # closed by ShowLog.close()


class ShowLog:
    """The show log of one show (``path`` None: kept in ``records`` only)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = path
        self._f: TextIO | None = None
        if path is not None:
            self._f = open_log(path)
        self.records: list[dict[str, Any]] = []
        self.error: str | None = None  # the first write failure
        self.lost = 0  # records not written since
        self.on_error: Callable[[str], None] | None = None
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.records.append(record)
            if self._f is None:
                return
            if self.error is not None:
                self.lost += 1
                return
            try:
                self._f.write(json.dumps(record, ensure_ascii=False) + "\n")
                self._f.flush()
            except OSError as exc:
                self.lost += 1
                self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        """Keep the first failure and tell ``on_error``; nothing more is written."""
        if self.error is not None:
            return
        self.error = f"the show log {self.path} cannot be written ({exc.strerror or exc})"
        if self.on_error is not None:
            self.on_error(f"{self.error}: the show goes on without it")

    def close(self) -> None:
        with self._lock:
            f, self._f = self._f, None
            if f is None:
                return
            try:
                f.close()  # closes the file even when its last flush fails
            except OSError as exc:
                self._failed(exc)

    # the records ---------------------------------------------------------------------------
    def show(self, rite_id: str, title: str, cues: list[str], t: float,
             resumed: dict[str, str] | None = None) -> None:
        """The show's first record: its rite, its cues, the wall-clock ``date`` at ``t`` (so
        that every ``t`` of the log has a date), and ``resumed`` ({"log", "cue"}) when it
        starts again from an earlier show's log."""
        record = {"event": "show", "rite": rite_id, "title": title, "cues": cues, "t": t,
                  "date": wall_date(t)}
        if resumed is not None:
            record["resumed"] = resumed
        self.write(record)

    def cue(self, entry: CueLogEntry) -> None:
        self.write(entry.to_json())

    def jie(self, cue: str, t: float, k: int, n: int, cycle: int) -> None:
        self.write({"event": "jie", "t": t, "k": k, "n": n, "cue": cue, "cycle": cycle})

    def link(self, cue: str, t: float, k: int, n: int, cycle: int, *, peers: int, tempo: float,
             phase_error_ms: float, relead: bool, mode: str) -> None:
        """A 節 in the Link session: its peers, tempo and phase error (``live --link``)."""
        self.write({"event": "link", "cue": cue, "t": t, "k": k, "n": n, "cycle": cycle,
                    "mode": mode, "peers": peers, "tempo": round(tempo, 6),
                    "phase_error_ms": round(phase_error_ms, 4), "relead": relead})

    def heard(self, record: dict[str, Any]) -> None:
        """A stroke of the drum heard (``live --hear``): ``t`` on the show clock, ``frame`` and
        ``rate`` (the input's own clock: ``check LOG`` times the drummer by it, as it times a
        recording), and where it falls on the 射節's grid."""
        self.write({"event": "heard", **record})

    def hearing(self, record: dict[str, Any]) -> None:
        """The input heard (``hearing``: ready, a gap, xruns, lost, ended)."""
        self.write({"event": "hearing", **record})

    def follow(self, record: dict[str, Any]) -> None:
        """A 耦 cycle placed on the drummer's grid (``live --follow``): both grids."""
        self.write({"event": "follow", **record})

    def sent(self, ended: CueEnded) -> None:
        late = ended.lateness
        self.write({"event": "sent", "cue": ended.key, "messages": late.count,
                    "late_p50_ms": round(late.p50 * 1000, 4),
                    "late_p99_ms": round(late.p99 * 1000, 4),
                    "late_max_ms": round(late.worst * 1000, 4),
                    "missed_frames": ended.missed})

    def moment(self, event: str, t: float) -> None:
        """``hold``, ``resume``, ``stop``, ``done``, ``output-lost`` or ``output-regained``
        (``done`` with its wall-clock ``date`` too)."""
        self.write({"event": event, "t": t, **({"date": wall_date(t)} if event == "done"
                                                else {})})

    def output_resumed(self, t: float, held_s: float) -> None:
        """The sending process resumed; ``held_s``: all the time it has held so far."""
        self.write({"event": "output-resumed", "t": t, "held_s": round(held_s, 6)})

    def late(self, event: MessagesLate) -> None:
        self.write({"event": "late", "cue": event.key, "t": event.t, "late": event.late,
                    "missed": event.missed, "lost": event.lost,
                    "worst_ms": round(event.worst * 1000, 4),
                    "times": [round(t, 6) for t in event.times]})

    def operator(self, action: str, origin: str, t: float, result: str,
                 acted: bool = True) -> None:
        self.write({"event": "operator", "action": action, "origin": origin, "t": t,
                    "result": result, "acted": acted})

    def panic(self, stage: int, t: float) -> None:
        self.write({"event": "panic", "stage": stage, "t": t})

    def release(self, cue: str, t: float, decision: Decision, tally: Tally,
                delay_s: float = 0.0, corrected: bool = False) -> None:
        """A release the judge marked: ``t`` (seconds from the cue's start) is the release, the
        press less the judge's delay ``delay_ms``; ``corrected``: a second mark changed the
        outcome of the side's last one (the same release, at its time)."""
        release = decision.release
        self.write({"event": "release", "cue": cue, "t": round(t, 4), "side": release.side,
                    "hit": release.hit, "counted": decision.counted,
                    "reason": decision.reason, "右": tally.right, "左": tally.left,
                    "delay_ms": round(delay_s * 1000, 3),
                    **({"corrected": True} if corrected else {})})

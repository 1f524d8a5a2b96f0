"""Timing of yuezheng's live sending path vs isobar's Timeline vs a plain deadline-sleep loop.

    python benchmarks/live_jitter.py --json [--events 200] [--interval-ms 25]

Needs a running JACK server (.ci/jack.sh). Each contender sends ``--events`` messages
``--interval-ms`` apart, idle and then loaded (a busy Python thread in this program plus a busy
process, which with two cores takes the other core).

* yuezheng: the path ``yuezheng live`` uses — a ``ShowSender`` process fed the schedule as one
  cue, started by a GO, sending to a ``jack:`` output (``instruments.ports.jack``: each message on
  its deadline's frame, a constant latency later). ``p50_ms``/``p99_ms``/``max_ms``/``drift_ms``
  are its lateness **at arrival**: a receiver in its own idle process stamps each message with
  the time of its JACK frame (JACK's cycle-time estimate), minus the deadline and the output's
  constant latency. ``handover_*`` is the lateness of the sending loop itself (the time it hands
  each message to the output, against the deadline: the measure isobar gets below).
* deadline_sleep: ``time.sleep(deadline - now)`` then send through rtmidi, in this process;
  lateness at the send call (and ``rx_*`` at arrival: rtmidi hands JACK each message at the
  start of the next period).
* isobar: the time its action callback runs; isobar's start is not known exactly, so its
  lateness is measured against the best-case offset (min over the run), which favours it.

``drift_ms`` is the mean lateness of the last 10 % of events minus that of the first 10 %.
This file prints (it is a script, not part of the library).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from instruments.midi import all_off_messages
from instruments.ports.base import choose_port
from instruments.ports.jacklib import (
    LATENCY_PERIODS,
    JackMidiInput,
    jack_period,
    jack_running,
)
from sequencer.live.protocol import CueEnded, StartCue
from sequencer.live.sending.sender import REALTIME_PRIORITY, ShowSender

RX_CLIENT = f"yzbench{os.getpid()}"
RX_PORT = f"{RX_CLIENT}:in"


def _stats(late_s: list[float]) -> dict[str, float]:
    ms = sorted(x * 1000 for x in late_s)
    n = len(ms)
    tenth = max(1, n // 10)
    return {
        "n": n,
        "p50_ms": round(statistics.median(ms), 4),
        "p99_ms": round(ms[min(n - 1, int(0.99 * n))], 4),
        "max_ms": round(ms[-1], 4),
        "drift_ms": round((statistics.fmean(x * 1000 for x in late_s[-tenth:])
                           - statistics.fmean(x * 1000 for x in late_s[:tenth])), 4),
    }


# ── helpers in other processes ─────────────────────────────────────────────────────────────────

def _receiver(conn: Any, client: str) -> None:
    rx = JackMidiInput(client, "in").open()
    conn.send("ready")
    while True:
        cmd = conn.recv()
        if cmd == "take":
            conn.send([t for _, _, _, t in rx.messages])
            rx.messages.clear()
        elif cmd == "quit":
            break
    rx.close()


def _busy_process(stop: Any) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(10000):
            x += 1


class Load:
    """A busy Python thread here and a busy process elsewhere."""

    def __init__(self) -> None:
        self._stop_thread = threading.Event()
        self._stop_proc = mp.get_context("spawn").Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._proc = mp.get_context("spawn").Process(target=_busy_process,
                                                     args=(self._stop_proc,), daemon=True)

    def _spin(self) -> None:
        x = 0
        while not self._stop_thread.is_set():
            x += 1

    def __enter__(self) -> Load:
        self._proc.start()
        self._thread.start()
        time.sleep(0.3)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop_thread.set()
        self._stop_proc.set()
        self._thread.join()
        self._proc.join()


# ── contenders ─────────────────────────────────────────────────────────────────────────────────

def _schedule(n: int, interval: float) -> list[tuple[float, bytes]]:
    return [(i * interval, bytes((0x90 | (i % 16), 20 + i % 100, 1 + i % 127))) for i in range(n)]


def run_yuezheng(n: int, interval: float, realtime: int
                 ) -> tuple[list[float], tuple[Any, ...], bool]:
    """(deadlines, handover stats (count, p50, p99, max s), SCHED_FIFO)."""
    schedule = _schedule(n, interval)
    times = [t for t, _ in schedule]
    messages = [m for _, m in schedule]
    with ShowSender(f"jack:{RX_PORT}", client_name="yzbench-out", realtime=realtime) as sender:
        got_rt = bool(sender.ready and sender.ready.realtime)
        sender.load("bench", times, messages)
        t0 = time.perf_counter() + 0.3
        sender.send(StartCue("bench", t0))
        ended = sender.wait_for(CueEnded, n * interval + 10)
        assert ended is not None, "the cue did not end"
    late = ended.lateness
    return [t0 + t for t in times], (late.count, late.p50, late.p99, late.worst), got_rt


def run_deadline_sleep(n: int, interval: float) -> tuple[list[float], list[float], float]:
    """(send lateness, deadlines, output latency)."""
    schedule = _schedule(n, interval)
    late: list[float] = []
    deadlines: list[float] = []
    # a plain loop sends through rtmidi's JACK API, as such programs do (no frame placement)
    import rtmidi

    out = rtmidi.MidiOut(rtmidi.API_UNIX_JACK, "yzbench-sleep")
    try:
        out.open_port(choose_port(out.get_ports(), RX_PORT, "jack"), "out")
        t0 = time.perf_counter() + 0.2
        for t, message in schedule:
            deadline = t0 + t
            delay = deadline - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            sent = time.perf_counter()
            out.send_message(message)
            late.append(sent - deadline)
            deadlines.append(deadline)
        for message in all_off_messages():  # what a panic's second stage sends
            out.send_message(message)
        time.sleep(0.05)  # let JACK take what is queued before the port closes
        out.close_port()
    finally:
        out.delete()
    return late, deadlines, 0.0


def run_isobar(n: int, interval: float) -> list[float]:
    import isobar as iso

    calls: list[float] = []
    done = threading.Event()

    def action() -> None:
        calls.append(time.perf_counter())
        if len(calls) >= n:
            done.set()

    # tempo 60: one beat per second, 480 ticks per beat; the interval is a whole number of ticks
    timeline = iso.Timeline(60, output_device=iso.DummyOutputDevice())
    timeline.schedule({"action": action, "duration": interval}, count=n)
    timeline.background()
    done.wait(n * interval + 10)
    timeline.stop()
    offsets = [c - i * interval for i, c in enumerate(calls[:n])]
    best = min(offsets)
    return [o - best for o in offsets]


def _rx(conn: Any, deadlines: list[float], latency: float) -> list[float] | None:
    """Arrival lateness of the first len(deadlines) messages, less the output's constant
    latency (note-offs at close follow them)."""
    time.sleep(0.2)
    conn.send("take")
    stamps = conn.recv()
    if len(stamps) < len(deadlines):
        return None
    return [s - d - latency for s, d in zip(stamps, deadlines, strict=False)]


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--events", type=int, default=200)
    ap.add_argument("--interval-ms", type=float, default=25.0,
                    help="a whole number of isobar ticks at 60 BPM (480 ppqn): 25 ms = 12 ticks")
    ap.add_argument("--realtime", type=int, default=REALTIME_PRIORITY,
                    help="SCHED_FIFO priority for yuezheng's sender process (0: none); with a "
                    "priority the plain-scheduling figures are also given as yuezheng_no_rt")
    return ap.parse_args(argv)


def _isobar_missing() -> str | None:
    """Why isobar cannot be compared, or None when it can."""
    try:
        import isobar  # noqa: F401
    except ImportError as exc:
        return f"isobar is not installed ({exc}); `pip install isobar` to compare"
    return None


def _run_all(result: dict[str, Any], label: str, args: argparse.Namespace, rx_parent: Any,
             latency: float, isobar_missing: str | None) -> None:
    """Every contender once, under one load condition (``label``), into ``result``."""
    n, interval = args.events, args.interval_ms / 1000
    for key, prio in (("yuezheng", args.realtime), ("yuezheng_no_rt", 0)):
        if key == "yuezheng_no_rt" and not args.realtime:
            continue
        deadlines, handover, got_rt = run_yuezheng(n, interval, prio)
        rx = _rx(rx_parent, deadlines, latency)
        row: dict[str, Any] = _stats(rx) if rx else {"n": 0, "lost": True}
        row["latency_ms"] = round(latency * 1000, 3)
        row.update({"handover_p50_ms": round(handover[1] * 1000, 4),
                    "handover_p99_ms": round(handover[2] * 1000, 4),
                    "handover_max_ms": round(handover[3] * 1000, 4),
                    "sched_fifo": got_rt})
        result.setdefault(key, {})[label] = row
    late, deadlines, sleep_latency = run_deadline_sleep(n, interval)
    row = _stats(late)
    rxl = _rx(rx_parent, deadlines, sleep_latency)  # the 32 all-off messages follow
    if rxl:
        row.update({f"rx_{k}": v for k, v in _stats(rxl).items() if k != "n"})
    result.setdefault("deadline_sleep", {})[label] = row
    if isobar_missing:
        result["isobar"] = {"skipped": isobar_missing}
    else:
        result.setdefault("isobar", {})[label] = _stats(run_isobar(n, interval))


def _add_ratios(result: dict[str, Any], rate: int) -> None:
    y, i = result["yuezheng"], result.get("isobar", {})
    frame_ms = 1000 / rate  # arrival times are exact to a frame: no finer figure means anything
    for label in ("idle", "loaded"):
        if label in i and "p99_ms" in y[label]:
            result[f"ratio_isobar_over_yuezheng_{label}_p99"] = round(
                i[label]["p99_ms"] / max(y[label]["p99_ms"], frame_ms), 1)
            result[f"ratio_isobar_over_yuezheng_handover_{label}_p99"] = round(
                i[label]["p99_ms"] / max(y[label]["handover_p99_ms"], 1e-3), 1)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    if not jack_running():
        print("live_jitter: no JACK server is running (start one with .ci/jack.sh)",
              file=sys.stderr)
        return 1
    frames, rate = jack_period()
    result: dict[str, Any] = {
        "config": {"events": args.events, "interval_ms": args.interval_ms,
                   "cpus": os.cpu_count(), "jack_period_frames": frames, "jack_rate": rate,
                   "sender_start_method": "spawn", "sender_realtime_priority": args.realtime},
    }
    ctx = mp.get_context("spawn")
    rx_parent, rx_child = ctx.Pipe()
    rx_proc = ctx.Process(target=_receiver, args=(rx_child, RX_CLIENT), daemon=True)
    rx_proc.start()
    assert rx_parent.recv() == "ready"
    isobar_missing = _isobar_missing()
    try:
        for label, load in (("idle", False), ("loaded", True)):
            with Load() if load else contextlib.nullcontext():
                _run_all(result, label, args, rx_parent, LATENCY_PERIODS * frames / rate,
                         isobar_missing)
    finally:
        rx_parent.send("quit")
        rx_proc.join(5)
    _add_ratios(result, rate)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name, rows in result.items():
            print(name, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Send lateness of yuezheng's sender vs isobar's Timeline vs a plain deadline-sleep loop.

    python benchmarks/live_jitter.py --json [--events 200] [--interval-ms 25]

Needs a running JACK server (.ci/jack.sh). Each contender sends ``--events`` messages
``--interval-ms`` apart, idle and then loaded (a busy Python thread in this program plus a busy
process, which with two cores takes the other core). Lateness is taken at the send call:
  * yuezheng: the child's report, send time minus the absolute deadline;
  * deadline_sleep: ``time.sleep(deadline - now)`` then send, in this process, same measure;
  * isobar: the time its action callback runs; isobar's start is not known exactly, so its
    lateness is measured against the best-case offset (min over the run), which favours it.
For yuezheng and deadline_sleep the lateness at JACK reception is also given (``rx_*``): a
receiver in its own idle process stamps each message with ``time.perf_counter()``.
``drift_ms`` is the mean lateness of the last 10 % of events minus that of the first 10 %.
This file prints (it is a script, not part of the library).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from instruments.ports import jack_period, jack_running, open_output  # noqa: E402
from sequencer.sender import Sender  # noqa: E402

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
    import rtmidi

    stamps: list[float] = []
    rx = rtmidi.MidiIn(rtmidi.API_UNIX_JACK, client)
    rx.open_virtual_port("in")
    rx.set_callback(lambda event, data: stamps.append(time.perf_counter()))
    conn.send("ready")
    while True:
        cmd = conn.recv()
        if cmd == "take":
            conn.send(list(stamps))
            stamps.clear()
        elif cmd == "quit":
            break
    rx.close_port()
    rx.delete()


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


def run_yuezheng(n: int, interval: float, realtime: int = 0
                 ) -> tuple[list[float], list[float], bool]:
    schedule = _schedule(n, interval)
    with Sender(f"jack:{RX_PORT}", schedule, client_name="yzbench-out",
                realtime=realtime) as sender:
        got_rt = bool(sender.ready_info and sender.ready_info[3])
        t0 = sender.start(lead=0.2)
        sender.wait(n * interval + 10)
        records = sender.stop()
    deadlines = [r.deadline for r in records]
    assert t0
    return [r.lateness for r in records], deadlines, got_rt


def run_deadline_sleep(n: int, interval: float) -> tuple[list[float], list[float], float]:
    schedule = _schedule(n, interval)
    late: list[float] = []
    deadlines: list[float] = []
    with open_output(f"jack:{RX_PORT}", client_name="yzbench-sleep") as port:
        t0 = time.perf_counter() + 0.2
        for t, message in schedule:
            deadline = t0 + t
            delay = deadline - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            sent = time.perf_counter()
            port.send(message)
            late.append(sent - deadline)
            deadlines.append(deadline)
        port.panic()
    return late, deadlines, t0


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


def _rx(conn: Any, deadlines: list[float]) -> list[float] | None:
    """Reception lateness of the first len(deadlines) messages (note-offs at close follow)."""
    time.sleep(0.1)
    conn.send("take")
    stamps = conn.recv()
    if len(stamps) < len(deadlines):
        return None
    return [s - d for s, d in zip(stamps, deadlines, strict=False)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--events", type=int, default=200)
    ap.add_argument("--interval-ms", type=float, default=25.0,
                    help="a whole number of isobar ticks at 60 BPM (480 ppqn): 25 ms = 12 ticks")
    ap.add_argument("--realtime", type=int, default=50,
                    help="SCHED_FIFO priority for yuezheng's sender process (0: none); with a "
                    "priority the plain-scheduling figures are also given as yuezheng_no_rt")
    args = ap.parse_args(argv)
    if not jack_running():
        print("live_jitter: no JACK server is running (start one with .ci/jack.sh)",
              file=sys.stderr)
        return 1
    n, interval = args.events, args.interval_ms / 1000
    frames, rate = jack_period()
    result: dict[str, Any] = {
        "config": {"events": n, "interval_ms": args.interval_ms, "cpus": os.cpu_count(),
                   "jack_period_frames": frames, "jack_rate": rate,
                   "sender_start_method": "spawn", "sender_realtime_priority": args.realtime},
    }
    ctx = mp.get_context("spawn")
    rx_parent, rx_child = ctx.Pipe()
    rx_proc = ctx.Process(target=_receiver, args=(rx_child, RX_CLIENT), daemon=True)
    rx_proc.start()
    assert rx_parent.recv() == "ready"
    try:
        try:
            import isobar  # noqa: F401
            have_isobar: str | None = None
        except ImportError as exc:
            have_isobar = f"isobar is not installed ({exc}); `pip install isobar` to compare"
        for label, load in (("idle", False), ("loaded", True)):
            ctxm = Load() if load else None
            if ctxm:
                ctxm.__enter__()
            try:
                for key, prio in (("yuezheng", args.realtime), ("yuezheng_no_rt", 0)):
                    if key == "yuezheng_no_rt" and not args.realtime:
                        continue
                    late, deadlines, got_rt = run_yuezheng(n, interval, prio)
                    row = _stats(late)
                    row["sched_fifo"] = got_rt
                    rx = _rx(rx_parent, deadlines)
                    if rx:
                        row.update({f"rx_{k}": v for k, v in _stats(rx).items() if k != "n"})
                    result.setdefault(key, {})[label] = row
                late, deadlines, _ = run_deadline_sleep(n, interval)
                row = _stats(late)
                rxl = _rx(rx_parent, deadlines)  # the panic's 32 messages follow
                if rxl:
                    row.update({f"rx_{k}": v for k, v in _stats(rxl).items() if k != "n"})
                result.setdefault("deadline_sleep", {})[label] = row
                if have_isobar:
                    result["isobar"] = {"skipped": have_isobar}
                else:
                    result.setdefault("isobar", {})[label] = _stats(run_isobar(n, interval))
            finally:
                if ctxm:
                    ctxm.__exit__(None, None, None)
    finally:
        rx_parent.send("quit")
        rx_proc.join(5)
    y, i = result["yuezheng"], result.get("isobar", {})
    if "loaded" in i:
        result["ratio_isobar_over_yuezheng_loaded_p99"] = round(
            i["loaded"]["p99_ms"] / max(y["loaded"]["p99_ms"], 1e-6), 1)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name, rows in result.items():
            print(name, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

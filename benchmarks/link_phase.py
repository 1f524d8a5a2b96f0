"""Ableton Link phase error of ``yuezheng live --link``: how far a plain Link peer's beat is from
each 射節 節 yuezheng sends.

    python benchmarks/link_phase.py [--json] [--jie-seconds 0.25]

Everything runs inside a private network namespace (``tests/netns.py``: ``unshare -n``, only
``lo``, multicast routed to it — Link never touches the host network). In there a plain aalink
peer (this script, ``--inner``) joins a Link session, starts ``yuezheng live SHEET --auto
--link --output memory:… --log …`` on a 射節 of 6 耦 × 5 節 (30 節, ``--jie-seconds`` each), and
samples its own session beat every millisecond (``link.beat`` read between two
``time.perf_counter()`` reads less than 50 µs apart, dated at their middle) until yuezheng
ends.

**How the error is measured**: every 節's MIDI event time is the time stamp of its first
messages in the memory output's record (the deadline the sending process sent them against: a
frame-accurate JACK output puts them on that instant's frame), found through the 節 records of
yuezheng's show log. The peer's beat at that instant is its nearest sample carried forward at
the session tempo; the phase error is that beat's distance, modulo the quantum (5: a 耦's
cycle), from the 節's own beat (節 k of cycle c: beat ``c·5 + k − 1``), in milliseconds, over
all 30 節 (p50/p99/max of its absolute value). Reported beside it: the same at the instant the
sending process had actually sent them (``peer_phase_error_at_send_ms``: adds the send
lateness), yuezheng's own reading (the ``link`` records of its show log), and the sending
process's lateness with Link and, as the anchor, the same show without Link (``send_late_ms``:
Link runs in the parent process, so it must not move these).

``measure() -> dict`` is the figure for other benchmarks; ``measure_follow(tempo)`` runs
``--link-follow`` with the plain peer setting ``tempo`` and returns the 節 deadlines sent.
This file prints (it is a script, not part of the library).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from instruments.ports.memory import read_memory_record  # noqa: E402
from tests.netns import run_in_netns  # noqa: E402

SAMPLE_WINDOW_S = 50e-6  # a beat sample is kept when read within this window
N = 5  # 節 per 耦's cycle in the sheet below (the quantum: 1 beat a 節 while 節 ≤ 3 s)
SHEET = """\
[rite]
id = "link-bench"
title = "Link"
work = "benchmark"
hang = "特縣"

[[cue]]
id = "she"
kind = "射節"
at = "奏騶虞"
song = "騶虞"
jie = 5
listen = 1
ou = ["上耦", "次耦", "下耦", "四耦", "五耦", "六耦"]
instruments = [{ name = "鼓", count = 1 }, { name = "瑟", count = 1 }]
source = { work = "w", quote = "q" }
"""


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": math.nan, "p99": math.nan, "max": math.nan}
    xs = sorted(abs(v) for v in values)
    return {"p50": round(xs[len(xs) // 2], 4),
            "p99": round(xs[min(len(xs) - 1, math.ceil(0.99 * len(xs)) - 1)], 4),
            "max": round(xs[-1], 4)}


def _phase_ms(beat: float, expected: float, tempo: float) -> float:
    d = math.fmod(beat - expected, N)
    d = d - N if d > N / 2 else (d + N if d <= -N / 2 else d)
    return d * 60_000.0 / tempo


# inside the namespace: the plain peer -----------------------------------------------------------
async def _peer_run(mode: str, jie_s: str, tempo: float | None, work: Path) -> dict[str, Any]:
    import aalink

    link = aalink.Link(120.0)
    link.quantum = N
    link.start_stop_sync_enabled = True
    link.enabled = True
    log, out = work / "show.jsonl", work / "sent.jsonl"
    argv = [sys.executable, str(ROOT / "cli.py"), "live", str(work / "sheet.toml"), "--auto",
            "--output", f"memory:{out}", "--log", str(log), "--jie-seconds", jie_s]
    argv += {"lead": ["--link"], "follow": ["--link-follow"], "none": []}[mode]
    proc = await asyncio.create_subprocess_exec(*argv, cwd=ROOT, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE)
    samples: list[tuple[float, float, float]] = []  # (show-clock time, beat, tempo)
    set_tempo = tempo is not None
    while proc.returncode is None:
        if set_tempo and link.num_peers:
            link.tempo = tempo  # the plain peer sets the session's tempo once yuezheng is in
            set_tempo = False
        before = time.perf_counter()
        beat = link.beat
        after = time.perf_counter()
        if after - before < SAMPLE_WINDOW_S:  # else preempted between: not dated well enough
            samples.append(((before + after) / 2, beat, link.tempo))
        try:
            await asyncio.wait_for(proc.wait(), 0.001)
        except TimeoutError:
            pass
    stdout, stderr = await proc.communicate()
    link.enabled = False
    if proc.returncode != 0:
        raise SystemExit(f"yuezheng live failed ({proc.returncode}): {stderr.decode()}")
    return _analyse(mode, samples, log, out)


def _analyse(mode: str, samples: list[tuple[float, float, float]], log: Path,
             out: Path) -> dict[str, Any]:
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    jie = [r for r in records if r["event"] == "jie"]
    links = [r for r in records if r["event"] == "link"]
    sent = read_memory_record(out)
    deadlines = sorted({at for at, _ in sent})
    jie_deadlines = [deadlines[bisect.bisect_right(deadlines, r["t"]) - 1] for r in jie]
    beats = [r["cycle"] * r["n"] + r["k"] - 1 for r in jie]
    at_event = _errors(samples, jie_deadlines, beats)
    at_send = _errors(samples, [r["t"] for r in jie], beats)
    late = [r for r in records if r["event"] == "sent"]
    return {
        "mode": mode, "jie": len(jie), "session_tempo": samples[-1][2],
        "peer_phase_error_ms": _stats(at_event), "peer_errors_ms": [round(e, 4) for e in at_event],
        "peer_phase_error_at_send_ms": _stats(at_send),
        "own_phase_error_ms": _stats([r["phase_error_ms"] for r in links]),
        "peers": max((r["peers"] for r in links), default=0),
        "releads": sum(r["relead"] for r in links),
        "send_late_ms": {k: late[0][f"late_{k}_ms"] for k in ("p50", "p99", "max")}
        if late else {},
        "jie_deadlines": jie_deadlines,
    }


def _errors(samples: list[tuple[float, float, float]], times: list[float],
            beats: list[int]) -> list[float]:
    """The phase error (ms) of the session's beat at each of ``times`` against ``beats``: the
    nearest sample carried forward at its tempo."""
    at = [s[0] for s in samples]
    out = []
    for t, expected in zip(times, beats, strict=True):
        i = min(bisect.bisect_left(at, t), len(at) - 1)
        if i > 0 and abs(at[i - 1] - t) < abs(at[i] - t):
            i -= 1
        ts, beat, tempo = samples[i]
        out.append(_phase_ms(beat + (t - ts) * tempo / 60.0, expected, tempo))
    return out


def inner(mode: str, jie_s: str, tempo: float | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lnk-bench-") as tmp:
        work = Path(tmp)
        (work / "sheet.toml").write_text(SHEET, encoding="utf-8")
        return asyncio.run(_peer_run(mode, jie_s, tempo, work))


# outside: the namespace -------------------------------------------------------------------------
def run_peer(mode: str, jie_s: str, tempo: float | None = None,
         timeout: float = 120.0) -> dict[str, Any]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--inner", mode,
            "--jie-seconds", jie_s]
    if tempo is not None:
        argv += ["--tempo", repr(tempo)]
    done = run_in_netns(argv, timeout, cwd=ROOT, env={**os.environ, "PYO_GUI_WX": "0"})
    if done.returncode != 0:
        raise RuntimeError(f"link_phase --inner {mode} failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def measure(jie_s: str = "0.25") -> dict[str, Any]:
    """The Link phase error over a 射節 of 30 節 (a plain peer's and yuezheng's own), and the
    sending process's lateness with Link and without (the anchor)."""
    lead = run_peer("lead", jie_s)
    anchor = run_peer("none", jie_s)
    lead.pop("jie_deadlines")
    return {**lead, "jie_seconds": float(jie_s),
            "send_late_ms_without_link": anchor["send_late_ms"]}


def measure_follow(tempo: float, jie_s: str = "0.25") -> dict[str, Any]:
    """``--link-follow`` with a plain peer setting ``tempo``: the 節 deadlines yuezheng sent
    (``jie_deadlines``) and the peer's phase error at them."""
    return run_peer("follow", jie_s, tempo)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--jie-seconds", default="0.25")
    ap.add_argument("--inner", choices=("lead", "follow", "none"), help=argparse.SUPPRESS)
    ap.add_argument("--tempo", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        print(json.dumps(inner(args.inner, args.jie_seconds, args.tempo)))
        return
    result = measure(args.jie_seconds)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    peer, own = result["peer_phase_error_ms"], result["own_phase_error_ms"]
    print(f"Link phase error over {result['jie']} 節 of {result['jie_seconds']} s "
          f"({result['peers']} other peer(s)):")
    print(f"  plain aalink peer  p50 {peer['p50']:.3f}  p99 {peer['p99']:.3f}  "
          f"max {peer['max']:.3f} ms")
    send = result["peer_phase_error_at_send_ms"]
    print(f"  ... at the send    p50 {send['p50']:.3f}  p99 {send['p99']:.3f}  "
          f"max {send['max']:.3f} ms")
    print(f"  yuezheng's own     p50 {own['p50']:.3f}  p99 {own['p99']:.3f}  "
          f"max {own['max']:.3f} ms   (re-published {result['releads']}×)")
    late, anchor = result["send_late_ms"], result["send_late_ms_without_link"]
    print(f"  send lateness p99 {late['p99']:.3f} ms with Link, {anchor['p99']:.3f} ms without")


if __name__ == "__main__":
    main()

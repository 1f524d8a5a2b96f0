"""Hearing the drum (``live --hear``) and following it (``live --follow``): detection latency,
timing error and follow error, beside aubio's onset detector on the same input in the same run.

    python benchmarks/listen.py --json [--skip-jack] [--skip-follow]

Inputs (rendered here): the 鄉射's 射節 at 1 s 節 in the courtyard — drum and 瑟 drone, 120
strokes placed on their ticks by the timeline (the file's own onsets) — and a "human" drummer
(tests/human_drummer.py: its drum alone, slowing 3 % across the cycles, each stroke ±20 ms).

* **offline stream** (both detectors, the same signal, the same 256-frame periods, one after
  the other in this process): strokes found of 120, false ones, timing error against the file's
  onsets (raw and less its median: a constant offset is no timing error to 「間若一」), the
  detection latency from the stroke at the microphone to the detector's decision — each period
  delivered at its end (as a sound card with a period's capture latency delivers it), the
  wait for the period that lets the detector decide, the time it took — and the CPU per
  period. aubio's ``onset`` (``hfc``, 1024/256, the method that scored best
  on this input here: see docs/hearing.md) and yuezheng's ``StrokeStream``; and the anchor:
  ``check``'s offline detector (onsets.py) on the whole file.
* **JACK** (yuezheng's hearing process, as ``live`` runs it, on a dummy server of this run's
  own at 256 frames / 48 kHz, the file played into the port by tests/hear_rig.py): the same
  figures measured at the frame, with JACK's own xrun count; strokes within 0.2 s after or
  0.05 s before an xrun are reported apart, and the route's delay (a whole number of periods:
  after an xrun the dummy graph may run the player after the input) is taken per stretch
  between xruns.
* **follow** (``live --hear FILE --follow --output memory:``): the accompaniment's 節 (its
  deadlines) against the drummer's grid, p99 and by cycle, and the spread of the intervals
  inside each cycle; for the human drummer and for a steady one (±5 ms, no drift).

This file prints (it is a script, not part of the library).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from human_drummer import human_drum, she_jie_timeline  # noqa: E402

from sequencer.check.onsets import onset_strength_of_file  # noqa: E402
from sequencer.check.stroke_stream import StrokeStream  # noqa: E402
from sequencer.outputs.render import render_timeline  # noqa: E402
from sequencer.timeline.timebase import TICKS_PER_SECOND  # noqa: E402

PERIOD, RATE = 256, 48000
LEAD_IN_S = 0.5


def _stats(values: list[float] | np.ndarray) -> dict[str, float]:
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return {"n": 0}
    return {"n": int(v.size), "p50": round(float(np.median(v)), 4),
            "p99": round(float(np.percentile(v, 99)), 4), "max": round(float(v.max()), 4)}


def _match(found_s: np.ndarray, due_s: np.ndarray) -> tuple[np.ndarray, list[int], int]:
    """(signed errors ms of each due stroke found, indices of the found ones, false count)."""
    errors, used = [], []
    for d in due_s:
        near = np.abs(found_s - d)
        if near.size and near.min() < 0.03:
            errors.append((found_s[near.argmin()] - d) * 1000)
            used.append(int(near.argmin()))
    return np.array(errors), used, len(found_s) - len(set(used))


def _timing(errors: np.ndarray) -> dict[str, Any]:
    return {"raw_ms": _stats(np.abs(errors)),
            "less_median_ms": _stats(np.abs(errors - np.median(errors)))}


def stream_yuezheng(signal: np.ndarray, due_s: np.ndarray) -> dict[str, Any]:
    stream = StrokeStream(RATE, refractory_s=0.125)
    found, latency, cpu = [], [], []
    for i in range(0, len(signal), PERIOD):
        t0 = time.perf_counter()
        strokes = stream.feed(signal[i:i + PERIOD])
        spent = time.perf_counter() - t0
        cpu.append(spent)
        end = i + min(PERIOD, len(signal) - i)
        for s in strokes:
            found.append(s.at / RATE)
            latency.append((end - s.at) / RATE + spent)
    return _report(np.array(found), np.array(latency), cpu, due_s)


def stream_aubio(signal: np.ndarray, due_s: np.ndarray, method: str = "hfc",
                 window: int = 1024) -> dict[str, Any]:
    import aubio

    onset = aubio.onset(method, window, PERIOD, RATE)
    onset.set_minioi_s(0.05)
    found, latency, cpu = [], [], []
    x = signal.astype(np.float32)
    for i in range(0, len(x) - PERIOD + 1, PERIOD):
        t0 = time.perf_counter()
        hit = onset(x[i:i + PERIOD])[0]
        spent = time.perf_counter() - t0
        cpu.append(spent)
        if hit:
            at = onset.get_last()  # samples, its own delay taken off
            found.append(at / RATE)
            latency.append((i + PERIOD - at) / RATE + spent)
    return {"method": method, "window": window, "version": aubio.version,
            **_report(np.array(found), np.array(latency), cpu, due_s)}


def _report(found: np.ndarray, latency: np.ndarray, cpu: list[float],
            due_s: np.ndarray) -> dict[str, Any]:
    errors, used, false = _match(found, due_s)
    return {"found": len(errors), "of": len(due_s), "false": false, "timing": _timing(errors),
            "latency_ms": _stats(latency[used] * 1000 if len(used) else []),
            "cpu_per_period_ms": _stats(np.array(cpu) * 1000),
            "period_ms": round(PERIOD / RATE * 1000, 3)}


def anchor_offline(path: Path, due_s: np.ndarray) -> dict[str, Any]:
    t0 = time.perf_counter()
    onsets = np.array(onset_strength_of_file(path).strokes(spacing_s=0.25)) + LEAD_IN_S
    spent = time.perf_counter() - t0
    errors, _, false = _match(onsets, due_s)
    return {"found": len(errors), "of": len(due_s), "false": false, "timing": _timing(errors),
            "cpu_s": round(spent, 3), "decides": "after the whole file"}


def over_jack(path: Path, due_s: np.ndarray, tmp: Path) -> dict[str, Any]:
    from jack_server import OwnServer

    server = OwnServer("yz-listen")
    server.start()
    try:
        out = tmp / "jack.json"
        proc = subprocess.run([sys.executable, str(ROOT / "tests" / "hear_rig.py"), "detect",
                               str(path), str(out), str(LEAD_IN_S)], cwd=ROOT, env=server.env,
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            return {"error": proc.stderr[-2000:]}
        rec = json.loads(out.read_text())
    finally:
        server.stop()
    rate = rec["rate"]
    base = rec["first_frame"]
    strokes = np.array([s[0] for s in rec["strokes"]], dtype=np.float64)
    latency = np.array([s[2] for s in rec["strokes"]])
    xruns = np.array(rec["player_xruns"] + rec["hearer_xruns"], dtype=np.float64)
    due = base + due_s * rate  # due_s already counts the lead-in

    def clear(frame: float) -> bool:
        return not np.any((xruns > frame - 0.2 * rate) & (xruns < frame + 0.05 * rate))

    errors, used, false = _match(strokes / rate, due / rate)
    clean = [i for i, d in enumerate(due) if clear(d)]
    cerr, cused, _ = _match(strokes / rate, due[clean] / rate)
    # the route's delay in each stretch between xruns (after one, the dummy graph may run the
    # player after the input until the next: a period late, the same for every stroke)
    stretch = np.array([int((xruns < due[clean][j]).sum()) for j in range(len(clean))])
    routes, residual = [], []
    for k in sorted(set(stretch.tolist())):
        mine = cerr[stretch[: len(cerr)] == k] if len(cerr) == len(clean) else np.array([])
        if mine.size:
            route = float(np.median(mine))
            routes.append(round(route / (rec["period"] / rate * 1000), 3))
            residual += list(np.abs(mine - route))
    return {"xruns": len(set(xruns.tolist())), "gaps": len(rec["gaps"]),
            "found": len(errors), "of": len(due), "false": false,
            "false_clear_of_xruns": sum(1 for i, s in enumerate(strokes)
                                        if i not in used and clear(s)),
            "timing_all": _timing(errors),
            "clear_of_xruns": {"strokes": len(clean), "found": len(cerr),
                               "route_periods_by_stretch": routes,
                               "timing_less_route_ms": _stats(residual),
                               "latency_ms": _stats(latency[cused] * 1000)},
            "latency_all_ms": _stats(latency[used] * 1000),
            "budget_ms": round(rec["period"] / rate * 1000 + 10, 3)}


def follow(tmp: Path, name: str, **drummer: Any) -> dict[str, Any]:
    from instruments.ports.memory import read_memory_record

    drum = human_drum(tmp / f"{name}.wav", **drummer)
    log, out = tmp / f"{name}.jsonl", tmp / f"{name}.sent.jsonl"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "cli.py"), "live", "xiang-she", "--from", "she-jie",
         "--until", "she-jie", "--auto", "--jie-seconds", "1", "--output", f"memory:{out}",
         "--hear", str(drum.path), "--follow", "--log", str(log)],
        cwd=ROOT, capture_output=True, text=True, timeout=180)
    records = [json.loads(line) for line in log.read_text("utf-8").splitlines()]
    start = next(r["t"] for r in records if r.get("what") == "file-start")
    channels = {n.channel for n in she_jie_timeline("1").notes if n.instrument == "瑟"}
    played = np.array(sorted({round(at, 9) for at, d in read_memory_record(out)
                              if d[0] & 0xF0 == 0x90 and d[2] and d[0] & 0x0F in channels}))
    grid = start + drum.jie_grid()
    strokes = start + drum.strokes[:: drum.per_jie]
    by_cycle: dict[int, list[float]] = {}
    vs_strokes = []
    for j, due in enumerate(grid):
        near = np.abs(played - due)
        if near.min() < 0.3:
            by_cycle.setdefault(j // drum.n, []).append((played[near.argmin()] - due) * 1000)
            if j >= drum.n:
                vs_strokes.append(abs(played[near.argmin()] - strokes[j]) * 1000)
    spread = 0.0
    for r in (r for r in records if r["event"] == "follow"):
        s, jie = r["played"]["start"], r["played"]["jie_s"]
        mine = played[(played > s - 0.001) & (played < s + 4.5 * jie)]
        if len(mine) >= 3:
            spread = max(spread, float(np.ptp(np.diff(mine))))
    later = np.abs(np.concatenate([by_cycle[c] for c in sorted(by_cycle) if c >= 1]))
    return {"drummer": drummer or {"jitter_s": 0.020, "drift": 0.03},
            "exit": proc.returncode,
            "from_second_cycle_ms": _stats(later),
            "by_cycle_max_ms": [round(float(np.abs(by_cycle[c]).max()), 2)
                                for c in sorted(by_cycle)],
            "vs_the_strokes_ms": _stats(vs_strokes),
            "interval_spread_in_a_cycle_s": spread}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--skip-jack", action="store_true")
    parser.add_argument("--skip-follow", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="yz-listen-") as name:
        tmp = Path(name)
        timeline = she_jie_timeline("1")
        path = tmp / "she-jie.wav"
        render_timeline(timeline, path)
        x, rate = sf.read(str(path), always_2d=True)
        assert rate == RATE
        signal = np.concatenate([np.zeros(round(LEAD_IN_S * RATE)), x.mean(axis=1)])
        start = timeline.span("she-jie").start
        ticks = sorted({n.tick for n in timeline.notes if n.instrument == "鼓"})
        due_s = LEAD_IN_S + np.array([(t - start) / TICKS_PER_SECOND for t in ticks])
        result: dict[str, Any] = {
            "input": "鄉射 射節, 1 s 節, courtyard (drum + 瑟), 120 strokes, 48 kHz",
            "load_average": os.getloadavg(),
            "offline_stream": {"yuezheng": stream_yuezheng(signal, due_s),
                               "aubio": stream_aubio(signal, due_s)},
            "anchor_check_offline": anchor_offline(path, due_s),
        }
        if not args.skip_jack:
            result["jack"] = over_jack(path, due_s, tmp)
        if not args.skip_follow:
            result["follow"] = {"human": follow(tmp, "human"),
                                "steady": follow(tmp, "steady", seed=5, jitter_s=0.005,
                                                 drift=0.0)}
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
    else:
        print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How long compiling a rite and writing its MIDI file takes (goal: < 100 ms for the largest).

Prints, for every built-in rite with all its variants, the median over repeated runs of:
loading the sheet, compiling the timeline, writing the MIDI bytes — and, as an anchor measured
in the same run, mido building and saving the same events as Message objects (so the figure can
be compared across machines as a ratio).

    python benchmarks/compile_midi.py [--repeat N] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mido

from cues.sheet.loader import BUILTIN_RITES, load_rite
from sequencer.outputs.smf import build_midi_bytes
from sequencer.timeline.compiler import compile_rite, make_settings


def _median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def _mido_anchor(data: bytes) -> None:
    """mido: parse our bytes into Message objects and save them again (the anchor)."""
    mid = mido.MidiFile(file=io.BytesIO(data), charset="utf-8")
    mid.save(file=io.BytesIO())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = {}
    for rite_id in BUILTIN_RITES:
        variants = [v.id for v in load_rite(rite_id).variants if v.id != "xia-guan"]
        rite = load_rite(rite_id, variants)
        settings = make_settings(rite.settings)
        timeline = compile_rite(rite, settings)
        data = build_midi_bytes(timeline)
        load_ms = _median_ms(lambda rid=rite_id, v=variants: load_rite(rid, v), args.repeat)
        compile_ms = _median_ms(lambda r=rite, s=settings: compile_rite(r, s), args.repeat)
        write_ms = _median_ms(lambda t=timeline: build_midi_bytes(t), args.repeat)
        anchor_ms = _median_ms(lambda d=data: _mido_anchor(d), max(3, args.repeat // 3))
        rows[rite_id] = {
            "notes": len(timeline.notes), "load_ms": round(load_ms, 2),
            "compile_ms": round(compile_ms, 2), "write_ms": round(write_ms, 2),
            "compile_and_write_ms": round(compile_ms + write_ms, 2),
            "mido_anchor_ms": round(anchor_ms, 2),
            "ratio_to_anchor": round((compile_ms + write_ms) / anchor_ms, 3),
        }
    largest = max(rows, key=lambda r: rows[r]["notes"])
    result = {"rites": rows, "largest": largest,
              "goal_ms": 100, "met": rows[largest]["compile_and_write_ms"] < 100}
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        for rite_id, r in rows.items():
            print(f"{rite_id:<14} {r['notes']:>5} notes  load {r['load_ms']:7.2f} ms  compile "
                  f"{r['compile_ms']:7.2f} ms  write {r['write_ms']:6.2f} ms  "
                  f"(mido anchor {r['mido_anchor_ms']:7.2f} ms, ratio {r['ratio_to_anchor']})")
        print(f"largest: {largest}, compile + write = {rows[largest]['compile_and_write_ms']} ms "
              f"(goal < 100 ms: {'met' if result['met'] else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

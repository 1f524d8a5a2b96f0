"""Render one rite with yuezheng and the same rite's MIDI file with FluidSynth; print the ratio.

Both render the same compiled timeline at 48 kHz: yuezheng on its built-in voices (numpy voices,
numpy mixing, the note cache empty at the start: a cold render), FluidSynth from the MIDI file
``yuezheng midi`` writes, with FluidR3_GM (``fluidsynth -ni -F out.wav -r 48000 sf2 file.mid``).
Goal (issue 4): yuezheng at least 5× faster than FluidSynth.

``--phases`` also prints where the render's time goes: each phase's end (wall seconds from the
render's start) with the CPU seconds of this process and of its reaped children so far — the
notes' processes (with the loudness estimate in this one), the mixing processes, the end (the
file's sync).  Children's CPU counts once they are reaped, at the end of their phase.

    python benchmarks/render_rite.py [RITE] [--json] [--phases]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cues.sheet.loader import load_rite
from sequencer.outputs.render import render_timeline
from sequencer.outputs.smf import write_midi
from sequencer.timeline.compiler import compile_rite, make_settings

SOUNDFONT = Path("/usr/share/sounds/sf2/FluidR3_GM.sf2")


def _cpu() -> tuple[float, float]:
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _stamped(phases: list[dict], start: float) -> Callable[[str], None]:
    def stamp(label: str) -> None:
        own, children = _cpu()
        phases.append({"phase": label, "wall_s": round(time.perf_counter() - start, 2),
                       "cpu_self_s": round(own, 2), "cpu_children_s": round(children, 2)})
    return stamp


def _watch(module: Any, name: str, stamp: Callable[[str], None]) -> None:
    """Stamp when ``module.name`` is called and when it (or the iterator it returns) ends."""
    inner = getattr(module, name)

    def watched(*args: Any, **kwargs: Any) -> Any:
        stamp(f"{name} starts")
        out = inner(*args, **kwargs)
        if not hasattr(out, "__next__"):
            stamp(f"{name} ends")
            return out

        def each() -> Iterator[Any]:
            yield from out
            stamp(f"{name} ends")
        return each()
    setattr(module, name, watched)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rite", nargs="?", default="xiang-she")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phases", action="store_true", help="where the render's time goes")
    args = parser.parse_args()
    rite = load_rite(args.rite)
    timeline = compile_rite(rite, make_settings(rite.settings))
    result: dict = {"rite": rite.id, "notes": len(timeline.notes)}
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "yuezheng.wav"
        t = time.perf_counter()
        phases: list[dict] = []
        if args.phases:
            from instruments.mix import mixer, processes, voice_processes

            stamp = _stamped(phases, t)
            stamp("start")
            _watch(voice_processes, "rendered", stamp)  # the notes' processes
            _watch(mixer, "estimated_gain", stamp)  # the loudness estimate, in this process
            _watch(processes, "mastered", stamp)  # the mixing processes
        report = render_timeline(timeline, wav)
        ours = time.perf_counter() - t
        if args.phases:
            stamp("written")
            result["phases"] = phases
        result["audio_s"] = round(report.duration_s, 1)
        result["yuezheng_s"] = round(ours, 2)
        result["yuezheng_realtime_factor"] = round(report.duration_s / ours, 1)
        if shutil.which("fluidsynth") and SOUNDFONT.exists():
            mid = Path(tmp) / "rite.mid"
            write_midi(timeline, mid, rite.title)
            t = time.perf_counter()
            subprocess.run(["fluidsynth", "-ni", "-q", "-F", str(Path(tmp) / "fs.wav"),
                            "-r", "48000", str(SOUNDFONT), str(mid)],
                           check=True, capture_output=True)
            theirs = time.perf_counter() - t
            result["fluidsynth_s"] = round(theirs, 2)
            result["fluidsynth_realtime_factor"] = round(report.duration_s / theirs, 1)
            result["speedup_vs_fluidsynth"] = round(theirs / ours, 2)
        else:
            result["fluidsynth"] = "not installed: no comparison"
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        for key, value in result.items():
            if key != "phases":
                print(f"{key:>28}: {value}")
        for p in result.get("phases", ()):
            print(f"{p['wall_s']:>8.2f} s  {p['phase']:<24} CPU-s: this process "
                  f"{p['cpu_self_s']:.2f}, children {p['cpu_children_s']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

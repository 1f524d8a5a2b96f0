"""Render one rite with yuezheng and the same rite's MIDI file with FluidSynth; print the ratio.

Both render the same compiled timeline at 48 kHz: yuezheng on its built-in voices (numpy voices,
numpy mixing, the note cache empty at the start: a cold render), FluidSynth from the MIDI file
``yuezheng midi`` writes, with FluidR3_GM (``fluidsynth -ni -F out.wav -r 48000 sf2 file.mid``).
Goal (issue 4): yuezheng at least 5× faster than FluidSynth.

    python benchmarks/render_rite.py [RITE] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cues.sheet.loader import load_rite
from sequencer.outputs.render import render_timeline
from sequencer.outputs.smf import write_midi
from sequencer.timeline.compiler import compile_rite, make_settings

SOUNDFONT = Path("/usr/share/sounds/sf2/FluidR3_GM.sf2")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rite", nargs="?", default="xiang-she")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rite = load_rite(args.rite)
    timeline = compile_rite(rite, make_settings(rite.settings))
    result: dict = {"rite": rite.id, "notes": len(timeline.notes)}
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "yuezheng.wav"
        t = time.perf_counter()
        report = render_timeline(timeline, wav)
        ours = time.perf_counter() - t
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
            print(f"{key:>28}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

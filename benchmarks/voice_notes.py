"""Per-note synthesis cost of every voice, and of every distinct note of a rite's render (what a
cold render synthesizes, and the notes' loudness energies), in this process, CPU time.

    python benchmarks/voice_notes.py [--repeat N] [RITE ...]

Each voice: a typical note (the bells and the stone at C4, the drums their own, the 瑟 at C3,
the winds and the 歌 at G3 for 1 s), synthesized ``--repeat`` times with a different seed or
velocity each time (nothing cached), median CPU ms; then, per rite, the distinct notes of its
render (their count, their seconds, their megabytes as float32) and the CPU seconds to
synthesize them and to measure their energies, by voice.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cues.sheet.loader import load_rite  # noqa: E402
from instruments.mix.loudness_estimate import note_energy  # noqa: E402
from instruments.mix.mixer import _plan  # noqa: E402
from instruments.mix.room import Room  # noqa: E402
from instruments.voices import notes as voices  # noqa: E402
from instruments.voices.synthesis import synthesize  # noqa: E402
from sequencer.outputs.render import render_notes  # noqa: E402
from sequencer.timeline.compiler import compile_rite, make_settings  # noqa: E402

SR = 48000
TYPICAL = [("編鐘", 261.63, {}), ("鑮", 130.81, {}), ("編磬", 261.63, {}), ("建鼓", None, {}),
           ("鼓", None, {}), ("鼙", None, {}), ("鼗", None, {}), ("瑟", 130.81, {}),
           ("笙", 196.0, {}), ("和", 196.0, {}), ("管", 196.0, {}), ("歌", 196.0, {"lyric": "關"})]


def _cpu_ms(fn) -> float:
    t = time.process_time()
    fn()
    return 1000.0 * (time.process_time() - t)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("rites", nargs="*", default=["xiang-she"])
    args = parser.parse_args()
    print(f"{'voice':<6} {'note s':>7} {'CPU ms':>8}")
    for name, hz, extra in TYPICAL:
        times, seconds = [], 0.0
        for i in range(args.repeat):
            key = voices.note_key(name, hz, 1.0, 100 - i, SR, variant=i, **extra)
            seconds = voices.note_length_samples(name, hz, 1.0, 100 - i, SR) / SR
            times.append(_cpu_ms(lambda key=key: synthesize(key)))
        print(f"{name:<6} {seconds:>7.2f} {statistics.median(times):>8.2f}")
    for rite_id in args.rites:
        rite = load_rite(rite_id)
        timeline = compile_rite(rite, make_settings(rite.settings))
        placed = _plan(render_notes(timeline), SR, Room("courtyard", SR))
        keys = list(dict.fromkeys(p.key for p in placed))
        count = collections.Counter(k.instrument for k in keys)
        synth: collections.Counter = collections.Counter()
        energy: collections.Counter = collections.Counter()
        length: collections.Counter = collections.Counter()
        for key in keys:
            t = time.process_time()
            wave = synthesize(key)
            synth[key.instrument] += time.process_time() - t
            t = time.process_time()
            note_energy(wave, SR)
            energy[key.instrument] += time.process_time() - t
            length[key.instrument] += wave.size
        total = sum(length.values())
        print(f"\n{rite_id}: {len(placed)} notes, {len(keys)} distinct, {total / SR:.0f} s, "
              f"{4 * total / 2 ** 20:.0f} MB; synthesis {sum(synth.values()):.2f} CPU-s, "
              f"energies {sum(energy.values()):.2f} CPU-s")
        for name in sorted(count, key=lambda n: -synth[n]):
            print(f"  {name:<4} {count[name]:>5} notes {length[name] / SR:>7.0f} s "
                  f"{4 * length[name] / 2 ** 20:>6.0f} MB  synthesis {synth[name]:.2f} s "
                  f"({1000 * synth[name] / count[name]:.2f} ms a note)  energies "
                  f"{energy[name]:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

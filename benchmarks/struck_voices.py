"""Per-note synthesis time of each struck voice: closed form (numpy, ``instruments.voices.modal``)
against the old path (an offline pyo server booted per note, ``tests/pyo_struck.py``), both in
this run on the same notes; then the same for every distinct struck note of a rite's render
(what a cold render synthesizes), one thread.

    python benchmarks/struck_voices.py [--repeat N] [RITE ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cues.catalog import CATALOG  # noqa: E402
from instruments.voices import notes as voices
from instruments.voices.models import REFERENCE_HZ, key_length  # noqa: E402
from instruments.voices.struck_models import STRUCK_VOICES, struck_note  # noqa: E402
from instruments.voices.synthesis import synthesize  # noqa: E402
from instruments.voices.tone_dsp import seed_of  # noqa: E402
from tests.pyo_struck import render_pyo  # noqa: E402


def _median_ms(fn, repeat: int) -> float:
    return 1000.0 * statistics.median(timeit.repeat(fn, number=1, repeat=repeat))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("rites", nargs="*", default=["xiang-she", "yan"])
    args = parser.parse_args()
    print(f"{'voice':<6} {'note s':>7} {'pyo ms':>8} {'numpy ms':>9} {'ratio':>7}")
    for name in sorted(STRUCK_VOICES):
        hz = REFERENCE_HZ if CATALOG[name].pitched else None  # C4
        key = voices.note_key(name, hz, 1.0, 100, variant=3)
        n, sr = key_length(key), key.sample_rate
        old = _median_ms(lambda k=key, n=n, sr=sr: render_pyo(struck_note(k), n, sr,
                                                               seed=seed_of(k)), args.repeat)
        new = _median_ms(lambda k=key: synthesize(k), args.repeat)
        print(f"{name:<6} {n / sr:7.2f} {old:8.2f} {new:9.2f} {old / new:6.1f}×")
    for rite in args.rites:
        keys = _struck_keys(rite)
        t = time.perf_counter()
        for k in keys:
            render_pyo(struck_note(k), key_length(k), k.sample_rate, seed=seed_of(k))
        old = time.perf_counter() - t
        t = time.perf_counter()
        for k in keys:
            synthesize(k)
        new = time.perf_counter() - t
        print(f"{rite}: {len(keys)} distinct struck notes: pyo {old:.2f} s, numpy {new:.3f} s "
              f"({old / new:.1f}×)")
    return 0


def _struck_keys(rite_name: str) -> list:
    """The distinct struck notes a render of the rite synthesizes (the mixer's own plan)."""
    from cues.sheet.loader import load_rite
    from instruments.mix.mixer import _plan
    from instruments.mix.room import Room
    from sequencer.outputs.render import render_notes
    from sequencer.timeline.compiler import compile_rite, make_settings

    rite = load_rite(rite_name)
    notes = render_notes(compile_rite(rite, make_settings(rite.settings)))
    placed = _plan(notes, 48000, Room("dry", 48000))
    return sorted({p.key for p in placed if p.key.instrument in STRUCK_VOICES}, key=repr)


if __name__ == "__main__":
    sys.exit(main())

"""Per-note synthesis time of each struck voice: closed form (numpy, ``instruments.modal``)
against the old path (an offline pyo server booted per note, ``tests/pyo_struck.py``), both in
this run on the same notes.

    python benchmarks/struck_voices.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cues.catalog import CATALOG  # noqa: E402
from instruments import voices  # noqa: E402
from instruments.struck_models import STRUCK_VOICES, struck_note  # noqa: E402
from instruments.synthesis import synthesize  # noqa: E402
from instruments.tone_dsp import seed_of  # noqa: E402
from instruments.voice_models import REFERENCE_HZ, key_length  # noqa: E402
from tests.pyo_struck import render_pyo  # noqa: E402


def _median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000.0 * statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())

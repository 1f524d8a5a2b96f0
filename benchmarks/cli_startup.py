"""How long `yuezheng --help` takes (goal: under 0.3 s), against `python -c pass` as the anchor.

    python benchmarks/cli_startup.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _median_s(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    anchor = _median_s([sys.executable, "-c", "pass"], args.repeat)
    helped = _median_s([sys.executable, "cli.py", "--help"], args.repeat)
    print(f"python -c pass: {anchor * 1000:.0f} ms; yuezheng --help: {helped * 1000:.0f} ms "
          f"(ratio {helped / anchor:.1f}; goal < 300 ms: {'met' if helped < 0.3 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

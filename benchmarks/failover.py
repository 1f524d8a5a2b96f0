"""Hot-standby takeover time, measured at the receiver over ``--kills`` SIGKILLs of the main.

    python benchmarks/failover.py [--json] [--kills 10] [--seed 1]

Needs root (network namespaces) and a running JACK server (.ci/jack.sh). Each run is the rig of
``tests/test_standby_failover.py``: main and backup in two network namespaces joined by a veth
pair, their link through the seeded relay (10 % loss, 20 ms jitter; seed ``--seed + run``),
each sending to its own input port of this process on the one JACK server; the 射節 of 鄉射
with 節 of 0.5 s; the main SIGKILLed just after the drum stroke of 節 index 3 + run % 4; the
backup stopped 1 s after it took over.

* ``takeover_ms``: the backup's first message at the receiver (JACK frame time) minus the
  moment of the kill — what the audience waits; the default ``--takeover`` is 500 ms, measured
  from the last packet heard, which came up to one heartbeat (100 ms) before the kill.
* ``after_last_main_ms``: the backup's first message minus the main's last one (the main's
  sending process silences what sounds when its parent dies, a few ms after the kill).
* ``doubled_notes`` / ``stray_notes``: over all runs (must be 0).
* ``link_phase_error_ms``: ``benchmarks.link_phase.measure()`` (Ableton
  Link, issue 16).

This file prints (it is a script, not part of the library).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from instruments.ports.jacklib import JackMidiInput, jack_running  # noqa: E402
from tests.standby_rig import TwoMachines, run_failover  # noqa: E402


class _Rx:
    def __init__(self, name: str) -> None:
        self._in = JackMidiInput(name).open()
        self.port_name = self._in.own_name

    @property
    def messages(self) -> list[tuple[float, bytes, float]]:
        return [(t, data, wall) for _, data, wall, t in list(self._in.messages)]

    def close(self) -> None:
        self._in.close()


def link_phase_error_ms() -> Any:
    """The Link phase error measured by ``benchmarks/link_phase.py`` (its own private network
    namespace, a plain aalink peer against ``live --link``)."""
    from benchmarks import link_phase  # type: ignore[attr-defined]

    return link_phase.measure()


def one_kill(run_no: int, seed: int) -> dict[str, Any]:
    rx_main, rx_backup = _Rx(f"sbyfm{os.getpid()}x{run_no}"), _Rx(f"sbyfb{os.getpid()}x{run_no}")
    try:
        with tempfile.TemporaryDirectory(prefix="sby-failover-") as tmp, \
                TwoMachines(os.getpid() * 10 + run_no, seed=seed + run_no) as machines:
            run = run_failover(machines, rx_main, rx_backup, Path(tmp), jie_s="0.5",
                               kill_at_jie=3 + run_no % 4, run_after_s=1.0)
    finally:
        rx_main.close()
        rx_backup.close()
    found, stray = run.note_matches()
    return {"takeover_ms": run.takeover_s * 1000,
            "after_last_main_ms": run.after_last_main_s * 1000,
            "doubled": len(found) - len(set(found)), "stray": len(stray)}


def _summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(median(values), 1), "max": round(max(values), 1),
            "min": round(min(values), 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if not jack_running():
        print("failover: no JACK server is running (.ci/jack.sh)", file=sys.stderr)
        return 2
    runs = [one_kill(i, args.seed) for i in range(args.kills)]
    result = {
        "kills": len(runs),
        "link": "10 % loss, 20 ms jitter (seeded relay), heartbeat 100 ms, takeover 500 ms",
        "takeover_ms": _summary([r["takeover_ms"] for r in runs]),
        "after_last_main_ms": _summary([r["after_last_main_ms"] for r in runs]),
        "doubled_notes": sum(r["doubled"] for r in runs),
        "stray_notes": sum(r["stray"] for r in runs),
        "runs": [{k: round(v, 1) for k, v in r.items()} for r in runs],
        "link_phase_error_ms": link_phase_error_ms(),
    }
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
    else:
        t, a = result["takeover_ms"], result["after_last_main_ms"]
        print(f"takeover after the kill: p50 {t['p50']} ms, max {t['max']} ms "
              f"(min {t['min']}) over {len(runs)} kills")
        print(f"after the main's last message: p50 {a['p50']} ms, max {a['max']} ms")
        print(f"doubled notes {result['doubled_notes']}, stray notes {result['stray_notes']}")
        print(f"link phase error: {result['link_phase_error_ms']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A station over netjack2: arrival jitter and latency of `yuezheng live` on the station's
JACK server, against the same show on the main's own server (the anchor, same run).

    python benchmarks/netjack.py --json [--jie-seconds 0.5] [--latency 2] [--explicit]

Needs root (``ip netns``), jackd with the ``net`` driver and ``netmanager`` (jackd2), and
python-rtmidi with JACK (.ci/jack.sh). The rig (tests/netjack_rig.py) makes two network
namespaces joined by a veth pair: the main runs a dummy JACK server (48 kHz, 256 frames) with
``netmanager`` loaded, the station a JACK server on the ``net`` driver (``-l LATENCY``
cycles), found by multicast or (``--explicit``) by the master's address. The show is the east
縣 of 大射's 射節 (``--only 東``), played with ``--auto``:

* ``anchor``: to a receiver on the main's server (no network);
* ``netjack``: to ``STATION:midi_to_slave_1`` on the main, received on the station's
  ``system:midi_capture_1`` in the station's namespace.

Each receiver stamps every message with its JACK frame. ``jitter_*_ms``: |arrival − the file's
time − the median offset| (frames / rate); ``latency_ms``: the median arrival on this machine's
clock after the show log's cue start plus the file's time; ``xruns``: JACK's own count on the
receiving server (and ``main_xruns`` on the main's, for the netjack run). This file prints (it
is a script, not part of the library).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


from tests.netjack_rig import (  # noqa: E402
    NetjackRig,
    StationReceiver,
    arrivals,
    file_messages,
    live_over,
)


def _run(rig: NetjackRig, tmp: Path, name: str, args: list[str], *, station: bool) -> dict:
    if station:
        rx = StationReceiver(rig, rig.station_ns, rig.station_server, rig.station_source,
                             f"njk{name}")
        destination = rig.destination
    else:
        rx = StationReceiver(rig, rig.main_ns, rig.main_server, "-", f"njk{name}")
        destination = f"njk{name}:in"
    watch = StationReceiver(rig, rig.main_ns, rig.main_server, "-", f"njk{name}w")
    try:
        log = tmp / f"{name}.jsonl"
        done = live_over(rig, rig.main_ns, rig.main_server, destination, args, log)
        if done.returncode != 0:
            raise SystemExit(f"yuezheng live failed ({name}): {done.stdout}{done.stderr}")
        record = rx.finish()
        main_xruns = watch.finish()["xruns"]
    finally:
        rx.close()
        watch.close()
    result = arrivals(file_messages(args, tmp / f"{name}.mid"), record, log)
    result["main_xruns"] = main_xruns
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--jie-seconds", default="0.5", help="the 節's length (42 節 in all)")
    ap.add_argument("--latency", type=int, default=2, help="the net driver's -l (cycles)")
    ap.add_argument("--explicit", action="store_true",
                    help="the station names the master's address (no multicast discovery)")
    opts = ap.parse_args()
    show = ["da-she", "--from", "she-jie", "--until", "she-jie", "--jie-seconds",
            opts.jie_seconds, "--only", "東"]
    with tempfile.TemporaryDirectory(prefix="njk-bench") as tmpdir:
        tmp = Path(tmpdir)
        with NetjackRig(tag=f"{os.getpid()}b", latency=opts.latency, explicit=opts.explicit,
                        logs=tmp) as rig:
            anchor = _run(rig, tmp, "anchor", show, station=False)
            netjack = _run(rig, tmp, "station", show, station=True)
    figures = {
        "show": " ".join(show), "rate": rig.rate, "period": rig.period,
        "net_latency_cycles": opts.latency,
        "discovery": "explicit" if opts.explicit else "multicast",
        "anchor": anchor, "netjack": netjack,
        "added_latency_ms": (netjack.get("latency_ms", float("nan"))
                             - anchor.get("latency_ms", float("nan"))),
    }
    if opts.json:
        print(json.dumps(figures, indent=2))
    else:
        for name in ("anchor", "netjack"):
            r = figures[name]
            print(f"{name:8} {r['received']}/{r['messages']} messages, complete {r['complete']}, "
                  f"jitter p50 {r.get('jitter_p50_ms', float('nan')):.3f} ms, "
                  f"p99 {r.get('jitter_p99_ms', float('nan')):.3f} ms, "
                  f"max {r.get('jitter_max_ms', float('nan')):.3f} ms, "
                  f"latency {r.get('latency_ms', float('nan')):.2f} ms, xruns {r['xruns']}"
                  f" (main {r['main_xruns']})")
        print(f"netjack2 adds {figures['added_latency_ms']:.2f} ms")
    return 0 if anchor["complete"] and netjack["complete"] else 1


if __name__ == "__main__":
    sys.exit(main())

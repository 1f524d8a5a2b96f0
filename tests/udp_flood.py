"""A UDP flood for the hot-standby tests: send packets as fast as one process can at a target
for a while, then print how many were sent.

    python tests/udp_flood.py HOST:PORT SECONDS garbage|wrong-key [SHOW]

``garbage``: 64 random bytes a packet. ``wrong-key``: well-formed heartbeats of the main (show
id SHOW), signed with a key that is not the link's, each with a new sequence number.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

KINDS = ("garbage", "wrong-key")


def packets(kind: str, show: str, count: int = 4096) -> list[bytes]:
    """``count`` packets of ``kind`` (sent round and round)."""
    if kind == "garbage":
        return [os.urandom(64) for _ in range(count)]
    from sequencer.live.standby.packets import PeerPacket, encode

    seq = time.time_ns() // 1000 + 10**9
    key = b"not the link's key, 32 bytes ..."
    return [encode(key, PeerPacket(show, seq + i, "heartbeat", "main", True, 0, ""))
            for i in range(count)]


def main() -> None:
    host, _, port = sys.argv[1].rpartition(":")
    seconds, kind = float(sys.argv[2]), sys.argv[3]
    batch = packets(kind, sys.argv[4] if len(sys.argv) > 4 else "0" * 64)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.connect((host, int(port)))
    send = sock.send
    sent = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for data in batch[:256]:
            try:
                send(data)
            except OSError:
                pass
        sent += 256
        batch = batch[256:] + batch[:256]
    print(sent, flush=True)


if __name__ == "__main__":
    main()

"""A small seeded UDP relay for the network tests: this kernel has no netem, so loss and jitter
are made here, replayably (the same seed drops and delays the same packets).

    python tests/udp_relay.py --seed 7 --loss 0.1 --jitter-ms 20 [--record FILE] \\
        LISTEN_HOST:PORT=TARGET_HOST:PORT ...

Each route listens on its own socket and forwards what it keeps to its target after a delay
drawn uniformly from 0 to ``jitter`` (packets may overtake each other, as on a real network).
``--record`` appends every packet received (kept or not) as ``ROUTE HEX`` lines, so a test can
replay a captured packet.

Like a NAT, each route forwards each sender's packets from an outbound socket of that sender's
own, and a reply to that socket goes back to the sender from the route's listening address
(``ROUTEr HEX`` when recorded): the hot-standby probe is answered to the address it came from. The relay prints ``ready`` once every socket is bound and runs until
SIGTERM.
"""

from __future__ import annotations

import argparse
import heapq
import random
import selectors
import signal
import socket
import sys
import time


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--loss", type=float, default=0.0)
    ap.add_argument("--jitter-ms", type=float, default=0.0)
    ap.add_argument("--record")
    ap.add_argument("routes", nargs="+")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sel = selectors.DefaultSelector()
    listening: list[socket.socket] = []
    for i, route in enumerate(args.routes):
        listen, target = route.split("=")
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(_addr(listen))
        listening.append(sock)
        sel.register(sock, selectors.EVENT_READ, ("in", i, _addr(target)))
    outbound: dict[tuple[int, tuple[str, int]], socket.socket] = {}  # (route, sender) → socket
    record = open(args.record, "a", encoding="ascii") if args.record else None  # noqa: SIM115
    running = True

    def stop(signum: int, frame: object) -> None:
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    print("ready", flush=True)
    queue: list[tuple[float, int, bytes, socket.socket, tuple[str, int]]] = []
    count = 0
    while running:
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            _, _, data, via, target = heapq.heappop(queue)
            try:
                via.sendto(data, target)
            except OSError:
                pass
        wait = max(0.0, queue[0][0] - now) if queue else 0.05
        for key, _ in sel.select(min(wait, 0.05)):
            try:
                data, sender = key.fileobj.recvfrom(65536)
            except OSError:
                continue
            way, route, target = key.data
            if way == "in":
                out = outbound.get((route, sender))
                if out is None and len(outbound) < 256:
                    out = outbound[(route, sender)] = socket.socket(socket.AF_INET,
                                                                    socket.SOCK_DGRAM)
                    out.bind(("0.0.0.0", 0))
                    sel.register(out, selectors.EVENT_READ, ("back", route, sender))
                if out is None:
                    continue
                via, tag = out, str(route)
            else:  # a reply: back to the sender, from the route's own address
                via, tag = listening[route], f"{route}r"
            if record is not None:
                record.write(f"{tag} {data.hex()}\n")
                record.flush()
            if rng.random() < args.loss:
                continue
            count += 1
            delay = rng.uniform(0, args.jitter_ms / 1000)
            heapq.heappush(queue, (time.monotonic() + delay, count, data, via, target))
    sys.exit(0)


if __name__ == "__main__":
    main()

"""Two machines joined by netjack2, inside this one: a test rig for tests/test_netjack.py and
benchmarks/netjack.py.

Each "machine" is a network namespace (``ip netns``) of its own, joined by a veth pair, with
``lo`` up, an address, and a multicast route (netjack2's discovery: the station multicasts
until a master answers). The main runs a JACK server on the dummy driver and loads
``netmanager`` (the netjack2 master) into it; the station runs a JACK server on the ``net``
driver, which finds the master, takes its sample rate and period, and runs its cycles in step
with it. The master then shows one client for the station, with ``STATION:midi_to_slave_1``:
what is written there comes out of ``system:midi_capture_1`` on the station.

Both servers share this machine's JACK registry (``/dev/shm``: a network namespace changes
only the network), so each has a name of its own (``njk-main-PID``, ``njk-station-PID``) and
is stopped with SIGTERM, the station first, then ``netmanager`` unloaded, then the main — a
SIGKILL would leak one of the registry's 8 slots. ``close()`` undoes everything it did, in
reverse, whatever failed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.jack_server import popen_jackd, stop_jackd

ROOT = Path(__file__).resolve().parent.parent
MULTICAST = "225.3.19.154"  # netjack2's default group
NET_PORT = 19000  # netjack2's default UDP port


class RigError(RuntimeError):
    """The rig could not be set up: the message holds the command and what it printed."""


def _run(*cmd: str, env: dict[str, str] | None = None, timeout: float = 20) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if done.returncode != 0:
        raise RigError(f"{' '.join(cmd)} → exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


@dataclass
class NetjackRig:
    """Namespaces, veth pair, the two JACK servers and the netjack2 link (``open``/``close``,
    or ``with``). ``explicit``: the station names the master's address (``-a ADDR``) instead
    of finding it by multicast. ``latency``: the net driver's network latency in cycles."""

    tag: str = field(default_factory=lambda: str(os.getpid()))
    rate: int = 48000
    period: int = 256
    latency: int = 2
    explicit: bool = False
    logs: Path = field(default_factory=lambda: Path("/tmp"))

    def __post_init__(self) -> None:
        t = self.tag
        self.main_ns, self.station_ns = f"njk-main-{t}", f"njk-station-{t}"
        self.main_server, self.station_server = f"njk-main-{t}", f"njk-station-{t}"
        self.main_if, self.station_if = f"njk{t}m"[:15], f"njk{t}s"[:15]
        self.main_addr, self.station_addr = "10.203.7.1", "10.203.7.2"
        self.destination = f"{self.station_server}:midi_to_slave_1"  # on the main server
        self.station_source = "system:midi_capture_1"  # on the station server
        self._undo: list[tuple[str, object]] = []
        self._procs: dict[str, subprocess.Popen] = {}

    # environment and commands in a namespace -------------------------------------------------
    def env(self, server: str) -> dict[str, str]:
        return dict(os.environ, JACK_DEFAULT_SERVER=server, JACK_NO_START_SERVER="1")

    def in_ns(self, ns: str, *cmd: str) -> list[str]:
        return ["ip", "netns", "exec", ns, *cmd]

    # set-up -----------------------------------------------------------------------------------
    def open(self) -> NetjackRig:
        try:
            self._network()
            self._start_main()
            self._start_station()
        except BaseException:
            self.close()
            raise
        return self

    def _network(self) -> None:
        for ns in (self.main_ns, self.station_ns):
            _run("ip", "netns", "add", ns)
            self._undo.append(("netns", ns))
        _run("ip", "link", "add", self.main_if, "type", "veth", "peer", "name", self.station_if)
        self._undo.append(("link", self.main_if))
        for ns, dev, addr in ((self.main_ns, self.main_if, self.main_addr),
                              (self.station_ns, self.station_if, self.station_addr)):
            _run("ip", "link", "set", dev, "netns", ns)
            _run("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _run("ip", "-n", ns, "link", "set", "lo", "up")
            _run("ip", "-n", ns, "link", "set", dev, "up")
            _run("ip", "-n", ns, "route", "add", "224.0.0.0/4", "dev", dev)

    def _jackd(self, key: str, ns: str, server: str, *driver: str) -> None:
        """Start a jackd in ``ns`` (realtime if allowed, else not) and wait for it."""
        for rt in (["-R", "-P", "60"], ["--no-realtime"]):
            log = open(self.logs / f"{server}.log", "w")  # noqa: SIM115 (kept for the process)
            proc = popen_jackd(self.in_ns(ns, "jackd", "-n", server, *rt, *driver),
                               stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, env=self.env(server))
            log.close()
            self._procs[key] = proc
            self._undo.append(("jackd", key))
            waited = subprocess.run(["jack_wait", "-s", server, "-w", "-t", "10"],
                                    capture_output=True, env=self.env(server), timeout=20)
            if waited.returncode == 0 and proc.poll() is None:
                return
            self._stop(key)
            self._undo.pop()
        raise RigError(f"jackd -n {server} {' '.join(driver)} did not start: "
                       f"{self.log(server)[-2000:]}")

    def _start_main(self) -> None:
        self._jackd("main", self.main_ns, self.main_server, "-d", "dummy",
                    "-r", str(self.rate), "-p", str(self.period))
        _run("jack_load", "-s", self.main_server, "netmanager", "-i",
             f"-a {MULTICAST} -p {NET_PORT}", env=self.env(self.main_server))
        self._undo.append(("netmanager", self.main_server))

    def _start_station(self) -> None:
        master = self.main_addr if self.explicit else MULTICAST
        self._jackd("station", self.station_ns, self.station_server, "-d", "net",
                    "-a", master, "-p", str(NET_PORT), "-n", self.station_server,
                    "-C", "0", "-P", "0", "-i", "1", "-o", "1", "-l", str(self.latency))
        deadline = time.monotonic() + 20
        while self.destination not in self.ports(self.main_server):
            if time.monotonic() > deadline:
                raise RigError(f"the master shows no {self.destination}: main log "
                               f"{self.log(self.main_server)[-1500:]}; station log "
                               f"{self.log(self.station_server)[-1500:]}")
            time.sleep(0.2)

    # inspection -------------------------------------------------------------------------------
    def ports(self, server: str) -> list[str]:
        done = subprocess.run(["jack_lsp", "-s", server], capture_output=True, text=True,
                              env=self.env(server), timeout=10)
        return done.stdout.split("\n") if done.returncode == 0 else []

    def log(self, server: str) -> str:
        path = self.logs / f"{server}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # tear-down --------------------------------------------------------------------------------
    def _stop(self, key: str) -> None:
        """SIGTERM the jackd (never SIGKILL: that leaks a registry slot) and wait for it."""
        proc = self._procs.pop(key, None)
        if proc is not None and not stop_jackd(proc, timeout=30):
            print(f"netjack_rig: jackd {key} still running after SIGTERM (pid {proc.pid})",
                  file=sys.stderr)

    def close(self) -> None:
        for kind, what in reversed(self._undo):
            try:
                if kind == "jackd":
                    self._stop(str(what))
                elif kind == "netmanager":
                    subprocess.run(["jack_unload", "-s", str(what), "netmanager"],
                                   capture_output=True, env=self.env(str(what)), timeout=15)
                elif kind == "link":
                    subprocess.run(["ip", "link", "del", str(what)], capture_output=True)
                else:
                    subprocess.run(["ip", "netns", "del", str(what)], capture_output=True)
            except (OSError, subprocess.SubprocessError) as exc:
                print(f"netjack_rig: undoing {kind} {what}: {exc}", file=sys.stderr)
        self._undo.clear()

    def __enter__(self) -> NetjackRig:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()


class StationReceiver:
    """``tests/netjack_receiver.py`` in a namespace, on a server: started ``ready``, then
    ``finish()`` gives its record (rate, period, xruns, messages)."""

    def __init__(self, rig: NetjackRig, ns: str, server: str, source: str, client: str) -> None:
        cmd = rig.in_ns(ns, sys.executable, str(ROOT / "tests" / "netjack_receiver.py"),
                        client, source)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=rig.env(server))
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("ready"):
            self.proc.kill()
            raise RigError(f"the receiver did not start: {line}{self.proc.stderr.read()}")

    def finish(self) -> dict:
        out, err = self.proc.communicate("", timeout=20)
        if self.proc.returncode != 0:
            raise RigError(f"the receiver failed: {err}")
        return json.loads(out.strip().splitlines()[-1])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


# — a live show over the link, measured ——————————————————————————————————————————————————————


def file_messages(args: list[str], out: Path) -> list[tuple[float, bytes]]:
    """The channel messages of ``yuezheng midi ARGS`` (seconds, bytes), read back with mido."""
    import mido

    import cli

    with contextlib.redirect_stdout(io.StringIO()):
        status = cli.main(["midi", *args, "-o", str(out)])
    if status != 0:
        raise RigError(f"yuezheng midi {' '.join(args)} failed")
    mf = mido.MidiFile(str(out))
    t, found = 0.0, []
    for msg in mido.merge_tracks(mf.tracks):
        t += mido.tick2second(msg.time, mf.ticks_per_beat, 1_000_000)
        if not msg.is_meta:
            found.append((t, bytes(msg.bytes())))
    return found


def live_over(rig: NetjackRig, ns: str, server: str, destination: str, args: list[str],
              log: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """``yuezheng live ARGS --auto --output jack:DESTINATION --log LOG`` in ``ns`` on
    ``server``."""
    cmd = rig.in_ns(ns, sys.executable, str(ROOT / "cli.py"), "live", *args, "--auto",
                    "--output", f"jack:{destination}", "--log", str(log))
    return subprocess.run(cmd, capture_output=True, text=True, env=rig.env(server), cwd=ROOT,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _in_file_order(arrived: list[bytes], file: list[bytes]) -> bool:
    """Whether what arrived is the file's messages in the file's order with some missing (an
    xrun drops MIDI on JACK's dummy driver), then only clean-up (pitch wheels, all-notes-off, the
    keys' tuning back to equal)."""
    from instruments.midi import is_all_off, is_pitch_bend, is_tuning_restore

    rest = iter(file)
    for i, m in enumerate(arrived):
        if not any(m == f for f in rest):
            return all(is_pitch_bend(x) or is_all_off(x) or is_tuning_restore(x)
                       for x in arrived[i:])
    return True


def arrivals(expected: list[tuple[float, bytes]], record: dict, log: Path) -> dict:
    """What arrived against the file: ``complete`` (every message, in order, then only the
    pitch wheels' clean-up and the safety net's all-notes-off), the arrival jitter (each message's frame on the receiving server
    against the file's time, a constant latency taken out: see ``timing_errors_ms``), and the
    latency (its time on this machine's clock after the show log's cue start plus the file's
    time), in ms."""
    from instruments.midi import is_all_off, is_pitch_bend, is_tuning_restore
    from tests.test_ports_jack import timing_errors_ms, without_resent_offs

    # a note-off written again after an xrun (by design: instruments/ports/resend.py) is not
    # a message of the file
    got = without_resent_offs([(frame, bytes.fromhex(data), t)
                               for frame, data, t in record["messages"]])
    n = len(expected)
    complete = ([m for _, m, _ in got[:n]] == [m for _, m in expected]
                and all(is_pitch_bend(m) or is_all_off(m) or is_tuning_restore(m)
                        for _, m, _ in got[n:]))
    result: dict = {"messages": n, "received": len(got), "complete": complete,
                    "in_order": _in_file_order([m for _, m, _ in got], [m for _, m in expected]),
                    "xruns": record["xruns"], "period_ms": 1000 * record["period"] / record["rate"]}
    if not complete:
        return result
    errors = sorted(timing_errors_ms([t for t, _ in expected],
                                     [frame / record["rate"] for frame, _, _ in got[:n]]))
    starts = [json.loads(x)["t"] for x in log.read_text(encoding="utf-8").splitlines()
              if '"event": "start"' in x]
    offsets = sorted(t - starts[0] - s for (s, _), (_, _, t) in zip(expected, got[:n], strict=True))
    result.update(jitter_p50_ms=errors[len(errors) // 2],
                  jitter_p99_ms=errors[min(n - 1, int(0.99 * n))], jitter_max_ms=errors[-1],
                  latency_ms=1000 * offsets[len(offsets) // 2])
    return result

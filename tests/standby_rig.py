"""Two "machines" for the hot-standby tests and ``benchmarks/failover.py``: a main and a backup
in two network namespaces joined by a veth pair, their link through the seeded UDP relay
(``tests/udp_relay.py``: loss and jitter, as this kernel has no netem), both sending to the one
JACK server of this machine (JACK's sockets and shared memory are files: a client in another
network namespace reaches the server all the same).

Network: main ``10.231.N.1`` — veth — backup ``10.231.N.2``. The relay runs in the backup's
namespace: the main sends to ``10.231.N.2:RELAY_IN`` (across the veth), the relay forwards to
the backup's loopback ``127.0.0.1:BACKUP_PORT``; the backup sends to the relay's
``127.0.0.1:RELAY_OUT``, forwarded to the main's ``10.231.N.1:MAIN_PORT`` (across the veth).
Every name has the prefix ``sby``; ``close()`` deletes the namespaces (and with them the veth).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

from tests.timing import delivered

ROOT = Path(__file__).resolve().parent.parent
KEY = "sby-test-key-0123456789abcdef"
MAIN_PORT, BACKUP_PORT, RELAY_IN, RELAY_OUT = 47101, 47102, 47201, 47202
DRUM_ON = 0x99  # the drum's note-on status (channel 10) in the compiled 射節


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


class TwoMachines:
    """The namespaces, the veth pair, the relay and the processes started in them."""

    def __init__(self, tag: int, *, seed: int = 7, loss: float = 0.1, jitter_ms: float = 20.0,
                 record: Path | None = None) -> None:
        self.tag = tag % 100000
        self.main_ns, self.backup_ns = f"sby-m{self.tag}", f"sby-b{self.tag}"
        net = 10 + self.tag % 240
        self.main_ip, self.backup_ip = f"10.231.{net}.1", f"10.231.{net}.2"
        self.procs: list[subprocess.Popen] = []
        self.seed, self.loss, self.jitter_ms, self.record = seed, loss, jitter_ms, record

    def open(self) -> TwoMachines:
        va, vb = f"sbym{self.tag}", f"sbyb{self.tag}"
        _ip("netns", "add", self.main_ns)
        _ip("netns", "add", self.backup_ns)
        _ip("link", "add", va, "type", "veth", "peer", "name", vb)
        _ip("link", "set", va, "netns", self.main_ns)
        _ip("link", "set", vb, "netns", self.backup_ns)
        for ns, dev, addr in ((self.main_ns, va, self.main_ip),
                              (self.backup_ns, vb, self.backup_ip)):
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        relay = [sys.executable, str(ROOT / "tests" / "udp_relay.py"), "--seed", str(self.seed),
                 "--loss", str(self.loss), "--jitter-ms", str(self.jitter_ms),
                 f"{self.backup_ip}:{RELAY_IN}=127.0.0.1:{BACKUP_PORT}",
                 f"127.0.0.1:{RELAY_OUT}={self.main_ip}:{MAIN_PORT}"]
        if self.record is not None:
            relay[2:2] = ["--record", str(self.record)]
        proc = self.start(self.backup_ns, relay)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        return self

    def start(self, ns: str, argv: list[str], env: dict[str, str] | None = None
              ) -> subprocess.Popen:
        full_env = dict(os.environ, JACK_NO_START_SERVER="1", YUEZHENG_PEER_KEY=KEY,
                        **(env or {}))
        proc = subprocess.Popen(["ip", "netns", "exec", ns, *argv], cwd=ROOT, env=full_env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.procs.append(proc)
        return proc

    def live(self, role: str, output: str, log: Path, *args: str) -> subprocess.Popen:
        """``yuezheng live`` as ``role`` in its namespace, linked through the relay."""
        if role == "main":
            ns, link = self.main_ns, ["--peer", f"osc.udp://{self.backup_ip}:{RELAY_IN}",
                                      "--listen", f"{self.main_ip}:{MAIN_PORT}"]
        else:
            ns, link = self.backup_ns, ["--peer", f"osc.udp://127.0.0.1:{RELAY_OUT}",
                                        "--listen", str(BACKUP_PORT)]
        return self.start(ns, [sys.executable, str(ROOT / "cli.py"), "live", *args,
                               "--output", output, "--log", str(log), "--role", role, *link])

    def send_raw(self, ns: str, target: tuple[str, int], packets: list[bytes]) -> None:
        """Send ``packets`` from inside ``ns`` (a forger on that machine)."""
        code = ("import socket,sys\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
                "for line in sys.stdin:\n"
                f"    s.sendto(bytes.fromhex(line.strip()),({target[0]!r},{target[1]}))\n")
        subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", code], check=True,
                       input="".join(p.hex() + "\n" for p in packets), text=True, timeout=10)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
        for ns in (self.main_ns, self.backup_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)

    def __enter__(self) -> TwoMachines:
        try:
            return self.open()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def wait_for_log(path: Path, predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(predicate(r) for r in read_log(path)):
            return True
        time.sleep(0.05)
    return False


# ── one failover, recorded ──────────────────────────────────────────────────────────────────────

@dataclass
class Failover:
    """What the two receivers heard: (t on the perf_counter clock, bytes) from each machine."""

    main: list[tuple[float, bytes]]
    backup: list[tuple[float, bytes]]
    kill_t: float
    jie_s: float
    schedule: list[tuple[float, bytes]] = field(default_factory=list)
    jie_marks: list[tuple[float, int, int]] = field(default_factory=list)  # (t, k, n)
    xruns: int = 0  # what the two receivers' JACK server reported meanwhile

    @property
    def takeover_s(self) -> float:
        """The backup's first message after the kill."""
        return self.backup[0][0] - self.kill_t

    @property
    def after_last_main_s(self) -> float:
        return self.backup[0][0] - self.main[-1][0]

    def offset(self) -> float:
        """Recording time minus schedule time (the main's messages are the schedule's)."""
        n = min(40, len(self.main))
        return median(t - s for (t, _), (s, _) in zip(self.main[:n], self.schedule[:n],
                                                      strict=True))

    def note_matches(self) -> tuple[list[int], list[tuple[str, float, bytes]]]:
        """Each recorded note-on's schedule index; and those matching none."""
        offset = self.offset()
        ons = [(i, s, m) for i, (s, m) in enumerate(self.schedule) if m[0] & 0xF0 == 0x90
               and m[2] > 0]
        found, stray = [], []
        for who, msgs in (("main", self.main), ("backup", self.backup)):
            for t, m in msgs:
                if m[0] & 0xF0 != 0x90 or m[2] == 0:
                    continue
                near = [(abs(t - offset - s), i) for i, s, d in ons if d[:2] == m[:2]
                        and abs(t - offset - s) < 0.010]
                if near:
                    found.append(min(near)[1])
                else:
                    stray.append((who, t, m))
        return found, stray

    def jie_onsets(self) -> list[tuple[float, int, int]]:
        """The recorded drum stroke of each 節 of the schedule, (t, k, n), where it was heard."""
        offset = self.offset()
        strokes = [t for t, m in self.main + self.backup if m[0] == DRUM_ON and m[2] > 0]
        out = []
        for s, k, n in self.jie_marks:
            near = [t for t in strokes if abs(t - offset - s) < 0.010]
            if near:
                out.append((min(near, key=lambda t: abs(t - offset - s)), k, n))
        return out

    def midi_file(self, path: Path) -> None:
        """The recording as a MIDI file, with a 節 marker at each 節's recorded stroke."""
        import mido

        t0 = min(t for t, _ in self.main)
        events: list[tuple[float, int, object]] = [(0.0, 0, mido.MetaMessage("marker",
                                                                              text="she-jie"))]
        events += [(t - t0, 1, mido.MetaMessage("marker", text=f"節 {k}/{n}"))
                   for t, k, n in self.jie_onsets()]
        events += [(t - t0, 2, mido.Message.from_bytes(list(m)))
                   for t, m in sorted(self.main + self.backup)]
        track = mido.MidiTrack()
        tick = 0
        for t, _, msg in sorted(events, key=lambda e: (e[0], e[1])):
            at = round(max(t, 0.0) * 960)
            track.append(msg.copy(time=at - tick))
            tick = at
        mf = mido.MidiFile(ticks_per_beat=960, charset="utf-8")
        mf.tracks.append(track)
        buf = io.BytesIO()
        mf.save(file=buf)
        path.write_bytes(buf.getvalue())


def she_jie_schedule(jie_s: str) -> tuple[list[tuple[float, bytes]], list[tuple[float, int, int]]]:
    """The 射節 of 鄉射's live schedule (what the sender sends) and its 節 marks."""
    from cues.sheet.loader import load_rite
    from sequencer.outputs.cue_schedule import cue_schedules
    from sequencer.timeline.compiler import compile_rite, make_settings, select_cues

    rite = select_cues(load_rite("xiang-she", ()), "she-jie", "she-jie")
    sched = cue_schedules(compile_rite(rite, make_settings(rite.settings,
                                                           {"jie_seconds": jie_s})))["she-jie"]
    return (list(zip(sched.times, sched.messages, strict=True)),
            [(j.t, j.k, j.n) for j in sched.jie])


def run_failover(machines: TwoMachines, rx_main, rx_backup, log_dir: Path, *,
                 jie_s: str = "1", kill_at_jie: int = 7, run_after_s: float | None = None,
                 timeout: float = 90.0) -> Failover:
    """Play the 射節 on both, SIGKILL the main just after the drum stroke of 節 index
    ``kill_at_jie``, let the backup play on (to the end, or ``run_after_s`` after its first
    message, then SIGTERM); return the recording."""
    show = ["xiang-she", "--from", "she-jie", "--until", "she-jie", "--auto",
            "--jie-seconds", jie_s]
    backup = machines.live("backup", f"jack:{rx_backup.port_name}", log_dir / "backup.jsonl",
                           *show)
    time.sleep(0.5)
    main = machines.live("main", f"jack:{rx_main.port_name}", log_dir / "main.jsonl", *show)
    jie = float(jie_s)
    deadline = time.monotonic() + timeout

    def strokes() -> list[float]:
        return [t for t, m, _ in rx_main.messages if m[0] == DRUM_ON and m[2] > 0]

    while time.monotonic() < deadline:
        got = rx_main.messages
        if got and any(t >= got[0][0] + kill_at_jie * jie - 0.02 for t in strokes()):
            break
        if main.poll() is not None:
            raise AssertionError(f"the main ended early: {main.communicate()}")
        time.sleep(0.002)
    kill_t = time.perf_counter()
    main.send_signal(signal.SIGKILL)
    main.communicate(timeout=10)
    if run_after_s is None:
        out, err = backup.communicate(timeout=timeout)
        # (late only while JACK counted xruns: the checks of the run measure its time)
        delivered(backup.returncode, out + err, rx_main.xruns + rx_backup.xruns)
    else:
        while not rx_backup.messages and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(run_after_s)
        backup.send_signal(signal.SIGTERM)
        backup.communicate(timeout=20)
    time.sleep(0.2)
    schedule, marks = she_jie_schedule(jie_s)
    return Failover([(t, m) for t, m, _ in rx_main.messages],
                    [(t, m) for t, m, _ in rx_backup.messages], kill_t, jie, schedule, marks,
                    rx_main.xruns + rx_backup.xruns)

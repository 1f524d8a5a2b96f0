"""Hostile control input and a show log that cannot be written, against `yuezheng live` over the
memory output (no JACK): the show runs to its end, on time, and nothing sounds after it.

Each test runs the CLI in a subprocess and asserts its exit code and message; what was sent is
read back from the memory output's record.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pythonosc.osc_bundle_builder import OscBundleBuilder
from pythonosc.osc_message import OscMessage
from pythonosc.osc_message_builder import OscMessageBuilder

from instruments.midi import SoundingNotes
from instruments.ports.memory import read_memory_record
from sequencer.live.control.gate import ControlGate, coalescing_kind
from sequencer.live.control.midi_in import midi_callback, midi_command
from sequencer.live.control.osc import is_plain_argument, release_command
from sequencer.live.player.status import ShowStatus
from sequencer.live.protocol import Go, Hold, MarkRelease, Panic, Resume
from tests.timing import delivered, on_time, timing_flaky

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parent.parent
SHE_JIE = ("xiang-she", "--from", "she-jie", "--until", "she-jie")  # 6 耦 × 5 節


def _live(*args: str, **popen: object) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "live", *args], cwd=ROOT,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dgram(address: str, *args: object) -> bytes:
    builder = OscMessageBuilder(address)
    for arg in args:
        builder.add_arg(arg)
    return builder.build().dgram


PROBE = "/cue/none/start"  # a harmless command: no such cue, the state is replied


class Remote:
    """An OSC client of the show: sends, and waits for the reply to one address."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))

    def send(self, data: bytes) -> None:
        self.sock.sendto(data, ("127.0.0.1", self.port))

    def ask(self, address: str, *args: object, timeout: float = 5.0) -> dict:
        """Send and wait for ``/reply<address>`` (other replies are skipped)."""
        self.send(_dgram(address, *args))
        deadline = time.perf_counter() + timeout
        while True:
            self.sock.settimeout(max(0.01, deadline - time.perf_counter()))
            data, _ = self.sock.recvfrom(65536)
            reply = OscMessage(data)
            if reply.address == f"/reply{address}":
                return json.loads(reply.params[0])

    def insist(self, address: str, every: float = 0.1, timeout: float = 5.0) -> dict:
        """``ask`` again every ``every`` s until answered (a datagram sent while the server's
        socket buffer is full is dropped by the kernel, as a real operator would find)."""
        deadline = time.perf_counter() + timeout
        while True:
            try:
                return self.ask(address, timeout=every)
            except TimeoutError:
                if time.perf_counter() > deadline:
                    raise

    def drain(self) -> int:
        """Forget the replies received so far; how many."""
        self.sock.setblocking(False)
        count = 0
        try:
            while True:
                self.sock.recvfrom(65536)
                count += 1
        except BlockingIOError:
            return count
        finally:
            self.sock.setblocking(True)

    def wait_up(self, timeout: float = 30.0) -> dict:
        deadline = time.perf_counter() + timeout
        while True:
            try:
                return self.ask(PROBE, timeout=0.3)
            except (TimeoutError, ConnectionRefusedError):
                if time.perf_counter() > deadline:
                    raise

    def close(self) -> None:
        self.sock.close()


def _sounding_after(record: list[tuple[float, bytes]]) -> set[tuple[int, int]]:
    notes = SoundingNotes()
    for _, data in record:
        notes.track(data)
    return notes.notes


GARBAGE = [
    _dgram("/release", "右", float("nan")), _dgram("/release", "右", float("inf")),
    _dgram("/release", "x", 1), _dgram("/release", 1, "1"), _dgram("/release", "左"),
    _dgram("/release", "右" * 5000, 1), _dgram("/go", "now"), _dgram("/go", float("nan")),
    _dgram("/hold", 1, 2), _dgram("/*"), _dgram("/[*"), _dgram("/cue/{a,b}/start"),
    _dgram("/cue/\x1b[2J/start"), _dgram("/quit"), _dgram("/nope\n"), b"#bundle\x00junk",
    b"/go\x00\x00\x00\x00,f\x00\x00", os.urandom(64), b"\x00" * 8,
]


def _far_bundle() -> bytes:
    """A bundle whose time tag is a year ahead (python-osc would sleep until then)."""
    bundle = OscBundleBuilder(time.time() + 365 * 86400)
    bundle.add_content(OscMessageBuilder("/go").build())
    return bundle.build().dgram


def test_checks_of_arguments() -> None:
    assert is_plain_argument(1.0) and is_plain_argument(True) and is_plain_argument(0)
    assert not is_plain_argument(float("nan")) and not is_plain_argument("1")
    assert release_command(("右", 1)) == MarkRelease("右", True)
    assert release_command(("left", False)) == MarkRelease("left", False)
    for bad in [("右", float("nan")), ("右", float("inf")), ("右", "1"), ("右", 2), ("x", 1),
                ("右",), (1, 1), ("右" * 100, 1)]:
        assert release_command(bad) is None, bad
    assert coalescing_kind(Hold()) == coalescing_kind(Resume()) != coalescing_kind(Go())
    assert midi_command(b"\x90\x3c\x64", {("note", 60): Go()}) == Go()


@timing_flaky
def test_garbage_and_floods_leave_the_show_running_to_its_end(tmp_path: Path) -> None:
    record, log, port = tmp_path / "out.jsonl", tmp_path / "show.jsonl", _free_port()
    started = time.perf_counter()
    proc = _live(*SHE_JIE, "--jie-seconds", "0.4", "--auto", "--output", f"memory:{record}",
                 "--log", str(log), "--control", f"osc://127.0.0.1:{port}")
    remote = Remote(port)
    try:
        remote.wait_up()
        for data in [*GARBAGE, _far_bundle()] * 20:
            remote.send(data)
        for i in range(10_000):
            remote.send(_dgram("/hold" if i % 2 == 0 else "/resume"))
        for i in range(900):
            remote.send(_dgram("/release", "右" if i % 2 else "左", i % 2))
        time.sleep(0.5)
        remote.drain()
        assert remote.ask("/resume")["held"] is False  # the last word is the one obeyed
        asked = time.perf_counter()
        state = remote.ask(PROBE)  # a command is still answered at once
        assert state["running"] == ["she-jie"]
        on_time(time.perf_counter() - asked < 0.5, "the resume's reply came late")
        out, err = proc.communicate(timeout=60)
    finally:
        remote.close()
        if proc.poll() is None:
            proc.kill()
    delivered(proc.returncode, out + err)
    assert "played 鄉射禮" in out and "Traceback" not in err
    on_time(time.perf_counter() - started < 45, "the show ran long")  # 12 s, held a little
    sent = read_memory_record(record)
    assert sum(d[0] & 0xF0 == 0x90 for _, d in sent) > 50
    assert _sounding_after(sent) == set()
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    ignored = [r for r in records if r["event"] == "ignored"]
    assert ignored and all(r["source"] == "OSC" for r in ignored)
    assert len(ignored) <= 10  # rate-limited: at most one report a second
    assert sum(r["count"] for r in ignored) >= len(GARBAGE)
    assert all("\x1b" not in r["last"] for r in ignored)  # control characters escaped
    assert [r["event"] for r in records if r["event"] in ("start", "end")] == ["start", "end"]


@timing_flaky
def test_panic_jumps_a_flood_and_quit_needs_remote_quit(tmp_path: Path) -> None:
    port = _free_port()
    proc = _live("xiang-she", "--from", "wu-suan-yue", "--until", "gai", "--output", "memory:",
                 "--control", f"osc://127.0.0.1:{port}")
    remote = Remote(port)
    try:
        remote.wait_up()
        assert remote.ask("/go")["running"] == ["wu-suan-yue"]
        remote.send(_dgram("/quit"))  # refused: no --remote-quit
        for i in range(900):
            remote.send(_dgram("/release", "右", i % 2))
        for i in range(10_000):
            remote.send(_dgram("/hold" if i % 2 == 0 else "/resume"))
        asked = time.perf_counter()
        assert remote.insist("/panic")["panic"] == 1
        answered = time.perf_counter() - asked
        on_time(answered < 0.5, f"the panic's reply came {answered:.3f} s after it was sent")
        assert proc.poll() is None  # /quit was refused
        time.sleep(0.3)
        proc.terminate()
        out, err = proc.communicate(timeout=20)
    finally:
        remote.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + 15, err
    assert "SIGTERM: silenced and stopped" in err


def test_remote_quit_when_enabled(tmp_path: Path) -> None:
    port = _free_port()
    proc = _live("xiang-she", "--from", "gai", "--until", "gai", "--output", "memory:",
                 "--control", f"osc://127.0.0.1:{port}", "--remote-quit")
    remote = Remote(port)
    try:
        remote.wait_up()
        remote.ask("/quit")
        out, err = proc.communicate(timeout=20)
    finally:
        remote.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err


class FakePlayer:
    """What a ControlGate needs of a player."""

    def __init__(self) -> None:
        self.queue: list = []
        self.status = ShowStatus()
        self.log = self

    def write(self, record: dict) -> None:
        self.record = record

    def put(self, command, reply=None, origin: str = "") -> None:
        self.queue.append((command, reply))

    def add_closer(self, closer) -> None:
        self.closer = closer


def test_gate_coalesces_hold_and_resume_to_the_last() -> None:
    player = FakePlayer()
    gate = ControlGate(player, "test", "osc")  # type: ignore[arg-type]
    for i in range(10_000):
        gate.offer(Hold() if i % 2 == 0 else Resume())
    for _ in range(5):
        gate.offer(Panic())
    assert [type(c) for c, _ in player.queue] == [Hold, Panic, Panic]
    for _command, done in list(player.queue):
        done({})
    time.sleep(0.1)
    assert [type(c) for c, _ in player.queue][3:] == [Resume, Panic]
    gate.close()


def test_log_on_a_full_disk_is_reported_and_the_show_goes_on(tmp_path: Path) -> None:
    record = tmp_path / "out.jsonl"
    proc = _live(*SHE_JIE, "--jie-seconds", "0.1", "--auto", "--output", f"memory:{record}",
                 "--log", "/dev/full")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "played 鄉射禮" in out
    assert "the show log /dev/full cannot be written (No space left on device)" in err
    assert "record(s) not written" in err and "Traceback" not in err
    sent = read_memory_record(record)
    assert sum(d[0] & 0xF0 == 0x90 for _, d in sent) > 50 and _sounding_after(sent) == set()


def test_log_write_error_mid_show(tmp_path: Path) -> None:
    """A file-size limit makes the log fail after its first few records (EFBIG)."""
    log = tmp_path / "show.jsonl"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))

    proc = _live(*SHE_JIE, "--jie-seconds", "0.1", "--auto", "--output", "memory:",
                 "--log", str(log), preexec_fn=limit)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "played 鄉射禮" in out and f"the show log {log} cannot be written" in err
    lines = log.read_text(encoding="utf-8").splitlines()
    assert 2 <= len(lines) < 40 and json.loads(lines[0])["event"] == "show"


def test_bad_midi_input_is_dropped_and_reported() -> None:
    player = FakePlayer()
    gate = ControlGate(player, "MIDI in", "midi")  # type: ignore[arg-type]
    callback = midi_callback(gate, {("note", 60): Go()})
    for garbage in ([0x90], [0x3C, 0x40], [0xF0, 0x7F], [0x90, 0x80, 0x80], [300, 1, 2],
                    ["x"], None):
        callback((garbage, 0.0), None)
    callback(([0x90, 60, 100], 0.0), None)
    assert gate.dropped == 7 and [c for c, _ in player.queue] == [Go()]
    gate.close()
    assert player.status.message.startswith("MIDI in: ignored 7 bad message(s)")

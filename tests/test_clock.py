"""Clocks, port specs, message and schedule checks, and the base port, with exact expectations
on a FakeClock where time matters."""

from __future__ import annotations

import threading
import time

import pytest

from instruments.ports import (
    OutputPort,
    PortError,
    all_off_messages,
    check_message,
    parse_spec,
)
from sequencer.clock import Clock, FakeClock, MonotonicClock
from sequencer.showsender import ScheduleError, check_schedule


class MemoryPort(OutputPort):
    """An in-memory output: what was sent, in order, with the FakeClock time of each send."""

    def __init__(self, clock: Clock | None = None) -> None:
        super().__init__("memory")
        self.clock = clock
        self.sent: list[tuple[float, bytes]] = []
        self.opened = 0

    def _open(self) -> None:
        self.opened += 1

    def _send(self, data: bytes) -> None:
        self.sent.append((self.clock.now() if self.clock else 0.0, data))

    def _close(self) -> None:
        pass


def on(key: int, ch: int = 0) -> bytes:
    return bytes((0x90 | ch, key, 100))


def off(key: int, ch: int = 0) -> bytes:
    return bytes((0x80 | ch, key, 0))


# ── clocks ─────────────────────────────────────────────────────────────────────────────────────

def test_fake_clock_moves_only_by_waits_and_advance() -> None:
    clock = FakeClock(10.0)
    assert clock.now() == 10.0
    assert clock.wait_until(12.5) is True
    assert clock.now() == 12.5
    assert clock.wait_until(11.0) is True  # a past deadline returns at once, time stays
    assert clock.now() == 12.5
    assert clock.advance(0.5) == 13.0
    cancel = threading.Event()
    cancel.set()
    assert clock.wait_until(20.0, cancel) is False
    assert clock.now() == 13.0
    assert clock.waits == [12.5, 11.0]
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_clocks_satisfy_the_protocol() -> None:
    assert isinstance(MonotonicClock(), Clock)
    assert isinstance(FakeClock(), Clock)


def test_monotonic_clock_never_returns_early() -> None:
    clock = MonotonicClock()
    for delay in (0.0, 0.0005, 0.003, 0.02):
        deadline = clock.now() + delay
        assert clock.wait_until(deadline) is True
        assert clock.now() >= deadline


def test_monotonic_clock_wait_is_cancellable() -> None:
    clock = MonotonicClock()
    cancel = threading.Event()
    timer = threading.Timer(0.05, cancel.set)
    timer.start()
    start = time.perf_counter()
    assert clock.wait_until(start + 30.0, cancel) is False
    assert time.perf_counter() - start < 5.0  # generous: it returned on the cancel, not at 30 s
    timer.join()


# ── specs and messages ─────────────────────────────────────────────────────────────────────────

def test_parse_spec_kinds() -> None:
    assert parse_spec("jack:bar:in").kind == "jack"
    assert parse_spec("jack:bar:in").name == "bar:in"
    assert parse_spec("jack-virtual:yz").virtual
    assert parse_spec("alsa:FLUID").api == "alsa"
    assert parse_spec("virtual:yz").api == "default"
    assert parse_spec("pyo").kind == "pyo" and str(parse_spec("pyo")) == "pyo"
    assert parse_spec("pyo:jack:rec").name == "jack:rec" and parse_spec("pyo").virtual
    with pytest.raises(PortError, match="backend"):
        parse_spec("pyo:alsa")
    with pytest.raises(PortError, match="only a JACK output"):
        parse_spec("pyo:portaudio:rec")
    for bad in ("bar:in", "jack:", "midi:x", ""):
        with pytest.raises(PortError):
            parse_spec(bad)


def test_check_message() -> None:
    assert check_message([0x90, 60, 100]) == b"\x90\x3c\x64"
    assert check_message(b"\xf0\x7e\x7f\xf7") == b"\xf0\x7e\x7f\xf7"
    for bad in (b"", b"\x3c\x64", b"\x90\x3c", b"\x90\x3c\x80", b"\xc0\x01\x02", b"\xf4"):
        with pytest.raises(ValueError):
            check_message(bad)


def test_schedule_checks_name_the_mistake() -> None:
    assert check_schedule([(0, on(60)), (0.5, off(60))]) == ([0.0, 0.5], [on(60), off(60)])
    with pytest.raises(ScheduleError, match="sorted"):
        check_schedule([(1.0, on(60)), (0.5, off(60))])
    with pytest.raises(ScheduleError, match=">= 0"):
        check_schedule([(-0.1, on(60))])
    with pytest.raises(ScheduleError, match=r"schedule\[1\]"):
        check_schedule([(0.0, on(60)), (0.1, b"\x90\x3c")])
    assert check_schedule([(0.0, b"")]) == ([0.0], [b""])  # a mark (a 節 for the show log)


# ── the base port ──────────────────────────────────────────────────────────────────────────────

def test_port_opens_only_when_asked_and_tracks_notes() -> None:
    port = MemoryPort()
    assert port.closed and port.opened == 0
    with pytest.raises(ValueError, match="closed"):
        port.send(on(60))
    with port:
        assert port.opened == 1
        port.send(on(60))
        port.send(on(64, ch=2))
        port.send(on(67))
        port.send(bytes((0x90, 67, 0)))  # note-on velocity 0 is a note-off
        assert port.sounding == {(0, 60), (2, 64)}
        with pytest.raises(ValueError):
            port.send(b"\x90\x3c")
    assert port.closed
    # close() released what was sounding, nothing more
    assert [d for _, d in port.sent[-2:]] == [off(60), off(64, ch=2)]


def test_panic_has_two_stages() -> None:
    port = MemoryPort().open()
    port.send(on(62, ch=1))
    port.send(on(60))
    before = len(port.sent)
    port.panic()
    out = [d for _, d in port.sent[before:]]
    assert out[:2] == [off(60), off(62, ch=1)]  # stage 1: the tracked notes
    assert out[2:] == all_off_messages()  # stage 2: CC 123 then 120 on each channel
    assert len(out[2:]) == 32 and out[2] == b"\xb0\x7b\x00" and out[3] == b"\xb0\x78\x00"
    assert port.sounding == frozenset()
    port.close()
    assert len(port.sent) == before + 34  # nothing left to release at close

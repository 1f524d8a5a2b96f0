"""No note left sounding over JACK, whatever the load: a show's normal end on a busy machine,
messages handed over late, a full port buffer, and xruns (the server stopped mid-period).

The receivers are JACK MIDI inputs of the tests' own. The xrun test starts its own dummy
server (a unique name), never xruns the shared one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from instruments.midi import (
    SoundingNotes,
    all_off_messages,
    channel_of,
    is_all_off,
    is_note_off,
    note_off,
    note_on,
)
from instruments.ports import open_output
from tests.jack_server import RECEIVER, OwnServer, received
from tests.test_live_faults import _children, _gone
from tests.test_live_jack import _live
from tests.test_ports_jack import Receiver, _unsilenced

pytestmark = pytest.mark.jack

ROOT = Path(__file__).resolve().parent.parent
PAIRS = 1000  # note-on/off pairs due on one frame: more than a period takes (jackout.MAX_WRITES)
LOAD = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass\n"


def _short_wu_suan_yue(path: Path) -> Path:
    """鄉飲酒禮's 無算樂 (two pieces of its pool) then 《陔》: the sheet's own text, cut down."""
    text = (ROOT / "cues/rites/xiang-yin-jiu.toml").read_text(encoding="utf-8")
    head, *cues = text.split("[[cue]]")
    # the readings go too: the 疏's 無算樂 pool (the default reading) would set 18 pieces
    head = re.sub(r"^\[\[reading(?:\.choice)?\]\]\n.*?(?=^\[)", "", head, flags=re.S | re.M)
    kept = [c for c in cues if re.search(r'^id = "(wu-suan-yue|gai)"', c, re.M)]
    kept[0] = re.sub(r"pieces = \[\n.*?\n\]", 'pieces = ["鹿鳴", { title = "南陔", by = "笙" }]',
                     kept[0], flags=re.S)
    path.write_text(head + "".join("[[cue]]" + c for c in kept), encoding="utf-8")
    return path


def _hanging_by_note_offs(received: list[bytes]) -> set[tuple[int, int]]:
    """Notes turned on and never turned off by a note-off of their own (no CC counted)."""
    sounding: set[tuple[int, int]] = set()
    for data in received:
        if data[0] & 0xF0 == 0x90 and data[2] > 0:
            sounding.add((channel_of(data), data[1]))
        elif data[0] & 0xF0 == 0x80 or data[0] & 0xF0 == 0x90:
            sounding.discard((channel_of(data), data[1]))
    return sounding


def _net_closes_every_channel(received: list[bytes]) -> bool:
    """The last message on every channel used is CC 123 (the show end's safety net)."""
    last = {channel_of(m): m for m in received if m[0] < 0xF0}
    return bool(last) and all(m == all_off_messages([ch], sound_off=False)[0]
                              for ch, m in last.items())


def test_a_busy_machines_show_end_leaves_nothing_sounding(jack, tmp_path: Path) -> None:
    """無算樂 → 陔 to its normal end with a busy loop on the other core: every note-on heard
    has its note-off, and every channel ends with all notes off."""
    sheet = _short_wu_suan_yue(tmp_path / "wu-suan-yue.toml")
    rx = Receiver()
    load = subprocess.Popen([sys.executable, "-c", LOAD])
    proc = _live(str(sheet), "--auto", "--tempo", "600", "--lost-zhong-seconds", "1",
                 "--output", f"jack:{rx.port_name}")
    try:
        assert rx.wait_for(lambda got: any(m[0] & 0xF0 == 0x90 for m in got), 20.0)
        children = _children(proc.pid)
        out, err = proc.communicate(timeout=90)
        assert proc.returncode in (0, 1), err  # 1: a message late under the load (said so)
        assert "played 鄉飲酒禮: 2 cues" in out
        time.sleep(0.2)
        got = rx.data()
        assert sum(m[0] & 0xF0 == 0x90 for m in got) > 300
        assert _hanging_by_note_offs(got) == set()
        assert _unsilenced(got) == set()
        assert _net_closes_every_channel(got)
        assert all(_gone(pid) for pid in children), "a process outlived the show"
    finally:
        load.kill()
        load.wait()
        if proc.poll() is None:
            proc.kill()
        rx.close()


def test_late_hand_over_is_delivered_late_and_counted(jack) -> None:
    """Messages handed over long after their deadline (a sender that slept through it) go out
    at the start of the next period, in order, every one, counted late."""
    rx = Receiver()
    try:
        with open_output(f"jack:{rx.port_name}", client_name="saf-late") as port:
            past = time.perf_counter() - 0.5
            for key in range(40, 60):
                port.send(note_on(3, key, 90), past)
                port.send(note_off(3, key), past)
            assert rx.wait_for(lambda got: len(got) >= 40, 2.0)
            assert port.late == 40
        got = rx.data()
        sent = [m for key in range(40, 60) for m in (note_on(3, key, 90), note_off(3, key))]
        assert got[:40] == sent
        assert _hanging_by_note_offs(got) == set()
    finally:
        rx.close()


def test_a_full_period_buffer_defers_and_drops_nothing(jack) -> None:
    """2,000 messages due on one frame: more than one period takes; the rest wait, first in
    line, for the next periods, and the panic after them waits its turn. Every closing message
    arrives, in order; every other one too unless JACK reported an xrun meanwhile. (The
    receiver runs in a process of its own, as a synth does.)"""
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER, f"saf-full-rx{os.getpid()}"],
                                cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
    sent = [m for n in range(PAIRS) for m in (note_on(n % 16, 30 + n // 16 % 90, 80),
                                              note_off(n % 16, 30 + n // 16 % 90))]
    expected = sent + all_off_messages()
    closing = [m for m in expected if is_note_off(m) or is_all_off(m)]
    try:
        assert receiver.stdout is not None
        destination = receiver.stdout.readline().strip()
        with open_output(f"jack:{destination}", client_name="saf-full") as port:
            xruns = port.xruns
            at = time.perf_counter() + 0.05
            for m in sent:
                port.send(m, at)
            port.panic()
            time.sleep(1.0)
            deferred, xruns = port.deferred, port.xruns - xruns
        time.sleep(0.2)
        first = list(dict.fromkeys(received(receiver)))  # each message at its first arrival
        assert deferred > 0  # periods that were full
        arrived = [m for m in first if is_note_off(m) or is_all_off(m)]
        if xruns:  # a first writing an xrun lost arrives when written again, later: each one
            assert sorted(arrived) == sorted(closing)
        else:
            assert arrived == closing
            assert first == expected  # every one, in the order handed over
    finally:
        if receiver.poll() is None:
            receiver.kill()


XRUN_SENDER = """
import json, sys, time
from instruments.midi import SoundingNotes, note_off, note_on
from instruments.ports.jackout import JackMidiClient
from instruments.ports.jacklib import JackMidiInput


class Sleepy(JackMidiInput):  # overruns a period every 60 (sleeps 30 ms): an xrun each time

    cycle = 0

    def _process(self, nframes, arg):
        self.cycle += 1
        if self.cycle % 60 == 0:
            time.sleep(0.03)
        return super()._process(nframes, arg)


rx = Sleepy("saf-xrx").open()
tx = JackMidiClient("saf-xtx", "out").open()
assert tx.connect(tx.own_name, rx.own_name)
time.sleep(0.2)
print("go", flush=True)
pairs = 0
end = time.perf_counter() + float(sys.argv[1])
while time.perf_counter() < end:
    ch, key = (pairs // 128) % 16, pairs % 128
    tx.send(note_on(ch, key, 100))
    time.sleep(0.001)
    tx.send(note_off(ch, key))
    pairs += 1
    time.sleep(0.001)
tx.drain(3.0)
time.sleep(0.2)
got = [data for _, data, _, _ in list(rx.messages)]
tx.close()
rx.close()
print(json.dumps({"pairs": pairs, "hex": [m.hex() for m in got], "xruns": tx.xruns,
                  "resent": tx.resent, "late": tx.late}), flush=True)
"""


def test_xruns_lose_no_note_off(jack) -> None:
    """A receiver that overruns a period now and then (an xrun each time, on a server of the
    test's own) loses messages written around it; every note-off still reaches it."""
    server = OwnServer("saf-xrun")
    server.start()
    proc = None
    try:
        proc = subprocess.Popen([sys.executable, "-c", XRUN_SENDER, "3"], cwd=ROOT,
                                env=server.env, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "go"
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0
        report = json.loads(out.strip().splitlines()[-1])
        got = [bytes.fromhex(h) for h in report["hex"]]
        assert report["xruns"] > 0 and report["resent"] > 0
        offs = {(channel_of(m), m[1]) for m in got if m[0] & 0xF0 == 0x80}
        assert len(offs) == report["pairs"], "a note-off was lost"
        sounding = SoundingNotes()
        for m in got:
            sounding.track(m)
        assert not sounding
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        server.stop()

"""Property tests over hostile traffic (issue 27): floods at a hot-standby backup's port and
brute force at the web operator's feed, against the real receivers in this process.

- **Standby floods**: a backup (a real ``Standby`` on a muted player, its link on loopback) is
  armed and kept alive by a main's heartbeats from this test; each case is a burst of packets
  drawn from garbage, cut, bit-flipped, wrong-key, other-show, wrong-role, replayed and oversized
  ones. Every one must be refused and counted, none may restart the silence clock or ask for a
  takeover, and the receiving thread must live on.
- **Web brute force**: a ``WebServer`` (the tests' ``FakeView``) and one WebSocket a case: hellos
  with near misses of the token, other JSON, deep nesting, text that is not JSON, oversized
  frames. Every reply must be a JSON object, no wrong token may give control, at most
  ``FREE_TRIES`` tries are checked, the tries are reported, and no command gets through.

``YUEZHENG_FUZZ_SCALE=N`` runs N times as many; the outcomes are tallied at the end
(``fuzzing.py``).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from cues.sheet.loader import parse_sheet
from sequencer.live.player.plan import plan_show
from sequencer.live.player.player import Player
from sequencer.live.protocol import Go
from sequencer.live.screens.web.guard import FREE_TRIES, MAX_MESSAGE_BYTES
from sequencer.live.screens.web.server import WebServer
from sequencer.live.standby.packets import MAX_PACKET, PeerAction, PeerPacket, encode
from sequencer.live.standby.pair import Standby, StandbyOptions
from sequencer.timeline.compiler import make_settings, select_cues
from tests.fuzzing import OUTCOMES, fuzz, report_outcomes  # noqa: F401 (a fixture)
from tests.test_live_player import SHEET
from tests.test_web import FakeView

pytestmark = pytest.mark.fuzz

KEY = b"fuzz-link-key-0123456789"
TOKEN = "fuzz-operator-token-0123"
TAKEOVER_S = 5.0


# ── standby floods ───────────────────────────────────────────────────────────────────────────

def _free_udp() -> tuple[str, int]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()


class Pair:
    """A backup ``Standby`` and the main this test plays (its socket and heartbeats)."""

    def __init__(self, tmp: Path) -> None:
        rite = select_cues(parse_sheet(SHEET), "a", "c")
        rite = replace(rite, cues=tuple(replace(c, operator_ends=c.id == "c")
                                        for c in rite.cues))
        settings = make_settings({}, {"tempo_bpm": 600, "jie_seconds": "0.5"})
        self.player = Player(plan_show(rite, settings), f"memory:{tmp / 'sent.jsonl'}",
                             muted=True, log_path=tmp / "backup.jsonl", client_name="yzfuzz")
        self.main = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.main.bind(("127.0.0.1", 0))
        listen = _free_udp()
        self.backup = Standby(self.player, StandbyOptions(  # a slow machine is no dead main
            "backup", self.main.getsockname(), listen, KEY, takeover_s=TAKEOVER_S))
        self.listen = listen
        self.seq = time.time_ns() // 1000
        self.sent: list[bytes] = []
        self.stop = threading.Event()
        self.paused = threading.Event()  # no heartbeats while a burst is checked
        self.beat(0)
        deadline = time.monotonic() + 10
        while not self.backup.armed:
            assert time.monotonic() < deadline, "the backup did not arm"
            time.sleep(0.01)
        self.thread = threading.Thread(target=self._beats, daemon=True)
        self.thread.start()

    def packet(self, kind: str = "heartbeat", *, key: bytes = KEY, show: str | None = None,
               role: str = "main", seq: int | None = None, carried=()) -> bytes:
        if seq is None:
            self.seq += 1
            seq = self.seq
        return encode(key, PeerPacket(show or self.backup.show, seq, kind, role, True,
                                      len(carried), "", tuple(carried)))

    def beat(self, _: int) -> None:
        data = self.packet()
        self.sent.append(data)
        self.main.sendto(data, self.listen)

    def _beats(self) -> None:
        while not self.stop.wait(0.05):
            if not self.paused.is_set():
                self.beat(0)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)
        self.backup.close()
        self.main.close()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory):
    made = Pair(tmp_path_factory.mktemp("standby-fuzz"))
    yield made
    made.close()


FLOOD_KINDS = ("garbage", "cut", "flipped", "wrong key", "other show", "wrong role", "replayed",
               "oversized")


HOSTILE = st.tuples(st.sampled_from(FLOOD_KINDS), st.integers(0, 1000), st.integers(0, 7),
                    st.binary(min_size=16, max_size=40), st.binary(max_size=200))


def hostile_packet(pair: Pair, kind: str, at: int, bit: int, key: bytes, junk: bytes) -> bytes:
    """A packet of ``kind`` (drawn as plain values: the packets are built from them here)."""
    go = (PeerAction(1, time.time() + 5, Go()),)
    if kind == "garbage":
        return junk
    if kind == "cut":
        data = pair.packet(carried=go)
        return data[:at * len(data) // 1001]
    if kind == "flipped":
        flipped = bytearray(pair.packet(carried=go))
        flipped[at * len(flipped) // 1001] ^= 1 << bit
        return bytes(flipped)
    if kind == "wrong key":
        return pair.packet(key=key if key != KEY else key + b"!", carried=go)
    if kind == "other show":
        return pair.packet(show=f"{at:064x}", carried=go)
    if kind == "wrong role":
        return pair.packet(role="backup")
    if kind == "replayed":
        return pair.sent[at % min(len(pair.sent), 50)]
    return pair.packet() + b"\0" * (MAX_PACKET + at)


@fuzz(25)
@given(st.lists(HOSTILE, min_size=1, max_size=300))
def test_standby_floods_are_refused_and_not_silence(pair: Pair, drawn: list[tuple]) -> None:
    burst = [(d[0], hostile_packet(pair, *d)) for d in drawn]
    pair.paused.set()
    try:
        time.sleep(0.1)  # the last heartbeat in
        heard, before = pair.backup.heard_at, pair.backup.dropped
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as flooder:
            for _, packet in burst:
                flooder.sendto(packet, pair.listen)
        deadline = time.monotonic() + 5
        while pair.backup.dropped < before + len(burst) and time.monotonic() < deadline:
            time.sleep(0.005)
        assert pair.backup.dropped == before + len(burst)  # each refused and counted, once
        assert pair.backup.heard_at == heard  # the silence clock untouched
    finally:
        pair.paused.clear()
    assert all(t.is_alive() for t in pair.backup._threads)
    assert not pair.backup.live and pair.backup.took_over_at is None
    assert pair.backup.applied == 0  # no forged action reached the player
    for kind, _ in burst:
        OUTCOMES[f"standby {kind}: refused"] += 1


# ── web brute force ──────────────────────────────────────────────────────────────────────────

def _near_miss(draw: st.DrawFn) -> str:
    how = draw(st.sampled_from(["prefix", "case", "extra", "digits", "text", "empty-ish"]))
    if how == "prefix":
        return TOKEN[:draw(st.integers(0, len(TOKEN) - 1))]
    if how == "case":
        return TOKEN.upper()
    if how == "extra":
        return TOKEN + draw(st.text(min_size=1, max_size=3))
    if how == "digits":
        return f"{draw(st.integers(0, 9999)):04d}"
    if how == "text":
        return draw(st.text(max_size=40).filter(lambda t: t != TOKEN))
    return " "  # a token, if a blank one


@st.composite
def feed_messages(draw: st.DrawFn) -> tuple[str, str]:
    kind = draw(st.sampled_from(["hello", "hello", "hello", "hello", "json", "nested",
                                 "not json", "command", "oversized"]))
    if kind == "hello":
        token = _near_miss(draw)
        return kind, json.dumps({"type": "hello", "token": token})
    if kind == "json":
        value = draw(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                                  lambda inner: st.lists(inner, max_size=3)
                                  | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                                  max_leaves=10))
        return kind, json.dumps(value)
    if kind == "nested":
        depth = draw(st.integers(9, 2000))
        return kind, draw(st.sampled_from(["[" * depth, '{"a":' * (depth // 2) + "1"]))
    if kind == "not json":
        return kind, draw(st.text(max_size=100))
    if kind == "command":
        return kind, json.dumps({"type": "command", "name": draw(st.sampled_from(
            ["go", "panic", "quit", "hold"]))})
    return kind, "[" * (MAX_MESSAGE_BYTES + draw(st.integers(1, 5000)))


def _exchange(ws, kind: str, raw: str) -> dict | None:
    """Send ``raw``; the reply (states skipped), or None when the server closed the connection
    (only for a frame over MAX_MESSAGE_BYTES: 1009)."""
    try:
        ws.send(raw)
        while (reply := json.loads(ws.recv(timeout=5)))["type"] == "state":
            pass
    except ConnectionClosed as closed:
        assert len(raw.encode()) > MAX_MESSAGE_BYTES and closed.rcvd is not None \
            and closed.rcvd.code == 1009, (kind, closed)
        return None
    assert isinstance(reply, dict)
    return reply


@fuzz(25)
@given(st.lists(feed_messages(), min_size=8, max_size=60))
def test_web_brute_force_is_throttled(messages: list[tuple[str, str]]) -> None:
    view = FakeView()
    server = WebServer(view, "127.0.0.1", 0, token=TOKEN)
    feed = server.start().replace("http://", "ws://") + "feed"
    checked = 0
    try:
        left = list(messages)
        while left:  # one connection until the server closes it
            with connect(feed) as ws:
                while left:
                    kind, raw = left.pop(0)
                    reply = _exchange(ws, kind, raw)
                    if reply is None:
                        OUTCOMES[f"web {kind}: closed 1009 (too big)"] += 1
                        break
                    assert reply["type"] in ("hello", "error", "denied", "pong"), reply
                    assert not reply.get("control")  # no near miss opens the operator page
                    if kind == "hello" and "error" not in reply and json.loads(raw)["token"]:
                        checked += 1  # a try ("" is none: a view-only page)
                    waited = " (wait)" if "wait" in reply.get("error", "") else ""
                    OUTCOMES[f"web {kind}: {reply['type']}{waited}"] += 1
    finally:
        server.close()
    assert view.commands == []
    assert checked <= FREE_TRIES
    wrong = sum(r["count"] for r in view.reports if r["why"] == "wrong token")
    assert wrong == checked  # every wrong try checked is reported

"""What guards the operator page (issue 27, item 7): a short token is refused at the start and a
long one made when none is given; wrong tokens are throttled per peer and reported; a page of
another Origin is refused; deeply nested or oversized JSON is answered, not raised; a flood of
connections against a 1,024-descriptor limit is refused cleanly (503), never EMFILE.

The server is the real one (``WebServer``, in this process, or ``live --web`` in a child) and the
clients plain WebSocket and TCP ones."""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from cues.errors import UserError
from sequencer.live.screens.web.guard import (
    FIRST_WAIT_S,
    FREE_TRIES,
    MAX_DEPTH,
    MAX_MESSAGE_BYTES,
    MIN_TOKEN_CHARS,
    TOKEN_BYTES,
    TryLimiter,
    checked_token,
    connection_cap,
    json_depth_ok,
    origin_allowed,
)
from sequencer.live.screens.web.server import WebServer
from tests.test_web import FakeView
from tests.timing import on_time, timing_flaky

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "guard-test-token-0123"


def test_short_tokens_are_refused_and_none_makes_one() -> None:
    for short in ("1234", "x" * (MIN_TOKEN_CHARS - 1)):
        with pytest.raises(UserError, match="too short to guard the operator page"):
            checked_token(short)
    assert checked_token("y" * MIN_TOKEN_CHARS) == "y" * MIN_TOKEN_CHARS
    made = {checked_token(None) for _ in range(50)}
    assert len(made) == 50 and all(len(t) >= TOKEN_BYTES * 4 // 3 for t in made)  # 128 bits


def test_the_checks_before_parsing() -> None:
    assert json_depth_ok('{"a": [1, {"b": 2}]}') and json_depth_ok('"[[[[[[[[[[[["')
    assert not json_depth_ok("[" * (MAX_DEPTH + 1)) and not json_depth_ok('{"a":' * 9)
    assert json_depth_ok('{"a": "\\"[[[[[[[[[[[["}')  # an escaped quote stays in the string
    assert origin_allowed(None, "h:1") and origin_allowed("http://h:1", "h:1")
    assert not origin_allowed("http://evil.example", "127.0.0.1:8080")
    assert not origin_allowed("http://h:1", None)
    assert connection_cap(1024) < 1024 // 2 + 1 and connection_cap(20) == 10


def test_wrong_tries_double_the_wait() -> None:
    limiter = TryLimiter()
    for _ in range(FREE_TRIES - 1):
        limiter.failed("10.0.0.9", now=0.0)
    assert limiter.wait_s("10.0.0.9", now=0.0) == 0.0
    waits = []
    for _ in range(8):
        limiter.failed("10.0.0.9", now=0.0)
        waits.append(limiter.wait_s("10.0.0.9", now=0.0))
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60]
    assert limiter.wait_s("10.0.0.8", now=0.0) == 0.0  # another peer
    limiter.succeeded("10.0.0.9")
    assert limiter.wait_s("10.0.0.9", now=0.0) == 0.0


def _live(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), "live", "xiang-she",
                           "--output", "memory:", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_a_four_digit_token_is_refused_at_the_start() -> None:
    done = _live("--web", "0", "--web-token", "1234", "--auto")
    assert done.returncode == 2, done.stderr
    assert "--web-token: a token of 4 character(s) is too short" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def server():
    view = FakeView()
    web = WebServer(view, "127.0.0.1", 0, token=TOKEN)
    url = web.start()
    yield web, view, url.replace("http://", "ws://") + "feed"
    web.close()


def _hello(ws, token: str) -> dict:
    ws.send(json.dumps({"type": "hello", "token": token}))
    while (reply := json.loads(ws.recv(timeout=5)))["type"] != "hello":
        pass
    return reply


@timing_flaky
def test_brute_force_is_throttled_and_reported(server) -> None:
    web, view, feed = server
    started = time.perf_counter()
    with connect(feed) as ws:
        replies = [_hello(ws, f"{n:04d}") for n in range(200)]  # every 4-digit try it can
        took = time.perf_counter() - started
        # the counts below hold while the first wait lasts: a machine that took longer for the
        # 200 round trips lets one more try be checked, by design
        on_time(took < FIRST_WAIT_S, f"200 tries took {took:.2f} s, past the first wait")
        assert not any(r["control"] for r in replies)
        waiting = [r for r in replies if "error" in r]
        assert len(waiting) == 200 - FREE_TRIES and "wait" in waiting[0]["error"]
        assert not _hello(ws, TOKEN)["control"]  # the right token waits too
    print(f"\n200 tries in {took:.2f} s: {FREE_TRIES} checked")
    web.close()  # the reports due are written at the close
    records = [r for r in view.reports if r["event"] == "web-refused"]
    counts = {r["why"]: sum(x["count"] for x in records if x["why"] == r["why"])
              for r in records}
    assert counts == {"wrong token": FREE_TRIES,
                      "token tried during its wait": 200 - FREE_TRIES + 1}, counts
    assert {r["peer"] for r in records} == {"127.0.0.1"}


def test_the_right_token_still_works_first(server) -> None:
    _, view, feed = server
    with connect(feed) as ws:
        assert not _hello(ws, "wrong-token-000")["control"]
        assert _hello(ws, TOKEN)["control"]
        ws.send(json.dumps({"type": "command", "name": "go"}))
        assert json.loads(ws.recv(timeout=5))["type"] in ("ok", "state")


def test_another_origin_is_refused(server) -> None:
    web, view, feed = server
    with pytest.raises(InvalidStatus) as refused:
        connect(feed, origin="http://evil.example")  # type: ignore[arg-type]
    assert refused.value.response.status_code == 403
    host = feed.split("/")[2]
    with connect(feed, origin=f"http://{host}") as ws:  # type: ignore[arg-type]
        assert _hello(ws, TOKEN)["control"]
    web.close()
    assert any(r["why"] == "Origin 'http://evil.example'" for r in view.reports)


def test_nested_and_oversized_json_are_answered(server) -> None:
    web, view, feed = server
    with connect(feed) as ws:
        for raw in ("[" * (MAX_MESSAGE_BYTES - 1), '{"a":' * 600 + "1" + "}" * 600):
            ws.send(raw)
            reply = json.loads(ws.recv(timeout=5))
            while reply["type"] == "state":
                reply = json.loads(ws.recv(timeout=5))
            assert reply["type"] == "error" and "levels deep" in reply["error"]
        assert _hello(ws, TOKEN)["control"]  # the connection goes on
    with connect(feed) as ws:
        ws.send("[" * 100_000)  # past the size cap: the connection is closed (1009)
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                ws.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    with connect(feed) as ws:  # the server serves on
        assert _hello(ws, TOKEN)["control"]


def _limit_nofile(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(
        resource.RLIMIT_NOFILE)[1]))


def test_a_connection_flood_is_refused_cleanly(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "show.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "cli.py"), "live", "xiang-she", "--output", "memory:",
         "--web", str(port), "--web-token", TOKEN, "--log", str(log)],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=lambda: _limit_nofile(1024))
    url = f"http://127.0.0.1:{port}/"
    socks: list[socket.socket] = []
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.2)
        refused = 0
        for _ in range(1100):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            socks.append(s)
        time.sleep(1.0)
        for s in socks:
            s.setblocking(False)
            try:
                refused += s.recv(64).startswith(b"HTTP/1.1 503")
            except BlockingIOError:
                pass
        print(f"\n1100 connections against 1024 descriptors: {refused} refused (503)")
        assert refused >= 1100 - 256
        for s in socks:
            s.close()
        socks.clear()
        time.sleep(0.5)
        with urllib.request.urlopen(url, timeout=5) as page:  # served again
            assert page.status == 200
        assert proc.poll() is None
    finally:
        for s in socks:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        proc.terminate()
        out, err = proc.communicate(timeout=20)
    assert "Traceback" not in err and "EMFILE" not in err and "Too many open files" not in err, \
        err[-2000:]
    records = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    assert sum(r["count"] for r in records if r.get("event") == "web-refused"
               and r["why"] == "too many connections") >= 1100 - 256

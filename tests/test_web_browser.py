"""`live --web` in a real headless browser (Debian's chromium, driven over the DevTools protocol
with ``websockets``; nothing downloaded), the show sent to the memory output (no JACK: the
sending process keeps time as for a port): the operator's GO needs the token; the performers'
page counts the 節 of 鄉射's 射節 as the show log does, and flashes each 節 within 20 ms (p99)
of its time on the show clock, on every pass of a 射節 that runs until stopped.

``YUEZHENG_WEB_SCREENSHOTS=DIR`` saves the pages at phone and projector sizes into DIR (the
PNGs in docs/ were made so).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from matplotlib.image import imread
from websockets.sync.client import connect

from cues.builtin import builtin_text
from tests.timing import delivered, on_time, timing_flaky, until_quiet

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
TOKEN = "web-test-token"
JIE_S = 0.6  # a 節, seconds (30 節: 6 耦 of 5)
SIZES = {"phone": (390, 844, True), "projector": (1920, 1080, False)}


class Page:
    """One browser tab over the DevTools protocol."""

    def __init__(self, ws_url: str) -> None:
        self.stack = contextlib.ExitStack()
        self.ws = self.stack.enter_context(connect(ws_url, max_size=None, open_timeout=10))
        self.next_id = 0

    def call(self, method: str, **params: object) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.recv(timeout=30))
            if reply.get("id") == self.next_id:
                assert "error" not in reply, reply
                return reply["result"]

    def eval(self, expression: str) -> object:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def wait(self, expression: str, timeout: float = 15.0) -> object:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            value = self.eval(f"(() => {{ try {{ return {expression}; }} "
                              "catch (e) { return false; } })()")
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {expression}")

    def screenshot(self, path: Path, size: str) -> None:
        width, height, mobile = SIZES[size]
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=mobile)
        time.sleep(0.3)
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        self.stack.close()


class Chromium:
    """A headless chromium with the DevTools protocol on a port it chooses."""

    def __init__(self, profile: Path) -> None:
        active = profile / "DevToolsActivePort"
        active.unlink(missing_ok=True)  # a stale one names a port no longer served
        self.log = open(profile.parent / "chromium.log", "wb")  # closed in close()
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-port=0", f"--user-data-dir={profile}",
             "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
             "--disable-backgrounding-occluded-windows", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        deadline = time.perf_counter() + 30
        while not (active.exists() and active.read_text().strip()):
            assert time.perf_counter() < deadline and self.proc.poll() is None, "no chromium"
            time.sleep(0.05)
        self.port = int(active.read_text().split()[0])
        self.pages: list[Page] = []

    def open(self, url: str) -> Page:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?{url}",
                                         method="PUT")
        with urllib.request.urlopen(request, timeout=10) as reply:
            page = Page(json.load(reply)["webSocketDebuggerUrl"])
        self.pages.append(page)
        return page

    def close(self) -> None:
        for page in self.pages:
            page.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def chromium() -> str:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser tests: apt-get install chromium (see .ci/run)")
        pytest.skip("Debian's chromium is not installed")
    return CHROMIUM


def _free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_show(tmp: Path, jie_s: float, until: str = "she-jie", rite: str = "xiang-she",
                start: str = "she-jie",
                ) -> tuple[subprocess.Popen, str, Path]:
    """`live` of 鄉射 (or ``rite``) from its 射節 with --web, its pages up; (process, URL,
    log)."""
    port = _free_tcp_port()
    token_file = tmp / "token"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    log = tmp / "show.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "cli.py"), "live", rite, "--from", start,
         "--until", until, "--jie-seconds", str(jie_s),
         "--output", f"memory:{tmp / 'sent.jsonl'}", "--web", str(port),
         "--web-token-file", str(token_file), "--log", str(log)],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.perf_counter() + 60
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return proc, url, log
        except OSError:
            if proc.poll() is not None or time.perf_counter() > deadline:
                out, err = proc.communicate(timeout=10)
                raise AssertionError(f"the show did not serve its pages: {out}{err}") from None
            time.sleep(0.2)


def _records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _stop(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        proc.terminate()
    out, err = proc.communicate(timeout=20)
    return out + err


SAMPLE = ("JSON.stringify([document.getElementById('counter').textContent, yz.serverTime(), "
          "document.body.classList.contains('listening'), "
          "document.getElementById('archer').textContent])")


@pytest.fixture(scope="module")
def web_show(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The 射節 run from the operator page: a GO without the token, a GO with it, the
    performers' page sampled throughout; what the pages and the log recorded. Run again (twice
    at most) while the show says it was handed over late, or the browser drew a flash more
    than FLASH_LATE_MS late (a busy machine: frames missed)."""
    return until_quiet(lambda: _web_show(tmp_path_factory), _busy_show)


def _busy_show(show: dict) -> str:
    if show["rc"] == 1 and "NOT ON TIME" in show["output"]:
        return "late"
    late = [f for f in show["flashes"] if (f["drawn"] - f["due"]) * 1000 > FLASH_LATE_MS]
    return f"{len(late)} flash(es) drawn late" if late else ""


def _web_show(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("web")
    proc, url, log = _start_show(tmp, JIE_S)
    browser = Chromium(tmp / "profile")
    try:
        performers = browser.open(url)
        viewer = browser.open(url + "operator")
        operator = browser.open(url + f"operator?token={TOKEN}")
        performers.call("Page.bringToFront")  # a tab in the background gets no frames
        performers.wait("yz.samples.length >= 12 && yz.state !== null")
        operator.wait("yz.control")
        # view only: the button is disabled, and a command sent anyway is refused
        viewer.wait("yz.state !== null")
        view_only = {"control": viewer.eval("yz.control"),
                     "disabled": viewer.eval("document.getElementById('go').disabled")}
        viewer.eval("document.getElementById('go').click(); "
                    "yz.send({type: 'command', name: 'go'})")
        viewer.wait("document.getElementById('message').textContent.includes('view only')")
        time.sleep(1.0)
        view_only["records"] = _records(log)
        operator.eval("document.getElementById('go').click()")
        samples = []
        while proc.poll() is None:
            samples.append(json.loads(performers.eval(SAMPLE)))
            time.sleep(0.07)
        flashes = json.loads(performers.eval("JSON.stringify(yz.flashes)"))
        page_wall, page_server = json.loads(performers.eval(
            "JSON.stringify([performance.timeOrigin + performance.now(), yz.serverTime()])"))
        mono, wall = time.perf_counter(), time.time()
        # the show clock (perf_counter: CLOCK_MONOTONIC, shared by every process) at the
        # page's own moment, through the wall clock read with it (not at the middle of the
        # round trip to the page: on a busy machine that took long enough to be off by 5 ms);
        # the error of the page's estimate
        true_server = page_wall / 1000 + (mono - wall)
        return {"rc": proc.returncode, "output": _stop(proc), "records": _records(log),
                "view_only": view_only, "samples": samples, "flashes": flashes,
                "offset_error_ms": (page_server - true_server) * 1000,
                "rtt_ms": performers.eval("yz.rtt") * 1000}
    finally:
        browser.close()
        _stop(proc)


def test_operator_go_needs_the_token(web_show: dict) -> None:
    delivered(web_show["rc"], web_show["output"])
    before = web_show["view_only"]
    assert before["control"] is False and before["disabled"] is True
    assert [r["event"] for r in before["records"]] == ["show"]  # nothing started, nothing logged
    records = web_show["records"]
    commands = [r for r in records if r["event"] == "operator"]
    assert len(commands) == 1 and commands[0]["action"] == "GO"
    assert commands[0]["origin"].startswith("web:127.0.0.1:")
    starts = [r for r in records if r["event"] == "start"]
    assert [r["cue"] for r in starts] == ["she-jie"]
    on_time(0 < starts[0]["t"] - commands[0]["t"] < 0.2, f"GO took {starts[0]['t'] - commands[0]['t']:.3f} s")


def test_performers_count_the_jie_as_the_log(web_show: dict) -> None:
    jie = [r for r in web_show["records"] if r["event"] == "jie"]
    assert len(jie) == 30
    checked = set()
    for text, t, listening, archer in web_show["samples"]:
        past = [r for r in jie if r["t"] <= t]
        if not past or any(abs(r["t"] - t) < 0.1 for r in jie):
            # before the first 節, or too close to a stroke to call: on a loaded machine the
            # page draws a 節 up to ~0.1 s after it (its timing is the flashes' test)
            continue
        if t > jie[-1]["t"] + JIE_S:
            continue  # after the 射節
        mark = past[-1]
        assert text == f"{mark['k']} / {mark['n']}", (t, text, mark)
        assert listening == (mark["k"] == 1)  # 鄉射: 5 節, the first to listen
        if mark["k"] > 1:
            assert "上射" in archer or "下射" in archer, archer
        checked.add((mark["cycle"], mark["k"]))
    assert len(checked) >= 25, sorted(checked)  # nearly every 節 seen on the page


FLASH_LATE_MS = 50.0  # three frames at 60 Hz: past it, the browser missed frames (the machine)
CLOCK_ERROR_MS = 2.0  # the page's show clock against the server's (measured: under 0.5 ms)


def _flash_figures(flashes: list[dict], due: dict[tuple, float], key: Callable[[dict], tuple]
                   ) -> tuple[float, str]:
    """The p99 of |flash drawn − 節 in the log| (ms) and the figures as a line; each 節 of
    ``due`` must have flashed once, on the nearer of its frame and the frame before — the page's
    rule, whatever frames a busy browser gave it (but the first, whose marks may not have come
    yet) —, and none early by more than half a frame (the interval the page had measured: a
    busy browser's frames come slower than 60 Hz, and its nearest frame may be farther)."""
    assert sorted(key(f) for f in flashes) == sorted(due)
    signed = [(f["drawn"] - due[key(f)]) * 1000 for f in flashes]
    for f, error in zip(flashes, signed, strict=True):
        assert error > -(f["frame"] * 1000 / 2 + CLOCK_ERROR_MS), (f, error)  # not a frame early
        first = (f["pass"], f["cycle"], f["k"]) == (0, 0, 1)  # its marks come with the GO's
        # state, over the websocket: the frame before may not have had them yet
        if f["before"] is not None and not first:  # the frame before was farther from the 節
            before = (f["before"] - due[key(f)]) * 1000
            assert abs(error) <= abs(before) + CLOCK_ERROR_MS, (f, error, before)
    errors = sorted(abs(e) for e in signed)
    p50 = errors[len(errors) // 2]
    p99 = errors[min(len(errors) - 1, int(0.99 * len(errors)))]
    return p99, (f"flash vs log: p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {errors[-1]:.1f} ms "
                 f"over {len(errors)} 節 (signed {min(signed):+.1f}…{max(signed):+.1f} ms)")


def test_flash_of_each_jie_on_the_show_clock(web_show: dict) -> None:
    jie = {(r["cycle"], r["k"]): r["t"] for r in web_show["records"] if r["event"] == "jie"}
    p99, figures = _flash_figures(web_show["flashes"], jie, lambda f: (f["cycle"], f["k"]))
    figures += (f"; clock offset error {web_show['offset_error_ms']:.2f} ms "
                f"(best round trip {web_show['rtt_ms']:.2f} ms)")
    print(figures)
    assert abs(web_show["offset_error_ms"]) <= 5.0, figures
    on_time(p99 <= FLASH_LATE_MS, figures)  # after the rig's re-runs; quiet: within a frame


def test_the_operator_page_shows_what_a_cue_binds(chromium: str, tmp_path: Path) -> None:
    """鄉射's 合樂 on standby: 「樂作，大夫不入」 binds once it begins; after its GO, in force."""
    proc, url, _ = _start_show(tmp_path, JIE_S, start="he-yue", until="he-yue")
    browser = Chromium(tmp_path / "profile")
    text = ("JSON.stringify(['standby-rules', 'rules'].map("
            "(id) => document.getElementById(id).textContent))")
    try:
        operator = browser.open(url + f"operator?token={TOKEN}")
        operator.wait("yz.control && yz.state !== null")
        before = json.loads(operator.eval(text))
        operator.eval("document.getElementById('go').click()")
        operator.wait("document.getElementById('rules').textContent !== ''")
        after = json.loads(operator.eval(text))
    finally:
        browser.close()
        _stop(proc)
    assert before == ["once it begins: 「樂作，大夫不入」", ""]
    assert after == ["", "in force: 「樂作，大夫不入」"]


def _looping_sheet(tmp: Path) -> Path:
    """鄉射 with its 射節 for one 耦, played again until the operator stops it."""
    text = builtin_text("xiang-she")
    ou = text.index("ou = [", text.index('id = "she-jie"\n'))
    text = text[:ou] + 'ou = ["上耦"]\noperator_ends = true' + text[text.index("\n", ou):]
    sheet = tmp / "xiang-she-looping.toml"
    sheet.write_text(text, encoding="utf-8")
    return sheet


def _operator_and_performers(browser: Chromium, url: str) -> tuple[Page, Page]:
    """The operator's page with the token (in control) and the performers' page in front."""
    operator = browser.open(url + f"operator?token={TOKEN}")
    performers = browser.open(url)
    operator.wait("yz.control")
    performers.call("Page.bringToFront")
    return operator, performers


@timing_flaky
def test_a_looping_jie_flashes_on_every_pass(chromium: str, tmp_path: Path) -> None:
    """Its 節 flash on each pass until the operator's stop (樂闋) ends it at a rest point."""
    proc, url, log = _start_show(tmp_path, JIE_S, rite=str(_looping_sheet(tmp_path)))
    browser = Chromium(tmp_path / "profile")
    try:
        operator, performers = _operator_and_performers(browser, url)
        performers.wait("yz.samples.length >= 12 && yz.state !== null")
        operator.eval("document.getElementById('go').click()")
        deadline = time.perf_counter() + 60
        while sum(r["event"] == "jie" for r in _records(log)) < 11:  # into the third pass
            assert time.perf_counter() < deadline and proc.poll() is None, _stop(proc)
            time.sleep(0.1)
        operator.eval("document.querySelector('[data-command=stop]').click()")
        proc.wait(timeout=30)
        flashes = json.loads(performers.eval("JSON.stringify(yz.flashes)"))
    finally:
        browser.close()
        output = _stop(proc)
    delivered(proc.returncode, output)
    records = _records(log)
    assert [r["action"] for r in records if r["event"] == "operator"] == ["GO", "stop"]
    jie = [r for r in records if r["event"] == "jie"]
    due = {(i // 5, r["cycle"], r["k"]): r["t"] for i, r in enumerate(jie)}
    assert len({p for p, _, _ in due}) == 3
    p99, figures = _flash_figures(flashes, due, lambda f: (f["pass"], f["cycle"], f["k"]))
    print(figures)
    on_time(p99 <= FLASH_LATE_MS, figures)


def test_screens_for_the_room(chromium: str, tmp_path: Path) -> None:
    """Both pages at phone and projector sizes (the performers' before the 射節, with no counter
    — it was a large white bar —, at its listening 節 and a shooting one)."""
    proc, url, log = _start_show(tmp_path, 4.0, until="gai")
    browser = Chromium(tmp_path / "profile")
    shots = tmp_path / "shots"
    shots.mkdir()
    try:
        operator, performers = _operator_and_performers(browser, url)
        performers.wait("yz.state !== null && yz.serverTime() !== null")
        time.sleep(0.3)
        idle = performers.eval("getComputedStyle(document.getElementById('counter')).display")
        for size in SIZES:  # before the first 節: the standby, and no counter
            performers.screenshot(shots / f"web-performers-standby-{size}.png", size)
        operator.eval("document.getElementById('go').click()")
        performers.wait("document.body.classList.contains('listening')")
        time.sleep(0.5)  # past the flash
        performers.screenshot(shots / "web-performers-listen-projector.png", "projector")
        performers.wait("document.getElementById('counter').textContent.startsWith('2 ')")
        time.sleep(0.5)
        assert "上射" in performers.eval("document.getElementById('archer').textContent")
        performers.screenshot(shots / "web-performers-projector.png", "projector")
        performers.screenshot(shots / "web-performers-phone.png", "phone")
        operator.call("Page.bringToFront")
        for size in SIZES:
            operator.screenshot(shots / f"web-operator-{size}.png", size)
        fits = operator.eval("document.documentElement.scrollWidth <= innerWidth")
    finally:
        browser.close()
        _stop(proc)
    assert fits, "the operator page is wider than a phone"
    assert idle == "none"
    for size in SIZES:  # the middle of the page before the 射節 is dark: no white bar
        image = imread(shots / f"web-performers-standby-{size}.png")
        middle = image[int(0.3 * len(image)):int(0.7 * len(image)), :, :3]
        assert (middle.min(axis=2) > 0.8).sum() == 0, size
    for png in sorted(shots.iterdir()):
        width, height, _ = SIZES[png.stem.rsplit("-", 1)[1]]
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == (
            width, height), png.name
    if os.environ.get("YUEZHENG_WEB_SCREENSHOTS"):
        for png in shots.iterdir():
            (Path(os.environ["YUEZHENG_WEB_SCREENSHOTS"]) / png.name).write_bytes(png.read_bytes())

"""The drum heard on the pages (``live --hear`` with ``--web``), in Debian's headless chromium:
the performers' page and ``/operator`` show the strip — the last strokes by their distance from
the 節, the newest marked, the last one in ms and the 間若一 verdict — as the player publishes
it, while a "human" drummer's recording is heard and followed.

``YUEZHENG_WEB_SCREENSHOTS=DIR`` saves the pages with the strip at phone and projector sizes
into DIR (docs/web-*-strip-*.png were made so).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.human_drummer import human_drum
from tests.test_web_browser import Chromium, _free_tcp_port, chromium  # noqa: F401

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent

STRIP = ("JSON.stringify({shown: document.getElementById('strip').classList.contains('shown'), "
         "dots: document.querySelectorAll('#strip .dot').length, "
         "newest: document.querySelectorAll('#strip .dot.newest').length, "
         "last: document.querySelector('#strip .last').textContent, "
         "verdict: document.querySelector('#strip .verdict').textContent, "
         "heard: yz.state && yz.state.heard})")


def test_the_strip_shows_the_drum_heard(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    drum = human_drum(tmp_path / "drum.wav")
    port = _free_tcp_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "cli.py"), "live", "xiang-she", "--from", "she-jie",
         "--until", "she-jie", "--auto", "--jie-seconds", "1", "--output",
         f"memory:{tmp_path / 'sent.jsonl'}", "--hear", str(drum.path), "--follow",
         "--web", str(port), "--log", str(tmp_path / "show.jsonl")],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    url = f"http://127.0.0.1:{port}/"
    browser = Chromium(tmp_path / "profile")
    try:
        deadline = time.perf_counter() + 60
        while True:
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:
                assert proc.poll() is None and time.perf_counter() < deadline, "no pages"
                time.sleep(0.2)
        performers = browser.open(url)
        operator = browser.open(url + "operator")
        performers.call("Page.bringToFront")
        performers.wait("yz.state && yz.state.heard && yz.state.heard.count >= 24", 60)
        strip = json.loads(performers.eval(STRIP))
        assert strip["shown"] and strip["newest"] == 1
        heard = strip["heard"]
        assert strip["dots"] == len(heard["strokes"]) >= 8
        last = heard["strokes"][-1]["deviation_ms"]
        assert strip["last"] == f"{'+' if last >= 0 else '−'}{abs(last):.0f} ms"
        verdict = heard["verdict"]
        assert verdict is not None and strip["verdict"].startswith(
            "間若一" if verdict["ok"] else "✗")
        operator.wait("document.querySelectorAll('#strip .dot').length >= 8")
        shots = os.environ.get("YUEZHENG_WEB_SCREENSHOTS")
        if shots:
            out = Path(shots)
            out.mkdir(parents=True, exist_ok=True)
            for size in ("phone", "projector"):
                performers.call("Page.bringToFront")
                performers.eval("document.getElementById('flash').style.display = 'none'")
                performers.screenshot(out / f"web-performers-strip-{size}.png", size)
                operator.call("Page.bringToFront")
                operator.screenshot(out / f"web-operator-strip-{size}.png", size)
    finally:
        browser.close()
        if proc.poll() is None:
            proc.terminate()
        proc.communicate(timeout=30)

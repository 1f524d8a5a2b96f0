"""``live_jitter.py`` while a live show serves its web pages to a browser, or the same show
without them: does ``--web`` cost the sender anything?

    python benchmarks/live_jitter_web.py [--web] [--json] [live_jitter options]

In this process, as in ``yuezheng live``, a ``Player`` runs 鄉射's 射節 (its 節 every 0.6 s,
played again until stopped) to the ``memory:`` output, its thread stepping and publishing; with
``--web`` the pages are served (``sequencer.live.screens.web``) and Debian's headless chromium
shows the performers' page and the operator's page, each in a process of its own (a background tab
gets no frames). Then ``live_jitter.main`` measures. Needs a running JACK server and, for ``--web``,
``/usr/bin/chromium``. This file prints (it is a script, not part of the library).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import live_jitter

from cues.builtin import builtin_text
from cues.sheet.loader import parse_sheet
from sequencer.live.player.plan import plan_show
from sequencer.live.player.player import Player
from sequencer.live.protocol import Go
from sequencer.live.screens.player_adapter import screen_options, start_screens
from sequencer.timeline.compiler import make_settings, select_cues

CHROMIUM = "/usr/bin/chromium"


def _looping_show() -> Player:
    text = builtin_text("xiang-she")
    she = text.index('id = "she-jie"\n')
    text = text[:she] + "operator_ends = true\n" + text[she:]
    rite = select_cues(parse_sheet(text), "she-jie", "she-jie")
    return Player(plan_show(rite, make_settings({}, {"jie_seconds": "0.6"})), "memory:",
                  client_name="yzbench-show")


@contextlib.contextmanager
def _browsers(url: str, profile: Path) -> Iterator[None]:
    procs = [subprocess.Popen(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--remote-debugging-port=0", f"--user-data-dir={profile / page}", url + page],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for page in ("", "operator")]
    try:
        time.sleep(5)  # the pages load, connect and sync their clocks
        assert all(p.poll() is None for p in procs), "chromium ended"
        yield
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


def main(argv: list[str]) -> int:
    web = "--web" in argv
    argv = [a for a in argv if a != "--web"]
    player = _looping_show()
    stop = threading.Event()
    with player, tempfile.TemporaryDirectory() as tmp:
        url = None
        if web:
            _view, url = start_screens(player, screen_options("0"))
        player.put(Go())
        thread = threading.Thread(target=player.run, kwargs={"stop": stop.is_set})
        thread.start()
        try:
            with _browsers(url, Path(tmp)) if url else contextlib.nullcontext():
                return live_jitter.main(argv)
        finally:
            stop.set()
            thread.join()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The operator console in a real terminal (tmux) at 80×24 and 100×30, through every state of a
show — standby, running, 射節, held, panic, 無算樂 (a piece chosen), a cue with a stop rule,
the end — and below its minimum size: every line fits the terminal, the standby line, the
moment to watch for and the keys show in each state (issue 29: at 80×24 during the 燕禮's
射節 they were off screen). The show is the whole 燕禮 with its shooting (``--variant she``), sent
to the memory output (no JACK).

``YUEZHENG_CONSOLE_CAPTURES=DIR`` keeps the captures (text) in DIR.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cues.text import display_width
from tests.tmux_session import Tmux

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parent.parent
HELP = ("space GO", "1 右 hit")


def _fits(tmux: Tmux, shown: str) -> list[str]:
    """The screen's lines, each checked to fit the terminal."""
    lines = shown.rstrip("\n").split("\n")
    assert len(lines) <= tmux.height
    for line in lines:
        assert display_width(line) <= tmux.width - 1, (line, tmux.width)
    return lines


def _state(tmux: Tmux, name: str, wait_for: str, captures: dict[str, str],
           standby: str | None) -> list[str]:
    """Wait for ``wait_for``; the screen fits and shows the standby line and the keys."""
    shown = tmux.wait(wait_for)
    time.sleep(0.15)  # a whole frame after it
    shown = tmux.screen()
    lines = _fits(tmux, shown)
    captures[name] = shown
    text = "\n".join(lines)
    assert (f"standby: {standby}" if standby else "standby: end of the show") in text, text
    assert all(key in text for key in HELP), text
    return lines


def _live(tmp: Path) -> str:
    return (f"{sys.executable} {ROOT / 'cli.py'} live yan --variant she --jie-seconds 0.6 "
            f"--lost-zhong-seconds 1 --tempo 600 --go-guard 0.2 "
            f"--output memory:{tmp / 'sent.jsonl'} --log {tmp / 'show.jsonl'} --web 0; "
            "sleep 30")


def _standby_line(screen: str) -> str:
    """The console's line that names the cue at standby ("" when none shows)."""
    return next((line for line in screen.splitlines() if "standby: " in line), "")


@pytest.mark.parametrize(("width", "height"), [(80, 24), (100, 30)])
def test_the_console_fits_in_every_state(tmp_path: Path, width: int, height: int) -> None:
    tmux = Tmux(f"yzcons{os.getpid()}x{width}", width, height, _live(tmp_path))
    captures: dict[str, str] = {}
    try:
        lines = _state(tmux, "standby", "standby: sheng-ge", captures, "sheng-ge")
        assert any("小臣納工" in line for line in lines)  # the moment to watch for
        assert lines[1].startswith("web http://127.0.0.1:")  # the --web address
        tmux.keys("Space")
        _state(tmux, "running", "▶ sheng-ge", captures, "sheng-ru")
        tmux.keys("s")  # 樂闋: a cue of fixed length is cut at once; 獻工 follows it
        tmux.wait("sheng-ge cut at once; then xian-gong follows")
        for _ in range(20):  # skip to the 射節, one cue a key, each seen before the next key
            standby = _standby_line(tmux.screen())
            if "standby: she-jie" in standby:
                break
            tmux.keys("n")
            deadline = time.perf_counter() + 10.0
            while _standby_line(tmux.screen()) == standby:
                assert time.perf_counter() < deadline, f"a skip not shown:\n{tmux.screen()}"
                time.sleep(0.05)
        else:
            raise AssertionError(f"she-jie never at standby:\n{tmux.screen()}")
        tmux.keys("Space")
        lines = _state(tmux, "射節", "節 2/5", captures, "ji-wei")
        text = "\n".join(lines)
        assert "樂正命弟子贊工即位" in text  # the standby's moment to watch for
        assert "███" in text  # the large 節 counter
        assert "skipped" in text  # the cues skipped are folded into one line
        tmux.keys("h")
        _state(tmux, "held", "[HELD]", captures, "ji-wei")
        tmux.keys("r", "p")
        _state(tmux, "panic", "PANIC 1", captures, "ji-wei")
        tmux.keys("Space")  # 遷樂: ji-wei
        tmux.wait("standby: wu-suan-yue")
        time.sleep(0.3)
        tmux.keys("Space")
        lines = _state(tmux, "無算樂", "♪ 《鹿鳴》 1/15", captures, "gai")
        tmux.keys(".")
        lines = _state(tmux, "無算樂 chosen", "《皇皇者華》 3/15 (chosen)", captures, "gai")
        tmux.keys("s")
        tmux.wait("wu-suan-yue ends at its next rest point")
        tmux.wait("standby: gai")
        time.sleep(0.3)
        tmux.keys("Space")
        lines = _state(tmux, "stop rule", "watch for 「賔所執脯以賜鍾人於門内霤，遂出」", captures,
                       None)
        tmux.keys("s")
        _state(tmux, "end", "[DONE]", captures, None)
        tmux.keys("q")
        deadline = time.perf_counter() + 20
        while "sleep" not in subprocess.run(
                [*tmux.tmux, "list-panes", "-t", tmux.name, "-F", "#{pane_current_command}"],
                capture_output=True, text=True).stdout:
            assert time.perf_counter() < deadline, tmux.screen()
            time.sleep(0.1)
    finally:
        tmux.close()
        keep = os.environ.get("YUEZHENG_CONSOLE_CAPTURES")
        if keep:
            for name, shown in captures.items():
                (Path(keep) / f"console-{width}x{height}-{name}.txt").write_text(
                    shown, encoding="utf-8")


def test_the_console_below_its_minimum_says_what_it_needs(tmp_path: Path) -> None:
    tmux = Tmux(f"yzsmall{os.getpid()}", 50, 12, _live(tmp_path))
    try:
        lines = _fits(tmux, tmux.wait("standby: sheng-ge"))
        assert any(all(key in line for key in ("space GO",)) for line in lines)
        tmux.resize(40, 12)
        time.sleep(0.5)
        lines = _fits(tmux, tmux.wait("standby: sheng-ge"))
        assert "1 右 hit" in "\n".join(lines)
        tmux.resize(39, 12)
        lines = _fits(tmux, tmux.wait("too small"))
        assert "the console needs 40×12." in lines
        assert "standby sheng-ge" in lines
        tmux.keys("Space")  # the keys still work
        tmux.resize(60, 20)
        tmux.wait("▶ sheng-ge")
    finally:
        tmux.close()

"""A real terminal for tests: a tmux session on a tmux server of its own, its screen read back
and keys sent to it (the operator console, ``reaction``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest


class Tmux:
    """A tmux session of ``width`` × ``height`` running ``command``, on a tmux server of its
    own (``-L name``: tests on other workers start theirs at the same time)."""

    def __init__(self, name: str, width: int, height: int, command: str,
                 env: dict[str, str] | None = None) -> None:
        if shutil.which("tmux") is None:
            pytest.fail("tmux is not installed (apt-get install tmux)")
        self.name, self.width, self.height = name, width, height
        self.tmux = ["tmux", "-L", name]
        # COLUMNS and LINES that are not the terminal's (pytest-xdist's workers carry 80×24):
        # the console must draw for the terminal's own size
        subprocess.run([*self.tmux, "new-session", "-d", "-s", name, "-x", str(width), "-y",
                        str(height), command], check=True,
                       env=dict(os.environ, LANG="C.UTF-8", COLUMNS="200", LINES="60",
                                **(env or {})))

    def screen(self) -> str:
        return subprocess.run([*self.tmux, "capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True).stdout

    def wait(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            shown = self.screen()
            if text in shown:
                return shown
            time.sleep(0.05)
        raise AssertionError(f"{text!r} never showed:\n{self.screen()}")

    def keys(self, *keys: str, pause: float = 0.05) -> None:
        for key in keys:
            subprocess.run([*self.tmux, "send-keys", "-t", self.name, key], check=True)
            time.sleep(pause)

    def resize(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        subprocess.run([*self.tmux, "resize-window", "-t", self.name, "-x", str(width), "-y",
                        str(height)], check=True)

    def running(self) -> bool:
        return subprocess.run([*self.tmux, "has-session", "-t", self.name],
                              capture_output=True).returncode == 0

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)

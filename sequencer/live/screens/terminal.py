"""The terminal the curses screens (the console, ``reaction``) draw on: its own size."""

from __future__ import annotations

import os


def terminal_size_only() -> None:
    """Let curses take the terminal's own size: COLUMNS and LINES left in the environment (a
    launcher's, or pytest-xdist's 80×24) would have it draw for a screen the terminal is not
    (ncurses prefers them to the terminal's size, and ``use_env(False)`` takes terminfo's)."""
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)

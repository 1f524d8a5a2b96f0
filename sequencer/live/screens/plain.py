"""``live --plain``: the console for screen readers — what changes, a line each (the
announcements of ``sequencer.live.screens.announce``); a line typed is a command's name or a
console key. The lines are handed to ``say`` (``cli.py`` prints them)."""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Callable
from typing import TextIO

from sequencer.live.player.player import Player
from sequencer.live.protocol import Nudge, PickPiece, PlayerCommand, Quit
from sequencer.live.screens.announce import Announcer
from sequencer.live.screens.console import handle_key
from sequencer.live.screens.show_state import WEB_COMMANDS, ShowView

# what --plain takes as words (besides the console's keys)
PLAIN_COMMANDS: dict[str, PlayerCommand] = {
    **WEB_COMMANDS, "faster": Nudge(faster=True), "slower": Nudge(faster=False), "quit": Quit(),
}


PLAIN_HELP = ("type go, stop, hold, resume, skip, back, panic, faster, slower, piece N, "
              "piece-next, piece-back, quit, or a console key (space is GO)")


def plain_command(player: Player, line: str) -> PlayerCommand | None:
    """Queue the command a typed line asks for: a command's name (``piece N``: the 無算樂's
    next piece), or one character, a console key. Returns it (None: not a command)."""
    text = line.strip("\r\n")
    word = text.strip().lower()
    command = PLAIN_COMMANDS.get(word)
    number = word.removeprefix("piece").strip()
    if command is None and word.startswith("piece ") and number.isdigit():
        command = PickPiece(index=int(number))
    if command is not None:
        player.put(command, origin="key")
        return command
    return handle_key(player, text) if len(text) == 1 else None


def run_plain_console(player: Player, view: ShowView, say: Callable[[str], None],
                      typed: TextIO = sys.stdin) -> None:
    """Step the player until the show is done or the operator quits; say what changes and take
    the lines ``typed`` (until it ends); a line that is no command is answered so."""
    announcer = Announcer()
    reading = True
    pending = b""  # what was typed and not yet read as lines
    fd = typed.fileno()
    while not player.quit and not player.machine.done:
        player.step(0.05)
        for news in announcer.news(view.snapshot(), time.perf_counter()):
            say(news.text)
        if reading and b"\n" not in pending and select.select([fd], [], [], 0)[0]:
            # read what is there (a buffered readline would keep a second line waiting until
            # more is typed)
            chunk = os.read(fd, 4096)
            reading = bool(chunk)
            pending += chunk if chunk else b"\n"
        if b"\n" in pending:  # one line a step: each command's answer is said before the next
            raw, pending = pending.split(b"\n", 1)
            line = raw.decode("utf-8", "replace")
            if line.strip("\r") and plain_command(player, line) is None:
                say(f"not a command: {line.strip()!r}; {PLAIN_HELP}")

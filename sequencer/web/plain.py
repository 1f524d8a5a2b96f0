"""``live --plain``: the console for screen readers — what changes, a line each (the
announcements of ``sequencer.web.announce``); a line typed is a command's name or a console key.
The lines are handed to ``say`` (``cli.py`` prints them)."""

from __future__ import annotations

import select
import sys
import time
from collections.abc import Callable
from typing import TextIO

from sequencer.live.console import handle_key
from sequencer.live.player import Player
from sequencer.live.protocol import Nudge, PlayerCommand, Quit
from sequencer.web.announce import Announcer
from sequencer.web.view import WEB_COMMANDS, ShowView

# what --plain takes as words (besides the console's keys)
PLAIN_COMMANDS: dict[str, PlayerCommand] = {
    **WEB_COMMANDS, "faster": Nudge(faster=True), "slower": Nudge(faster=False), "quit": Quit(),
}


def plain_command(player: Player, line: str) -> PlayerCommand | None:
    """Queue the command a typed line asks for: a command's name, else its first character as
    a console key. Returns it (None: nothing asked)."""
    command = PLAIN_COMMANDS.get(line.strip().lower())
    if command is not None:
        player.put(command, origin="key")
        return command
    text = line.strip("\n")
    return handle_key(player, text[0]) if text else None


def run_plain_console(player: Player, view: ShowView, say: Callable[[str], None],
                      typed: TextIO = sys.stdin) -> None:
    """Step the player until the show is done or the operator quits; say what changes and take
    the lines ``typed`` (until it ends)."""
    announcer = Announcer()
    reading = True
    while not player.quit and not player.machine.done:
        player.step(0.05)
        for news in announcer.news(view.snapshot(), time.perf_counter()):
            say(news.text)
        if reading and select.select([typed], [], [], 0)[0]:
            line = typed.readline()
            reading = bool(line)
            plain_command(player, line)

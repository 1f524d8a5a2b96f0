"""``live --plain``: the console for screen readers — what changes, a line each (the
announcements of ``sequencer.live.screens.announce``); a line typed is a command's name or a
console key. The lines are handed to ``say`` (``cli.py`` prints them).

Whatever is typed is answered and nothing typed can end the show but ``quit``: bytes that are
not UTF-8 and control characters are shown escaped in the answer ("not a command: …"), a
``piece`` number is read in ASCII digits only (``piece ²`` is no number), a line longer than
``MAX_LINE_BYTES`` is dropped whole (read on to its end, at most ``READ_PER_STEP`` a step, and
said once), and a closed standard input leaves the show to its other controls, said once."""

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


MAX_LINE_BYTES = 4096  # a longer typed line is no command: dropped whole
READ_PER_STEP = 1 << 20  # bytes read in one step at most (a flood cannot stall the show)
MAX_PIECE_DIGITS = 4  # a 無算樂 has a handful of pieces

PLAIN_HELP = ("type go, stop, hold, resume, skip, back, panic, faster, slower, piece N, "
              "piece-next, piece-back, quit, or a console key (space is GO)")


def plain_command(player: Player, line: str) -> PlayerCommand | None:
    """Queue the command a typed line asks for: a command's name (``piece N``: the 無算樂's
    next piece), or one character, a console key. Returns it (None: not a command)."""
    text = line.strip("\r\n")
    word = text.strip().lower()
    command = PLAIN_COMMANDS.get(word)
    number = word.removeprefix("piece").strip()
    if (command is None and word.startswith("piece ") and number.isascii() and number.isdigit()
            and len(number) <= MAX_PIECE_DIGITS):  # (str.isdigit takes "²", int() does not)
        command = PickPiece(index=int(number))
    if command is not None:
        player.put(command, origin="key")
        return command
    return handle_key(player, text) if len(text) == 1 else None


def run_plain_console(player: Player, view: ShowView, say: Callable[[str], None],
                      typed: TextIO | None = sys.stdin) -> None:
    """Step the player until the show is done or the operator quits; say what changes and take
    the lines ``typed`` (until it ends); a line that is no command is answered so."""
    announcer = Announcer()
    lines = TypedLines(typed, say)
    while not player.quit and not player.machine.done:
        player.step(0.05)
        for news in announcer.news(view.snapshot(), time.perf_counter()):
            say(news.text)
        line = lines.next_line()  # one line a step: each command's answer is said before the next
        if line is not None and line.strip("\r") and plain_command(player, line) is None:
            shown = line.strip(" \r\t")  # (str.strip() would take control characters too)
            say(f"not a command: {shown!r}; {PLAIN_HELP}")


class TypedLines:
    """The lines typed on ``typed``, read without blocking (a buffered readline would keep a
    second line waiting until more is typed), each at most ``MAX_LINE_BYTES``."""

    def __init__(self, typed: TextIO | None, say: Callable[[str], None]) -> None:
        self.say = say
        self.pending = b""  # what was typed and not yet read as lines
        self.dropping = False  # inside a line too long: read on to its end
        try:
            self.fd: int | None = None if typed is None else typed.fileno()
        except (OSError, ValueError, AttributeError):  # closed, or no file at all
            self.fd = None
        if self.fd is None:
            say("standard input is closed: nothing typed is read (the show's other controls "
                "still work)")

    def next_line(self) -> str | None:
        """The next whole line typed (without its newline), or None for now."""
        got = 0
        while self.fd is not None and b"\n" not in self.pending and got < READ_PER_STEP:
            try:
                if not select.select([self.fd], [], [], 0)[0]:
                    break
                chunk = os.read(self.fd, 65536)
            except (OSError, ValueError):
                chunk = b""
            if not chunk:  # the end of what is typed (a last line without its newline)
                self.fd = None
                self.pending += b"\n"
                break
            got += len(chunk)
            self.pending += chunk
            if b"\n" not in self.pending and len(self.pending) > MAX_LINE_BYTES:
                if not self.dropping:
                    self.say(f"a typed line longer than {MAX_LINE_BYTES} bytes: dropped")
                self.dropping, self.pending = True, b""
        if b"\n" not in self.pending:
            return None
        raw, self.pending = self.pending.split(b"\n", 1)
        if self.dropping:  # the end of the line too long
            self.dropping = False
            return None
        if len(raw) > MAX_LINE_BYTES:
            self.say(f"a typed line longer than {MAX_LINE_BYTES} bytes: dropped")
            return None
        return raw.decode("utf-8", "replace")

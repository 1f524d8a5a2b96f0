"""The operator console: the keys, the screen as lines of text, and the curses loop that draws
it (curses: standard library, works over SSH, no dependency). ``handle_key`` and ``screen``
are pure of the terminal (tests call them directly); ``run_console`` is the loop.
"""

from __future__ import annotations

from typing import Any

from cues.text import clip, pad
from sequencer.live.player import Player
from sequencer.live.protocol import (
    Back,
    Go,
    Hold,
    MarkRelease,
    Nudge,
    Panic,
    PlayerCommand,
    Quit,
    Resume,
    Skip,
    Stop,
)
from sequencer.live.views import Snapshot

KEYS: dict[str, PlayerCommand] = {
    " ": Go(), "s": Stop(), "h": Hold(), "r": Resume(), "n": Skip(), "b": Back(), "p": Panic(),
    "q": Quit(), "+": Nudge(faster=True), "-": Nudge(faster=False),
    # the judge marks each release of the 射節: 右 (the 上射's side) or 左, hit or miss
    "1": MarkRelease("右", True), "2": MarkRelease("右", False),
    "3": MarkRelease("左", True), "4": MarkRelease("左", False),
}
HELP = ("space GO   s stop/樂闋   h hold   r resume   n/b skip/back\n"
        "p panic (twice: all off)   +/- nudge 射節   q quit\n"
        "射 releases: 1 右 hit   2 右 miss   3 左 hit   4 左 miss")

BIG_DIGITS = {
    "0": ("███", "█ █", "█ █", "█ █", "███"), "1": (" █ ", "██ ", " █ ", " █ ", "███"),
    "2": ("███", "  █", "███", "█  ", "███"), "3": ("███", "  █", "███", "  █", "███"),
    "4": ("█ █", "█ █", "███", "  █", "  █"), "5": ("███", "█  ", "███", "  █", "███"),
    "6": ("███", "█  ", "███", "█ █", "███"), "7": ("███", "  █", "  █", "  █", "  █"),
    "8": ("███", "█ █", "███", "█ █", "███"), "9": ("███", "█ █", "███", "  █", "███"),
    "/": ("   ", "  █", " █ ", "█  ", "   "),
}


def handle_key(player: Player, key: str) -> PlayerCommand | None:
    """Queue the command a key asks for; returns it (None for other keys)."""
    command = KEYS.get(key.lower() if key != " " else key)
    if command is not None:
        player.put(command, origin="key")
    return command


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "open"
    seconds = max(0.0, seconds)
    return f"{int(seconds // 60)}:{seconds % 60:04.1f}"


def big(text: str) -> list[str]:
    """``text`` (digits and /) in 5-line block figures."""
    rows = ["", "", "", "", ""]
    for ch in text:
        glyph = BIG_DIGITS.get(ch, ("   ",) * 5)
        for i in range(5):
            rows[i] += glyph[i] + " "
    return rows


def screen(snap: Snapshot) -> list[str]:
    """The console as lines of text."""
    lines = [f"樂正 yuezheng live — {snap.rite}" + (f"   control {snap.control}"
                                                  if snap.control else "")]
    state = "HELD" if snap.held else ("DONE" if snap.done else "LIVE")
    if snap.panic_stage:
        state += f"  PANIC {snap.panic_stage}"
    lines.append(f"[{state}]")
    lines.append("")
    running = {r[0] for r in snap.running}
    for cid, kind, title, status in snap.cues:
        mark = "▶" if cid in running else ("→" if cid == snap.standby else " ")
        lines.append(f" {mark} {pad(cid, 18)} {pad(kind, 6)} {pad(status, 8)} {title}")
    lines.append("")
    for cid, elapsed, remaining in snap.running:
        lines.append(f"running {cid}: elapsed {_clock(elapsed)}  remaining {_clock(remaining)}")
    if snap.jie is not None:
        cid, k, n, countdown = snap.jie
        lines.append(f"節 {k}/{n} ({cid})   next 節 in {_clock(countdown)}")
        lines += big(f"{k}/{n}")
    if snap.standby:
        lines.append(f"standby: {snap.standby} ({snap.standby_trigger})")
        lines.append(f"  watch for: 「{snap.standby_at}」")
    else:
        lines.append("standby: end of the show")
    if snap.tally:
        lines.append(f"射 tally {snap.tally}")
    if snap.link:
        lines.append(snap.link)
    if snap.peer_line:
        lines.append(f"hot standby: {snap.peer_line}")
    if snap.message:
        lines.append(f"! {snap.message}")
    lines.append("")
    lines += HELP.split("\n")
    return lines


def run_console(player: Player) -> None:
    """The operator console in the terminal until the operator quits: curses draws ``screen``
    and reads the keys while the player steps."""
    import curses

    def loop(win: Any) -> None:
        curses.curs_set(0)
        win.nodelay(True)
        while not player.quit:
            player.step(0.05)
            win.erase()
            height, width = win.getmaxyx()
            for y, line in enumerate(screen(player.snapshot())[:height - 1]):
                try:
                    win.addstr(y, 0, clip(line, max(1, width - 1)))
                except curses.error:
                    pass
            win.refresh()
            while (key := win.getch()) != -1:
                if 0 <= key < 256:
                    handle_key(player, chr(key))

    curses.wrapper(loop)

"""The operator console: the keys, the screen as lines of text fitted to the terminal, and the
curses loop that draws it (curses: standard library, works over SSH, no dependency).
``handle_key`` and ``screen`` are pure of the terminal (tests call them directly);
``run_console`` is the loop.

The screen fits the terminal it is given, down to ``MIN_WIDTH`` × ``MIN_HEIGHT`` (below it, a
clear message saying what size is needed — the keys still work). What must always show —
the show's state, what runs and the moment that stops it, the 無算樂 piece, the 節 (as a line),
the standby cue and the moment to watch for, the tally, Link and hot standby, the last message
and the keys — is placed first; then, as room allows, what the texts bind once the standby cue
begins and the rules in force (「樂作，大夫不入」: a line each), the cue list (finished cues
folded into one line, then the running, standby and next cues), the web and OSC addresses, the
large 節 counter (3 rows, then 5) and the rest of the cue list, and last the blank lines
between blocks. So at 80×24 during the 燕禮's 射節 everything shows; a smaller terminal loses
the blank lines first, then the large counter shrinks, then the cue list.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from cues.errors import UserError
from cues.text import clip, display_width, pad
from sequencer.live.player.player import Player
from sequencer.live.player.snapshot import Snapshot
from sequencer.live.protocol import (
    Back,
    Go,
    Hold,
    MarkRelease,
    Nudge,
    Panic,
    PickPiece,
    PlayerCommand,
    Quit,
    Resume,
    Skip,
    Stop,
)
from sequencer.live.screens.announce import quoted
from sequencer.live.screens.terminal import terminal_size_only

KEYS: dict[str, PlayerCommand] = {
    " ": Go(), "s": Stop(), "h": Hold(), "r": Resume(), "n": Skip(), "b": Back(), "p": Panic(),
    "q": Quit(), "+": Nudge(faster=True), "-": Nudge(faster=False),
    # the judge marks each release of the 射節: 右 (the 上射's side) or 左, hit or miss
    "1": MarkRelease("右", True), "2": MarkRelease("右", False),
    "3": MarkRelease("左", True), "4": MarkRelease("左", False),
    # 無算樂: the piece after the sounding one, one on or one back
    ".": PickPiece(step=1), ",": PickPiece(step=-1),
}
MIN_WIDTH, MIN_HEIGHT = 40, 12
# the keys, as wide as the terminal allows (each variant: its lines)
HELP = (
    ("space GO  s stop/樂闋  h hold  r resume  n/b skip/back  p panic  q quit",
     "射: 1 右 hit  2 右 miss  3 左 hit  4 左 miss  +/- nudge  無算樂: ,/. piece"),
    ("space GO  s stop/樂闋  h hold  r resume",
     "n/b skip/back  p panic  q quit",
     "射: 1 右 hit 2 右 miss 3 左 hit 4 左 miss",
     "+/- nudge 射節  ,/. 無算樂 piece"),
)

BIG_DIGITS = {
    "0": ("███", "█ █", "█ █", "█ █", "███"), "1": (" █ ", "██ ", " █ ", " █ ", "███"),
    "2": ("███", "  █", "███", "█  ", "███"), "3": ("███", "  █", "███", "  █", "███"),
    "4": ("█ █", "█ █", "███", "  █", "  █"), "5": ("███", "█  ", "███", "  █", "███"),
    "6": ("███", "█  ", "███", "█ █", "███"), "7": ("███", "  █", "  █", "  █", "  █"),
    "8": ("███", "█ █", "███", "█ █", "███"), "9": ("███", "█ █", "███", "  █", "███"),
    "/": ("   ", "  █", " █ ", "█  ", "   "),
}
# the same figures in 3 rows (half blocks: 6 "pixels" high)
SMALL_DIGITS = {
    "0": ("█▀█", "█ █", "▀▀▀"), "1": ("▀█ ", " █ ", "▀▀▀"), "2": ("▀▀█", "█▀▀", "▀▀▀"),
    "3": ("▀▀█", " ▀█", "▀▀▀"), "4": ("█ █", "▀▀█", "  ▀"), "5": ("█▀▀", "▀▀█", "▀▀▀"),
    "6": ("█▀▀", "█▀█", "▀▀▀"), "7": ("▀▀█", "  █", "  ▀"), "8": ("█▀█", "█▀█", "▀▀▀"),
    "9": ("█▀█", "▀▀█", "▀▀▀"), "/": ("  █", " █ ", "▀  "),
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


def big(text: str, rows: int = 5) -> list[str]:
    """``text`` (digits and /) in block figures of 5 rows (or 3)."""
    font = BIG_DIGITS if rows == 5 else SMALL_DIGITS
    out = [""] * rows
    for ch in text:
        glyph = font.get(ch, ("   ",) * rows)
        for i in range(rows):
            out[i] += glyph[i] + " "
    return [row.rstrip() for row in out]


def wrap(text: str, width: int, lines: int, indent: str = "  ") -> list[str]:
    """``text`` over at most ``lines`` lines of ``width`` columns (the next ones indented), cut
    with … when it does not fit; wide characters are never split."""
    out: list[str] = []
    rest = text
    while rest and len(out) < lines:
        room = width - (display_width(indent) if out else 0)
        line = clip(rest, room)
        if len(line) < len(rest) and len(out) == lines - 1:
            line = clip(rest, room - 1) + "…"
            rest = ""
        else:
            space = line.rfind(" ")
            if len(line) < len(rest) and space > len(line) // 2 and rest[len(line)] != " ":
                line = line[:space]  # between words (CJK text breaks anywhere)
            rest = rest[len(line):].lstrip(" ")
        out.append((indent if out else "") + line)
    return out


def _state(snap: Snapshot) -> str:
    state = "HELD" if snap.held else ("DONE" if snap.done else "LIVE")
    return state + (f"  PANIC {snap.panic_stage}" if snap.panic_stage else "")


def _cue_rows(snap: Snapshot, width: int) -> tuple[list[str], list[str], list[str]]:
    """The cue list as (the fold line of finished cues, the running, standby and next rows,
    the rows after them)."""
    running = {r[0] for r in snap.running}
    ids_in_order = [c[0] for c in snap.cues]
    pos = ids_in_order.index(snap.standby) if snap.standby in ids_in_order else len(snap.cues)
    finished = [c for i, c in enumerate(snap.cues) if c[0] not in running and (
        c[3] in ("done", "stopped") or (i < pos and c[3] == ""))]  # played, or skipped
    fold = []
    if finished:
        names = f"{finished[0][0]} … {finished[-1][0]}" if len(finished) > 2 else ", ".join(
            c[0] for c in finished)
        skipped = sum(c[3] == "" for c in finished)
        played = len(finished) - skipped
        counts = [f"{played} played"] if played else []
        counts += [f"{skipped} skipped"] if skipped else []
        fold = [f" ✓ {', '.join(counts)}: {names}"]
    ids = max([display_width(c[0]) for c in snap.cues] + [4])
    wide = width >= ids + 30
    rows = []
    for cid, kind, title, status in snap.cues:
        if (cid, kind, title, status) in finished:
            continue
        mark = "▶" if cid in running else ("→" if cid == snap.standby else " ")
        if wide:
            rows.append((cid, f" {mark} {pad(cid, ids)} {pad(kind, 6)} {pad(status, 8)} {title}"))
        else:
            rows.append((cid, f" {mark} {pad(cid, ids)} {title}"))
    # the core: every running row, the standby, and up to three after it
    core_end = 0
    for i, (cid, _) in enumerate(rows):
        if cid in running or cid == snap.standby:
            core_end = i + 1
    core_end = min(len(rows), core_end + 3) if rows else 0
    return fold, [r for _, r in rows[:core_end]], [r for _, r in rows[core_end:]]


def _running(snap: Snapshot, width: int) -> list[str]:
    """Each running cue, and the moment that ends a cue that runs until stopped."""
    out = []
    stops = {s[0]: s for s in snap.stops}
    for cid, elapsed, remaining in snap.running:
        stop = stops.get(cid)
        if stop is None:
            out.append(f"▶ {cid}  {_clock(elapsed)}  ·  {_clock(remaining)} left")
        elif stop[2]:
            out.append(f"▶ {cid}  {_clock(elapsed)}  ·  ends in {_clock(stop[3])} (樂闋)")
        else:
            out.append(f"▶ {cid}  {_clock(elapsed)}  ·  runs until stopped")
            if stop[1]:
                out += wrap(f"  watch for 「{stop[1]}」 → s stops it (樂闋)", width, 2, "    ")
            else:
                out.append("  the operator ends it: s stops it at its next rest")
    return out


def _piece(snap: Snapshot, width: int) -> list[str]:
    p = snap.piece
    if p is None:
        return []
    now = (f"♪ 《{p.title}》 {p.number}/{p.count}  {_clock(p.elapsed)} of {_clock(p.length)}")
    after = (f"  next 《{p.next_title}》 {p.next_number}/{p.count}"
             f"{' (chosen)' if p.chosen else ''}  ,/. choose")
    if display_width(now + after) < width:
        return [now + after]
    return [now, after]


def _standby(snap: Snapshot, width: int) -> list[str]:
    if not snap.standby:
        return ["standby: end of the show"]
    head = f"standby: {snap.standby} ({snap.standby_trigger})"
    line = f"{head}  watch for 「{snap.standby_at}」"
    if display_width(line) < width:
        return [line]
    return [head] + wrap(f"  watch for 「{snap.standby_at}」", width, 2, "    ")


def _help(width: int) -> list[str]:
    for variant in HELP:
        if all(display_width(line) < width for line in variant):
            return list(variant)
    return list(HELP[-1])


def too_small(snap: Snapshot, width: int, height: int) -> list[str]:
    """What a terminal below the console's minimum shows: the size needed, the state, the
    keys that still work."""
    lines = [f"樂正 [{_state(snap)}]",
             f"terminal {width}×{height}: too small;",
             f"the console needs {MIN_WIDTH}×{MIN_HEIGHT}.",
             "Enlarge it (or run --plain).",
             "Keys still work: space GO,", "s stop, p panic, q quit."]
    if snap.standby:
        lines.insert(1, f"standby {snap.standby}")
    return [clip(line, max(1, width - 1)) for line in lines[:max(1, height - 1)]]


def _fitted(rows: list[str], after: list[str], room: int) -> list[str]:
    """``rows`` in ``room`` lines: when they do not all fit (with ``after`` still to come), the
    first ones and a line counting the others."""
    if len(rows) <= room:
        return rows
    if room <= 0:
        return []
    return rows[:room - 1] + [f"   … {len(rows) - (room - 1) + len(after)} more"]


def screen(snap: Snapshot, width: int = 100, height: int = 40) -> list[str]:
    """The console as lines of text for a terminal of ``width`` × ``height`` (see the module
    docstring): at most ``height - 1`` lines, each narrower than ``width``."""
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        return too_small(snap, width, height)
    w = width - 1  # curses cannot write the last column of the last line
    head = [f"樂正 yuezheng live — {snap.rite}  [{_state(snap)}]"]
    where = [part for part in (f"web {snap.web}" if snap.web else "",
                               f"OSC {snap.control}" if snap.control else "") if part]
    info = ["  ".join(where)] if display_width("  ".join(where)) < w else where
    if snap.resumed:
        info.append(snap.resumed)
    fold, core, rest = _cue_rows(snap, w)
    running = _running(snap, w) + _piece(snap, w)
    jie_line: list[str] = []
    counter = ""
    if snap.jie is not None:
        cid, k, n, countdown = snap.jie
        jie_line = [f"節 {k}/{n} ({cid})   next 節 in {_clock(countdown)}"]
        counter = f"{k}/{n}"
    standby = _standby(snap, w)
    notes = [f"射 tally {snap.tally}"] if snap.tally else []
    notes += [snap.link] if snap.link else []
    notes += list(snap.hear)
    notes += [f"hot standby: {snap.peer_line}"] if snap.peer_line else []
    message = wrap(f"! {snap.message}", w, 2, "  ") if snap.message else []
    keys = _help(w)

    room = height - 1 - len(head + running + jie_line + standby + notes + message + keys)
    shown: dict[str, list[str]] = {name: [] for name in (
        "binds", "in_force", "fold", "core", "info", "big", "rest")}

    def take(name: str, lines: list[str]) -> None:
        nonlocal room
        if lines and len(lines) <= room:
            shown[name] = lines
            room -= len(lines)

    if snap.standby and snap.standby_rules:
        take("binds", wrap(f"  once it begins: {quoted(snap.standby_rules)}", w, 1))
    if snap.rules:
        take("in_force", wrap(f"in force: {quoted(snap.rules)}", w, 1))
    take("fold", fold)
    take("core", _fitted(core, rest, room))
    take("info", info)
    for rows in (5, 3):  # the large counter, as large as there is room for
        figures = big(counter, rows) if counter else []
        if figures and display_width(figures[0]) < w and len(figures) <= room:
            take("big", figures)
            break
    if shown["core"] and len(shown["core"]) == len(core):
        take("rest", _fitted(rest, [], room))
    blanks = max(0, min(room, 3))

    lines = head + shown["info"]
    lines += [""] if blanks >= 3 else []
    lines += shown["fold"] + shown["core"] + shown["rest"]
    lines += [""] if blanks >= 2 else []
    lines += running + jie_line + shown["big"] + standby + shown["binds"] + notes
    lines += shown["in_force"] + message
    lines += [""] if blanks >= 1 else []
    lines += keys
    return [clip(line, w) for line in lines][:height - 1]


def draw(win: Any, lines: list[str], width: int, add: Callable[..., None] | None = None) -> None:
    """Write ``lines`` on a curses window (each already fitted to ``width``)."""
    import curses

    add = add or win.addstr
    for y, line in enumerate(lines):
        try:
            add(y, 0, clip(line, max(1, width - 1)))
        except curses.error:
            pass


def run_console(player: Player) -> None:
    """The operator console in the terminal until the operator quits: curses draws ``screen``
    at the terminal's size and reads the keys while the player steps."""
    import curses

    def loop(win: Any) -> None:
        try:
            curses.curs_set(0)
        except curses.error:  # a terminal that cannot hide its cursor (TERM=dumb, vt52)
            pass
        win.nodelay(True)
        while not player.quit:
            player.step(0.05)
            win.erase()
            height, width = win.getmaxyx()
            draw(win, screen(player.snapshot(), width, height), width)
            win.refresh()
            while (key := win.getch()) != -1:
                if key == curses.KEY_RESIZE:
                    continue
                if 0 <= key < 256:
                    handle_key(player, chr(key))

    terminal_size_only()
    try:
        curses.wrapper(loop)
    except curses.error as exc:  # a terminal curses cannot drive (an unknown TERM)
        raise UserError(f"the live console cannot drive this terminal (TERM="
                        f"{os.environ.get('TERM', '')!r}: {exc}); use --plain, or set TERM "
                        "to your terminal's type (e.g. xterm-256color)") from None

"""The operator console's content: the keys and the screen as lines of text (pure).

``cli.py`` draws these lines with curses (standard library: works over SSH, no dependency) and
feeds the keys to ``handle_key``; tests call ``handle_key`` and ``screen`` directly.
"""

from __future__ import annotations

from sequencer.live import Player, Snapshot

KEYS: dict[str, tuple[str, ...]] = {
    " ": ("go",), "s": ("stop",), "h": ("hold",), "r": ("resume",), "n": ("skip",),
    "b": ("back",), "p": ("panic",), "q": ("quit",), "+": ("faster",), "-": ("slower",),
    # the judge marks each release of the 射節: 右 (the 上射's side) or 左, hit or miss
    "1": ("release", "右", 1), "2": ("release", "右", 0),
    "3": ("release", "左", 1), "4": ("release", "左", 0),
}
HELP = ("space GO   s stop/樂闋   h hold   r resume   n/b skip/back   "
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


def handle_key(player: Player, key: str) -> str | None:
    """Queue the command a key asks for; returns it (None for other keys)."""
    command = KEYS.get(key.lower() if key != " " else key)
    if command is not None:
        player.put(*command)
        return command[0]
    return None


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
        lines.append(f" {mark} {cid:<18} {kind:<4} {status:<8} {title}")
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
    if snap.message:
        lines.append(f"! {snap.message}")
    lines.append("")
    lines += HELP.split("\n")
    return lines

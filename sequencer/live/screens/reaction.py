"""``yuezheng reaction``: the judge's delay, measured — how long after a sudden sight the judge's
key goes down — so that ``live --mark-delay`` takes it off each mark of a release
(docs/judging.md).

A block appears on the terminal after an unforeseeable wait (``WAIT_S``: the judge cannot time
the key to it, as an archer's release cannot be timed by the judge who watches him); the judge
presses space or a marking key (1–4) as soon as it shows. A press before the block, or sooner
than ``ANTICIPATION_S`` after it (faster than anyone reacts to a sight: a guess), does not count
and that trial is done again. The delay is the median over the trials (the middle half is
given too): the median, since one distracted press should not move it.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass
from typing import Any

from cues.text import clip
from sequencer.live.screens.terminal import terminal_size_only

WAIT_S = (1.5, 4.0)  # the block appears after a wait drawn uniformly from this range
ANTICIPATION_S = 0.1  # a press sooner than this after the block is a guess, not a reaction
TIMEOUT_S = 3.0  # no press this long after the block: the trial is done again
KEYS = " 1234"
BLOCK = "████████████"


@dataclass(frozen=True)
class Reaction:
    """The delays measured, seconds, in order; and what came of the trials that did not count."""

    delays: tuple[float, ...]
    early: int = 0  # pressed before the block, or a guess
    missed: int = 0  # not pressed within TIMEOUT_S

    @property
    def median_ms(self) -> float:
        return statistics.median(self.delays) * 1000

    @property
    def middle_half_ms(self) -> tuple[float, float]:
        """The first and third quartiles (the middle half of the presses), ms."""
        if len(self.delays) < 2:
            return self.median_ms, self.median_ms
        q1, _, q3 = statistics.quantiles(self.delays, n=4, method="inclusive")
        return q1 * 1000, q3 * 1000

    def report(self) -> list[str]:
        """What the command prints: the median, the middle half, and the option to pass."""
        low, high = self.middle_half_ms
        lines = [f"your delay: median {self.median_ms:.0f} ms (the middle half "
                 f"{low:.0f}–{high:.0f} ms) over {len(self.delays)} presses"]
        if self.early or self.missed:
            lines.append(f"not counted: {self.early} too early, {self.missed} not pressed "
                         "(each done again)")
        lines.append(f"mark releases with it: yuezheng live … --mark-delay {self.median_ms:.0f}")
        return lines


def measure(trials: int, rng: random.Random | None = None) -> Reaction:
    """Run ``trials`` counted trials in the terminal (curses) and return what was measured."""
    import curses

    rng = rng or random.Random()
    result: dict[str, Any] = {"delays": [], "early": 0, "missed": 0}

    def loop(win: Any) -> None:
        curses.curs_set(0)
        win.nodelay(True)
        delays: list[float] = result["delays"]
        while len(delays) < trials:
            outcome = _trial(win, rng, len(delays) + 1, trials)
            if isinstance(outcome, float):
                delays.append(outcome)
            else:
                result[outcome] += 1

    terminal_size_only()
    curses.wrapper(loop)
    return Reaction(tuple(result["delays"]), result["early"], result["missed"])


def _show(win: Any, lines: list[str]) -> None:
    import curses

    win.erase()
    height, width = win.getmaxyx()
    for y, line in enumerate(lines[:max(1, height - 1)]):
        try:
            win.addstr(y, 0, clip(line, max(1, width - 1)))
        except curses.error:
            pass
    win.refresh()


def _keys(win: Any) -> list[int]:
    pressed = []
    while (key := win.getch()) != -1:
        pressed.append(key)
    return pressed


def _trial(win: Any, rng: random.Random, number: int, trials: int) -> float | str:
    """One trial: the measured delay (seconds), or "early" / "missed"."""
    head = [f"樂正 — the judge's delay: trial {number} of {trials}",
            "Press space (or 1–4) the moment the block appears.", ""]
    _show(win, [*head, "wait…"])
    _keys(win)  # a press left over from before does not count
    shown_at = time.perf_counter() + rng.uniform(*WAIT_S)
    while time.perf_counter() < shown_at:
        if any(0 <= k < 256 and chr(k) in KEYS for k in _keys(win)):
            _show(win, [*head, "too early: wait for the block"])
            time.sleep(1.0)
            return "early"
        time.sleep(0.002)
    _show(win, [*head, BLOCK, BLOCK, BLOCK])
    shown = time.perf_counter()  # drawn: the terminal has it
    while time.perf_counter() - shown < TIMEOUT_S:
        if any(0 <= k < 256 and chr(k) in KEYS for k in _keys(win)):
            delay = time.perf_counter() - shown
            if delay < ANTICIPATION_S:
                _show(win, [*head, f"{delay * 1000:.0f} ms: a guess, not counted"])
                time.sleep(1.0)
                return "early"
            _show(win, [*head, f"{delay * 1000:.0f} ms"])
            time.sleep(0.6)
            return delay
        time.sleep(0.001)
    return "missed"

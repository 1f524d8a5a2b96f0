"""What the web pages need of a live show: the narrow interface the server talks to, and the
state it sends to the pages.

The server never touches the player: it reads the last ``ShowState`` the player published,
reads the show clock (for the pages' clock sync) and hands over commands with their origin.
Every time in a ``ShowState`` is absolute, in seconds on the show clock, so the state changes
only when something happens and each page counts down and flashes on its own estimate of that
clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from sequencer.live.protocol import (
    Back,
    Go,
    Hold,
    Panic,
    PickPiece,
    PlayerCommand,
    Resume,
    Skip,
    Stop,
)

# the commands the operator page may give, by name: the player's typed commands (the same as
# the console's keys and OSC's addresses, so the same guards hold)
WEB_COMMANDS: dict[str, PlayerCommand] = {
    "go": Go(), "stop": Stop(), "hold": Hold(), "resume": Resume(), "skip": Skip(),
    "back": Back(), "panic": Panic(), "piece-next": PickPiece(step=1),
    "piece-back": PickPiece(step=-1),
}


@dataclass(frozen=True)
class CueLine:
    """A row of the cue list."""

    id: str
    kind: str
    title: str
    status: str  # "", waiting, running, ending, done, stopped
    standby: bool
    running: bool


@dataclass(frozen=True)
class JieAt:
    """One 節 of the running 射節: number k (of the cue's N), its 耦 cycle, the pass of the
    cue's music it falls in (a looping 射節 plays its music again until stopped), when."""

    k: int
    cycle: int
    t: float  # show clock, seconds
    pass_index: int = 0


@dataclass(frozen=True)
class Shooting:
    """The running 射節: its 節 on the show clock and who shoots (「先以聽」: k ≤ listen)."""

    cue: str
    song: str
    n: int
    listen: int
    ou: tuple[tuple[str, str, str], ...]  # each 耦: (name, 上射, 下射)
    marks: tuple[JieAt, ...]  # a looping 射節: this pass's and the next one's
    end: float | None  # show clock


@dataclass(frozen=True)
class Current:
    """The cue the performers are in."""

    id: str
    title: str
    at: str  # the ritual moment that called it
    pieces: tuple[str, ...]  # "title (by)"
    start: float
    end: float | None  # None: runs until stopped


@dataclass(frozen=True)
class ShowState:
    """One published state of the show (see the module docstring)."""

    rite: str
    cues: tuple[CueLine, ...]
    standby: str | None
    standby_at: str  # the ritual moment to watch for
    standby_trigger: str
    next_start: float | None  # a cue already scheduled to start (follow/after), show clock
    current: Current | None
    shooting: Shooting | None
    held: bool
    panic_stage: int
    done: bool
    message: str
    tally: str
    message_seq: int = 0  # counts the messages: the same words said again are news again
    piece: str = ""  # 無算樂: the piece sounding and the next ("": none)
    stop_at: str = ""  # the moment that stops the running cue (its stop rule), to watch for
    heard: dict[str, Any] | None = None  # the drum heard (live --hear): the strip
    standby_rules: tuple[str, ...] = ()  # what the texts bind once the standby cue begins
    rules: tuple[str, ...] = ()  # in force: the rules of the cues begun so far

    def to_json(self) -> dict[str, Any]:
        return {"type": "state", **asdict(self)}


class ShowView(Protocol):
    """The player as the web server sees it (any thread may call these)."""

    def snapshot(self) -> ShowState | None:
        """The last state the player published (None before the first)."""

    def show_clock(self) -> float:
        """Now on the show clock, seconds."""

    def command(self, name: str, origin: str,
                reply: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Queue one of ``WEB_COMMANDS``, to be logged with ``origin`` (e.g. ``web:1.2.3.4``);
        ``reply`` receives the player's state after it, with ``message`` (what it did, or why it
        did nothing) and ``acted``."""

    def report(self, record: dict[str, Any]) -> None:
        """Write ``record`` (the web server's refusals: ``{"event": "web-refused", …}``) to
        the show log and say it on the console's message line."""

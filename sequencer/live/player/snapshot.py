"""What the player shows: the state an OSC reply carries (``state_of``) and the console's
``Snapshot`` (``snapshot_of``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

from cues.model import Rite
from sequencer.live.cuelist import CueList
from sequencer.live.player.judging import Judging
from sequencer.live.player.marks import JieMarks
from sequencer.live.player.operator import PeerHooks
from sequencer.live.player.status import ShowStatus
from sequencer.live.protocol import CueStatus
from sequencer.outputs.cue_schedule import CueSchedule


@dataclass(frozen=True)
class Snapshot:
    """What the console shows."""

    rite: str
    cues: tuple[tuple[str, str, str, str], ...]  # id, kind, title, status
    standby: str | None
    standby_at: str
    standby_trigger: str
    running: tuple[tuple[str, float, float | None], ...]  # id, elapsed, remaining (None: open)
    jie: tuple[str, int, int, float | None] | None  # cue, k, n, seconds to the next 節
    held: bool
    panic_stage: int
    message: str
    done: bool
    control: str
    tally: str = ""  # the running 「不鼓不釋」 tally of the current 射節
    link: str = ""  # peers, tempo and phase error in the Link session ("": no Link)
    peer_line: str = ""  # hot standby: which machine is live ("" without a peer)
    hear: tuple[str, ...] = ()  # the drum heard and followed (live --hear, --follow)
    message_seq: int = 0  # counts the messages (the same words twice are news twice)
    web: str = ""  # the web pages' address ("": no --web)
    resumed: str = ""  # "resumed from LOG at CUE" ("": a fresh show)
    # running cues that run until stopped: (cue, the moment of their stop rule or "", whether
    # a stop is under way, seconds to their end when it is)
    stops: tuple[tuple[str, str, bool, float | None], ...] = ()
    piece: PieceNow | None = None  # 無算樂: the piece sounding and the one after it
    standby_rules: tuple[str, ...] = ()  # what the texts bind once the standby cue begins
    rules: tuple[str, ...] = ()  # in force: the rules of the cues begun so far (「樂作，大夫不入」)


@dataclass(frozen=True)
class PieceNow:
    """The piece sounding in a 無算樂 and the one that comes after it."""

    cue: str
    title: str
    number: int  # 1-based
    count: int
    elapsed: float  # seconds into the piece
    length: float
    next_title: str
    next_number: int
    chosen: bool  # the operator chose the next one (else: the next in order)


class Showing(Protocol):
    """What the views read of a player (``sequencer.live.player.player.Player``)."""

    rite: Rite
    machine: CueList
    schedules: dict[str, CueSchedule]
    marks: JieMarks
    judging: Judging
    status: ShowStatus
    peer: PeerHooks | None


def state_of(player: Showing) -> dict[str, Any]:
    """The state an OSC reply carries."""
    m = player.machine
    out: dict[str, Any] = {"standby": m.standby.id if m.standby else None,
                           "running": m.running(), "held": m.held,
                           "panic": m.panic_stage, "done": m.done}
    tally = player.judging.state()
    if tally is not None:
        out["tally"] = tally
    if player.peer is not None:
        out["standby"] = player.peer.status()
    return out


def snapshot_of(player: Showing) -> Snapshot:
    """What the console shows, now."""
    m = player.machine
    now = time.perf_counter()
    status = {cid: str(r.status) for cid, r in m.runs.items()}
    cues = tuple((c.id, c.kind, c.title, status.get(c.id, "")) for c in m.cues)
    running = []
    jie = None
    for cid in m.running():
        r = m.runs[cid]
        elapsed = m.cue_time(cid, now)
        remaining = None if r.end is None else max(0.0, r.end - (m.held_at or now))
        running.append((cid, elapsed, remaining))
        sched = player.schedules[cid]
        if sched.jie:
            last = player.marks.last.get(cid)
            nxt = [j.t * r.factor for j in sched.jie if j.t * r.factor > elapsed]
            if last is not None:
                jie = (cid, last.k, last.n, (nxt[0] - elapsed) if nxt else None)
    stops = tuple(_stop_of(m, cid, now) for cid in m.running() if m.runs[cid].loops)
    choosing = m.choosing()
    standby = m.standby
    begun = {cid for cid, r in m.runs.items() if r.status != CueStatus.WAITING}
    return Snapshot(
        rite=player.rite.title, cues=cues, standby=standby.id if standby else None,
        standby_at=standby.at if standby else "", standby_trigger=(
            standby.trigger + (f":{standby.target}" if standby.target else "")
        ) if standby else "",
        running=tuple(running), jie=jie, held=m.held, panic_stage=m.panic_stage,
        message=player.status.message, done=m.done, control=player.status.line("control"),
        tally=player.judging.line(), link=player.status.line("link"),
        peer_line=player.peer.status()["line"] if player.peer is not None else "",
        message_seq=player.status.seq, web=player.status.line("web"),
        resumed=player.status.line("resumed"), stops=stops,
        piece=None if choosing is None else _piece_now(m, choosing, now),
        hear=tuple(line for name in ("follow", "hear") if (line := player.status.line(name))),
        standby_rules=standby.rules if standby else (),
        rules=tuple(dict.fromkeys(rule for c in m.cues if c.id in begun for rule in c.rules)),
    )


def _stop_of(m: CueList, cid: str, now: float) -> tuple[str, str, bool, float | None]:
    r = m.runs[cid]
    info = m.cues[m.index[cid]]
    left = None if r.end is None else max(0.0, r.end - (m.held_at or now))
    return cid, info.stop_at, r.end is not None, left


def _piece_now(m: CueList, cid: str, now: float) -> PieceNow:
    sections = m.cues[m.index[cid]].sections
    i, into, nxt, chosen = m.piece(cid, now)
    title, start, end = sections[i]
    return PieceNow(cid, title, i + 1, len(sections), into, end - start, sections[nxt][0],
                    nxt + 1, chosen)

"""What the player shows: the state an OSC reply carries and the console's ``Snapshot``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from cues.model import Rite
from sequencer.cueschedule import CueSchedule, JieMark
from sequencer.judge import Tally
from sequencer.live.cuelist import CueList


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


class PlayerViews:
    """The player's views (``sequencer.live.player.Player`` has these attributes)."""

    rite: Rite
    machine: CueList
    schedules: dict[str, CueSchedule]
    last_jie: dict[str, JieMark]
    tallies: dict[str, Tally]
    message: str
    control: str
    link_line: str
    peer: Any  # sequencer.live.operator.PeerHooks | None

    def state(self) -> dict[str, Any]:
        """The state an OSC reply carries."""
        m = self.machine
        out: dict[str, Any] = {"standby": m.standby.id if m.standby else None,
                               "running": m.running(), "held": m.held,
                               "panic": m.panic_stage, "done": m.done}
        if self.tallies:
            cid, tally = list(self.tallies.items())[-1]
            out["tally"] = {"cue": cid, **tally.to_json(), "announcement": tally.announcement()}
            out["tally"].pop("decisions")
        if self.peer is not None:
            out["standby"] = self.peer.status()
        return out

    def snapshot(self) -> Snapshot:
        m = self.machine
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
            sched = self.schedules[cid]
            if sched.jie:
                last = self.last_jie.get(cid)
                nxt = [j.t * r.factor for j in sched.jie if j.t * r.factor > elapsed]
                if last is not None:
                    jie = (cid, last.k, last.n, (nxt[0] - elapsed) if nxt else None)
        standby = m.standby
        return Snapshot(
            rite=self.rite.title, cues=cues, standby=standby.id if standby else None,
            standby_at=standby.at if standby else "", standby_trigger=(
                standby.trigger + (f":{standby.target}" if standby.target else "")
            ) if standby else "",
            running=tuple(running), jie=jie, held=m.held, panic_stage=m.panic_stage,
            message=self.message, done=m.done, control=self.control, tally=self._tally_line(),
            link=self.link_line,
            peer_line=self.peer.status()["line"] if self.peer is not None else "",
        )

    def _tally_line(self) -> str:
        if not self.tallies:
            return ""
        cid, tally = list(self.tallies.items())[-1]
        return f"{cid}: 右 {tally.right}  左 {tally.left} — 「{tally.announcement()}」"

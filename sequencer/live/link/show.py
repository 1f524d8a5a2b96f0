"""The live show in an Ableton Link session (``live --link`` / ``--link-follow``).

**Leading** (``--link``): as soon as a 射節 cue is scheduled (its GO, or the cue before it
ending), yuezheng publishes its grid (``sequencer.live.link.session.JieGrid``): the tempo, beat 0
(phase 0: 節 1) at the cue's start, and the session playing from then (Link start/stop sync) —
the peers know it before the first 節. A start that moves (a resume after a hold, a cut before
it) is published again; a hold stops the session's transport, and so does the show's end. At
every 節 the sending process reaches, the session's beat at the 節's event time (its deadline:
the instant its messages are stamped with) is read back: its distance in phase from the 節's
beat is the **phase error** (console, show log). Where it passes ``RELEAD_S`` (another peer
moved the session, a nudge), the leader publishes again, anchored on that 節's deadline, with
the 節 spacing just played. A 射節 that changes the session's tempo starts ``BROADCAST_S``
(60 ms) later than it would without Link: Link sends a peer's state at most every 50 ms, and
the tempo and the beat are two commits.

**Following** (``--link-follow``): when a 射節 cue is scheduled, it takes the session's tempo
and phase: the cue starts on the session's next phase 0 (quantum: a 耦's cycle) at or after the
time it was given, and its compiled schedule is retimed exactly (``cueschedule.retimed``, a
Fraction factor) so one 節 is ``60 × beats_per_jie / tempo``; the tempo then stays locked for
the whole cue (「間若一」) — the next 射節 cue takes the session's tempo again. With no peer in the
session there is nothing to follow: the cue plays as compiled.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sequencer.live.cuelist import UNFINISHED, CueInfo
from sequencer.live.link.session import (
    JieGrid,
    LinkSession,
    followed_jie_s,
    jie_grid,
    phase_error_beats,
)
from sequencer.live.protocol import MarkPassed
from sequencer.outputs.cue_schedule import CueSchedule, JieMark, retimed
from sequencer.timeline.timebase import seconds

JOIN_S = 2.0  # at the start, wait this long for a peer to join the session
# Link broadcasts a peer's state at most every 50 ms (measured here: a new tempo reached a peer
# in 3 ms, the beat committed just after it 40–54 ms later): a 射節 that changes the session's
# tempo starts this much later, so that its first 節 is on every peer's beat
BROADCAST_S = 0.06
RELEAD_S = 0.0005  # the leader publishes again when a 節's phase error passes this


@dataclass
class Playing:
    """The 射節 cue the session follows or is led by."""

    cue: str
    grid: JieGrid
    last: tuple[int, float] | None = None  # the last 節's index and deadline


class LinkShow:
    """Ties a ``Player`` to a ``LinkSession`` (see the module docstring)."""

    def __init__(self, player: Any, session: LinkSession, *, follow: bool = False) -> None:
        self.player = player
        self.session = session
        self.follow = follow
        self.base: dict[str, CueSchedule] = {}  # each 射節 as compiled
        self.compiled: dict[str, JieGrid] = {}  # each 射節's grid as compiled
        for sched in player.schedules.values():
            if sched.jie:
                span = player.timeline.span(sched.cue)
                self.base[sched.cue] = sched
                self.compiled[sched.cue] = jie_grid(seconds(span.jie_ticks), sched.jie[0].n)
        self.grids = dict(self.compiled)  # ... and as it plays (follow: retimed)
        self.playing: Playing | None = None
        self.errors_ms: list[float] = []  # the phase error of every 節 so far
        self._published: tuple[str, float] | None = None  # the 射節 run published, its start
        self._held = False
        self.current = ""  # the console's Link line

    def attach(self) -> LinkShow:
        """Hook into the player (before it opens)."""
        self.player.machine.planner = self.plan
        self.player.add_mark_listener(self.on_mark)
        self.player.add_watcher(self.watch)
        self.player.add_closer(self.close)
        self.current = self.line()
        self.player.status.provide("link", lambda: self.current)
        return self

    def close(self) -> None:
        self.session.close()

    # the player's hooks --------------------------------------------------------------------
    def plan(self, cue: CueInfo, t0: float) -> tuple[float, float]:
        """A 射節 about to be scheduled at ``t0``: (start, stretch). Leading: published at once
        (the peers know the grid before its first 節). Following: it starts on the session's
        next phase 0 instead, retimed to its tempo (the schedule reloaded)."""
        grid = self.compiled.get(cue.id)
        if grid is None:
            return t0, 1.0
        if not self.follow:
            if abs(self.session.tempo - grid.tempo) > 1e-9:
                t0 += BROADCAST_S  # the new tempo and the new beat go out 50 ms apart
            self._publish(cue.id, t0)
            return t0, 1.0
        if self.session.peers == 0:
            return t0, 1.0
        start, tempo = self.session.next_phase_zero(t0, grid.quantum)
        jie_s = followed_jie_s(tempo, grid.beats_per_jie)
        factor = jie_s / grid.jie_s
        self.grids[cue.id] = JieGrid(jie_s, grid.n, grid.beats_per_jie)
        self.player.reload_cue(retimed(self.base[cue.id], factor))
        return start, float(factor)

    def on_mark(self, event: MarkPassed, mark: JieMark) -> None:
        playing = self.playing
        if playing is None or playing.cue != event.key:
            return
        grid = playing.grid
        index = mark.cycle * mark.n + mark.k - 1
        beat, tempo = self.session.beat_at(event.deadline, grid.quantum)
        error_ms = phase_error_beats(beat, grid.beat(index), grid.quantum) * 60_000.0 / tempo
        self.errors_ms.append(error_ms)
        relead = not self.follow and not self._held and abs(error_ms) > RELEAD_S * 1000
        if relead:
            self._relead(playing, index, event.deadline)
        playing.last = (index, event.deadline)
        peers = self.session.peers
        self.player.log.link(event.key, event.t, mark.k, mark.n, mark.cycle, peers=peers,
                             tempo=tempo, phase_error_ms=error_ms, relead=relead,
                             mode=self.mode)
        self.current = self.line()

    def _relead(self, playing: Playing, index: int, deadline: float) -> None:
        """Publish the grid again on this 節's deadline, with the spacing just played."""
        grid = playing.grid
        if playing.last is not None and playing.last[0] == index - 1:
            spacing = Fraction(deadline - playing.last[1]).limit_denominator(10**9)
            if spacing > 0:
                grid = playing.grid = jie_grid(spacing, grid.n)
        self.session.lead(grid, deadline, first=index)

    def watch(self) -> None:
        """After every step: a 射節 scheduled (or moved: a resume, a cut before it) is
        published (leading); a hold stops the session's transport; so does the show's end."""
        machine = self.player.machine
        held = machine.held
        if held and not self._held and not self.follow:
            self.session.stop()
        self._held = held
        runs = [(r.start, cid) for cid, r in machine.runs.items()
                if cid in self.grids and r.status in UNFINISHED]
        if runs and not held:
            start, cid = max(runs)
            if self._published != (cid, start):
                self._publish(cid, start)
        if machine.done and self.playing is not None:
            if not self.follow:
                self.session.stop()
            self.playing = None
        self.current = self.line()

    def _publish(self, cue_id: str, start: float) -> None:
        """The 射節 ``cue_id`` starts at ``start``: the one the session follows (leading: its
        grid is published)."""
        self._published = (cue_id, start)
        self.playing = Playing(cue_id, self.grids[cue_id])
        if not self.follow:
            self.session.lead(self.playing.grid, start)

    # views ---------------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return "follow" if self.follow else "lead"

    def line(self) -> str:
        """The console's Link line: mode, peers, tempo, the last 節's phase error."""
        try:
            peers, tempo = self.session.peers, self.session.tempo
        except RuntimeError:
            return f"Link {self.mode}: closed"
        error = (f"phase error {self.errors_ms[-1]:+.3f} ms" if self.errors_ms
                 else "phase error —")
        return f"Link {self.mode}: {peers} peer(s), {tempo:.3f} bpm, {error}"


def start_link(player: Any, *, follow: bool, join_s: float = JOIN_S) -> LinkShow:
    """Join a Link session (waiting up to ``join_s`` for a peer) and hook it into ``player``
    (before ``player.open()``)."""
    session = LinkSession().open()
    try:
        session.wait_for_peers(join_s)
        return LinkShow(player, session, follow=follow).attach()
    except BaseException:
        session.close()
        raise

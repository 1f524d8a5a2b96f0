"""The live show in an Ableton Link session (``live --link`` / ``--link-follow``).

**Leading** (``--link``): when a 射節 cue starts, yuezheng publishes its grid
(``sequencer.live.link.JieGrid``): the tempo, beat 0 (phase 0: 節 1) at the cue's start, and the
session playing from then (Link start/stop sync); a hold stops the session's transport, resume
and the end of the show too. At every 節 the sending process reaches, the session's beat at that
instant is read back: its distance in phase from the 節's beat is the **phase error** (console,
show log). Where it passes ``RELEAD_S`` (a peer moved the session, a hold, a nudge), the leader
publishes again, anchored on that 節's deadline, with the 節 spacing just played.

**Following** (``--link-follow``): when a 射節 cue is about to start, it takes the session's
tempo and phase: the cue starts on the session's next phase 0 (quantum: a 耦's cycle) at or
after its GO time, and its compiled schedule is retimed exactly (``cueschedule.retimed``, a
Fraction factor) so one 節 is ``60 × beats_per_jie / tempo``; the tempo then stays locked for
the whole cue (「間若一」) — the next 射節 cue takes the session's tempo again. With no peer in the
session there is nothing to follow: the cue plays as compiled.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sequencer.cueschedule import CueSchedule, JieMark, retimed
from sequencer.live.link import JieGrid, LinkSession, followed_jie_s, jie_grid, phase_error_beats
from sequencer.live.protocol import CueAction, MarkPassed, StartCue
from sequencer.timebase import seconds

JOIN_S = 2.0  # at the start, wait this long for a peer to join the session
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
        self.grids: dict[str, JieGrid] = {}
        for sched in player.schedules.values():
            if sched.jie:
                span = player.timeline.span(sched.cue)
                self.base[sched.cue] = sched
                self.grids[sched.cue] = jie_grid(seconds(span.jie_ticks), sched.jie[0].n)
        self.playing: Playing | None = None
        self.errors_ms: list[float] = []  # the phase error of every 節 so far
        self.releads = 0
        self._planned: dict[str, float] = {}  # follow: the start each cue was moved to
        self._held = False

    def attach(self) -> LinkShow:
        """Hook into the player (before it opens)."""
        self.player.start_hook = self.on_start
        self.player.add_mark_listener(self.on_mark)
        self.player.add_watcher(self.watch)
        self.player.add_closer(self.close)
        self.player.link_line = self.line()
        return self

    def close(self) -> None:
        self.session.close()

    # the player's hooks --------------------------------------------------------------------
    def on_start(self, action: StartCue) -> list[CueAction] | None:
        grid = self.grids.get(action.key)
        if grid is None:
            return None
        run = self.player.machine.runs.get(action.key)
        if run is not None and abs(run.start - action.t0) > 1e-9:
            return []  # a start the follow retime has moved: the moved one was sent
        if self.follow and self._planned.get(action.key) != action.t0:
            moved = self._follow(action, grid)
            if moved is not None:
                return moved
        self.playing = Playing(action.key, self.grids[action.key])
        if not self.follow:
            self.session.lead(self.playing.grid, action.t0)
        return None

    def _follow(self, action: StartCue, grid: JieGrid) -> list[CueAction] | None:
        """Retime the cue to the session's tempo, moved to its next phase 0 (None: alone)."""
        if self.session.peers == 0:
            return None
        t0, tempo = self.session.next_phase_zero(action.t0, grid.quantum)
        jie_s = followed_jie_s(tempo, grid.beats_per_jie)
        factor = jie_s / grid.jie_s
        self.grids[action.key] = JieGrid(jie_s, grid.n, grid.beats_per_jie)
        self.player.reload_cue(retimed(self.base[action.key], factor))
        self._planned[action.key] = t0
        return self.player.machine.retime_waiting(action.key, t0, float(factor))

    def on_mark(self, event: MarkPassed, mark: JieMark) -> None:
        playing = self.playing
        if playing is None or playing.cue != event.key:
            return
        grid = playing.grid
        index = mark.cycle * mark.n + mark.k - 1
        beat, tempo = self.session.beat_at(event.t, grid.quantum)
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
        self.player.link_line = self.line()

    def _relead(self, playing: Playing, index: int, deadline: float) -> None:
        """Publish the grid again on this 節's deadline, with the spacing just played."""
        grid = playing.grid
        if playing.last is not None and playing.last[0] == index - 1:
            spacing = Fraction(deadline - playing.last[1]).limit_denominator(10**9)
            if spacing > 0:
                grid = playing.grid = jie_grid(spacing, grid.n)
        self.session.lead(grid, deadline, first=index)
        self.releads += 1

    def watch(self) -> None:
        """After every step: hold and resume reach the session's transport."""
        held = self.player.machine.held
        if held and not self._held and not self.follow:
            self.session.stop()
        elif self._held and not held and self.playing is not None and not self.follow:
            run = self.player.machine.runs.get(self.playing.cue)
            if run is not None:
                self.session.lead(self.playing.grid, run.start)
        self._held = held
        if self.player.machine.done and self.playing is not None:
            if not self.follow:
                self.session.stop()
            self.playing = None
        self.player.link_line = self.line()

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

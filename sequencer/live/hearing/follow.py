"""The drum leads (``live --follow``): each 射節 kept on the drummer's grid, one 耦 cycle at a
time.

Leading, yuezheng's clock paces the 射節 and the drummer follows it. Following, the drummer
paces it and everything yuezheng plays — strings, bells, the song, the 節 flashes on the pages,
the archers' cues — keeps to the drum:

- **At GO** the 射節 is loaded as *followed* (``followed_schedule``): the drum's own notes are
  left out (the person strikes them) and the first cycle's listening 節 are left to the drum
  alone — 「其一節先以聽也」: the musicians hear the 節 first, and so does the program.
- **The entry.** The strokes heard from the GO on are numbered and fitted
  (``sequencer.live.hearing.drum_grid.DrumFit``); once the listening 節 has been heard (or just
  before the entry must be decided) the 射節 is placed by one ``RetimeCue`` so that its first
  cycle runs on the straight grid through the drummer's 節 (``cycle_line``): the accompaniment
  comes in on the first shooting 節. Until a stroke is heard it waits (the entry moves on),
  saying so.
- **Each 耦 cycle** is placed ``DECIDE_S`` (0.2 s) before it starts, on the drummer's grid as
  the strokes so far carry it ahead: its start and its 節 change only there, so that inside a
  cycle every interval is the same (「間若一」: ``CueList.retime`` at the boundary). A move
  earlier than the last note before the boundary would reorder the music: it is cut short
  there and made up at the next boundary.
- **When the drum stops** (nothing in the input for ``SILENT_STROKES`` stroke spacings — the
  input as far as the hearing process has listened to it, so that a machine too busy to keep
  up is not taken for a silence — when a cycle is to be placed) the console and pages say
  so, and by ``--follow``'s setting the accompaniment
  **holds** (the next cycle waits at its boundary, moved on every ``PUSH_S``; when the drum
  comes back the cycle comes in on its next 節, on its grid) or **continues** at the last 節
  (and is placed on the drum again at the next boundary after it comes back).
- **The log records both grids**: a ``follow`` record per cycle (the drummer's grid as fitted
  — its spacing and drift — and the cycle's start and 節 as played), the listening 節 of the
  first cycle as ``jie`` records on the grid the accompaniment entered on (``"by": "drum"``),
  and every stroke (``heard``).

Output latency: a JACK output delivers each message a constant ``LATENCY_PERIODS`` later than
its deadline (``instruments.ports.jack``); the drum heard is stamped when it sounded. The
accompaniment is placed that much earlier, so that it *sounds* on the drum.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from instruments.midi import is_note_off, is_note_on, is_pitch_bend
from sequencer.live.cuelist import CueInfo
from sequencer.live.hearing.drum_grid import RETURN_SPACING_SD, DrumFit, Grid, JieShape, cycle_line
from sequencer.live.hearing.heard import HeardDrum, HeardStroke
from sequencer.live.protocol import StrokeHeard
from sequencer.outputs.cue_schedule import CueSchedule
from sequencer.timeline.piece_notes import LARGE_DRUMS, SMALL_DRUMS
from sequencer.timeline.timebase import TICKS_PER_SECOND

FOLLOW_MODES = ("hold", "continue")
DECIDE_S = 0.2  # a cycle is placed this long before it starts
ENTRY_AHEAD_S = 0.12  # the entry is placed at the latest this long before it
PUSH_S = 0.5  # while waiting for the drum, the next start is kept this far ahead
SILENT_STROKES = 2.5  # the drum has stopped when nothing came for this many stroke spacings
MARGIN_S = 0.03  # beyond the player's lead, a start placed is this far ahead of now at least
DRUMS = frozenset((*LARGE_DRUMS, *SMALL_DRUMS))


def followed_schedule(sched: CueSchedule, shape: JieShape,
                      drum_channels: frozenset[int]) -> CueSchedule:
    """``sched`` as the drum followed plays it: without the drum's notes (``drum_channels``),
    and with nothing in the first cycle's listening 節 but the channels' set-up (programs,
    controllers), moved to the first shooting 節 (before its notes); their 節 marks left out."""
    entry_tick = round(shape.listen * shape.jie_s * TICKS_PER_SECOND)

    def drum(data: bytes) -> bool:
        return bool(data) and data[0] < 0xF0 and (data[0] & 0x0F) in drum_channels and (
            is_note_on(data) or is_note_off(data) or is_pitch_bend(data))

    setup: list[bytes] = []
    kept: list[tuple[int, float, bytes]] = []
    for tick, t, data in zip(sched.ticks, sched.times, sched.messages, strict=True):
        if drum(data):
            continue
        if tick < entry_tick:
            if not (is_note_on(data) or is_note_off(data) or is_pitch_bend(data)):
                setup.append(data)
            continue
        kept.append((tick, t, data))
    entry_s = entry_tick / TICKS_PER_SECOND * float(sched.scale)
    lead = [(entry_tick, entry_s, data) for data in setup]
    rows = lead + kept
    return replace(sched, ticks=tuple(r[0] for r in rows), times=tuple(r[1] for r in rows),
                   messages=tuple(r[2] for r in rows),
                   jie=tuple(j for j in sched.jie if j.cycle > 0 or j.k > shape.listen))


def boundary_gaps(sched: CueSchedule, shape: JieShape) -> list[float]:
    """For each cycle, how far (compiled seconds) its start is from the last message before it
    (the most a cycle may be moved earlier without reordering the music)."""
    out = []
    for cycle in range(shape.cycles):
        boundary = cycle * shape.n * shape.jie_s
        before = [t for t in sched.times if t < boundary - 1e-9]
        out.append(boundary - max(before) if before else boundary + 3600.0)
    return out


@dataclass
class Followed:
    """A 射節 followed: its shape, the drummer's strokes, where the following stands."""

    cue: str
    shape: JieShape
    go: float  # scheduled at (show clock)
    fit: DrumFit
    gaps: list[float]
    entered: bool = False
    next_cycle: int = 1
    offset: int = 0  # the drummer's stroke number of the accompaniment's cycle 0 start
    waiting: str = ""  # why it waits ("": it follows)
    holding: bool = False  # a cycle waits at its boundary for the drum to come back
    grids: list[dict[str, Any]] = field(default_factory=list)


class DrumFollow:
    """The drum leads (see the module docstring)."""

    def __init__(self, player: Any, heard: HeardDrum, mode: str = "hold",
                 output_latency_s: float = 0.0) -> None:
        if mode not in FOLLOW_MODES:
            raise ValueError(f"follow mode {mode!r}: expected one of {', '.join(FOLLOW_MODES)}")
        self.player = player
        self.heard = heard
        self.mode = mode
        self.output_latency_s = output_latency_s
        self.base: dict[str, CueSchedule] = dict(player.schedules)
        self.drum_channels: dict[str, frozenset[int]] = {}
        notes_by_cue: dict[str, list[Any]] = {}
        for note in player.plan.timeline.notes:
            notes_by_cue.setdefault(note.cue, []).append(note)
        for cid in heard.shapes:
            notes = notes_by_cue.get(cid, [])
            drum = {n.channel for n in notes if n.instrument in DRUMS}
            other = {n.channel for n in notes if n.instrument not in DRUMS}
            self.drum_channels[cid] = frozenset(drum - other)
        self.following: Followed | None = None
        self.current = ""

    def attach(self) -> DrumFollow:
        """Hook into the player (before it opens; after the ``HeardDrum``)."""
        self.player.machine.planner = self.plan
        self.heard.listeners.append(self.on_stroke)
        self.heard.placer = self.place
        self.player.add_watcher(self.watch)
        self.player.status.provide("follow", lambda: self.current)
        self.current = f"follow ({self.mode}): no 射節 yet"
        return self

    # the state machine's planner -----------------------------------------------------------
    def plan(self, cue: CueInfo, t0: float) -> tuple[float, float]:
        """A 射節 about to be scheduled: loaded as followed; it starts where it was asked to
        (its listening 節 are silent: nothing sounds before the entry is placed)."""
        shape = self.heard.shapes.get(cue.id)
        if shape is None:
            return t0, 1.0
        sched = followed_schedule(self.base[cue.id], shape, self.drum_channels[cue.id])
        self.player.reload_cue(sched)
        self.following = Followed(cue.id, shape, t0, DrumFit(shape.spacing_s),
                                  boundary_gaps(sched, shape))
        self.following.waiting = "waiting for the drum"
        self.current = f"follow {cue.id}: waiting for the drum (its listening 節)"
        return t0, 1.0

    # strokes -------------------------------------------------------------------------------
    def place(self, event: StrokeHeard, cid: str) -> HeardStroke | None:
        """A stroke of the 射節 followed: numbered by the drummer's own count (the grid
        played is theirs, a cycle late), its deviation from the grid played once the
        accompaniment has come in (before: from the drummer's own fitted grid)."""
        f = self.following
        if f is None or f.cue != cid or event.t < f.go - f.shape.jie_s:
            return None
        number, _ = self._number(f, event.t)
        index = max(0, number - f.offset)
        cycle, k, s = f.shape.place(index)
        deviation = None
        cycles = self.player.machine.cycles(cid)
        if f.entered and not f.holding and cycle < len(cycles):
            start, end = cycles[cycle]
            jie = (end - start) / f.shape.n
            due = start + (k - 1 + f.shape.fractions[s]) * jie + self.output_latency_s
            if abs(event.t - due) < jie / 2:  # else: a cycle not placed on the drum yet
                deviation = (event.t - due) * 1000
        if deviation is None:
            grid = f.fit.grid()
            if grid is not None and len(f.fit) >= 2:
                deviation = (event.t - grid.at(number)) * 1000
        return HeardStroke(event.t, event.frame / (self.heard.rate or 1), cid, cycle, k, s,
                           index, deviation, event.strength_db, event.latency_s * 1000)

    def on_stroke(self, placed: HeardStroke, event: StrokeHeard) -> None:
        f = self.following
        if f is None or placed.cue != f.cue or event.t < f.go - f.shape.jie_s:
            return
        number, returned = self._number(f, event.t)
        if returned:
            f.fit = DrumFit(self._spacing(f), spacing_sd=RETURN_SPACING_SD)
            if f.holding:
                f.offset += f.shape.per_jie  # the held cycle comes in on the drum's next 節
                f.holding = False
        f.fit.add(event.t, number)
        if f.waiting:
            f.waiting = ""

    def _spacing(self, f: Followed) -> float:
        grid = f.fit.grid()
        last = f.fit.last
        return grid.spacing(last[0]) if grid is not None and last else f.shape.spacing_s

    def _number(self, f: Followed, t: float) -> tuple[int, bool]:
        """The drummer's number of a stroke at ``t``, and whether it comes after a silence.
        After a silence that held a cycle: the drum starts the held cycle again (the
        accompaniment then comes in on its next 節); after one the accompaniment played on
        through: the stroke is numbered where it falls on the grid played meanwhile."""
        last = f.fit.last
        if last is None or t - last[1] <= SILENT_STROKES * self._spacing(f):
            return f.fit.number(t), False
        if f.holding:
            return f.next_cycle * f.shape.per_cycle + f.offset, True
        placed = self._nearest(f, t) if f.entered else None
        return (placed + f.offset if placed is not None else f.fit.number(t)), True

    def _nearest(self, f: Followed, t: float) -> int | None:
        """The accompaniment's number of the stroke nearest ``t`` on the grid played."""
        best: tuple[float, int] | None = None
        for cycle, (start, end) in enumerate(self.player.machine.cycles(f.cue)):
            jie = (end - start) / f.shape.n
            for k in range(f.shape.n):
                for s, fraction in enumerate(f.shape.fractions):
                    due = start + (k + fraction) * jie + self.output_latency_s
                    if best is None or abs(t - due) < best[0]:
                        best = (abs(t - due), f.shape.index(cycle, k + 1, s))
        return None if best is None else best[1]

    # the player's watcher ------------------------------------------------------------------
    def watch(self) -> None:
        f = self.following
        if f is None:
            return
        machine = self.player.machine
        if f.cue not in machine.running() and f.cue not in machine.waiting():
            if f.entered and f.cue in machine.runs:
                self.current = f"follow {f.cue}: done ({len(f.fit)} strokes heard)"
            return
        now = time.perf_counter()
        if not f.entered:
            self._enter(f, now)
        elif f.next_cycle < f.shape.cycles:
            self._next_cycle(f, now)

    def _lead(self) -> float:
        return self.player.lead_s + MARGIN_S

    def _enter(self, f: Followed, now: float) -> None:
        machine = self.player.machine
        run = machine.runs[f.cue]
        shape = f.shape
        entry = shape.listen * shape.per_jie
        g0 = (run.bounds[0] - run.starts[0]) / (shape.n * shape.jie_s)
        entry_at = run.start + run.starts[0] + shape.listen * shape.jie_s * g0  # as it stands
        grid = f.fit.grid()
        if grid is not None:
            last = f.fit.last
            assert last is not None
            due = grid.at(entry) - self.output_latency_s
            if last[0] >= entry - 1 or now >= due - ENTRY_AHEAD_S:
                start, jie = cycle_line(grid, shape, 0)
                self._place(f, 0, start, jie, grid, now)
                f.entered = True
                self._log_listening(f, start, jie)
                return
        if now >= entry_at - ENTRY_AHEAD_S - self._lead():  # no drum yet: the entry moves on
            self._push(f, 0, now)
            f.waiting = "waiting for the drum"
            self.current = f"follow {f.cue}: waiting for the drum (its listening 節)"

    def _next_cycle(self, f: Followed, now: float) -> None:
        machine = self.player.machine
        c = f.next_cycle
        old_start = machine.cycles(f.cue)[c][0]
        grid = f.fit.grid()
        if grid is None:
            return
        start, jie = self._shifted(f, grid, c)
        if now < min(old_start, start) - DECIDE_S:
            return
        last = f.fit.last
        assert last is not None
        # the drum is silent when the input has been listened to well past its last stroke;
        # an input that fell behind (a busy machine) says nothing yet: the cycle is placed
        until = self.heard.heard_until
        silent = until is not None and until - last[1] > SILENT_STROKES * self._spacing(f)
        if silent and self.mode == "hold":
            if now >= old_start - DECIDE_S:
                self._push(f, c, now)
                f.holding = True
            f.waiting = "the drum stopped: holding"
            self.current = (f"follow {f.cue}: THE DRUM STOPPED — holding before 耦 "
                            f"{c + 1} until it plays again")
            return
        if silent:  # continue: on at the last 節, placed again when the drum comes back
            f.next_cycle += 1
            f.waiting = "the drum stopped: continuing"
            self.current = (f"follow {f.cue}: THE DRUM STOPPED — continuing at the last 節 "
                            f"(耦 {c + 1})")
            return
        self._place(f, c, start, jie, grid, now)
        f.next_cycle += 1

    def _shifted(self, f: Followed, grid: Grid, cycle: int) -> tuple[float, float]:
        """The drummer's line for ``cycle`` of the accompaniment (its numbering offset)."""
        if not f.offset:
            return cycle_line(grid, f.shape, cycle)
        shifted = Grid(grid.a, grid.b, grid.c, grid.origin - f.offset, grid.count)
        return cycle_line(shifted, f.shape, cycle)

    # placing a cycle -----------------------------------------------------------------------
    def _place(self, f: Followed, cycle: int, start: float, jie: float, grid: Grid,
               now: float) -> None:
        """Cycle ``cycle`` (and what follows it) to start at ``start`` with 節 ``jie``."""
        machine = self.player.machine
        run = machine.runs[f.cue]
        shape = f.shape
        start -= self.output_latency_s
        cur_start = run.starts[cycle]
        cur_jie = (run.bounds[cycle] - run.starts[cycle]) / shape.n
        earliest = now + self._lead()
        first_sound = shape.listen * jie if cycle == 0 else 0.0
        clipped = ""
        if start + first_sound < earliest:
            start = earliest - first_sound
            clipped = "late"
        shift = (start - run.start) - cur_start
        if cycle > 0:
            room = f.gaps[cycle] * cur_jie / shape.jie_s - 0.002
            if shift < -room:
                shift, clipped = -room, "cut short (the music before the boundary)"
        factor = jie / cur_jie
        if not 0.5 <= factor <= 2.0:  # not a drum this 射節 can follow: keep the 節
            factor, clipped = 1.0, f"the drum's 節 ({jie:.3f} s) is out of reach"
        self.player.act(machine.retime(f.cue, cur_start, factor, shift))
        played_start = run.start + run.starts[cycle]
        played_jie = (run.bounds[cycle] - run.starts[cycle]) / shape.n
        first = cycle * shape.per_cycle + f.offset
        record = {"cue": f.cue, "cycle": cycle, "t": now,
                  "drum": {"spacing_s": round(grid.spacing(first), 6),
                           "drift_per_cycle": round(2 * grid.c * shape.per_cycle
                                                    / grid.spacing(first), 6),
                           "jie_starts": [round(grid.at(first + k * shape.per_jie), 6)
                                          for k in range(shape.n)],
                           "strokes": grid.count},
                  "played": {"start": round(played_start, 6), "jie_s": round(played_jie, 6),
                             "output_latency_ms": round(self.output_latency_s * 1000, 3)}}
        if clipped:
            record["clipped"] = clipped
        self.player.log.follow(record)
        f.grids.append(record)
        f.waiting = ""
        self.current = (f"follow {f.cue}: 耦 {cycle + 1} on the drum — 節 {played_jie:.3f} s "
                        f"(compiled {shape.jie_s:g}), {grid.count} strokes heard"
                        + (f"; {clipped}" if clipped else ""))

    def _push(self, f: Followed, cycle: int, now: float) -> None:
        """Keep cycle ``cycle``'s start (its entry, for the first) PUSH_S ahead: waiting."""
        machine = self.player.machine
        run = machine.runs[f.cue]
        shape = f.shape
        cur_start = run.starts[cycle]
        g = (run.bounds[cycle] - cur_start) / (shape.n * shape.jie_s)
        first_sound = shape.listen * shape.jie_s * g if cycle == 0 else 0.0
        sounds_at = run.start + cur_start + first_sound
        if sounds_at - now > PUSH_S / 2:
            return
        shift = now + PUSH_S - sounds_at
        self.player.act(machine.retime(f.cue, cur_start, 1.0, shift))

    def _log_listening(self, f: Followed, start: float, jie: float) -> None:
        """The first cycle's listening 節, the drum's alone, on the grid the accompaniment
        entered on (the 節 records of the first cycle are then whole)."""
        for k in range(1, f.shape.listen + 1):
            at = start + (k - 1) * jie
            self.player.log.write({"event": "jie", "t": at, "k": k, "n": f.shape.n,
                                   "cue": f.cue, "cycle": 0, "by": "drum"})

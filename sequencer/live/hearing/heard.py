"""The drum heard, at the player (``live --hear``): each stroke placed on the running 射節's
grid, its deviation, the running 「間若一」 verdict, the show log, the judge.

``HeardDrum`` hooks into a ``Player`` (before it opens) as Link does: a watcher after every step
reads what the hearing process (``sequencer.live.hearing.hearer``) reported and

- places each stroke on the grid in force — the 射節 as it is being played, each 耦 cycle's
  start and end on the show clock (``CueList.cycles``: the 節 sent; under ``--follow``, the
  drummer's own grid as followed) — at the nearest of its strokes (the drum pattern's, spaced
  evenly in each 節: ``JieShape``); its deviation from that stroke is what the drummer reads on
  the strip (console, performers' page, ``/operator``);
- judges 「間若一」 as ``check`` does, on the strokes' own times (the input's frames: the audio
  clock, as a recording is timed): every stroke of the 射節 so far fitted to one grid, its
  largest deviation against ``tolerance_ms`` (the audio default, 10 ms);
- writes every stroke to the show log (a ``heard`` record: ``check LOG`` proves what the
  drummer did), and the input's troubles (``hearing`` records: gaps, xruns);
- gives the judge the drum as heard: a release marked live is placed in the 射節's compiled time
  from the last stroke heard (``Operator.anchor``), so 「不鼓不釋」 asks whether the release
  accorded with the drum the archers heard.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cues.errors import UserError
from sequencer.check.grid import MIN_ONSETS, check_grid
from sequencer.check.tempo import DEFAULT_TOLERANCE_MS
from sequencer.live.hearing.drum_grid import JieShape
from sequencer.live.hearing.hearer import Hearer
from sequencer.live.protocol import (
    HeardUntil,
    HearingFailed,
    HearingStatus,
    InputGap,
    StrokeHeard,
)
from sequencer.timeline import drums
from sequencer.timeline.timebase import TICKS_PER_SECOND, split_evenly

STRIP = 16  # strokes the strip shows
VERDICT_STROKES = 480  # the verdict fits the last this many strokes of a 射節


@dataclass(frozen=True)
class HeardStroke:
    """A stroke as placed: ``t`` (show clock), ``audio_s`` (the input's own clock, seconds),
    the 射節 it fell in with its cycle, 節 k and stroke (None: no 射節 was playing), its number
    in the cue, its deviation from the grid in force (ms, + late), strength and latency."""

    t: float
    audio_s: float
    cue: str | None
    cycle: int | None
    k: int | None
    stroke: int | None
    index: int | None
    deviation_ms: float | None
    strength_db: float
    latency_ms: float

    def to_json(self) -> dict[str, Any]:
        return {"t": self.t, "k": self.k, "cycle": self.cycle, "stroke": self.stroke,
                "deviation_ms": None if self.deviation_ms is None
                else round(self.deviation_ms, 3)}


@dataclass(frozen=True)
class Verdict:
    """「間若一」 so far in a 射節: the strokes heard, the largest deviation from their own
    grid, whether it holds at the tolerance."""

    cue: str
    count: int
    max_deviation_ms: float
    ok: bool
    tolerance_ms: float

    def words(self) -> str:
        sign = "間若一" if self.ok else "not 間若一"
        return (f"{sign}: {self.count} strokes, largest {self.max_deviation_ms:.1f} ms "
                f"(±{self.tolerance_ms:g})")


def jie_shape(player: Any, cue_id: str) -> JieShape | None:
    """The shape of the 射節 ``cue_id`` as the player's plan compiled it (None: no 射節)."""
    cue = player.rite.cue(cue_id)
    if cue.shooting is None:
        return None
    span = player.timeline.span(cue_id)
    if not span.jie_ticks:
        return None
    settings = player.settings
    per_jie = len(drums.strokes(settings.drum_pattern, settings.drum_reading))
    offsets = split_evenly(span.jie_ticks, per_jie)
    return JieShape(span.jie, span.listen, per_jie, span.jie_ticks / TICKS_PER_SECOND,
                    max(1, span.cycles), tuple(o / span.jie_ticks for o in offsets))


class HeardDrum:
    """The drum heard, at the player (see the module docstring)."""

    def __init__(self, player: Any, hearer: Hearer,
                 tolerance_ms: float = DEFAULT_TOLERANCE_MS["audio"]) -> None:
        self.player = player
        self.hearer = hearer
        self.tolerance_ms = tolerance_ms
        self.shapes: dict[str, JieShape] = {}
        for info in player.machine.cues:
            shape = jie_shape(player, info.id) if info.kind == "射節" else None
            if shape is not None:
                self.shapes[info.id] = shape
        self.strokes: list[HeardStroke] = []
        self.recent: deque[HeardStroke] = deque(maxlen=STRIP)
        self.by_cue: dict[str, list[HeardStroke]] = {}
        self.verdicts: dict[str, Verdict] = {}
        self.listeners: list[Callable[[HeardStroke, StrokeHeard], None]] = []
        # places a stroke of a 射節 otherwise (the drum followed, before its entry); None: here
        self.placer: Callable[[StrokeHeard, str], HeardStroke | None] | None = None
        self.lost = ""  # what the input lost, in words ("": nothing)
        self.heard_until: float | None = None  # the input listened to up to (show clock)
        self.failed = ""
        self._run_start: dict[str, float] = {}  # the run of each cue the strokes belong to
        self._started_file = False

    def attach(self) -> HeardDrum:
        """Hook into the player (before it opens)."""
        self.player.add_watcher(self.watch)
        self.player.add_closer(self.hearer.close)
        self.player.status.provide("hear", self.line)
        self.player.status.provide_view("heard", self.strip)
        self.player.operator.anchor = self.anchor
        ready = self.hearer.ready
        if ready is not None:
            self.player.log.hearing({
                "what": "ready", "source": ready.source, "port": ready.own_name,
                "rate": ready.rate, "period": ready.period,
                "input_latency_frames": ready.input_latency,
                "extra_latency_ms": round(ready.extra_latency_s * 1000, 3)})
        return self

    @property
    def rate(self) -> int:
        ready = self.hearer.ready
        return ready.rate if ready is not None else 0

    # the player's watcher ------------------------------------------------------------------
    def watch(self) -> None:
        """After every step: start a file at the show's beginning; take what was heard."""
        if not self._started_file and self.player.begun_at is not None:
            self._started_file = True
            if self.hearer.spec.kind == "file":
                self.hearer.hear_from(self.player.begun_at)
                self.player.log.hearing({"what": "file-start", "t": self.player.begun_at})
        for event in self.hearer.new_events():
            if isinstance(event, StrokeHeard):
                self._stroke(event)
            elif isinstance(event, HeardUntil):
                self.heard_until = event.t
            elif isinstance(event, InputGap):
                self.player.log.hearing({"what": "gap", "t": event.t, "frame": event.frame,
                                         "frames": event.frames})
            elif isinstance(event, HearingStatus):
                self._status(event)
            elif isinstance(event, HearingFailed):
                self.failed = f"HEARING LOST: {event.text}"
                self.player.status.say(self.failed)
                self.player.log.hearing({"what": "failed", "text": event.text})

    def _status(self, event: HearingStatus) -> None:
        record: dict[str, Any] = {"what": "status", "t": event.t, "xruns": event.xruns,
                                  "lost_frames": event.lost_frames, "dropped": event.dropped}
        if event.xrun_frames:
            record["xrun_frames"] = list(event.xrun_frames)
        if event.ended:
            record["ended"] = True
        self.player.log.hearing(record)
        if event.lost_frames or event.dropped:
            rate = self.rate or 1
            self.lost = (f"input lost {event.lost_frames / rate * 1000:.0f} ms in "
                         f"{event.xruns} xrun(s)")

    def _stroke(self, event: StrokeHeard) -> None:
        placed = self.place(event)
        self.strokes.append(placed)
        self.recent.append(placed)
        record: dict[str, Any] = {
            "t": event.t, "frame": round(event.frame, 3), "rate": self.rate,
            "strength_db": round(event.strength_db, 2),
            "latency_ms": round(event.latency_s * 1000, 3)}
        if placed.cue is not None:
            shape = self.shapes[placed.cue]
            record.update({"cue": placed.cue, "cycle": placed.cycle, "k": placed.k,
                           "n": shape.n, "stroke": placed.stroke, "per_jie": shape.per_jie,
                           "index": placed.index,
                           "deviation_ms": None if placed.deviation_ms is None
                           else round(placed.deviation_ms, 3)})
            self.by_cue.setdefault(placed.cue, []).append(placed)
            self._judge(placed.cue)
        self.player.log.heard(record)
        for listener in self.listeners:
            listener(placed, event)

    # where a stroke falls ------------------------------------------------------------------
    def shooting(self, t: float) -> str | None:
        """The 射節 playing (or waiting to start, or just ended) around ``t``."""
        machine = self.player.machine
        best = None
        for cid, run in machine.runs.items():
            shape = self.shapes.get(cid)
            if shape is None or not run.starts:
                continue
            cycles = machine.cycles(cid)
            if not cycles:
                continue
            slack = shape.spacing_s
            if cycles[0][0] - shape.jie_s <= t <= cycles[-1][1] + slack:
                best = cid if best is None or run.start > machine.runs[best].start else best
        return best

    def place(self, event: StrokeHeard) -> HeardStroke:
        """Where the stroke falls on the grid in force."""
        rate = self.rate or 1
        audio_s = event.frame / rate
        latency_ms = event.latency_s * 1000
        t = event.t
        cid = self.shooting(t)
        if cid is None:
            return HeardStroke(t, audio_s, None, None, None, None, None, None,
                               event.strength_db, latency_ms)
        if self.placer is not None:
            placed = self.placer(event, cid)
            if placed is not None:
                return placed
        shape = self.shapes[cid]
        best: tuple[float, int] | None = None
        for cycle, (start, end) in enumerate(self.player.machine.cycles(cid)):
            jie = (end - start) / shape.n
            if not start - jie <= t <= end + jie:
                continue
            for k in range(shape.n):
                for s, fraction in enumerate(shape.fractions):
                    due = start + (k + fraction) * jie
                    if best is None or abs(t - due) < abs(best[0]):
                        best = (t - due, shape.index(cycle, k + 1, s))
        if best is None:
            return HeardStroke(t, audio_s, cid, None, None, None, None, None,
                               event.strength_db, latency_ms)
        deviation, index = best
        cycle, k, s = shape.place(index)
        return HeardStroke(t, audio_s, cid, cycle, k, s, index, deviation * 1000,
                           event.strength_db, latency_ms)

    def _judge(self, cid: str) -> None:
        """「間若一」 on the strokes of ``cid``'s 射節 so far (their audio clock)."""
        strokes = [s for s in self.by_cue[cid] if s.index is not None][-VERDICT_STROKES:]
        by_index: dict[int, float] = {}
        for s in strokes:  # two strokes on one place: the first counts (as check's refit)
            by_index.setdefault(s.index, s.audio_s)  # type: ignore[arg-type]
        if len(by_index) < MIN_ONSETS:
            return
        order = sorted(by_index)
        try:
            block = check_grid([by_index[i] for i in order], self.tolerance_ms, cid, order)
        except UserError:
            return
        self.verdicts[cid] = Verdict(cid, block.count, block.max_deviation_ms, block.ok,
                                     self.tolerance_ms)

    # the judge -----------------------------------------------------------------------------
    def anchor(self, cid: str, now: float) -> float | None:
        """Where ``now`` falls in ``cid``'s compiled time, counted from the last stroke heard
        in it at its 節's spacing as it stands (None: no stroke of it heard yet)."""
        heard = [s for s in self.by_cue.get(cid, ()) if s.index is not None]
        if not heard:
            return None
        last = heard[-1]
        shape = self.shapes[cid]
        assert last.index is not None and last.cycle is not None
        cycles = self.player.machine.cycles(cid)
        start, end = cycles[min(last.cycle, len(cycles) - 1)]
        jie = (end - start) / shape.n
        if not jie > 0:
            return None
        return shape.compiled_s(last.index) + (now - last.t) * shape.jie_s / jie

    # views ---------------------------------------------------------------------------------
    def verdict(self) -> Verdict | None:
        """The verdict of the 射節 heard last."""
        last = next((s.cue for s in reversed(self.strokes) if s.cue is not None), None)
        return self.verdicts.get(last) if last is not None else None

    def line(self) -> str:
        """The console's line: the last stroke's deviation, the verdict, the input's
        troubles."""
        if self.failed:
            return self.failed
        if not self.strokes:
            return f"heard: nothing yet ({self.hearer.spec.describe()})"
        last = self.strokes[-1]
        where = (f"節 {last.k} stroke {last.stroke + 1} {last.deviation_ms:+.1f} ms"
                 if last.deviation_ms is not None and last.stroke is not None
                 else "off the 射節")
        verdict = self.verdict()
        parts = [f"heard {len(self.strokes)}: {where}"]
        if verdict is not None:
            parts.append(verdict.words())
        if self.lost:
            parts.append(self.lost)
        return " · ".join(parts)

    def strip(self) -> dict[str, Any] | None:
        """What the pages' strip shows: the last strokes' deviations and the verdict."""
        if not self.strokes and not self.failed:
            return None
        verdict = self.verdict()
        return {
            "strokes": [s.to_json() for s in self.recent if s.deviation_ms is not None
                        and math.isfinite(s.deviation_ms)],
            "count": len(self.strokes),
            "tolerance_ms": self.tolerance_ms,
            "verdict": None if verdict is None else {
                "ok": verdict.ok, "count": verdict.count,
                "max_deviation_ms": round(verdict.max_deviation_ms, 2)},
            "problem": self.failed or self.lost,
        }

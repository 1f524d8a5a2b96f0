"""The live cue discipline: a small, pure state machine (no I/O, no clock of its own).

Every method takes ``now`` (seconds on the show's monotonic clock) and returns the actions the
player must carry out — sender commands of ``sequencer.live.protocol`` — so tests drive it with
a ``FakeClock`` and compare exact lists::

    StartCue(cue_id, t0)         start the cue's music at absolute time t0
    EndCueAt(cue_id, t)          end it at t (a 樂闋 stop at a rest point)
    CancelCue(cue_id)            end it now (note-offs), or forget a start not yet reached
    RetimeCue(cue_id, at_s, f, d)  from cue time at_s on, stretch the cue by f and move it by d
                                 (射節 nudge; the drum followed)
    JumpCue(cue_id, t, to_s)     at t (a piece's end) go on from to_s (無算樂: the piece chosen)
    HoldOutput() ResumeOutput()  pause and continue everything (later times move)
    PanicOutput(1|2)             1: note-offs for what sounds, every cue ends; 2: CC 123/120

The discipline (after Linux Show Player's cue lifecycle):

- The **standby** cue is the next one the operator starts; its ``at`` text is the ritual moment
  to watch for. **GO** starts it after its pre-wait, under the rules of
  ``sequencer.live.go_safety``: a GO within ``go_guard_s`` (1 s) of the last is ignored; a GO
  while a cue waits to start (a ``follow`` cue, a pre-wait) starts nothing new; a GO while music
  sounds asks for a second press, which cuts that music (at once, with note-offs: a cut cue's
  ``follow`` cue then runs instead) and starts the standby (``go_cuts``: the first press does).
  Why a GO did nothing is in ``go_refusal``.
- A cue **ends** when its music has played once (its span), unless it **runs until stopped**: a
  cue with a stop rule (「樂闋」 at a moment of the text) or an operator-ended cue (無算樂) loops
  its music until **stop**. Stop ends it at its next **rest point** (the first moment at least
  ``stop_lead_s`` ahead where none of its notes sounds across: a 節 or phrase boundary, so no
  note is cut); a second stop ends it at once. Stop on a cue of fixed length ends it at once.
- When a cue ends, after its post-wait, a ``follow`` cue after it or an ``after:ID`` cue naming
  it starts (after its own pre-wait). Its exact start is handed over as soon as it is known, so
  the sender joins them without a gap. ``signal:NAME`` cues wait for GO like ``go`` cues.
- **hold** pauses everything (the sounding notes are released); **resume** continues, and every
  time still ahead moves by the time held. GO is ignored while held.
- **skip** / **back** move the standby without touching what runs.
- **panic**: the first press ends every cue and releases the notes; a second press (with no GO
  between) also sends CC 123 and 120 on every channel.
- **nudge** (tempo) never changes a 射節 inside a 耦's cycle (「間若一」): it applies from the
  next cycle boundary of the running 射節. **retime** (the drum followed, ``live --follow``)
  moves and stretches the rest of a 射節 from a cue time its caller chooses (a cycle
  boundary, or the start before anything sounded); ``cycles`` gives each 耦 cycle's start and
  end on the show clock as they now stand.
- **pick** (無算樂, 「升歌間合無數也」): a cue that runs until stopped and plays several pieces
  plays them in order, again and again; the operator may choose the piece to play when the
  sounding one ends (its end is a rest point: no note is cut), and the music goes on in order
  from there. A choice less than ``stop_lead_s`` before the piece's end waits for the next end.
- **auto** (headless): no operator — GO cues start ``go_gap_s`` after the previous cue ends and
  cues that run until stopped play one pass: the show then runs exactly as the offline timeline.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sequencer.live.go_safety import DEFAULT_GO_GUARD_S, GoDecision, GoSafety
from sequencer.live.protocol import (
    CancelCue,
    CueAction,
    CueLogEntry,
    CueStatus,
    EndCueAt,
    HoldOutput,
    JumpCue,
    PanicOutput,
    ResumeOutput,
    RetimeCue,
    StartCue,
)

PLAYING = frozenset({CueStatus.RUNNING, CueStatus.ENDING})  # started, not ended
UNFINISHED = PLAYING | {CueStatus.WAITING}



@dataclass(frozen=True)
class CueInfo:
    """What the state machine needs to know of a cue."""

    id: str
    length_s: float  # one pass of its music (the compiled span)
    trigger: str = "go"  # go | follow | after | signal
    target: str | None = None  # after:ID / signal:NAME
    loops: bool = False  # runs until stopped (stop rule, operator-ended)
    pre_wait_s: float = 0.0
    post_wait_s: float = 0.0
    rest_points: tuple[float, ...] = ()  # cue-relative; the last is the end of a pass
    cycle_s: float | None = None  # 射節: one 耦's cycle
    kind: str = ""
    title: str = ""
    at: str = ""
    stop_text: str = ""  # e.g. 「樂闋」 at 「主人送於門外，再拜」
    stop_at: str = ""  # the moment of its stop rule, 「主人送於門外，再拜」 ("": none)
    sections: tuple[tuple[str, float, float], ...] = ()  # its pieces: title, start, end (s)
    rules: tuple[str, ...] = ()  # what the texts forbid or require once it begins (their words)


@dataclass
class CueRun:
    """A cue's live state. Times are absolute on the show clock (moved by holds)."""

    status: CueStatus
    start: float
    end: float | None = None  # known end (None: runs until stopped)
    factor: float = 1.0
    length: float = 0.0  # one pass, cue time after nudges
    rests: list[float] = field(default_factory=list)
    bounds: list[float] = field(default_factory=list)  # 射節: each cycle's end (cue time)
    loops: bool = False
    starts: list[float] = field(default_factory=list)  # 射節: each cycle's start (cue time)
    anchor: tuple[float, float] = (0.0, 0.0)  # (cue time, music position then): after a jump
    jump: tuple[float, int] | None = None  # a pick waiting: (cue time, the piece to go on with)


class CueList:
    """The live state of a show (see the module docstring)."""

    def __init__(self, cues: Sequence[CueInfo], *, auto: bool = False, go_gap_s: float = 2.0,
                 go_guard_s: float = DEFAULT_GO_GUARD_S, go_cuts: bool = False,
                 stop_lead_s: float = 0.05) -> None:
        if not cues:
            raise ValueError("a show needs at least one cue")
        self.cues = list(cues)
        self.index = {c.id: i for i, c in enumerate(self.cues)}
        self.auto = auto
        self.go_gap_s = go_gap_s
        self.safety = GoSafety(go_guard_s, cuts=go_cuts)
        self.go_refusal = ""  # why the last GO or quit did nothing ("": it went ahead)
        self.stop_lead_s = stop_lead_s
        self.pos = 0  # the standby cue
        self.runs: dict[str, CueRun] = {}
        self.held_at: float | None = None
        self.panic_stage = 0
        self.log: list[CueLogEntry] = []  # start/end records, in order
        self.finished_at: float | None = None
        # asked for each cue's start as it is scheduled: (start, stretch) instead of (t0, 1)
        # (Link follow: a 射節 on the session's next phase 0, at its tempo)
        self.planner: Callable[[CueInfo, float], tuple[float, float]] | None = None

    # views ---------------------------------------------------------------------------------
    @property
    def standby(self) -> CueInfo | None:
        return self.cues[self.pos] if self.pos < len(self.cues) else None

    @property
    def held(self) -> bool:
        return self.held_at is not None

    def running(self) -> list[str]:
        return [cid for cid, r in self.runs.items() if r.status in PLAYING]

    def waiting(self) -> list[str]:
        return [cid for cid, r in self.runs.items() if r.status == CueStatus.WAITING]

    @property
    def done(self) -> bool:
        """Every cue has been dealt with and nothing runs or waits."""
        return self.pos >= len(self.cues) and not self.running() and not self.waiting()

    def next_deadline(self) -> float | None:
        """The next moment ``tick`` has something to do (None: nothing until a command)."""
        if self.held:
            return None
        times = []
        for r in self.runs.values():
            if r.status == CueStatus.WAITING:
                times.append(r.start)
            elif r.status in PLAYING and r.end is not None:
                times.append(r.end)
        return min(times) if times else None

    def cue_time(self, cue_id: str, now: float) -> float:
        """Seconds the cue has run (holds excluded)."""
        r = self.runs[cue_id]
        t = (self.held_at if self.held_at is not None else now) - r.start
        return max(0.0, t)

    def position(self, cue_id: str, ct: float) -> float:
        """Where in one pass of its music the cue is at cue time ``ct``: a looping cue starts
        over every pass, and goes on from another piece after a pick."""
        r = self.runs[cue_id]
        anchor_ct, anchor_pos = r.anchor
        if r.jump is not None and ct >= r.jump[0]:
            anchor_ct, anchor_pos = r.jump[0], self._sections(cue_id)[r.jump[1]][1]
        pos = anchor_pos + ct - anchor_ct
        return pos % r.length if r.length > 0 else pos

    def _sections(self, cue_id: str) -> tuple[tuple[str, float, float], ...]:
        return self.cues[self.index[cue_id]].sections

    def choosing(self) -> str | None:
        """The running cue whose next piece the operator may choose (a 無算樂 that runs until
        stopped), None when there is none."""
        for cid in self.running():
            r = self.runs[cid]
            if (r.status == CueStatus.RUNNING and r.loops and r.end is None
                    and len(self._sections(cid)) > 1):
                return cid
        return None

    def piece(self, cue_id: str, now: float) -> tuple[int, float, int, bool]:
        """The piece sounding in ``cue_id`` at ``now``: (its index, seconds into it, the index
        of the piece that comes next, whether the operator chose that one)."""
        sections = self._sections(cue_id)
        r = self.runs[cue_id]
        pos = self.position(cue_id, self.cue_time(cue_id, now))
        i = max(0, bisect.bisect_right([a for _, a, _ in sections], pos) - 1)
        if r.jump is not None:
            return i, pos - sections[i][1], r.jump[1], True
        return i, pos - sections[i][1], (i + 1) % len(sections), False

    # commands ------------------------------------------------------------------------------
    def begin(self, now: float) -> list[CueAction]:
        """Start of the show: in auto mode the first cue starts now."""
        if self.auto and self.standby is not None:
            return self._start_standby(now)
        return []

    def sounding(self) -> list[str]:
        """Cues whose music plays and is not already ending (a GO would cut them)."""
        return [cid for cid, r in self.runs.items() if r.status == CueStatus.RUNNING
                and self.cues[self.index[cid]].length_s > 0]

    def go(self, now: float) -> list[CueAction]:
        if self.held or self.standby is None:
            self.go_refusal = "GO ignored: " + ("held" if self.held else "no cue at standby")
            return []
        decision = self._decide(now, self.standby.id)
        if not decision.go:
            return []
        before = self.pos
        out = self._cut(decision.cut, now)
        if self.pos != before:  # the cut cue's follow cue runs now: that was this GO's cue
            return out + self.tick(now)
        return out + self._start_standby(now)

    def start_cue(self, cue_id: str, now: float) -> list[CueAction]:
        """Make ``cue_id`` the standby cue and GO (OSC ``/cue/{id}/start``)."""
        if cue_id not in self.index:
            raise KeyError(cue_id)
        if self.held:
            self.go_refusal = "GO ignored: held"
            return []
        decision = self._decide(now, cue_id)
        if not decision.go:
            return []
        out = self._cut(decision.cut, now)
        self.pos = self.index[cue_id]
        return out + self._start_standby(now)

    def may_quit(self, now: float) -> bool:
        """A quit while music sounds needs a second press (``go_refusal`` says so)."""
        self.go_refusal = self.safety.quit(now, self.sounding())
        return not self.go_refusal

    def _decide(self, now: float, target: str) -> GoDecision:
        decision = self.safety.go(now, target, self.sounding(), self.waiting())
        self.go_refusal = decision.reason
        return decision

    def _cut(self, cue_ids: tuple[str, ...], now: float) -> list[CueAction]:
        """End the cues at once (a confirmed GO over sounding music)."""
        out: list[CueAction] = []
        for cid in cue_ids:
            r = self.runs[cid]
            known = r.end is not None
            r.end, r.status = now, CueStatus.ENDING
            out.append(CancelCue(cid))
            out += self._reschedule_followers(cid) if known else self._end_known(cid)
        return out

    def stop(self, now: float) -> list[CueAction]:
        """樂闋: end what runs — looping cues at their next rest point, a second stop (or a cue
        of fixed length) at once."""
        out: list[CueAction] = []
        for cid in self.running():
            r = self.runs[cid]
            if r.status == CueStatus.RUNNING and r.loops and r.end is None:
                r.end = self._next_rest(r, now)
                r.status = CueStatus.ENDING
                out.append(EndCueAt(cid, r.end))
                out += self._end_known(cid)
            elif r.end is None or r.end > now:
                out.append(CancelCue(cid))
                r.end = now
                r.status = CueStatus.ENDING
                out += self._reschedule_followers(cid)
        out += self.tick(now)
        return out

    def hold(self, now: float) -> list[CueAction]:
        if self.held:
            return []
        self.held_at = now
        return [HoldOutput()]

    def resume(self, now: float) -> list[CueAction]:
        if self.held_at is None:
            return []
        shift = now - self.held_at
        self.held_at = None
        for r in self.runs.values():
            if r.status in UNFINISHED:
                r.start += shift
                if r.end is not None:
                    r.end += shift
        return [ResumeOutput(), *self.tick(now)]

    def skip(self) -> list[CueAction]:
        self.pos = min(self.pos + 1, len(self.cues))
        return []

    def back(self) -> list[CueAction]:
        self.pos = max(self.pos - 1, 0)
        return []

    def panic(self, now: float) -> list[CueAction]:
        self.panic_stage = 2 if self.panic_stage >= 1 else 1
        for cid, r in self.runs.items():
            if r.status in UNFINISHED:
                r.status = CueStatus.STOPPED
                r.end = now
                self.log.append(CueLogEntry("end", cid, now, "panic"))
        self.held_at = None
        return [PanicOutput(self.panic_stage)]

    def pick(self, cue_id: str, to: int, now: float) -> list[CueAction]:
        """After the piece sounding in ``cue_id`` (at its end, or at the next one's when it ends
        within ``stop_lead_s``), go on with piece ``to`` (an index of its sections)."""
        sections = self._sections(cue_id)
        r = self.runs[cue_id]
        if r.jump is not None and self.cue_time(cue_id, now) >= r.jump[0]:
            self._land(r)
        ct = self.cue_time(cue_id, now)
        pos = self.position(cue_id, ct)
        i = max(0, bisect.bisect_right([a for _, a, _ in sections], pos) - 1)
        at = ct + sections[i][2] - pos
        if at - ct < self.stop_lead_s:  # too close: after the piece that comes next
            nxt = (i + 1) % len(sections)
            gap = (sections[nxt][1] - sections[i][2] if nxt else
                   r.length - sections[i][2] + sections[0][1])
            i, at = nxt, at + gap + sections[nxt][2] - sections[nxt][1]
        if to == (i + 1) % len(sections):  # what comes next anyway
            r.jump = None
            return [JumpCue(cue_id, r.start + at, None)]
        r.jump = (at, to)
        return [JumpCue(cue_id, r.start + at, sections[to][1])]

    def _land(self, r: CueRun) -> None:
        """A pick's jump has happened: it is the new anchor of the music's position."""
        assert r.jump is not None
        cid = next(c for c, run in self.runs.items() if run is r)
        r.anchor = (r.jump[0], self._sections(cid)[r.jump[1]][1])
        r.jump = None

    def nudge(self, factor: float, now: float) -> list[CueAction]:
        """Stretch the running 射節 from its next 耦 cycle by ``factor`` (> 1: slower)."""
        if not 0.5 <= factor <= 2.0:
            raise ValueError("a nudge factor must be within 0.5–2")
        out: list[CueAction] = []
        for cid in self.running():
            r = self.runs[cid]
            elapsed = self.cue_time(cid, now)
            ahead = [b for b in r.bounds if b > elapsed + self.stop_lead_s]
            if not ahead or r.end is None:
                continue
            at = ahead[0]

            def stretch(x: float, at: float = at) -> float:
                return at + (x - at) * factor if x > at else x

            r.bounds = [stretch(b) for b in r.bounds]
            r.starts = [stretch(b) for b in r.starts]
            r.rests = [stretch(p) for p in r.rests]
            old_length = r.length
            r.length = stretch(r.length)
            r.end += r.length - old_length
            r.factor *= factor
            out.append(RetimeCue(cid, at, factor))
            out += self._reschedule_followers(cid)
        return out

    def retime(self, cue_id: str, at_s: float, factor: float, shift_s: float
               ) -> list[CueAction]:
        """From cue time ``at_s`` on, stretch the cue by ``factor`` and move it by ``shift_s``
        (a time ``t ≥ at_s`` becomes ``at_s + shift_s + (t − at_s) × factor``): the drum
        followed. The caller keeps 「間若一」: ``at_s`` is a cycle boundary ahead (or the start,
        before anything sounded)."""
        if not 0.5 <= factor <= 2.0:
            raise ValueError("a retime factor must be within 0.5–2")
        r = self.runs.get(cue_id)
        if r is None or r.status not in UNFINISHED:
            return []

        def moved(x: float, *, ends: bool = False) -> float:
            after = x > at_s if ends else x >= at_s  # a cycle ending at at_s stays
            return at_s + shift_s + (x - at_s) * factor if after else x

        r.bounds = [moved(b, ends=True) for b in r.bounds]
        r.starts = [moved(b) for b in r.starts]
        r.rests = [moved(p) for p in r.rests]
        old_length = r.length
        r.length = moved(r.length, ends=True)
        if r.end is not None:
            r.end += r.length - old_length
        r.factor *= factor
        return [RetimeCue(cue_id, at_s, factor, shift_s), *self._reschedule_followers(cue_id)]

    def cycles(self, cue_id: str) -> list[tuple[float, float]]:
        """Each 耦 cycle of a 射節's run (its first pass) as (start, end) on the show clock."""
        r = self.runs[cue_id]
        return [(r.start + a, r.start + b) for a, b in zip(r.starts, r.bounds, strict=False)]

    def tick(self, now: float) -> list[CueAction]:
        """Advance to ``now``: waiting cues whose start has come run; cues whose end has come
        are done."""
        if self.held:
            return []
        out: list[CueAction] = []
        changed = True
        while changed:
            changed = False
            for cid, r in list(self.runs.items()):
                if r.status == CueStatus.WAITING and r.start <= now:
                    r.status = CueStatus.RUNNING
                    self.log.append(CueLogEntry("start", cid, r.start))
                    changed = True
                if r.jump is not None and r.status in PLAYING and r.start + r.jump[0] <= now:
                    self._land(r)
                if r.status in PLAYING and r.end is not None and r.end <= now:
                    r.status = CueStatus.DONE
                    self.log.append(CueLogEntry("end", cid, r.end))
                    changed = True
        if self.done and self.finished_at is None:
            self.finished_at = now
        return out

    # internals -----------------------------------------------------------------------------
    def _start_standby(self, now: float) -> list[CueAction]:
        cue = self.cues[self.pos]
        self.pos += 1
        self.panic_stage = 0
        return self._schedule(cue, now + cue.pre_wait_s) + self.tick(now)

    def _schedule(self, cue: CueInfo, t0: float) -> list[CueAction]:
        loops = cue.loops and not self.auto
        f = 1.0
        if self.planner is not None:
            t0, f = self.planner(cue, t0)
        bounds: list[float] = []
        if cue.cycle_s:
            n = round(cue.length_s / cue.cycle_s)
            bounds = [cue.cycle_s * c * f for c in range(1, n + 1)]
        length = cue.length_s * f
        run = CueRun(CueStatus.WAITING, t0, None if loops else t0 + length, length=length,
                     rests=[p * f for p in cue.rest_points], bounds=bounds, loops=loops,
                     starts=[0.0, *bounds[:-1]] if bounds else [])
        self.runs[cue.id] = run
        out: list[CueAction] = [StartCue(cue.id, t0)]
        return out + self._end_known(cue.id) if run.end is not None else out

    def _end_known(self, cue_id: str) -> list[CueAction]:
        """The cue's end is now known: schedule what follows it."""
        r = self.runs[cue_id]
        assert r.end is not None
        i = self.index[cue_id]
        done_at = r.end + self.cues[i].post_wait_s
        if self.pos >= len(self.cues):
            return []
        nxt = self.cues[self.pos]
        gap = 0.0
        if self.auto:  # as the offline timeline: every cue after the previous one
            follows = self.pos == i + 1
            gap = 0.0 if nxt.trigger == "follow" else self.go_gap_s
        else:
            follows = ((nxt.trigger == "follow" and self.pos == i + 1)
                       or (nxt.trigger == "after" and nxt.target == cue_id))
        if not follows:
            return []
        self.pos += 1
        # scheduling it schedules, in turn, what follows it when its end is known
        return self._schedule(nxt, done_at + gap + nxt.pre_wait_s)

    def _reschedule_followers(self, cue_id: str) -> list[CueAction]:
        """The cue's end moved: move the cues scheduled after it (not yet started)."""
        out: list[CueAction] = []
        i = self.index[cue_id]
        r = self.runs[cue_id]
        for j in range(i + 1, len(self.cues)):
            nxt = self.cues[j]
            fr = self.runs.get(nxt.id)
            if fr is None or fr.status != CueStatus.WAITING:
                break
            prev_end = r.end if j == i + 1 else self.runs[self.cues[j - 1].id].end
            if prev_end is None:
                break
            gap = self.go_gap_s if self.auto and nxt.trigger != "follow" else 0.0
            t0 = prev_end + self.cues[j - 1].post_wait_s + gap + nxt.pre_wait_s
            if abs(t0 - fr.start) < 1e-9:
                continue
            shift = t0 - fr.start
            fr.start = t0
            if fr.end is not None:
                fr.end += shift
            out += [CancelCue(nxt.id), StartCue(nxt.id, t0)]
        return out

    def _next_rest(self, r: CueRun, now: float) -> float:
        """The absolute time of the first rest point at least stop_lead_s from now."""
        length = r.length if r.length > 0 else 0.0
        rests = r.rests or [length]
        if length <= 0:
            return now + self.stop_lead_s
        ahead = now + self.stop_lead_s
        cid = next(c for c, run in self.runs.items() if run is r)
        within = self.position(cid, ahead - r.start)
        k = bisect.bisect_left(rests, within)
        if k < len(rests):
            return ahead + rests[k] - within
        return ahead + length - within + rests[0]

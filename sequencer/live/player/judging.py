"""The judge at a live show: each archer's release marked by the judge, judged 「不鼓不釋」 against
the running 射節's drum accords (``sequencer.judge.tally``) and tallied per cue.

A mark is pressed after the release it marks: the judge's delay (``mark_delay_s``, ``live
--mark-delay``; ``yuezheng reaction`` measures it) is taken off the press before it is judged
(docs/judging.md argues why and how). ``verdict`` is the short line the console shows for one
mark — its 耦 and 節, how far from the nearest drum accord, 釋 or 不釋 — and ``line`` the tally
with the median of the marks' offsets from their accords, so that a delay set wrong shows as a
steady offset while the 射節 runs. The judge presses at the loose, before the arrow lands: a
mark of the other outcome for the same side soon after (``CORRECT_S``) corrects the outcome of
the last one, keeping its time."""

from __future__ import annotations

import math
from typing import Any

from sequencer.judge.tally import (
    DEFAULT_TOLERANCE_MS,
    Decision,
    Release,
    ShootingSetup,
    Tally,
    normalize_side,
    shooting_setup,
)
from sequencer.live.player.plan import ShowPlan

#: what a live mark's press is taken to come after the release it marks, unless --mark-delay
#: says otherwise (docs/judging.md: a simple visual reaction time; ``yuezheng reaction``
#: measures the judge's own)
DEFAULT_MARK_DELAY_S = 0.25
#: a mark of the other outcome for the same side this soon (and within half a 節) corrects the
#: last one: the judge pressed at the loose, the arrow then hit or missed otherwise
CORRECT_S = 3.0


class Judging:
    """Releases and tallies, per 射節 cue of the plan."""

    def __init__(self, plan: ShowPlan, tolerance_ms: float = DEFAULT_TOLERANCE_MS,
                 mark_delay_s: float = DEFAULT_MARK_DELAY_S) -> None:
        self.plan = plan
        self.tolerance_s = tolerance_ms / 1000.0
        self.mark_delay_s = mark_delay_s
        self.releases: dict[str, list[Release]] = {}
        self.tallies: dict[str, Tally] = {}
        self.offsets: dict[str, list[float]] = {}  # each hit's offset from its nearest accord
        self._pressed: dict[tuple[str, str], tuple[int, float]] = {}  # (cue, side) → last mark
        self._setups: dict[str, ShootingSetup] = {}

    def setup(self, cue_id: str) -> ShootingSetup:
        """How cue ``cue_id`` is judged (its 節, accords and exempt sides)."""
        setup = self._setups.get(cue_id)
        if setup is None:
            setup = self._setups[cue_id] = shooting_setup(self.plan.rite.cue(cue_id),
                                                          self.plan.timeline.span(cue_id))
        return setup

    def mark(self, cue_id: str, release: Release) -> tuple[Decision, Tally]:
        """Judge ``release`` (its time from the cue's start) with the cue's others."""
        self.releases.setdefault(cue_id, []).append(release)
        tally = self.tallies[cue_id] = self.setup(cue_id).judge(self.releases[cue_id],
                                                                 self.tolerance_s)
        return tally.decisions[-1], tally

    def correct(self, cue_id: str, side: str, hit: bool,
                pressed: float) -> tuple[Decision, Tally] | None:
        """The side's last mark, pressed less than ``CORRECT_S`` ago (and within half a 節),
        given the other outcome: the judge pressed at the loose and the arrow then did
        otherwise. The mark keeps its time and is judged again (None: no mark to correct)."""
        last = self._pressed.get((cue_id, normalize_side(side)))
        window = min(CORRECT_S, self.setup(cue_id).jie_s / 2)
        if last is None or pressed - last[1] > window:
            return None
        index = last[0]
        releases = self.releases[cue_id]
        old = releases[index]
        if old.hit == hit:
            return None
        releases[index] = Release(old.time_s, old.side, hit)
        tally = self.tallies[cue_id] = self.setup(cue_id).judge(releases, self.tolerance_s)
        del self._pressed[(cue_id, old.side)]
        return tally.decisions[index], tally

    def pressed(self, cue_id: str, side: str, at: float) -> None:
        """The mark just judged for ``side`` was pressed at ``at`` (show clock)."""
        self._pressed[(cue_id, normalize_side(side))] = (len(self.releases[cue_id]) - 1, at)

    def where(self, cue_id: str, t: float) -> tuple[int, int, float, bool]:
        """Where a release at ``t`` (seconds from the cue's start) falls: its 耦 cycle, its 節
        (1-based), its offset from the nearest drum accord (seconds) and whether it is in a
        listening 節."""
        setup = self.setup(cue_id)
        cycle = max(0, math.floor(t / setup.cycle_s)) if setup.cycle_s > 0 else 0
        local = t - cycle * setup.cycle_s
        k = min(setup.jie, max(1, math.floor(local / setup.jie_s) + 1)) if setup.jie_s else 1
        windows = setup.windows_s or (0.0,)
        nearest = min(windows, key=lambda w: abs(w - local))
        return cycle, k, local - nearest, local < setup.listening_end_s

    def verdict(self, cue_id: str, decision: Decision) -> str:
        """The console's line for one mark: "右 hit · 次耦 節 3 · +40 ms from the drum → 釋"."""
        release = decision.release
        setup = self.setup(cue_id)
        cycle, k, off, listening = self.where(cue_id, release.time_s)
        pair = setup.pair_names[cycle] if cycle < len(setup.pair_names) else f"耦 {cycle + 1}"
        head = f"{release.side} {'hit' if release.hit else 'miss'} · {pair} 節 {k}"
        if not release.hit:
            return f"{head} → miss"
        if release.time_s < 0:
            why = "before the 射節"
        elif listening and not decision.counted:
            why = "in the listening 節 (先以聽)"
        else:
            why = f"{off * 1000:+.0f} ms from the drum"
            if decision.counted and abs(off) > self.tolerance_s:
                why += " (不以樂志: not judged by the drum)"
            elif not decision.counted:
                why += f" (beyond ±{self.tolerance_s * 1000:g})"
            else:
                self.offsets.setdefault(cue_id, []).append(off)
        return f"{head} · {why} → {'釋' if decision.counted else '不釋'}"

    def drift(self, cue_id: str) -> str:
        """The median offset of the cue's hits in accord so far, with the delay taken off
        ("": none yet)."""
        offsets = sorted(self.offsets.get(cue_id, []))
        if not offsets:
            return ""
        median = offsets[len(offsets) // 2]
        return (f"marks {median * 1000:+.0f} ms from the drum (median of {len(offsets)}; "
                f"delay {self.mark_delay_s * 1000:g} ms)")

    def state(self) -> dict[str, Any] | None:
        """The last tally as an OSC reply carries it (None: nothing judged yet)."""
        if not self.tallies:
            return None
        cid, tally = list(self.tallies.items())[-1]
        out = {"cue": cid, **tally.to_json(), "announcement": tally.announcement()}
        out.pop("decisions")
        return out

    def line(self) -> str:
        """The console's tally line ("": nothing judged yet)."""
        if not self.tallies:
            return ""
        cid, tally = list(self.tallies.items())[-1]
        drift = self.drift(cid)
        return (f"{cid}: 右 {tally.right}  左 {tally.left} — 「{tally.announcement()}」"
                + (f"  · {drift}" if drift else ""))

"""The 節 of a file (MIDI markers or show-log records) checked block by block.

Each run of 節 is a block — a new block starts where ``k`` goes back to 1 — and is checked as a
grid with index ``k - 1``, so a missing 節 does not shift the others; it is reported, and its
block fails; so does a block with a 節 that a show log marks with a delivery fault (the output
lost, messages late: ``sequencer.check.log_faults``).  A show log also says where a block was
cut short on purpose — an operator's stop or panic, the show started again — and how long the
show was held (``sequencer.check.log_breaks``): such a block is reported as stopped, its held
time taken out, never as a failure of the timing; a block of one or two 節 is reported, not
tested.

A compiled timeline gives the same blocks for a recording (``sequencer.timeline.stroke_grids``):
each 射節 cue's span, and the equal grid its drum strokes are due on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from cues.errors import UserError
from sequencer.check.grid import MIN_ONSETS, BlockReport, check_grid, untested_block
from sequencer.timeline.stroke_grids import StrokeGrid, stroke_grids

__all__ = ["LOG_END", "JieOnset", "StrokeGrid", "check_jie_blocks", "check_stroke_grid",
           "jie_blocks", "recording_offset", "stroke_grids"]


LOG_END = "the log ends after it: nothing says why (a kill, a crash, or the log cut short)"
"""Why the last 節 of a show log is the last: not a stop (``sequencer.check.log_breaks``)."""


@dataclass(frozen=True)
class JieOnset:
    """A 節 as a file tells it: when it sounded, its number ``k`` of ``n``, and where it was."""

    t: float
    k: int
    n: int
    where: str  # "file.mid: track 1, tick 960" or "show.jsonl:12", for messages
    hint: str | None  # the cue the 節 belongs to, when known
    fault: str | None = None  # why it may not have been heard on time (a show log says so)
    held_s: float = 0.0  # the time the show was held before it (a show log: taken out)
    ended: str | None = None  # why no 節 follows it in its block (a show log: a stop, a panic…)


def jie_blocks(jie: Sequence[JieOnset]) -> list[list[JieOnset]]:
    """Split 節 (in order) into blocks: a new block where k goes back to 1. Validates order."""
    blocks: list[list[JieOnset]] = []
    for j in jie:
        if not 1 <= j.k <= j.n:
            raise UserError(f"{j.where}: 節 {j.k}/{j.n}: k must be between 1 and {j.n}")
        if j.k == 1 or not blocks:
            blocks.append([j])
            continue
        prev = blocks[-1][-1]
        if j.n != prev.n:
            raise UserError(
                f"{j.where}: 節 {j.k}/{j.n} follows 節 {prev.k}/{prev.n} ({prev.where}): "
                f"the 節 count changes inside a block (a new 射節 must start at 節 1)"
            )
        if j.k <= prev.k:
            raise UserError(
                f"{j.where}: 節 {j.k}/{j.n} follows 節 {prev.k}/{prev.n} ({prev.where}): "
                f"節 numbers must increase within a block (a new 射節 starts at 節 1)"
            )
        blocks[-1].append(j)
    return blocks


def check_jie_blocks(jie: Sequence[JieOnset], tolerance_ms: float) -> tuple[BlockReport, ...]:
    """Every block of ``jie`` tested as a grid; a block missing some 節 fails with a note —
    unless they are missing at its end because the show stopped there (``JieOnset.ended``: an
    operator's stop or panic…), which is reported as a stop, not a failure.  A block of one or
    two 節 is reported untested; the time a show log says was held is taken out."""
    reports = []
    for number, block in enumerate(jie_blocks(jie), start=1):
        first, last, n = block[0], block[-1], block[0].n
        label = f"射節 {number}: 節 {first.k}–{last.k} of {n}"
        if first.hint:
            label += f" ({first.hint})"
        times = [j.t - j.held_s for j in block]
        if len(block) < MIN_ONSETS:
            report = untested_block(times, label)
            notes = [f"{len(block)} 節: too few to test an equal-interval grid ({MIN_ONSETS} "
                     f"are needed)"]
        else:
            report = check_grid(times, tolerance_ms, label, [j.k - 1 for j in block])
            notes = list(report.notes)
        ok = report.ok
        for before, after in zip(block, block[1:], strict=False):
            if after.held_s - before.held_s > 0:
                notes.append(f"held {after.held_s - before.held_s:.3f} s between 節 {before.k} "
                             f"and 節 {after.k} (an operator's hold): taken out of the intervals")
        why = last.ended if last.k < n else None
        stopped = why if why != LOG_END else None
        inside = _missing(block, upto=last.k if stopped else n)
        if inside:
            ok = False
            notes.append(f"missing 節 {inside} of {n}: the block is incomplete")
        if why == LOG_END:
            notes.append(f"after 節 {last.k}: {LOG_END}")
        if stopped:
            notes.append(f"stopped after 節 {last.k} of {n}: {stopped}")
        faults = list(dict.fromkeys(j.fault for j in block if j.fault))
        if faults:
            ok = False
            notes += [f"not delivered on time — {fault}" for fault in faults]
        reports.append(replace(report, ok=ok, notes=tuple(notes), stopped=stopped))
    return tuple(reports)


def _missing(block: Sequence[JieOnset], shown: int = 20, upto: int | None = None) -> str:
    """The first ``shown`` numbers missing from ``block`` (k rising) among 1…``upto`` (by default
    its n), and how many more (in time that grows with the block, not with n: a log may claim
    any n); empty when none is missing."""
    n = block[0].n if upto is None else upto
    gaps: list[int] = []
    count = 0
    ks = [j.k for j in block if j.k <= n]
    for before, after in zip([0, *ks], [*ks, n + 1], strict=True):
        count += after - before - 1
        gaps.extend(range(before + 1, min(after, before + 1 + shown - len(gaps))))
    more = count - len(gaps)
    return ", ".join(map(str, gaps)) + (f" and {more:,} more" if more > 0 else "")

MAX_OFFSET_S = 5.0  # how far a recording's 射節 may be from where the timeline has it
_OFFSET_BIN_S = 0.02  # the offset is first found to this precision, by the most agreeing pairs


def recording_offset(onsets: Sequence[float], grid: StrokeGrid) -> tuple[float, int]:
    """The offset of the recording from the timeline (seconds), and how many strokes agree.

    Every pair (onset, due stroke) within ``MAX_OFFSET_S`` votes for its difference; the
    20 ms bin with the most votes wins (the nearest to 0 among equals: the grid repeats), and
    the offset is the median difference of the pairs in and beside it.
    """
    t = np.asarray(onsets, dtype=np.float64)
    due = np.asarray(grid.expected())
    if t.size == 0 or due.size == 0:
        return 0.0, 0
    diff = (t[:, None] - due[None, :]).ravel()
    diff = diff[np.abs(diff) <= MAX_OFFSET_S]
    if diff.size == 0:
        return 0.0, 0
    bins, votes = np.unique(np.round(diff / _OFFSET_BIN_S).astype(int), return_counts=True)
    best = votes.max()
    chosen = bins[votes == best][np.argmin(np.abs(bins[votes == best]))]
    near = diff[np.abs(np.round(diff / _OFFSET_BIN_S) - chosen) <= 1]
    offset = float(np.median(near))
    # the grid repeats: the offset a whole number of steps away that puts the most onsets on
    # due strokes (the nearest to 0 among equals) — strokes off the tick by a player's errors
    # (--humanize) spread the votes over neighbouring bins, and another repeat can win them
    steps = np.arange(-int(MAX_OFFSET_S // grid.step_s), int(MAX_OFFSET_S // grid.step_s) + 1)
    candidates = offset + steps * grid.step_s
    candidates = candidates[np.abs(candidates) <= MAX_OFFSET_S + grid.step_s / 2]
    ordered = np.sort(t)
    matched = [_on_grid(ordered, due, o, grid.step_s) for o in candidates]
    top = max(matched)
    offset = float(min((o for o, m in zip(candidates, matched, strict=True) if m == top),
                       key=abs))
    return offset, int(best)


def _on_grid(t: np.ndarray, due: np.ndarray, offset: float, step: float) -> int:
    """How many of the strokes ``due`` (shifted by ``offset``) have an onset of ``t`` within a
    quarter step."""
    i = np.clip(np.searchsorted(t, due + offset), 1, max(1, t.size - 1))
    nearest = np.minimum(np.abs(t[i - 1] - due - offset), np.abs(t[np.minimum(i, t.size - 1)]
                                                                 - due - offset))
    return int(np.sum(nearest <= step / 4))


def check_stroke_grid(onsets: Sequence[float], grid: StrokeGrid,
                      tolerance_ms: float) -> BlockReport:
    """The onsets of a recording near one 射節 tested against its stroke grid.

    Each onset is placed on the nearest grid position (after the recording's offset); of
    several on one position the nearest counts and the others are ignored (another voice, a
    song); a position without an onset is a missing stroke and fails the block.  The grid is
    then fitted freely (:func:`sequencer.check.grid.check_grid`): 「間若一」 asks for equal
    intervals, not for the timeline's tempo.
    """
    label = f"{grid.cue} 射節 ({grid.count} strokes every {grid.step_s:g} s)"
    offset, agreeing = recording_offset(onsets, grid)
    if agreeing < MIN_ONSETS:
        raise UserError(
            f"{label}: no strokes found within {MAX_OFFSET_S:g} s of where the timeline has "
            f"them ({grid.start_s:.3f}–{grid.end_s:.3f} s); was the recording made from the "
            f"same range (--from/--until) and settings?")
    nearest: dict[int, float] = {}
    for t in onsets:
        i = round((t - offset - grid.start_s) / grid.step_s)
        due = grid.start_s + offset + i * grid.step_s
        if 0 <= i < grid.count and (i not in nearest or abs(t - due) < abs(nearest[i] - due)):
            nearest[i] = t
    found = sorted(nearest)
    report = check_grid([nearest[i] for i in found], tolerance_ms, label, found)
    missing = [i + 1 for i in range(grid.count) if i not in nearest]
    extra = sum(1 for t in onsets if grid.start_s + offset - grid.step_s / 2 <= t
                < grid.end_s + offset - grid.step_s / 2) - len(found)
    notes = list(report.notes)
    if missing:
        shown = ", ".join(str(i) for i in missing[:20]) + (" …" if len(missing) > 20 else "")
        notes.append(f"{len(missing)} of {grid.count} strokes not found (stroke {shown})")
    if extra > 0:
        notes.append(f"{extra} other onset{'s' if extra != 1 else ''} between the strokes "
                     f"ignored")
    return replace(report, ok=report.ok and not missing, notes=tuple(notes),
                   expected_count=grid.count, expected_interval_s=grid.step_s, offset_s=offset)

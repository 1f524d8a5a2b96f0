"""The 節 of a file (MIDI markers or show-log records) checked block by block.

Each run of 節 is a block — a new block starts where ``k`` goes back to 1 — and is checked as a
grid with index ``k - 1``, so a missing 節 does not shift the others; it is reported, and its
block fails; so does a block with a 節 that a show log marks with a delivery fault (the output
lost, messages late: ``sequencer.log_faults``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from cues.errors import UserError
from sequencer.grid import MIN_ONSETS, BlockReport, check_grid


@dataclass(frozen=True)
class JieOnset:
    """A 節 as a file tells it: when it sounded, its number ``k`` of ``n``, and where it was."""

    t: float
    k: int
    n: int
    where: str  # "file.mid: track 1, tick 960" or "show.jsonl:12", for messages
    hint: str | None  # the cue the 節 belongs to, when known
    fault: str | None = None  # why it may not have been heard on time (a show log says so)


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
    """Every block of ``jie`` tested as a grid; a block missing some 節 fails with a note."""
    reports = []
    for number, block in enumerate(jie_blocks(jie), start=1):
        first, last, n = block[0], block[-1], block[0].n
        label = f"射節 {number}: 節 {first.k}–{last.k} of {n}"
        if first.hint:
            label += f" ({first.hint})"
        if len(block) < MIN_ONSETS:
            raise UserError(
                f"{first.where}: {label} has only {len(block)} 節; at least {MIN_ONSETS} are "
                f"needed to test an equal-interval grid"
            )
        report = check_grid([j.t for j in block], tolerance_ms, label, [j.k - 1 for j in block])
        present = {j.k for j in block}
        missing = [k for k in range(1, n + 1) if k not in present]
        if missing:
            shown = ", ".join(str(k) for k in missing)
            report = replace(
                report,
                ok=False,
                notes=report.notes + (f"missing 節 {shown} of {n}: the block is incomplete",),
            )
        faults = list(dict.fromkeys(j.fault for j in block if j.fault))
        if faults:
            report = replace(report, ok=False, notes=report.notes + tuple(
                f"not delivered on time — {fault}" for fault in faults))
        reports.append(report)
    return tuple(reports)

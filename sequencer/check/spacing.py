"""The 節 spacing of a recording that says nothing of how it was made (a recording of people, or
a file whose tags were stripped): found in the strokes themselves, with how sure it is.

1. **The stroke spacing.** The onsets of the plain detector (:meth:`OnsetStrength.onsets`) give
   the candidate spacings: the intervals between neighbours, in bins 6 % wide; the three
   fullest bins (at least ``MIN_RUN - 1`` intervals each) are tried.  For each, the regions
   where onsets keep about that spacing (a missed stroke or three allowed) are searched again
   in grid mode (:meth:`OnsetStrength.strokes`: the rise curve, which finds a quick stroke over
   the ring of the last one).
2. **Runs.** The strokes of a region are followed one by one: a stroke 1–4 steps after the
   last one (within a quarter of a step of the grid, and 0.1 s at most; the step follows the
   median of the last eight intervals, so a drummer who slowly drifts stays in one run, where
   the grid test then shows the drift) continues the run, the steps between it and the last
   one being missing strokes; an onset off the grid is something else sounding (another voice,
   a stick's rebound) and is passed over, unless the run is still short and it fits an onset
   passed over before (the run began on something else: it begins again there); a gap of more
   than four steps ends the run (a stroke or two past a gap at its ends is cut off: music that
   falls on the grid past the strokes).  A run is kept when it has
   ``MIN_RUN`` strokes or more and at least ``MIN_FILL`` of its positions are struck, and unless
   its strokes and the onsets between them strike most positions of a finer grid (then it is
   steadier music at that spacing, seen coarsely: a song of a syllable a second is a grid of
   5 s too, while the 瑟 plucking every 2 s between the 5 s strokes of a 射節 is not); of runs
   that overlap (the same strokes seen at two spacings), the one with more strokes is kept.
   Each kept run is a block, tested as an equal grid (:func:`sequencer.check.grid.check_grid`)
   with the strict tolerance: the loose following finds the block, the grid test judges it.
3. **The 節.** A 射節 marks its 節 with one stroke that differs from the others (the 鼓 among
   the 鼙 of the quarters; an accent).  Each stroke is described by its level in four bands
   (30–150, 150–600, 600–3000, 3000–12000 Hz) over the 40 ms after it and by how much each
   rose over the 40 ms before; for every period of 2–8 strokes and every phase, the strokes at
   that phase are compared with the rest (the distance between the two means, in pooled
   standard deviations).  The shortest period whose best phase is within 80 % of the best
   separation of any period, and at least ``MIN_SEPARATION``, is the 節; it starts at its
   loudest stroke (the sum of the four levels: the 鼓, accented; the stroke after it may differ
   as much, the 鼓 still ringing before it); in each whole 節 that stroke should stand out
   most along its difference from the others, and the share of 節 where it does is how sure
   the finding is.  Without such a stroke the 節 is not told: every stroke
   may be one.

Which runs are judged: where some runs show a 節 stroke surely and others do not, the marked
ones are the 射節 and the others are other music (a song's syllables keep one spacing too, and the
detector, made for strokes, places a sung syllable only within a few tens of milliseconds):
those are listed, not judged.  Where no run shows one (a drum without accents), every run is
judged.

How sure: the spacing is ``sure`` with ``SURE_STROKES`` strokes or more, ``SURE_FILL`` of the
positions struck; otherwise ``likely``.  The 節 is ``sure`` when its stroke stands out in 90 %
of the 節 (``SURE_JIE`` at least), ``likely`` at 70 %, else ``unsure``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from cues.errors import UserError
from sequencer.check.grid import BlockReport, check_grid, too_few_onsets
from sequencer.check.onsets import MIN_TIMED_SPACING_S, OnsetStrength

MIN_RUN = 8  # the fewest strokes a run of one spacing is told from
MIN_FILL = 0.8  # … and the share of its grid positions that must be struck
SURE_STROKES = 20
SURE_FILL = 0.95
SURE_JIE = 8  # whole 節 a 節 found surely is seen in (a 射節 has five or more in each cycle)
MIN_SEPARATION = 2.0  # pooled standard deviations between the 節 stroke and the others
_BIN = 0.06  # candidate spacings: neighbours' intervals in log bins this wide
_CANDIDATES = 3
_MAX_GAP = 3  # strokes in a row a run may miss
_FOLLOW = 0.25  # a stroke continues a run within this share of a step of a grid position
_FOLLOW_MAX_S = 0.1  # … and never further than this
_SUBDIVISIONS = range(2, 6)  # finer grids a run's other onsets may fill
_LOCAL = 8  # the step followed is the median of this many last intervals
_JIE_PERIODS = range(2, 9)
_FEATURE_S = 0.040
_BANDS_HZ = ((30.0, 150.0), (150.0, 600.0), (600.0, 3000.0), (3000.0, 12000.0))
_FLOOR_DB = -80.0  # a band's level in silence (a rise out of silence is not endless)

Reader = Callable[[int, int], np.ndarray]  # mono samples [start, stop) of the recording


@dataclass(frozen=True)
class JieFound:
    """The 節 told by a stroke that differs from the others, every ``strokes`` strokes."""

    strokes: int
    phase: int  # the grid position (in the run) of the first 節 stroke
    jie_s: float
    separation: float  # the 節 stroke from the others, in pooled standard deviations
    agree: int  # whole 節 in which the 節 stroke stands out most
    of: int
    sureness: str

    def to_json(self) -> dict[str, Any]:
        return {"strokes": self.strokes, "phase": self.phase, "jie_s": round(self.jie_s, 6),
                "separation": round(self.separation, 3), "agree": self.agree, "of": self.of,
                "sureness": self.sureness}


@dataclass(frozen=True)
class Run:
    """Strokes that keep one spacing: their times and grid positions (gaps: missing)."""

    times: tuple[float, ...]
    indices: tuple[int, ...]
    others: tuple[float, ...] = ()  # other onsets between them, passed over

    @property
    def extra(self) -> int:
        return len(self.others)

    @property
    def positions(self) -> int:
        return self.indices[-1] + 1

    @property
    def fill(self) -> float:
        return len(self.times) / self.positions

    @property
    def step_s(self) -> float:
        return (self.times[-1] - self.times[0]) / self.indices[-1]

    @property
    def sureness(self) -> str:
        return ("sure" if len(self.times) >= SURE_STROKES and self.fill >= SURE_FILL
                else "likely")


@dataclass(frozen=True)
class FoundBlock:
    """One run found in a recording, judged: its block report, the run, the 節 if told."""

    report: BlockReport
    run: Run
    jie: JieFound | None
    judged: bool = True  # False: other music beside the 射節 found (module docstring)

    def to_json(self) -> dict[str, Any]:
        run = self.run
        return {"start_s": round(run.times[0], 6), "end_s": round(run.times[-1], 6),
                "step_s": round(run.step_s, 6), "strokes": len(run.times),
                "positions": run.positions, "sureness": run.sureness,
                "jie": None if self.jie is None else self.jie.to_json(), "judged": self.judged}


def candidate_spacings(onsets: Sequence[float]) -> list[float]:
    """The spacings the plain onsets keep most often (see the module docstring), fullest
    first."""
    d = np.diff(np.asarray(onsets, dtype=np.float64))
    d = d[d > 0]
    if d.size < MIN_RUN - 1:
        return []
    bins = np.round(np.log(d) / _BIN).astype(int)
    values, counts = np.unique(bins, return_counts=True)
    # a bin and its neighbours: an interval on a bin's edge counts for both
    near = np.array([counts[np.abs(values - v) <= 1].sum() for v in values])
    out: list[float] = []
    for i in np.argsort(-near, kind="stable"):
        if near[i] < MIN_RUN - 1 or len(out) == _CANDIDATES:
            break
        spacing = float(np.median(d[np.abs(bins - values[i]) <= 1]))
        if all(abs(np.log(spacing / s)) > 2 * _BIN for s in out):
            out.append(spacing)
    return out


def _regions(onsets: Sequence[float], step: float) -> list[tuple[float, float]]:
    """Where the plain onsets keep about ``step`` (missed strokes allowed): (from, to)."""
    out: list[tuple[float, float]] = []
    start = prev = 0.0
    count = -1  # no onset yet
    for t in onsets:
        if count >= 0:
            r = (t - prev) / step
            if 1 <= round(r) <= _MAX_GAP + 1 and abs(r - round(r)) <= 2 * _FOLLOW:
                count += 1
                prev = t
                continue
            if r < 1 - 2 * _FOLLOW:  # something else sounding between the strokes
                continue
            if count >= 3:
                out.append((start - 2 * step, prev + 2 * step))
        start = prev = t
        count = 0
    if count >= 3:
        out.append((start - 2 * step, prev + 2 * step))
    merged: list[tuple[float, float]] = []
    for a, b in out:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def follow_runs(strokes: Sequence[float], step: float) -> list[Run]:
    """The runs of ``strokes`` (ascending) that keep about ``step`` apart (module docstring)."""
    runs: list[Run] = []
    times: list[float] = []
    indices: list[int] = []
    others: list[float] = []
    local = step

    def close() -> None:
        if times:
            run = _trimmed(Run(tuple(times), tuple(indices), tuple(others)))
            if run is not None and not _finer_music(run):
                runs.append(run)

    for t in strokes:
        if times:
            r = (t - times[-1]) / local
            m = round(r)
            if 1 <= m <= _MAX_GAP + 1 and abs(r - m) * local <= _tolerance(local):
                times.append(t)
                indices.append(indices[-1] + m)
                recent = np.diff(times[-_LOCAL - 1:]) / np.diff(indices[-_LOCAL - 1:])
                local = float(np.median(recent))
                continue
            if len(times) < MIN_RUN:  # a short run may have begun on something else
                start = _fitting(times[1:] + others, t, step)
                if start is not None:
                    m = round((t - start) / step)
                    others = [u for u in times + others if start < u < t]
                    times, indices, local = [start, t], [0, m], (t - start) / m
                    continue
            if r < _MAX_GAP + 1.5:  # something else sounding between the strokes
                others.append(t)
                continue
            close()
        times, indices, others, local = [t], [0], [], step
    close()
    return runs


def _fitting(earlier: Sequence[float], t: float, step: float) -> float | None:
    """The earliest of ``earlier`` that ``t`` follows by 1–4 steps, on the grid."""
    for u in sorted(earlier):
        r = (t - u) / step
        m = round(r)
        if 1 <= m <= _MAX_GAP + 1 and abs(r - m) * step <= _tolerance(step):
            return u
    return None


def _tolerance(step: float) -> float:
    """How far from a grid position a stroke may fall and still continue a run."""
    return min(_FOLLOW * step, _FOLLOW_MAX_S)


_EDGE = 3  # strokes after a gap at a run's end, fewer than this: music after it, cut off


def _trimmed(run: Run) -> Run | None:
    """``run`` without a stroke or two beyond a gap at either end (other music that falls on
    the grid past the strokes' end) and the onsets outside it, if it is long and full enough."""
    times, indices = list(run.times), list(run.indices)
    while len(times) > _EDGE:
        gaps = [i for i in range(1, len(indices)) if indices[i] - indices[i - 1] > 1]
        if gaps and len(times) - gaps[-1] < _EDGE:
            del times[gaps[-1]:], indices[gaps[-1]:]
        elif gaps and gaps[0] < _EDGE:
            first = indices[gaps[0]]
            times, indices = times[gaps[0]:], [i - first for i in indices[gaps[0]:]]
        else:
            break
    others = tuple(t for t in run.others if times[0] < t < times[-1])
    if len(times) < MIN_RUN or len(times) / (indices[-1] + 1) < MIN_FILL:
        return None
    return Run(tuple(times), tuple(indices), others)


def _finer_music(run: Run) -> bool:
    """Whether the run is a coarse view of steadier, finer music: its strokes and the other
    onsets between them strike most positions of a grid ``step / k`` (a song at one syllable a
    second is a grid of 5 s too; the 瑟's plucks every 2 s between the strokes of a 射節 of
    5 s strike two in five)."""
    if not run.others:
        return False
    t0, step = run.times[0], run.step_s
    onsets = np.concatenate([np.asarray(run.times), np.asarray(run.others)])
    for k in _SUBDIVISIONS:
        fine = step / k
        position = (onsets - t0) / fine
        near = np.abs(position - np.round(position)) * fine <= _tolerance(fine)
        struck = np.unique(np.round(position[near]).astype(int)).size
        if struck >= MIN_FILL * (run.indices[-1] * k + 1):
            return True
    return False


def _overlap(a: Run, b: Run) -> float:
    """The share of the shorter run's span that the other covers."""
    lo, hi = max(a.times[0], b.times[0]), min(a.times[-1], b.times[-1])
    shorter = min(a.times[-1] - a.times[0], b.times[-1] - b.times[0])
    return max(0.0, hi - lo) / shorter if shorter > 0 else float(hi >= lo)


def find_runs(strength: OnsetStrength, plain: Sequence[float] | None = None,
              spacings: Sequence[float] | None = None) -> list[Run]:
    """The runs of equal strokes in a recording, in time order (module docstring); ``plain``:
    its plain onsets, ``spacings`` the candidates, when known already."""
    plain = strength.onsets() if plain is None else plain
    found: list[Run] = []
    for step in candidate_spacings(plain) if spacings is None else spacings:
        for a, b in _regions(plain, step):
            found += follow_runs(strength.strokes(max(0.0, a), b, spacing_s=step), step)
    kept: list[Run] = []
    for run in sorted(found, key=lambda r: -len(r.times)):
        if all(_overlap(run, k) <= 0.5 for k in kept):
            kept.append(run)
    return sorted(kept, key=lambda r: r.times[0])


def stroke_features(read: Reader, rate: int, times: Sequence[float]) -> np.ndarray:
    """Per stroke: its level in each band of ``_BANDS_HZ`` over the 40 ms after it (dB), and
    how much each rose over the 40 ms before."""
    n = max(16, round(_FEATURE_S * rate))
    window = np.hanning(n)
    freqs = np.fft.rfftfreq(n, 1.0 / rate)
    masks = [(freqs >= lo) & (freqs < hi) for lo, hi in _BANDS_HZ]

    def levels(x: np.ndarray) -> np.ndarray:
        if x.size < n:
            x = np.pad(x, (n - x.size, 0))
        power = np.abs(np.fft.rfft(x * window)) ** 2
        return np.array([max(_FLOOR_DB, 10 * np.log10(power[m].sum() + 1e-20)) if m.any()
                         else _FLOOR_DB for m in masks])

    rows = []
    for t in times:
        at = round(t * rate)
        x = read(max(0, at - n), at + n)
        before, after = x[: at - max(0, at - n)], x[at - max(0, at - n):]
        a = levels(after[:n])
        rows.append(np.concatenate([a, a - levels(before)]))
    return np.array(rows)


def find_jie(run: Run, features: np.ndarray) -> JieFound | None:
    """The 節 of ``run``: the period and phase of the stroke that differs (module docstring);
    None when no stroke stands out."""
    idx = np.asarray(run.indices)
    sd = features.std(axis=0)
    z = (features - features.mean(axis=0)) / np.where(sd > 1e-9, sd, 1.0)
    scores: dict[int, tuple[float, int]] = {}
    for m in _JIE_PERIODS:
        if run.positions < 3 * m:
            break
        best = (0.0, 0)
        for r in range(m):
            mark = (idx - r) % m == 0
            if mark.sum() < 3 or (~mark).sum() < 3:
                continue
            pooled = np.sqrt((z[mark].var(axis=0).mean() + z[~mark].var(axis=0).mean()) / 2)
            sep = float(np.linalg.norm(z[mark].mean(axis=0) - z[~mark].mean(axis=0))
                        / max(pooled, 1e-6))
            best = max(best, (sep, r))
        scores[m] = best
    if not scores:
        return None
    top = max(s for s, _ in scores.values())
    if top < MIN_SEPARATION:
        return None
    m = min(p for p, (s, _) in scores.items() if s >= 0.8 * top)
    # the 節 starts at the loudest of the period's strokes (the 鼓, accented, among the 鼙); the
    # stroke after it may differ as much (the 鼓 still rings before it)
    loudness = features[:, : len(_BANDS_HZ)].sum(axis=1)
    r = max(range(m), key=lambda phase: float(loudness[(idx - phase) % m == 0].mean()))
    mark = (idx - r) % m == 0
    pooled = np.sqrt((z[mark].var(axis=0).mean() + z[~mark].var(axis=0).mean()) / 2)
    sep = float(np.linalg.norm(z[mark].mean(axis=0) - z[~mark].mean(axis=0))
                / max(pooled, 1e-6))
    if sep < MIN_SEPARATION:
        return None
    direction = z[mark].mean(axis=0) - z[~mark].mean(axis=0)
    along = z @ direction
    agree = of = 0
    for g in range(-(-(run.positions - r) // m)):
        lo = r + g * m
        members = np.nonzero((idx >= lo) & (idx < lo + m))[0]
        if len(members) < m:  # a 節 with a stroke missing: not counted
            continue
        of += 1
        agree += int(idx[members[np.argmax(along[members])]] == lo)
    share = agree / of if of else 0.0
    sureness = ("sure" if of >= SURE_JIE and share >= 0.9 else "likely" if share >= 0.7
                else "unsure")
    return JieFound(m, r, m * run.step_s, sep, agree, of, sureness)


def check_found(strength: OnsetStrength, read: Reader, tolerance_ms: float,
                where: str) -> tuple[tuple[FoundBlock, ...], tuple[str, ...]]:
    """Every run of equal strokes in a recording, found and judged, and what limits the
    finding (warnings); UserError when there is none (``where`` names the file)."""
    plain = strength.onsets()
    spacings = candidate_spacings(plain)
    runs = find_runs(strength, plain, spacings)
    if not runs:
        if len(plain) < 3:
            raise UserError(f"{where}: found {too_few_onsets(len(plain))}; the file carries no "
                            f"provenance to say where its 射節 are: give --rite RITE (and the "
                            f"range and settings it was made with)")
        limits = "".join(f"; {w}" for w in _limits(plain, spacings, runs)[:1])
        raise UserError(
            f"{where}: no run of {MIN_RUN} or more strokes keeping one spacing was found "
            f"({len(plain)} onsets{limits}); the file carries no provenance to say where its "
            f"射節 are: give --rite RITE (and the range and settings it was made with)")
    blocks = []
    for run in runs:
        jie = find_jie(run, stroke_features(read, strength.sample_rate, run.times))
        label = f"strokes every {run.step_s:.4f} s from {run.times[0]:.3f} s"
        if jie is not None:
            label += f", 節 every {jie.strokes} ({jie.jie_s:.4f} s)"
        report = check_grid(run.times, tolerance_ms, label, run.indices)
        missing = run.positions - len(run.times)
        notes = list(report.notes)
        if missing:
            notes.append(f"{missing} of {run.positions} strokes not found")
        if run.extra:
            notes.append(f"{run.extra} other onset{'s' if run.extra != 1 else ''} between the "
                         f"strokes passed over")
        report = replace(report, ok=report.ok and not missing, notes=tuple(notes),
                         expected_count=run.positions)
        blocks.append(FoundBlock(report, run, jie))
    if any(_marked(b) for b in blocks):
        blocks = [b if _marked(b) else replace(b, judged=False) for b in blocks]
    return tuple(blocks), _limits(plain, spacings, runs)


def _marked(block: FoundBlock) -> bool:
    """Whether a 節 stroke surely marks the block (a 射節)."""
    return block.jie is not None and block.jie.sureness == "sure"


def _limits(plain: Sequence[float], spacings: Sequence[float], runs: Sequence[Run],
            ) -> tuple[str, ...]:
    """What limits a finding: spacings closer than the detector is measured to follow, and
    onsets that lie in no run found."""
    out = []
    close = [s for s in spacings if s < 0.95 * MIN_TIMED_SPACING_S]
    if close:
        out.append(f"onsets {min(close):.3g} s apart were heard: closer than the "
                   f"{MIN_TIMED_SPACING_S:g} s this detector is measured to follow, so strokes "
                   f"that close may be there and not found")
    inside = sum(1 for t in plain if any(r.times[0] - r.step_s / 2 <= t
                                         <= r.times[-1] + r.step_s / 2 for r in runs))
    if plain and inside < len(plain) / 2:
        out.append(f"only {inside} of the {len(plain)} onsets heard lie in the runs found: the "
                   f"rest keep no one spacing (music, speech, or strokes too close to follow)")
    return tuple(out)


def found_lines(block: FoundBlock) -> list[str]:
    """What was found in one block and how sure it is, in words."""
    run, jie = block.run, block.jie
    lines = [f"strokes every {run.step_s:.4f} s, {run.times[0]:.3f}–{run.times[-1]:.3f} s: "
             f"{len(run.times)} of {run.positions} positions struck ({run.sureness})"]
    if not block.judged:
        lines.append("no 節 stroke surely marks these, as it marks the 射節 found: other music, "
                     "not judged")
    if jie is None:
        if block.judged:
            lines.append("no stroke stands out every 2–8 strokes: the 節 is not told (each "
                         "stroke may be one)")
    else:
        lines.append(f"節 every {jie.strokes} strokes = {jie.jie_s:.4f} s, the first at "
                     f"{run.times[0] + jie.phase * run.step_s:.3f} s: its stroke stands out in "
                     f"{jie.agree} of {jie.of} whole 節, {jie.separation:.1f} standard "
                     f"deviations from the others ({jie.sureness})")
    return lines

"""The equal-interval grid test: does a sequence of onsets hold 「間若一」, every interval the same?

Onset ``i`` should sound at ``a + b·i``. The grid (``a``, ``b``) is fitted by least squares on
index → time, but only over the onsets that agree with it: a robust first estimate (Siegel's
repeated median, which one or a few displaced beats cannot move) picks the onsets within
tolerance, the least-squares fit is made on those, and this repeats until the set is stable (if
fewer than half the onsets agree, the fit is plain least squares over all of them). So one
displaced beat shows as **one** violation, at its own index, and not as two interval errors or
as a tilt of the whole grid. Every onset's deviation from the fitted grid is measured; an onset
whose deviation exceeds the tolerance is a violation. A block also reports its mean interval and
the coefficient of variation (population standard deviation / mean) of its intervals.

Where the timing does not hold, a block says how: its **drift** — the interval's change across
the block, in percent of the first (a grid ``t = a + b·i + c·i²`` fitted by least squares over
all its onsets: the interval at ``i`` is ``b + 2c·i``) — and its **jitter**, each onset's
distance from that drifting grid (standard deviation and largest, in ms): a drummer who slows
down and one who is uneven are told apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cues.errors import UserError

MIN_ONSETS = 3  # the fewest onsets an equal-interval grid can be tested on
MERGE_WINDOW_S = 0.030  # onsets this close to the first of their group are one onset
_ROBUST_EXACT_MAX = 1500  # up to this many onsets the repeated median is computed exactly
_FIT_ROUNDS = 20  # the most refits of the agreeing onsets


def valid_tolerance(tolerance_ms: float) -> bool:
    """A tolerance is a positive, finite number of milliseconds."""
    return tolerance_ms > 0 and math.isfinite(tolerance_ms)


def too_few_onsets(count: int) -> str:
    """The reason a block of ``count`` onsets cannot be tested (the end of an error message)."""
    return (f"only {count} onset{'s' if count != 1 else ''}; at least {MIN_ONSETS} are needed "
            f"to test an equal-interval grid")


@dataclass(frozen=True)
class Violation:
    """An onset further from the fitted grid than the tolerance.

    ``index`` is the onset's 0-based position on the grid (for 節 blocks, ``k - 1``);
    ``deviation_ms`` is signed: positive means late.
    """

    time_s: float
    index: int
    deviation_ms: float

    def to_json(self) -> dict[str, Any]:
        return {
            "time_s": round(self.time_s, 6),
            "index": self.index,
            "deviation_ms": round(self.deviation_ms, 6),
        }


@dataclass(frozen=True)
class BlockReport:
    """The verdict on one block of onsets tested as an equal-interval grid."""

    label: str
    count: int
    mean_interval_s: float
    max_deviation_ms: float
    cv: float
    violations: tuple[Violation, ...]
    ok: bool
    notes: tuple[str, ...] = field(default=())
    # where a compiled timeline says what is due (``check --rite``): the grid and the offset of
    # the recording from the timeline (positive: the recording is late)
    expected_count: int | None = None
    expected_interval_s: float | None = None
    offset_s: float | None = None
    # how the timing moves (five onsets or more): the interval's drift across the block (%),
    # and the onsets' jitter about the drifting grid (standard deviation, largest; ms)
    drift_pct: float | None = None
    jitter_sd_ms: float | None = None
    jitter_max_ms: float | None = None
    # a block of a show log that stopped short: why (an operator's stop, a panic…); not a
    # failure of the timing.  ``tested`` False: too few onsets to test a grid (1 or 2 節)
    stopped: str | None = None
    tested: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "count": self.count,
            "mean_interval_s": round(self.mean_interval_s, 9),
            "max_deviation_ms": round(self.max_deviation_ms, 6),
            "cv": round(self.cv, 9),
            "ok": self.ok,
            "violations": [v.to_json() for v in self.violations],
            "notes": list(self.notes),
            "expected_count": self.expected_count,
            "expected_interval_s": _rounded(self.expected_interval_s, 9),
            "offset_s": _rounded(self.offset_s, 6),
            "drift_pct": _rounded(self.drift_pct, 4),
            "jitter_sd_ms": _rounded(self.jitter_sd_ms, 4),
            "jitter_max_ms": _rounded(self.jitter_max_ms, 4),
            "stopped": self.stopped,
            "tested": self.tested,
        }


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def check_grid(
    onsets: Sequence[float],
    tolerance_ms: float,
    label: str,
    indices: Sequence[int] | None = None,
) -> BlockReport:
    """Test ``onsets`` (seconds) as an equal-interval grid; see the module docstring.

    ``indices`` gives each onset's grid position (strictly increasing integers) when some grid
    positions have no onset; by default onset ``i`` is at position ``i``. Raises ``UserError``
    for fewer than three onsets or onsets that do not advance in time.
    """
    if not valid_tolerance(tolerance_ms):
        raise UserError(f"the tolerance must be a positive number of ms, got {tolerance_ms!r}")
    t, idx = _grid_arrays(onsets, indices, label)
    intervals = np.diff(t) / np.diff(idx)
    mean_interval = float(intervals.mean())
    if not mean_interval > 0:
        raise UserError(f"{label}: the onsets do not advance in time (mean interval ≤ 0)")
    slope, intercept = _fit_grid(idx, t, tolerance_ms / 1000.0)
    deviation_ms = (t - (intercept + slope * idx)) * 1000.0
    violations = tuple(
        Violation(time_s=float(t[i]), index=int(idx[i]), deviation_ms=float(deviation_ms[i]))
        for i in np.nonzero(np.abs(deviation_ms) > tolerance_ms)[0]
    )
    drift, jitter_sd, jitter_max = drift_and_jitter(idx, t)
    return BlockReport(
        label=label,
        count=int(t.size),
        mean_interval_s=mean_interval,
        max_deviation_ms=float(np.abs(deviation_ms).max()),
        cv=float(intervals.std() / mean_interval),
        violations=violations,
        ok=not violations,
        drift_pct=drift, jitter_sd_ms=jitter_sd, jitter_max_ms=jitter_max,
    )


DRIFT_MIN_ONSETS = 5  # the fewest onsets a drift and a jitter are told from


def drift_and_jitter(idx: np.ndarray, t: np.ndarray
                     ) -> tuple[float | None, float | None, float | None]:
    """(drift %, jitter sd ms, jitter max ms) of the onsets (see the module docstring); Nones
    for fewer than ``DRIFT_MIN_ONSETS``."""
    if t.size < DRIFT_MIN_ONSETS:
        return None, None, None
    x = idx - idx[0]
    span = float(x[-1])
    scale = span or 1.0
    c2, c1, c0 = np.polyfit(x / scale, t - t[0], 2)  # on a unit span: well conditioned
    first = c1 / scale
    if not first > 0:
        return None, None, None
    residual = (t - t[0]) - np.polyval([c2, c1, c0], x / scale)
    drift = 100.0 * (2 * c2 / scale) / first  # the interval's change from first to last, %
    return float(drift), float(residual.std() * 1000), float(np.abs(residual).max() * 1000)


def untested_block(onsets: Sequence[float], label: str) -> BlockReport:
    """A block of one or two onsets: reported, not tested (an equal-interval grid needs three);
    its mean interval is its one interval (0 for a single onset)."""
    t = [float(x) for x in onsets]
    mean = (t[-1] - t[0]) / (len(t) - 1) if len(t) > 1 else 0.0
    return BlockReport(label=label, count=len(t), mean_interval_s=mean, max_deviation_ms=0.0,
                       cv=0.0, violations=(), ok=True, tested=False)


def _grid_arrays(onsets: Sequence[float], indices: Sequence[int] | None,
                 label: str) -> tuple[np.ndarray, np.ndarray]:
    """The onsets and their grid positions as float arrays, checked (UserError)."""
    t = np.asarray(onsets, dtype=np.float64)
    if t.ndim != 1:
        raise UserError(f"{label}: onsets must be a flat sequence of times")
    if t.size < MIN_ONSETS:
        raise UserError(f"{label}: {too_few_onsets(t.size)}")
    if not np.all(np.isfinite(t)):
        raise UserError(f"{label}: onset times must be finite numbers")
    if indices is None:
        return t, np.arange(t.size, dtype=np.float64)
    idx = np.asarray(indices, dtype=np.float64)
    if idx.shape != t.shape:
        raise UserError(f"{label}: {idx.size} indices for {t.size} onsets")
    if np.any(np.diff(idx) <= 0) or np.any(idx != np.round(idx)):
        raise UserError(f"{label}: grid indices must be strictly increasing integers")
    return t, idx


def _least_squares(idx: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """Line t = a + b·idx by least squares, computed on centred values for precision."""
    mi, mt = idx.mean(), t.mean()
    di = idx - mi
    slope = float((di * (t - mt)).sum() / (di * di).sum())
    return slope, float(mt - slope * mi)


def _robust_line(idx: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """Siegel's repeated-median line (exact for up to _ROBUST_EXACT_MAX onsets)."""
    n = t.size
    if n <= _ROBUST_EXACT_MAX:
        with np.errstate(divide="ignore", invalid="ignore"):
            slopes = (t[None, :] - t[:, None]) / (idx[None, :] - idx[:, None])
        np.fill_diagonal(slopes, np.nan)
        slope = float(np.median(np.nanmedian(slopes, axis=1)))
    else:  # median slope over pairs half the block apart: robust to a quarter of outliers
        h = n // 2
        slope = float(np.median((t[h:] - t[:-h]) / (idx[h:] - idx[:-h])))
    return slope, float(np.median(t - slope * idx))


def _fit_grid(idx: np.ndarray, t: np.ndarray, tol_s: float) -> tuple[float, float]:
    """The grid (slope, intercept) fitted to the onsets that agree with it."""
    slope, intercept = _robust_line(idx, t)
    quorum = max(2, -(-t.size // 2))
    agree: np.ndarray | None = None
    for _ in range(_FIT_ROUNDS):
        now = np.abs(t - (intercept + slope * idx)) <= tol_s
        if int(now.sum()) < quorum:
            return _least_squares(idx, t) if agree is None else (slope, intercept)
        if agree is not None and np.array_equal(now, agree):
            break
        agree = now
        slope, intercept = _least_squares(idx[agree], t[agree])
    return slope, intercept


def merge_onsets(times: Sequence[float], window_s: float = MERGE_WINDOW_S) -> list[float]:
    """Sort ``times`` and merge onsets within ``window_s`` of the first onset of their group.

    A chord or a doubled stroke is one onset: the group is represented by its earliest time.
    """
    if window_s < 0:
        raise ValueError(f"window_s must be >= 0, got {window_s!r}")
    merged: list[float] = []
    group_start: float | None = None
    for t in sorted(float(x) for x in times):
        if group_start is None or t - group_start > window_s:
            merged.append(t)
            group_start = t
    return merged

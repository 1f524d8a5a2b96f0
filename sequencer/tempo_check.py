"""The tempo-consistency checker: does the timing hold — 「間若一」, every interval the same?

A sequence of onsets is tested as an **equal-interval grid**: onset ``i`` should sound at
``a + b·i``. The grid (``a``, ``b``) is fitted by least squares on index → time, but only over the
onsets that agree with it: a robust first estimate (Siegel's repeated median, which one or a few
displaced beats cannot move) picks the onsets within tolerance, the least-squares fit is made on
those, and this repeats until the set is stable (if fewer than half the onsets agree, the fit is
plain least squares over all of them). So one displaced beat shows as **one** violation, at its
own index, and not as two interval errors or as a tilt of the whole grid. Every onset's deviation
from the fitted grid is reported; an onset whose deviation exceeds the tolerance is a violation.
A block also reports its mean interval and the coefficient of variation (population standard
deviation / mean) of its intervals.

Sources
-------
- **MIDI** (:func:`check_midi`). If the file has marker meta events ``節 k/N`` (DESIGN.md: every
  節 of a 射節 has one; MIDI text is UTF-8), each run of markers is a block — a new block starts
  where ``k`` goes back to 1 — and is checked as a grid with index ``k - 1`` (so a missing 節 does
  not shift the others; it is reported, and its block fails). Otherwise the ``note_on`` onsets
  (velocity > 0) of all channels, or of one channel (numbered 1–16 as users count), merged within
  30 ms, are checked as one grid. Times come from integer ticks and the tempo map, segment by
  segment (``ticks · tempo / (ticks_per_beat · 10⁶)`` — what ``mido.tick2second`` computes — with
  the sum kept in integers, so no float error accumulates message by message).
- **Audio** (:func:`check_audio`): the onsets found by :func:`sequencer.onsets.detect_onsets`.
- **Live show log** (:func:`check_log`): a JSON-lines file written by the live player, one JSON
  object per line. Records whose ``"event"`` is ``"jie"`` mark a 節 as it sounded::

      {"event": "jie", "t": 12.3456, "k": 1, "n": 5, "cue": "she-3"}

  ``t`` — seconds (a number) on the player's monotonic show clock; any origin, the same for all
  records of the file. ``k`` — the 節's number, 1…``n`` (1 is the first listening 節). ``n`` — the
  number of 節 of the 射節 (an integer ≥ 1). ``cue`` — optional: the id of the cue the 節 belongs
  to, used as the block's label. Other keys are allowed and ignored. Records with any other
  ``"event"`` (or none) are ignored, as are blank lines; a line that is not a JSON object is an
  error. Blocks are formed as for MIDI markers (a new block where ``k`` goes back to 1).

Bad input — an unreadable or unknown file, a malformed 節 marker or log record, a block with fewer
than three onsets — raises :class:`cues.errors.UserError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from cues.errors import UserError

__all__ = [
    "AUDIO_EXTENSIONS",
    "BlockReport",
    "CheckReport",
    "DEFAULT_TOLERANCE_MS",
    "LOG_EXTENSIONS",
    "MERGE_WINDOW_S",
    "MIDI_EXTENSIONS",
    "MIN_ONSETS",
    "Violation",
    "check_audio",
    "check_file",
    "check_grid",
    "check_log",
    "check_midi",
    "file_kind",
    "merge_onsets",
]

MIN_ONSETS = 3
MERGE_WINDOW_S = 0.030
DEFAULT_TOLERANCE_MS: dict[str, float] = {"midi": 1.0, "audio": 10.0, "log": 5.0}
MIDI_EXTENSIONS = frozenset({".mid", ".midi", ".smf"})
AUDIO_EXTENSIONS = frozenset({".wav", ".flac", ".aif", ".aiff", ".ogg"})
LOG_EXTENSIONS = frozenset({".jsonl", ".ndjson"})

_JIE_MARKER = re.compile(r"^節 (\d+)/(\d+)(?:\s|$)")
_DEFAULT_TEMPO = 500_000  # µs per quarter note, the SMF default (120 bpm)
_ROBUST_EXACT_MAX = 1500  # up to this many onsets the repeated median is computed exactly


# ── report types ─────────────────────────────────────────────────────────────────────────────


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
        }


@dataclass(frozen=True)
class CheckReport:
    """The verdict on one file: ``ok`` when every block holds.

    ``kind`` is ``"midi-markers"``, ``"midi-notes"``, ``"audio"`` or ``"log"``.
    """

    source: str
    kind: str
    blocks: tuple[BlockReport, ...]
    ok: bool
    tolerance_ms: float | None = None
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "tolerance_ms": self.tolerance_ms,
            "ok": self.ok,
            "notes": list(self.notes),
            "blocks": [b.to_json() for b in self.blocks],
        }


# ── the grid ─────────────────────────────────────────────────────────────────────────────────


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
    if not (tolerance_ms > 0 and math.isfinite(tolerance_ms)):
        raise UserError(f"the tolerance must be a positive number of ms, got {tolerance_ms!r}")
    t = np.asarray(onsets, dtype=np.float64)
    if t.ndim != 1:
        raise UserError(f"{label}: onsets must be a flat sequence of times")
    if t.size < MIN_ONSETS:
        raise UserError(
            f"{label}: only {t.size} onset{'s' if t.size != 1 else ''}; "
            f"at least {MIN_ONSETS} are needed to test an equal-interval grid"
        )
    if not np.all(np.isfinite(t)):
        raise UserError(f"{label}: onset times must be finite numbers")
    if indices is None:
        idx = np.arange(t.size, dtype=np.float64)
    else:
        idx = np.asarray(indices, dtype=np.float64)
        if idx.shape != t.shape:
            raise UserError(f"{label}: {idx.size} indices for {t.size} onsets")
        if np.any(np.diff(idx) <= 0) or np.any(idx != np.round(idx)):
            raise UserError(f"{label}: grid indices must be strictly increasing integers")

    steps = np.diff(idx)
    intervals = np.diff(t) / steps
    mean_interval = float(intervals.mean())
    if not mean_interval > 0:
        raise UserError(f"{label}: the onsets do not advance in time (mean interval ≤ 0)")
    cv = float(intervals.std() / mean_interval)

    tol_s = tolerance_ms / 1000.0
    slope, intercept = _fit_grid(idx, t, tol_s)
    deviation_ms = (t - (intercept + slope * idx)) * 1000.0
    violations = tuple(
        Violation(time_s=float(t[i]), index=int(idx[i]), deviation_ms=float(deviation_ms[i]))
        for i in np.nonzero(np.abs(deviation_ms) > tolerance_ms)[0]
    )
    return BlockReport(
        label=label,
        count=int(t.size),
        mean_interval_s=mean_interval,
        max_deviation_ms=float(np.abs(deviation_ms).max()),
        cv=cv,
        violations=violations,
        ok=not violations,
    )


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
    slope, intercept = _robust_line(idx, t)
    quorum = max(2, -(-t.size // 2))
    agree: np.ndarray | None = None
    for _ in range(20):
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


# ── 節 blocks (MIDI markers and log records) ─────────────────────────────────────────────────


@dataclass(frozen=True)
class _Jie:
    t: float
    k: int
    n: int
    where: str  # "file.mid: track 1, tick 960" or "show.jsonl:12", for messages
    hint: str | None  # the cue the 節 belongs to, when known


def _jie_blocks(jie: Sequence[_Jie]) -> list[list[_Jie]]:
    """Split 節 (in order) into blocks: a new block where k goes back to 1. Validates order."""
    blocks: list[list[_Jie]] = []
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


def _check_jie_blocks(jie: Sequence[_Jie], tolerance_ms: float) -> tuple[BlockReport, ...]:
    reports = []
    for number, block in enumerate(_jie_blocks(jie), start=1):
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
        reports.append(report)
    return tuple(reports)


# ── MIDI ─────────────────────────────────────────────────────────────────────────────────────


def check_midi(
    path: str | Path, channel: int | None = None, tolerance_ms: float = 1.0
) -> CheckReport:
    """Check a Standard MIDI File: its 節 marker blocks, or else its note onsets.

    ``channel`` (1–16, as users count) restricts the note onsets to one channel; it does not
    apply when the file has 節 markers (a note says so).
    """
    import mido  # imported here: `yuezheng --help` stays fast

    path = Path(path)
    if channel is not None and not 1 <= channel <= 16:
        raise UserError(f"--channel must be between 1 and 16 (as users count), got {channel}")
    _require_file(path)
    try:
        # latin-1 keeps every byte of the text events; 節 markers are decoded as UTF-8 below
        mid = mido.MidiFile(str(path), charset="latin1")
    except Exception as exc:  # mido raises many kinds (EOFError, OSError, ValueError, KeyError…)
        raise UserError(f"{path}: not a readable Standard MIDI File ({exc})") from exc
    if mid.type == 2:
        raise UserError(f"{path}: MIDI type 2 (independent tracks) is not supported")
    tpb = int(mid.ticks_per_beat)
    if tpb <= 0:
        raise UserError(f"{path}: SMPTE time division is not supported (ticks per beat {tpb})")

    # absolute integer ticks; order: tick, then track, then position in track
    events: list[tuple[int, int, int, Any]] = []
    for track_no, track in enumerate(mid.tracks):
        tick = 0
        for pos, msg in enumerate(track):
            tick += int(msg.time)
            events.append((tick, track_no, pos, msg))
    events.sort(key=lambda e: e[:3])
    seconds = _tempo_map([(tick, msg.tempo) for tick, _, _, msg in events
                          if msg.type == "set_tempo"], tpb)

    jie: list[_Jie] = []
    last_cue: str | None = None
    for tick, track_no, _, msg in events:
        if msg.type != "marker":
            continue
        text = _utf8(msg.text)
        where = f"{path}: track {track_no}, tick {tick}"
        if not text.startswith("節 "):
            last_cue = text.strip() or last_cue
            continue
        m = _JIE_MARKER.match(text)
        if not m:
            raise UserError(f"{where}: marker {text!r} is not of the form '節 k/N'")
        jie.append(_Jie(seconds(tick), int(m.group(1)), int(m.group(2)), where, last_cue))

    if jie:
        notes: tuple[str, ...] = ()
        if channel is not None:
            notes = (f"--channel {channel} ignored: the file has 節 markers, which are checked",)
        blocks = _check_jie_blocks(jie, tolerance_ms)
        return CheckReport(str(path), "midi-markers", blocks, all(b.ok for b in blocks),
                           tolerance_ms, notes)

    onsets = merge_onsets(
        seconds(tick)
        for tick, _, _, msg in events
        if msg.type == "note_on" and msg.velocity > 0
        and (channel is None or msg.channel == channel - 1)
    )
    which = "all channels" if channel is None else f"channel {channel}"
    note = (f"no 節 markers: checked note_on onsets (velocity > 0) of {which}, "
            f"merged within {MERGE_WINDOW_S * 1000:g} ms")
    if len(onsets) < MIN_ONSETS:
        raise UserError(
            f"{path}: no 節 markers, and only {len(onsets)} note onset"
            f"{'s' if len(onsets) != 1 else ''} on {which} (after merging within "
            f"{MERGE_WINDOW_S * 1000:g} ms); at least {MIN_ONSETS} are needed"
        )
    block = check_grid(onsets, tolerance_ms, f"note onsets ({which})")
    return CheckReport(str(path), "midi-notes", (block,), block.ok, tolerance_ms, (note,))


def _tempo_map(changes: list[tuple[int, int]], tpb: int) -> Callable[[int], float]:
    """A function tick → seconds for the tempo map ``changes`` ((tick, µs per beat), sorted).

    Segment start times are kept as exact integers (ticks · µs); one float division per query.
    """
    starts: list[int] = [0]
    tempos: list[int] = [_DEFAULT_TEMPO]
    numer: list[int] = [0]  # Σ ticks · tempo up to each segment start
    for tick, tempo in changes:
        if tick == starts[-1]:
            tempos[-1] = tempo  # several changes on one tick: the last wins
            continue
        numer.append(numer[-1] + (tick - starts[-1]) * tempos[-1])
        starts.append(tick)
        tempos.append(tempo)
    starts_arr = np.asarray(starts)
    denom = tpb * 1_000_000

    def seconds(tick: int) -> float:
        seg = int(np.searchsorted(starts_arr, tick, side="right")) - 1
        return (numer[seg] + (tick - starts[seg]) * tempos[seg]) / denom

    return seconds


def _utf8(text: str) -> str:
    """Re-read a text decoded as latin-1 as the UTF-8 it should be (invalid bytes → U+FFFD)."""
    try:
        raw = text.encode("latin1")
    except UnicodeEncodeError:  # already decoded by someone else
        return text
    return raw.decode("utf-8", errors="replace")


# ── audio ────────────────────────────────────────────────────────────────────────────────────


def check_audio(path: str | Path, tolerance_ms: float = 10.0) -> CheckReport:
    """Check the onsets of an audio file (any format libsndfile reads) as one grid."""
    import soundfile

    from sequencer.onsets import detect_onsets

    path = Path(path)
    _require_file(path)
    try:
        samples, sample_rate = soundfile.read(str(path), dtype="float64", always_2d=True)
    except Exception as exc:  # soundfile.LibsndfileError, RuntimeError, TypeError…
        raise UserError(f"{path}: not a readable audio file ({exc})") from exc
    onsets = detect_onsets(samples, sample_rate)
    if len(onsets) < MIN_ONSETS:
        raise UserError(
            f"{path}: found only {len(onsets)} onset{'s' if len(onsets) != 1 else ''}; "
            f"at least {MIN_ONSETS} are needed to test an equal-interval grid"
        )
    note = f"onsets detected at {sample_rate} Hz (energy rise, refined at sample level)"
    block = check_grid(onsets, tolerance_ms, "audio onsets")
    return CheckReport(str(path), "audio", (block,), block.ok, tolerance_ms, (note,))


# ── live show log ────────────────────────────────────────────────────────────────────────────


def check_log(path: str | Path, tolerance_ms: float = 5.0) -> CheckReport:
    """Check the 節 records of a live show log (format in the module docstring)."""
    path = Path(path)
    _require_file(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from exc

    jie: list[_Jie] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{where}: not JSON ({exc.msg}, column {exc.colno})") from exc
        if not isinstance(record, dict):
            raise UserError(f"{where}: each line must be a JSON object")
        if record.get("event") != "jie":
            continue
        t, k, n = record.get("t"), record.get("k"), record.get("n")
        if not _is_number(t) or not math.isfinite(t):
            raise UserError(f"{where}: a 'jie' record needs \"t\": seconds (a number), got {t!r}")
        for key, value in (("k", k), ("n", n)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UserError(
                    f"{where}: a 'jie' record needs \"{key}\": a positive integer, got {value!r}"
                )
        cue = record.get("cue")
        jie.append(_Jie(float(t), k, n, where, cue if isinstance(cue, str) and cue else None))

    if not jie:
        raise UserError(f'{path}: no 節 records ({{"event": "jie", ...}}) in the log')
    blocks = _check_jie_blocks(jie, tolerance_ms)
    return CheckReport(str(path), "log", blocks, all(b.ok for b in blocks), tolerance_ms)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# ── dispatch ─────────────────────────────────────────────────────────────────────────────────


def file_kind(path: str | Path) -> str:
    """``"midi"``, ``"audio"`` or ``"log"`` by the file's extension; ``UserError`` otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix in MIDI_EXTENSIONS:
        return "midi"
    if suffix in AUDIO_EXTENSIONS:
        return "audio"
    if suffix in LOG_EXTENSIONS:
        return "log"
    known = sorted(MIDI_EXTENSIONS | AUDIO_EXTENSIONS | LOG_EXTENSIONS)
    raise UserError(
        f"{path}: unknown file type {suffix or '(no extension)'!r}; expected one of "
        + " ".join(known)
    )


def check_file(
    path: str | Path, channel: int | None = None, tolerance_ms: float | None = None
) -> CheckReport:
    """Check ``path`` by its kind, with the kind's default tolerance unless one is given."""
    kind = file_kind(path)
    tol = DEFAULT_TOLERANCE_MS[kind] if tolerance_ms is None else tolerance_ms
    if not (tol > 0 and math.isfinite(tol)):
        raise UserError(f"--tolerance-ms must be a positive number, got {tol!r}")
    if kind == "midi":
        return check_midi(path, channel, tol)
    if channel is not None:
        raise UserError("--channel applies to MIDI files only")
    if kind == "audio":
        return check_audio(path, tol)
    return check_log(path, tol)


def _require_file(path: Path) -> None:
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if not path.is_file():
        raise UserError(f"{path}: not a regular file")

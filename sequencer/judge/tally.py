"""「不鼓不釋」 — the 釋獲者's tally for a round shot to music.

司射: 「不鼓不釋」 — in the round shot to the 射節, a hit (獲) that does not accord with the drum is
not tallied (not 釋). This module decides, release by release, which hits count, and tallies them
the way the 釋獲者 does (RITES.md, tally language):

- 右獲 are the hits of the 上射's side (「上射於右」), 左獲 those of the 下射's side.
- The winning side's surplus (the 賢獲, 「齊而取其餘」) is told in 純 (pairs) and 奇 (a single):
  「以純數告，若有奇者，亦曰奇」 — 「右賢於左，一純一奇」, 「左賢於右，二純」, 「右賢於左，一奇」;
  「左右鈞」 when the sides are equal.

The rule applied to each release, in this order (every decision records its reason):

1. a miss (``hit`` false) is not tallied;
2. an exempt release — its side in ``exempt_sides`` or its time inside an ``exempt_spans`` span
   (both ends included) — is tallied whenever it hits: 大射, the lord 「不以樂志」, his shots are
   not judged against the beat (neither by the drum accords nor by the listening 節);
3. a release before the 射節 began (time < 0) is not tallied;
4. a release during the listening 節 (time < ``listening_end_s``; 「其一節先以聽也」) is
   not tallied;
5. a release within ``tolerance_s`` (inclusive) of one of the drum-accord times
   ``release_windows_s`` is tallied; any other is not (不鼓不釋).  Where the accords say whose
   they are (``window_sides``: in each shooting 節 the 上射 (右) has the first, the 下射 (左)
   the second — 「上射既發…而後下射射」, one 拾 a 節), a release counts only at its own
   archer's accord: a 右 release at the 下射's accord is not tallied, and says so.

Out of turn: a pair shoots in turn (拾發), the 上射 first.  In each 耦's cycle the releases are
taken in time order; one whose side shot the release before it too, or a 左 release before any
右, is named out of turn (``Decision.out_of_turn``; ``Tally.out_of_turn`` counts them).  The
sources give no rule for tallying such an arrow, so the drum rule alone decides whether it is
tallied: it is named, not refused.

All times are seconds from the start of the 射節 cue. Where in a 節 the drum-accord times fall is
the caller's configurable rule (the sources do not say); this module only applies them.
``shooting_setup`` reads them, with the cycle and the exempt sides, from a compiled 射節 cue
(``yuezheng judge`` and the live player both judge through it).
"""

from __future__ import annotations

import bisect
import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cues.errors import UserError
from cues.limits import CSV_BYTES, CSV_ROWS, InputFileError, over_limit, read_limited
from cues.model import Cue
from sequencer.timeline.events import CueSpan
from sequencer.timeline.timebase import seconds

__all__ = [
    "DEFAULT_TOLERANCE_MS",
    "LEFT",
    "RIGHT",
    "Decision",
    "Release",
    "ShootingSetup",
    "Tally",
    "chinese_numeral",
    "judge",
    "judge_cycles",
    "normalize_side",
    "out_of_turn",
    "read_releases_csv",
    "shooting_setup",
]

RIGHT = "右"  # the 上射's side
LEFT = "左"  # the 下射's side
DEFAULT_TOLERANCE_MS = 150.0  # how far a release may be from a drum accord and still count

_SIDE_ALIASES = {
    "右": RIGHT, "right": RIGHT, "r": RIGHT, "上射": RIGHT,
    "左": LEFT, "left": LEFT, "l": LEFT, "下射": LEFT,
}


def normalize_side(side: str) -> str:
    """``"右"`` or ``"左"`` for a side written 右/左, right/left (any case) or 上射/下射."""
    key = side.strip()
    found = _SIDE_ALIASES.get(key) or _SIDE_ALIASES.get(key.lower())
    if found is None:
        raise UserError(f"unknown side {side!r}: expected 右 or 左 (or right/left, 上射/下射)")
    return found


@dataclass(frozen=True)
class Release:
    """One arrow: when it was loosed (seconds from the 射節 cue's start), by which side, and
    whether it hit. ``side`` is normalized to 右/左 on construction."""

    time_s: float
    side: str
    hit: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "side", normalize_side(self.side))
        if isinstance(self.time_s, bool) or not isinstance(self.time_s, int | float):
            raise UserError(f"a release time must be a number of seconds, got {self.time_s!r}")
        if not math.isfinite(self.time_s):
            raise UserError(f"a release time must be finite, got {self.time_s!r}")
        object.__setattr__(self, "time_s", float(self.time_s))
        object.__setattr__(self, "hit", bool(self.hit))


@dataclass(frozen=True)
class Decision:
    """Whether one release is tallied (釋), and why."""

    release: Release
    counted: bool
    reason: str
    out_of_turn: str | None = None  # why the release was out of turn (拾發), if it was

    def to_json(self) -> dict[str, Any]:
        return {
            "time_s": self.release.time_s,
            "side": self.release.side,
            "hit": self.release.hit,
            "counted": self.counted,
            "reason": self.reason,
            "out_of_turn": self.out_of_turn,
        }


@dataclass(frozen=True)
class Tally:
    """The 釋獲者's count: hits tallied per side, the result and the margin in 純 and 奇."""

    right: int
    left: int
    decisions: tuple[Decision, ...] = ()

    @property
    def margin(self) -> int:
        return abs(self.right - self.left)

    @property
    def out_of_turn(self) -> int:
        """Releases out of turn (拾發: the sides alternate, the 上射 first)."""
        return sum(d.out_of_turn is not None for d in self.decisions)

    @property
    def result(self) -> str:
        if self.right > self.left:
            return "右賢於左"
        if self.left > self.right:
            return "左賢於右"
        return "左右鈞"

    @property
    def chun(self) -> int:
        """純: the pairs of the margin."""
        return self.margin // 2

    @property
    def ji(self) -> int:
        """奇: the single left over (0 or 1)."""
        return self.margin % 2

    def to_json(self) -> dict[str, Any]:
        return {
            RIGHT: self.right,
            LEFT: self.left,
            "result": self.result,
            "chun": self.chun,
            "ji": self.ji,
            "out_of_turn": self.out_of_turn,
            "decisions": [d.to_json() for d in self.decisions],
        }

    def announcement(self) -> str:
        """The 釋獲者's words: 「右賢於左，一純一奇」, 「左賢於右，二純」, 「左右鈞」 …"""
        if self.margin == 0:
            return "左右鈞"
        parts = []
        if self.chun:
            parts.append(f"{chinese_numeral(self.chun)}純")
        if self.ji:
            parts.append(f"{chinese_numeral(self.ji)}奇")
        return f"{self.result}，{''.join(parts)}"


_DIGITS = "零一二三四五六七八九"
_UNITS = ((1000, "千"), (100, "百"), (10, "十"))


def chinese_numeral(n: int) -> str:
    """Chinese numerals as counted aloud: 一, 十, 十一, 二十, 一百零五, 一萬… (0 → 零)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"a non-negative integer is needed, got {n!r}")
    if n == 0:
        return _DIGITS[0]
    if n >= 10_000:
        high, low = divmod(n, 10_000)
        rest = "" if low == 0 else ("零" if low < 1000 else "") + _below_10000(low, tail=True)
        return chinese_numeral(high) + "萬" + rest
    return _below_10000(n, tail=False)


def _below_10000(n: int, *, tail: bool) -> str:
    out: list[str] = []
    zero = False
    for value, unit in _UNITS:
        d, n = divmod(n, value)
        if d:
            if zero:
                out.append("零")
                zero = False
            # 十一 rather than 一十一 at the head of the number; 一百一十 inside it
            out.append(unit if (value == 10 and d == 1 and not out and not tail) else
                       _DIGITS[d] + unit)
        elif out:
            zero = True
    if n:
        if zero:
            out.append("零")
        out.append(_DIGITS[n])
    return "".join(out)


def judge(
    releases: Iterable[Release],
    release_windows_s: Sequence[float],
    tolerance_s: float,
    listening_end_s: float,
    exempt_sides: frozenset[str] = frozenset(),
    exempt_spans: Sequence[tuple[float, float]] = (),
    window_sides: Sequence[str] = (),
) -> Tally:
    """Decide 「不鼓不釋」 for each release and tally the hits (rules in the module docstring).

    ``release_windows_s``: the drum-accord times, seconds from the 射節 cue's start;
    ``tolerance_s``: how far (either way, inclusive) a release may be from one and still accord;
    ``listening_end_s``: when the listening 節 ends; ``exempt_sides``: sides (右/左, or their
    aliases) whose shots are not judged against the beat; ``exempt_spans``: (start, end) time
    spans whose shots are not judged against the beat.
    """
    if not (isinstance(tolerance_s, int | float) and math.isfinite(tolerance_s)
            and tolerance_s >= 0):
        raise UserError(f"the tolerance must be a non-negative number of seconds, "
                        f"got {tolerance_s!r}")
    if not math.isfinite(listening_end_s):
        raise UserError(f"listening_end_s must be finite, got {listening_end_s!r}")
    if window_sides and len(window_sides) != len(release_windows_s):
        raise UserError(f"{len(window_sides)} sides for {len(release_windows_s)} drum accords")
    sides = [normalize_side(s) for s in window_sides] or [""] * len(release_windows_s)
    accords = sorted(zip((float(w) for w in release_windows_s), sides, strict=True))
    windows = [w for w, _ in accords]
    if not all(math.isfinite(w) for w in windows):
        raise UserError("drum-accord times must be finite numbers")
    exempt = frozenset(normalize_side(s) for s in exempt_sides)
    spans = []
    for span in exempt_spans:
        start, end = (float(x) for x in span)
        if not start <= end:
            raise UserError(f"an exempt span must have start <= end, got {span!r}")
        spans.append((start, end))

    decisions: list[Decision] = []
    counts = {RIGHT: 0, LEFT: 0}
    for release in releases:
        counted, reason = _decide(release, accords, tolerance_s, listening_end_s, exempt, spans)
        if counted:
            counts[release.side] += 1
        decisions.append(Decision(release, counted, reason))
    return Tally(right=counts[RIGHT], left=counts[LEFT], decisions=tuple(decisions))


def _decide(
    release: Release,
    accords: list[tuple[float, str]],
    tolerance_s: float,
    listening_end_s: float,
    exempt_sides: frozenset[str],
    exempt_spans: list[tuple[float, float]],
) -> tuple[bool, str]:
    """Whether ``release`` is tallied, and why; ``accords``: (time, whose: 右, 左 or "" for
    anyone's), in time order."""
    t = release.time_s
    if not release.hit:
        return False, "miss"
    if release.side in exempt_sides:
        return True, f"hit; the {release.side} side is exempt from the beat (不以樂志)"
    for start, end in exempt_spans:
        if start <= t <= end:
            return True, f"hit; {start:g}–{end:g} s is exempt from the beat (不以樂志)"
    if t < 0:
        return False, "hit before the 射節 began: not tallied (不鼓不釋)"
    if t < listening_end_s:
        return False, (f"hit during the listening 節 (先以聽, until {listening_end_s:g} s): "
                       "not tallied")
    own = [w for w, side in accords if side in ("", release.side)]
    if not own:
        return False, "hit, but there is no drum accord to shoot to: not tallied (不鼓不釋)"
    nearest = _nearest(own, t)
    off_ms = (t - nearest) * 1000.0
    if abs(t - nearest) <= tolerance_s:
        return True, f"hit in accord with the drum at {nearest:g} s ({off_ms:+.0f} ms)"
    other = [w for w, side in accords if side not in ("", release.side)]
    if other and abs(t - (theirs := _nearest(other, t))) <= tolerance_s:
        return False, (f"hit at the {_ARCHER[_OTHER[release.side]]}'s accord ({theirs:g} s), "
                       f"not the {_ARCHER[release.side]}'s (nearest {nearest:g} s, "
                       f"{off_ms:+.0f} ms): not tallied (不鼓不釋)")
    return False, (f"hit off the drum: nearest accord {nearest:g} s, {off_ms:+.0f} ms, "
                   f"beyond ±{tolerance_s * 1000:g} ms (不鼓不釋)")


_ARCHER = {RIGHT: "上射", LEFT: "下射"}
_OTHER = {RIGHT: LEFT, LEFT: RIGHT}


def _nearest(times: list[float], t: float) -> float:
    i = bisect.bisect_left(times, t)
    return min(times[max(0, i - 1): i + 1], key=lambda w: abs(w - t))


def out_of_turn(releases: Sequence[Release], cycle_of: Any = None) -> dict[int, str]:
    """Index (in ``releases``) → why it was out of turn: in each cycle (``cycle_of(release)``;
    by default one), in time order, a side that shot the release before it too, or a 左 release
    before any 右 (拾發: the 上射 first, then in turn)."""
    order = sorted(range(len(releases)), key=lambda i: (
        cycle_of(releases[i]) if cycle_of else 0, releases[i].time_s))
    out: dict[int, str] = {}
    last: tuple[Any, str] | None = None  # (cycle, side) of the release before
    for i in order:
        r = releases[i]
        cycle = cycle_of(r) if cycle_of else 0
        before = last[1] if last is not None and last[0] == cycle else None
        if before == r.side:
            out[i] = (f"out of turn: {r.side} ({_ARCHER[r.side]}) shot again before the "
                      f"{_ARCHER[_OTHER[r.side]]} (拾發: they shoot in turn)")
        elif before is None and r.side == LEFT:
            out[i] = "out of turn: the 下射 shot first (拾發: the 上射 shoots first)"
        last = (cycle, r.side)
    return out


def read_releases_csv(path: str | Path) -> list[Release]:
    """Read releases from a CSV file with a header naming the columns ``time_s,side,hit``.

    ``time_s``: seconds from the 射節 cue's start; ``side``: 右 or 左 (also right/left,
    上射/下射); ``hit``: 1 or 0. Other columns are ignored; blank lines are skipped. Errors name
    the file and line.
    """
    path = Path(path)
    data = read_limited(path, CSV_BYTES, "a CSV file of releases")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        return list(_csv_rows(io.StringIO(text, newline=""), path))
    except csv.Error as exc:
        raise UserError(f"{path}: not valid CSV ({exc})") from None


def _csv_rows(fh: Iterable[str], path: Path) -> Iterable[Release]:
    reader = csv.reader(fh)
    header: list[str] | None = None
    rows = 0
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip().lower() for cell in row]
            missing = [c for c in ("time_s", "side", "hit") if c not in header]
            if missing:
                raise UserError(
                    f"{path}:{line}: the header must name the columns time_s,side,hit "
                    f"(missing: {', '.join(missing)}; got {','.join(row)!r})"
                )
            col = {name: header.index(name) for name in ("time_s", "side", "hit")}
            continue
        if len(row) < len(header):
            raise UserError(f"{path}:{line}: {len(row)} fields, the header has {len(header)}")
        raw_t, raw_side, raw_hit = (row[col[c]].strip() for c in ("time_s", "side", "hit"))
        try:
            t = float(raw_t)
        except ValueError:
            raise UserError(f"{path}:{line}: time_s {raw_t!r} is not a number of seconds") from None
        if not math.isfinite(t):
            raise UserError(f"{path}:{line}: time_s {raw_t!r} must be finite")
        if raw_hit not in ("0", "1"):
            raise UserError(f"{path}:{line}: hit {raw_hit!r} must be 1 (hit) or 0 (miss)")
        try:
            side = normalize_side(raw_side)
        except UserError as exc:
            raise UserError(f"{path}:{line}: {exc}") from None
        yield Release(t, side, raw_hit == "1")
        rows += 1
        if rows > CSV_ROWS.value:
            raise InputFileError(path, f"it has more than {over_limit(CSV_ROWS, CSV_ROWS.value)}")
    if header is None:
        raise UserError(f"{path}: empty; expected a header time_s,side,hit and one row per release")


def judge_cycles(
    releases: Iterable[Release],
    release_windows_s: Sequence[float],
    cycle_s: float,
    listening_end_s: float,
    tolerance_s: float,
    exempt_by_cycle: Sequence[frozenset[str]] = (),
    pair_names: Sequence[str] = (),
    window_sides: Sequence[str] = (),
) -> Tally:
    """Judge a whole 射節 cue: one cycle of 節 per 耦, back to back, each ``cycle_s`` long.

    ``release_windows_s`` and ``listening_end_s`` are given for one cycle (the timeline's
    ``release_s``); a release at time t belongs to cycle ``t // cycle_s`` and is judged at
    ``t - cycle·cycle_s`` with that cycle's exempt sides (the 耦 with the lord: 「不以樂志」).
    Decisions keep the releases' own times. Releases after the last cycle are judged as cycle
    ``len(exempt_by_cycle) - 1`` would be, continuing the grid.  Each decision names its 耦 by
    ``pair_names`` (the sheet's: 上耦, 次耦, …), else by number ("耦 7").  ``window_sides``:
    whose accord each window is; releases out of turn within a cycle are named.
    """
    if not (math.isfinite(cycle_s) and cycle_s > 0):
        raise UserError(f"the cycle length must be a positive number of seconds, got {cycle_s!r}")
    right = left = 0
    decisions: list[Decision] = []
    releases = list(releases)
    turns = out_of_turn(releases, lambda r: max(0, math.floor(r.time_s / cycle_s)))
    for i, release in enumerate(releases):
        cycle = max(0, math.floor(release.time_s / cycle_s))
        exempt = exempt_by_cycle[cycle] if cycle < len(exempt_by_cycle) else frozenset()
        local = Release(release.time_s - cycle * cycle_s, release.side, release.hit)
        part = judge([local], release_windows_s, tolerance_s, listening_end_s, exempt,
                     window_sides=window_sides)
        decision = part.decisions[0]
        right += part.right
        left += part.left
        pair = pair_names[cycle] if cycle < len(pair_names) else f"耦 {cycle + 1}"
        turn = turns.get(i)
        reason = f"{pair}: {decision.reason}" + (f"; {turn}" if turn else "")
        decisions.append(Decision(release, decision.counted, reason, turn))
    return Tally(right=right, left=left, decisions=tuple(decisions))


@dataclass(frozen=True)
class ShootingSetup:
    """How a 射節 cue is judged: its 節 (``jie`` of ``jie_s`` seconds in each 耦's cycle, the
    first ``listen`` of them to listen), the drum-accord times of one cycle and, per cycle, the
    sides exempt from the beat."""

    jie_s: float
    jie: int
    listen: int
    windows_s: tuple[float, ...]
    exempt_by_cycle: tuple[frozenset[str], ...]
    pair_names: tuple[str, ...] = ()  # the sheet's 耦 (上耦, 次耦, …), cycle by cycle

    @property
    def cycle_s(self) -> float:
        return self.jie_s * self.jie

    @property
    def listening_end_s(self) -> float:
        return self.jie_s * self.listen

    @property
    def window_sides(self) -> tuple[str, ...]:
        """Whose each accord is: in each shooting 節 the 上射's (右), then the 下射's (左)."""
        return tuple(RIGHT if i % 2 == 0 else LEFT for i in range(len(self.windows_s)))

    def judge(self, releases: Iterable[Release], tolerance_s: float) -> Tally:
        """「不鼓不釋」 over the whole cue (``judge_cycles``), each release at its own archer's
        accords."""
        return judge_cycles(releases, self.windows_s, self.cycle_s, self.listening_end_s,
                            tolerance_s, self.exempt_by_cycle, self.pair_names,
                            self.window_sides)


def shooting_setup(cue: Cue, span: CueSpan) -> ShootingSetup:
    """The judge's set-up of a 射節 cue from its compiled span."""
    ou = cue.shooting.ou if cue.shooting else ()
    return ShootingSetup(float(seconds(span.jie_ticks or 0)), span.jie, span.listen,
                         tuple(float(seconds(t)) for t in span.release_ticks),
                         tuple(frozenset(o.exempt) for o in ou), tuple(o.name for o in ou))

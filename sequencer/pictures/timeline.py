"""The picture of a rite's timeline: one lane per instrument by 八音, the 節, the cues as bands.

Drawn with the shared settings of ``sequencer.pictures.common`` (formats, fonts, colours).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cues.model import Cue, Rite
from cues.text import clock
from sequencer.pictures.common import (
    BAYIN_COLORS,
    BAYIN_ORDER,
    bayin_of,
    draw_picture,
    renderer_of,
)
from sequencer.timeline.events import CueSpan, Timeline
from sequencer.timeline.rite_json import music_lost, rite_length_s
from sequencer.timeline.timebase import TICKS_PER_SECOND

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure

KIND_COLORS: dict[str, str] = {
    "金奏": "#f2c14e", "升歌": "#8ecae6", "笙": "#f4a261", "管": "#90be6d", "間歌": "#b5a8e0",
    "合樂": "#7fc8a9", "射節": "#ee8f78", "無算樂": "#a8dadc", "陔": "#e9c46a", "驁": "#d4a373",
    "舞": "#ffafcc", "遷樂": "#adb5bd", "獻": "#ced4da", "告備": "#dee2e6", "射": "#c9ada7",
    "停": "#e5e5e5",
}
OPERATOR = "…operator"

# geometry in inches: y data units are lanes, LANE_IN inches each
LANE_IN, WIDTH_IN = 0.3, 16.0
LEFT_IN, RIGHT_IN, TOP_IN, BOTTOM_IN = 1.25, 0.3, 0.75, 1.05
LABEL_ROW_H = 1.15  # lanes per row of cue labels


def plot_timeline(rite: Rite, timeline: Timeline, path: str | Path, *,
                  fonts: Sequence[str] | None = None) -> list[str]:
    """Draw the timeline to ``path`` (.png or .svg); return warnings (e.g. no CJK font).

    One lane per instrument, grouped and coloured by 八音, with each note's onset as a short
    bar (its length faint behind it); a lane of 節 (grey: the listening 節 「先以聽」); each cue as
    a band labelled with its id and kind, shaded through the lanes, hatched where its music is
    lost, and with a fading, dashed right edge and "…operator" where the operator ends it.
    ``fonts``: CJK font families to try instead of ``sequencer.pictures.common.CJK_FAMILIES``.
    """
    return draw_picture(path, fonts, lambda fig: _draw_timeline(fig, rite, timeline))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _minutes(tick: int) -> float:
    return tick / TICKS_PER_SECOND / 60


def _lanes(timeline: Timeline) -> list[tuple[str, str]]:
    """(八音, instrument) for every instrument that sounds, in 八音 then catalog order."""
    from cues.catalog import CATALOG

    order = {name: i for i, name in enumerate(CATALOG)}
    names = {n.instrument for n in timeline.notes}

    def key(name: str) -> tuple[int, int, str]:
        bayin = bayin_of(name)
        group = BAYIN_ORDER.index(bayin) if bayin in BAYIN_ORDER else len(BAYIN_ORDER)
        return group, order.get(name, len(order)), name

    return [(bayin_of(name), name) for name in sorted(names, key=key)]


@dataclass
class _Frame:
    """The axes of the timeline and where things are on them (x in minutes, y in lanes)."""

    ax: Axes
    renderer: RendererBase
    lanes: int
    x1: float  # right end of the x axis
    per_px: float  # minutes per pixel
    total: float  # minutes shown

    @property
    def y_jie(self) -> float:  # the 節 lane, above the instruments
        return self.lanes

    @property
    def y_band(self) -> float:  # the cue bands
        return self.lanes + 1.25

    @property
    def y_rows(self) -> float:  # the first row of labels
        return self.lanes + 1.85


def _draw_timeline(fig: Figure, rite: Rite, timeline: Timeline) -> None:
    cues: dict[str, Cue] = {c.id: c for c in rite.cues}
    spans = sorted(timeline.spans, key=lambda s: (s.start, s.end))
    lanes = _lanes(timeline)
    start = min([s.start for s in spans] + [n.tick for n in timeline.notes[:1]] + [0])
    total = max(_minutes(timeline.end - start), 0.5)
    x0 = _minutes(start) - total * 0.01
    x1 = _minutes(start) + total * 1.02

    fig.set_size_inches(WIDTH_IN, 6)
    ax = fig.add_axes((0.1, 0.1, 0.8, 0.8))
    ax.set_xlim(x0, x1)
    renderer = renderer_of(fig)
    axes_px = (WIDTH_IN - LEFT_IN - RIGHT_IN) * fig.dpi
    frame = _Frame(ax, renderer, len(lanes), x1, (x1 - x0) / axes_px, total)

    rows = _draw_cue_labels(frame, spans, cues)
    y_top = frame.y_rows + max(rows, 1) * LABEL_ROW_H
    height = TOP_IN + BOTTOM_IN + (y_top + 0.5) * LANE_IN
    fig.set_size_inches(WIDTH_IN, height)
    ax.set_position((LEFT_IN / WIDTH_IN, BOTTOM_IN / height,
                     (WIDTH_IN - LEFT_IN - RIGHT_IN) / WIDTH_IN, (y_top + 0.5) * LANE_IN / height))
    ax.set_ylim(-0.5, y_top)

    _draw_lanes(frame, lanes)
    for span in spans:
        _draw_cue_band(frame, span, cues.get(span.cue))
    _draw_notes(frame, timeline, lanes)
    _draw_jie(frame, timeline, spans)
    _draw_axis_and_titles(fig, frame, rite, timeline, len(spans), height)


def _draw_cue_labels(frame: _Frame, spans: Sequence[CueSpan], cues: dict[str, Cue]) -> int:
    """Label every cue above the bands; return the number of rows of labels.

    Labels are placed latest first, each in the lowest row where it fits, so that no leader
    line (from the band up to its label) crosses a label."""
    ax = frame.ax
    labels = []
    for span in spans:
        cue = cues.get(span.cue)
        kind = cue.kind if cue else span.kind
        open_ended = not span.fixed_length and span.end > span.start
        text = f"{span.cue}\n{kind}" + (f" {OPERATOR}" if open_ended else "")
        label = ax.annotate(text, xy=(_minutes(span.start), 0), xytext=(2.5, 1),
                            textcoords="offset points", ha="left", va="bottom", fontsize=7.5,
                            linespacing=1.05, annotation_clip=False)
        w = (label.get_window_extent(frame.renderer).width + 10) * frame.per_px
        labels.append((span, label, w))
    rows: list[list[tuple[float, float]]] = []
    for span, label, w in sorted(labels, key=lambda t: (-t[0].start, -t[0].end)):
        x = _minutes(span.start)
        lo = min(x, frame.x1 - w)
        row = next((i for i, r in enumerate(rows)
                    if all(lo + w <= a or lo >= b for a, b in r)), len(rows))
        if row == len(rows):
            rows.append([])
        rows[row].append((lo, lo + w))
        y = frame.y_rows + row * LABEL_ROW_H
        label.xy = (lo, y)
        ax.plot([x, x], [frame.y_band + 0.4, y + 0.05], color="#777777", lw=0.6, zorder=1)
        if lo < x:
            ax.plot([x, lo], [y + 0.05, y + 0.05], color="#777777", lw=0.6, zorder=1)
    return len(rows)


def _draw_lanes(frame: _Frame, lanes: Sequence[tuple[str, str]]) -> None:
    """Alternate shading per 八音, the lane names on the left."""
    ax, n = frame.ax, frame.lanes
    groups: list[str] = []
    for i, (bayin, _name) in enumerate(lanes):
        y = n - 1 - i
        if bayin not in groups:
            groups.append(bayin)
        if len(groups) % 2 == 0:
            ax.axhspan(y - 0.5, y + 0.5, color="#f3f3f3", zorder=0, lw=0)
    ax.axhspan(frame.y_jie - 0.5, frame.y_jie + 0.5, color="#fbf3e4", zorder=0, lw=0)
    ax.set_yticks([n - 1 - i for i in range(n)] + [frame.y_jie, frame.y_band],
                  [f"{bayin or '?'}  {name}" for bayin, name in lanes] + ["節", "cues"])
    for tick, (bayin, _) in zip(ax.get_yticklabels(), lanes, strict=False):
        tick.set_color(BAYIN_COLORS.get(bayin, "#555555"))
    ax.tick_params(axis="y", length=0, labelsize=8.5)


def _draw_cue_band(frame: _Frame, span: CueSpan, cue: Cue | None) -> None:
    """A cue's band, and its shading through the lanes; a moment is a diamond."""
    from matplotlib.patches import Rectangle

    ax, n, y_band = frame.ax, frame.lanes, frame.y_band
    kind = cue.kind if cue else span.kind
    color = KIND_COLORS.get(kind, "#cccccc")
    lost = cue is not None and music_lost(cue)
    a, b = _minutes(span.start), _minutes(span.end)
    hatch = "////" if lost else None
    if b <= a:  # a moment: a pause, a move, a report, taken by the operator
        ax.plot([a, a], [-0.5, frame.y_jie + 0.5], ls=(0, (2, 2)), lw=0.6, color="#999999",
                zorder=0.7)
        ax.plot([a], [y_band], marker="D", ms=5, mfc=color, mec="#333333", mew=0.6, zorder=3)
        return
    ax.add_patch(Rectangle((a, -0.5), b - a, n + 1, facecolor=color, alpha=0.16, lw=0,
                           zorder=0.5))
    if lost:
        ax.add_patch(Rectangle((a, -0.5), b - a, n + 1, fill=False, hatch="////",
                               edgecolor="#bdbdbd", lw=0, zorder=0.6))
    solid = b - a if span.fixed_length else (b - a) * 0.6
    ax.add_patch(Rectangle((a, y_band - 0.4), solid, 0.8, facecolor=color, hatch=hatch,
                           edgecolor="#555555", lw=0.5, zorder=2))
    if not span.fixed_length:  # fade out to a dashed edge: the operator ends it
        steps = 8
        step = (b - a - solid) / steps
        for k in range(steps):
            ax.add_patch(Rectangle((a + solid + k * step, y_band - 0.4), step, 0.8,
                                   facecolor=color, hatch=hatch, edgecolor="#555555",
                                   lw=0, alpha=1 - (k + 1) / (steps + 1), zorder=2))
        ax.plot([b, b], [y_band - 0.5, y_band + 0.5], ls=(0, (2, 1.5)), lw=1,
                color="#333333", zorder=3)
    _band_title(frame, cue, a, b)


def _band_title(frame: _Frame, cue: Cue | None, a: float, b: float) -> None:
    """The cue's title inside its band, when it fits."""
    if cue is None or not cue.title:
        return
    text = frame.ax.text(a, frame.y_band, " " + cue.title, ha="left", va="center", fontsize=7,
                         zorder=4, clip_on=True)
    if (text.get_window_extent(frame.renderer).width + 4) * frame.per_px > (b - a):
        text.remove()


def _draw_notes(frame: _Frame, timeline: Timeline, lanes: Sequence[tuple[str, str]]) -> None:
    """Each note: its length faint, its onset dark."""
    by_lane: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for note in timeline.notes:
        by_lane[note.instrument].append((_minutes(note.tick), _minutes(note.duration)))
    for i, (bayin, name) in enumerate(lanes):
        y = frame.lanes - 1 - i
        color = BAYIN_COLORS.get(bayin, "#555555")
        bars = by_lane[name]
        frame.ax.broken_barh(bars, (y - 0.16, 0.32), facecolors=color, alpha=0.22, lw=0,
                             zorder=1)
        frame.ax.vlines([t for t, _ in bars], y - 0.32, y + 0.32, colors=color, lw=0.7,
                        zorder=1.5)


def _draw_jie(frame: _Frame, timeline: Timeline, spans: Sequence[CueSpan]) -> None:
    """The 節: grey while listening (先以聽), black for the shooting 節."""
    seen: dict[str, int] = defaultdict(int)
    by_cue = {s.cue: s for s in spans}
    listen_x: list[float] = []
    shoot_x: list[float] = []
    for marker in timeline.markers:
        if marker.kind != "jie":
            continue
        span = by_cue.get(marker.cue)
        k = seen[marker.cue]
        seen[marker.cue] += 1
        listening = span is not None and span.jie > 0 and k % span.jie < span.listen
        (listen_x if listening else shoot_x).append(_minutes(marker.tick))
    y = frame.y_jie
    frame.ax.vlines(listen_x, y - 0.35, y + 0.35, colors="#9e9e9e", lw=1.1, zorder=2)
    frame.ax.vlines(shoot_x, y - 0.35, y + 0.35, colors="#222222", lw=1.1, zorder=2)


def _draw_axis_and_titles(fig: Figure, frame: _Frame, rite: Rite, timeline: Timeline,
                          cue_count: int, height: float) -> None:
    """The minutes axis, the title, the settings line and the legend."""
    from matplotlib.ticker import MultipleLocator

    ax, total = frame.ax, frame.total
    step = 1 if total <= 30 else 2 if total <= 60 else 5 if total <= 150 else 10
    ax.xaxis.set_major_locator(MultipleLocator(step))
    if step > 1:
        ax.xaxis.set_minor_locator(MultipleLocator(1))
    ax.grid(axis="x", color="#dddddd", lw=0.5, zorder=0)
    ax.set_axisbelow(True)
    ax.set_xlabel("minutes from the first cue (offline timeline: each GO taken after the "
                  "go gap)")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)

    detail = ", ".join(f"{k} {getattr(timeline.settings, k)}" for k in (
        "tempo_bpm", "lost_zhong_seconds", "go_gap_s", "tuning", "drum_pattern"))
    counts = f"{_plural(cue_count, 'cue')}, {_plural(len(timeline.notes), 'note')}"
    fig.suptitle(f"{rite.title} ({rite.id}) — timeline, {clock(rite_length_s(timeline))}, "
                 f"{counts}",
                 x=LEFT_IN / WIDTH_IN, ha="left",
                 y=1 - 0.18 / height, va="top", fontsize=12)
    fig.text(LEFT_IN / WIDTH_IN, 1 - 0.48 / height, detail, fontsize=8, color="#555555",
             va="top")
    fig.legend(handles=_legend_handles(), loc="lower left", ncol=5, frameon=False, fontsize=7.5,
               bbox_to_anchor=(LEFT_IN / WIDTH_IN - 0.01, 0.0))


def _legend_handles() -> list[Any]:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    return [
        Patch(facecolor="white", edgecolor="#555555", hatch="////",
              label="hatched: the music is lost (structure only)"),
        Patch(facecolor="#bbbbbb", edgecolor="#333333", linestyle="--",
              label=f"fading, dashed edge, {OPERATOR}: the operator ends it"),
        Line2D([], [], marker="D", ls="", mfc="#dddddd", mec="#333333", ms=5,
               label="a moment held by the operator (獻, 遷樂, 射, …)"),
        Line2D([], [], marker="|", ls="", color="#222222", ms=9, mew=1.2,
               label="節 (grey: 先以聽, the listening 節)"),
        Line2D([], [], marker="|", ls="", color="#1f5fa8", ms=7, label="note onset"),
    ]

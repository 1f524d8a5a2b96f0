"""The picture of a rite's hang seen from above: the hall, its stairs, every place and move.

Drawn with the shared settings of ``sequencer.pictures.common`` (formats, fonts, colours).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cues.model import Cue, Position, Rite
from sequencer.pictures.common import (
    BAYIN_COLORS,
    BAYIN_ORDER,
    bayin_of,
    draw_picture,
    renderer_of,
)

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

BAYIN_ENGLISH: dict[str, str] = {
    "金": "bronze", "石": "stone", "絲": "silk", "竹": "bamboo", "匏": "gourd", "土": "clay",
    "革": "hide", "木": "wood", "人聲": "voice",
}
# marker shape per kind of thing that stands in the hang
SHAPES: dict[str, tuple[str, str]] = {
    "bells": ("s", "bells 金 (編鐘, 鑮)"),
    "chimes": ("^", "chimes 石 (編磬)"),
    "drums": ("o", "drums 革"),
    "winds": ("d", "winds 竹 匏 (管, 笙)"),
    "strings": ("h", "strings 絲 (瑟)"),
    "people": ("P", "people (工, 樂正, singers)"),
}
_SHAPE_OF_BAYIN = {"金": "bells", "石": "chimes", "革": "drums", "竹": "winds", "匏": "winds",
                   "絲": "strings", "人聲": "people", "土": "winds", "木": "drums"}
_DIRECTIONS = {"東": (1.0, 0.0), "西": (-1.0, 0.0), "南": (0.0, -1.0), "北": (0.0, 1.0)}
MOVE_COLOR = "#6a1b9a"
MARKER_SIZE = 10.0  # points
LEFT_IN, RIGHT_IN, TOP_IN, BOTTOM_IN = 0.65, 0.3, 0.8, 1.25

Move = tuple[Cue, Position, tuple[float, float] | None, str | None]
"""A 遷樂 move: (cue, new position, old place or None, instrument)."""


def plot_layout(rite: Rite, path: str | Path, *, fonts: Sequence[str] | None = None) -> list[str]:
    """Draw the hang from above to ``path`` (.png or .svg); return warnings (e.g. no CJK font).

    The hall (堂) north of y = 0 with 阼階 (x = +3) and 西階 (x = −3); every position at its
    place, its marker shaped by kind (bells, chimes, drums, winds, strings, people) and coloured
    by 八音, an arrow where it faces; each 遷樂 move hollow, with a curved arrow from where the
    musicians stood and the cue's id; a compass and a metre scale.
    """
    return draw_picture(path, fonts, lambda fig: _draw_layout(fig, rite))


def _kind(instrument: str | None) -> str:
    return _SHAPE_OF_BAYIN.get(bayin_of(instrument), "people")


def _facing(facing: str | None) -> tuple[float, float] | None:
    if not facing:
        return None
    dx = sum(_DIRECTIONS[ch][0] for ch in facing if ch in _DIRECTIONS)
    dy = sum(_DIRECTIONS[ch][1] for ch in facing if ch in _DIRECTIONS)
    norm = (dx * dx + dy * dy) ** 0.5
    return (dx / norm, dy / norm) if norm else None


def _moves(rite: Rite) -> list[Move]:
    """Every 遷樂 move in cue order."""
    where = {p.name: (p.x, p.y) for p in rite.layout}
    instrument = {p.name: p.instrument for p in rite.layout}
    out = []
    for cue in rite.cues:
        for move in cue.moves:
            out.append((cue, move, where.get(move.name),
                        move.instrument or instrument.get(move.name)))
            where[move.name] = (move.x, move.y)
    return out


@dataclass
class _Plan:
    """The drawn area (metres) and the size of the figure (inches)."""

    half: float  # half the hall's width
    depth: float  # the hall's depth
    x0: float
    x1: float
    y0: float
    y1: float
    scale: float  # inches a metre

    @property
    def width(self) -> float:
        return LEFT_IN + RIGHT_IN + (self.x1 - self.x0) * self.scale

    @property
    def height(self) -> float:
        return TOP_IN + BOTTOM_IN + (self.y1 - self.y0) * self.scale


def _plan(points: Sequence[tuple[float, float]]) -> _Plan:
    on_hall = [(x, y) for x, y in points if y > 0]
    half = max([5.0] + [abs(x) + 1.0 for x, _ in on_hall])
    depth = max([3.0] + [y + 1.0 for _, y in on_hall])
    xs = [x for x, _ in points] + [-half, half, -3.0, 3.0]
    ys = [y for _, y in points] + [depth, -1.0]
    x0, x1 = min(xs) - 2.6, max(xs) + 2.6
    y0, y1 = min(ys) - 1.8, max(ys) + 0.8
    scale = min(0.62, 11.5 / (x1 - x0), 10.0 / (y1 - y0))
    return _Plan(half, depth, x0, x1, y0, y1, scale)


def _draw_layout(fig: Figure, rite: Rite) -> None:
    moves = _moves(rite)
    points = [(p.x, p.y) for p in rite.layout] + [(m.x, m.y) for _, m, _, _ in moves]
    plan = _plan(points)
    width, height = plan.width, plan.height
    fig.set_size_inches(width, height)
    ax = fig.add_axes((LEFT_IN / width, BOTTOM_IN / height,
                       (plan.x1 - plan.x0) * plan.scale / width,
                       (plan.y1 - plan.y0) * plan.scale / height))
    ax.set_xlim(plan.x0, plan.x1)
    ax.set_ylim(plan.y0, plan.y1)
    ax.set_aspect("equal")
    ax.grid(color="#eeeeee", lw=0.5, zorder=0)
    ax.set_axisbelow(True)
    ax.set_xlabel("metres east of the hall's axis", fontsize=8)
    ax.set_ylabel("metres north of the hall's edge", fontsize=8)
    ax.tick_params(labelsize=7, colors="#777777")

    fixed_texts = _draw_hall(ax, plan.half, plan.depth)
    renderer = renderer_of(fig)
    obstacles: list[Bbox] = [t.get_window_extent(renderer).padded(2) for t in fixed_texts]
    obstacles.append(ax.texts[0].get_window_extent(renderer).padded(2))
    marks = _Marks(ax, MARKER_SIZE * fig.dpi / 72, points, rite.layout)
    for p in rite.layout:
        obstacles += marks.boxes(p, 1.0)
    for _, m, _, _ in moves:
        obstacles += marks.boxes(m, 1.7 if marks.is_ring(m) else 1.0)

    used_kinds = _draw_places(marks, rite.layout) | _draw_moves(marks, moves, obstacles)

    # labels, placed where they collide with nothing drawn so far
    bounds = ax.get_window_extent(renderer)
    for p in rite.layout:
        obstacles.append(_place_label(ax, renderer, p.name, p.x, p.y, obstacles, bounds,
                                      color="#111111"))
    for cue, m, _, _ in moves:
        obstacles.append(_place_label(ax, renderer, f"{m.name} → {cue.id}", m.x, m.y, obstacles,
                                      bounds, color=MOVE_COLOR))
    _draw_compass_and_scale(ax, plan)
    _draw_legend_and_titles(fig, ax, rite, plan, used_kinds, bool(moves))


def _draw_hall(ax: Axes, half: float, depth: float) -> list[Any]:
    """The hall and its two stairs; return the stairs' labels."""
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((-half, 0), 2 * half, depth, facecolor="#f5efe2", edgecolor="#8d6e63",
                           lw=1.2, zorder=0.5))
    ax.text(0, depth - 0.3, "堂 (the hall)", ha="center", va="top", fontsize=10,
            color="#6d4c41", zorder=1)
    ax.text(half - 0.15, 0.12, "y = 0: the hall's front edge", ha="right", va="bottom",
            fontsize=6.5, color="#8d6e63", zorder=1)
    fixed_texts = []
    for x, name, side in ((3.0, "阼階 (east stairs)", "left"), (-3.0, "西階 (west stairs)",
                                                                  "right")):
        ax.add_patch(Rectangle((x - 0.45, -0.9), 0.9, 0.9, facecolor="#e8dcc4",
                               edgecolor="#8d6e63", lw=0.8, zorder=0.6))
        for k in (1, 2):
            ax.plot([x - 0.45, x + 0.45], [-0.3 * k, -0.3 * k], color="#8d6e63", lw=0.5,
                    zorder=0.7)
        dx = 0.6 if side == "left" else -0.6
        fixed_texts.append(ax.text(x + dx, -0.45, name, ha=side, va="center", fontsize=7.5,
                                   color="#6d4c41", zorder=1))
    return fixed_texts


class _Marks:
    """Markers and facing arrows: their lengths, and the boxes labels must keep clear of."""

    def __init__(self, ax: Axes, marker_px: float, points: Sequence[tuple[float, float]],
                 layout: Sequence[Position]) -> None:
        self.ax = ax
        self.marker_px = marker_px
        self.points = points
        self.layout = layout

    def is_ring(self, m: Position) -> bool:
        """A move back to a place drawn already: drawn as a ring around it."""
        return any(abs(p.x - m.x) < 0.05 and abs(p.y - m.y) < 0.05 for p in self.layout)

    def arrow_len(self, x: float, y: float, d: tuple[float, float]) -> float:
        """0.75 m, or less so as to stop short of another marker in the way."""
        length = 0.75
        for ox, oy in self.points:
            along = (ox - x) * d[0] + (oy - y) * d[1]
            across = abs((ox - x) * d[1] - (oy - y) * d[0])
            if 0 < along < 1.5 and across < 0.3:
                length = min(length, max(0.3, along * 0.55))
        return length

    def boxes(self, p: Position, size: float) -> list[Bbox]:
        """The boxes (display pixels) of the marker at ``p`` and of its facing arrow."""
        from matplotlib.transforms import Bbox

        to_px = self.ax.transData.transform
        cx, cy = to_px((p.x, p.y))
        r = self.marker_px * size / 2 + 1
        out = [Bbox.from_extents(cx - r, cy - r, cx + r, cy + r)]
        d = _facing(p.facing)
        if d:
            length = self.arrow_len(p.x, p.y, d)
            (ax_, ay_), (bx, by) = to_px((p.x, p.y)), to_px((p.x + d[0] * length,
                                                              p.y + d[1] * length))
            out.append(Bbox.from_extents(min(ax_, bx) - 3, min(ay_, by) - 3, max(ax_, bx) + 3,
                                         max(ay_, by) + 3))
        return out

    def arrow(self, p: Position, color: str, mutation_scale: float, **line: Any) -> None:
        """The facing arrow of the marker at ``p``, if it faces somewhere."""
        d = _facing(p.facing)
        if not d:
            return
        n = self.arrow_len(p.x, p.y, d)
        dpi = self.ax.figure.dpi
        self.ax.annotate("", xy=(p.x + d[0] * n, p.y + d[1] * n), xytext=(p.x, p.y),
                         arrowprops={"arrowstyle": "-|>", "color": color, **line,
                                     "shrinkA": self.marker_px * 72 / dpi / 2, "shrinkB": 0,
                                     "mutation_scale": mutation_scale}, zorder=3)


def _draw_places(marks: _Marks, layout: Sequence[Position]) -> set[str]:
    """The places, with facing arrows; return the kinds drawn."""
    used_kinds: set[str] = set()
    for p in layout:
        kind = _kind(p.instrument)
        used_kinds.add(kind)
        color = BAYIN_COLORS.get(bayin_of(p.instrument), "#555555")
        marks.ax.plot([p.x], [p.y], marker=SHAPES[kind][0], ms=MARKER_SIZE, mfc=color,
                      mec="#222222", mew=0.7, ls="", zorder=4)
        marks.arrow(p, color, 9, lw=1.2)
    return used_kinds


def _draw_moves(marks: _Marks, moves: Sequence[Move], obstacles: list[Bbox]) -> set[str]:
    """The 遷樂 moves: hollow, with a curved arrow from where they stood (an obstacle for the
    labels); return the kinds drawn."""
    from matplotlib.patches import FancyArrowPatch

    ax = marks.ax
    to_px = ax.transData.transform
    used_kinds: set[str] = set()
    for _cue, m, old, instrument in moves:
        kind = _kind(instrument)
        used_kinds.add(kind)
        # back to a place drawn already: a ring around it, so both stay visible
        ring = marks.is_ring(m)
        ax.plot([m.x], [m.y], marker=SHAPES[kind][0],
                ms=MARKER_SIZE * 1.7 if ring else MARKER_SIZE,
                mfc="none" if ring else "white", mec=MOVE_COLOR, mew=1.3, ls="",
                zorder=3.8 if ring else 5)
        if old is not None and old != (m.x, m.y):
            obstacles.extend(_arc_boxes(to_px(old), to_px((m.x, m.y)), 0.25))
            ax.add_patch(FancyArrowPatch(old, (m.x, m.y), connectionstyle="arc3,rad=0.25",
                                         arrowstyle="-|>", mutation_scale=11, color=MOVE_COLOR,
                                         lw=1.1, ls=(0, (4, 2)), shrinkA=7, shrinkB=8,
                                         zorder=3.5))
        marks.arrow(m, MOVE_COLOR, 8, lw=1.0, ls="--")
    return used_kinds


def _draw_compass_and_scale(ax: Axes, plan: _Plan) -> None:
    from mpl_toolkits.axes_grid1.anchored_artists import AnchoredSizeBar

    ax.annotate("", xy=(0.965, 0.9), xytext=(0.965, 0.78), xycoords="axes fraction",
                textcoords="axes fraction",
                arrowprops={"arrowstyle": "-|>", "color": "#222222", "lw": 1.4,
                            "mutation_scale": 14}, zorder=6)
    ax.text(0.965, 0.905, "北 N", transform=ax.transAxes, ha="center", va="bottom",
            fontsize=10, zorder=6)
    metres = 5 if (plan.x1 - plan.x0) > 14 else 2
    ax.add_artist(AnchoredSizeBar(ax.transData, metres, f"{metres} m", loc="lower right",
                                  pad=0.5, borderpad=0.6, sep=3, frameon=False, size_vertical=0.05,
                                  fontproperties={"size": 8}))


def _draw_legend_and_titles(fig: Figure, ax: Axes, rite: Rite, plan: _Plan,
                            used_kinds: set[str], has_moves: bool) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    width, height = plan.width, plan.height
    handles: list[Artist] = [
        Line2D([], [], marker=SHAPES[k][0], ls="", mfc="#bbbbbb", mec="#222222", ms=8,
               label=SHAPES[k][1]) for k in SHAPES if k in used_kinds]
    if any(p.facing for p in rite.layout):
        handles.append(Line2D([], [], marker=r"$\rightarrow$", ls="", color="#333333", ms=10,
                              label="faces"))
    if has_moves:
        handles.append(Line2D([], [], marker="o", ls="", mfc="white", mec=MOVE_COLOR, mew=1.3,
                              ms=8, label="after a 遷樂 move (with its cue id)"))
    bayin_used = [b for b in BAYIN_ORDER if any(bayin_of(p.instrument) == b for p in rite.layout)]
    handles += [Patch(color=BAYIN_COLORS[b], label=f"colour {b} {BAYIN_ENGLISH[b]}")
                for b in bayin_used]
    if handles:
        fig.legend(handles=handles, loc="lower left", ncol=min(len(handles), 5), frameon=False,
                   fontsize=7.5, bbox_to_anchor=(LEFT_IN / width - 0.02, 0.0),
                   columnspacing=1.2)
    if not rite.layout:
        ax.text(0, -3, "(the sheet gives no [[position]]s)", ha="center", va="center",
                fontsize=9, color="#777777")
    fig.suptitle(f"{rite.title} ({rite.id}) — the {rite.hang} seen from above",
                 x=LEFT_IN / width, ha="left", y=1 - 0.15 / height, va="top", fontsize=12)
    fig.text(LEFT_IN / width, 1 - 0.47 / height,
             "metres: x east, y north; y = 0 is the front edge of the hall (堂); "
             "阼階 at x = +3, 西階 at x = −3", fontsize=7.5, color="#555555", va="top")


# label offsets tried in order (points), with the alignment that keeps the text off the marker
_EAST = [((9, 0), "left", "center"), ((-9, 0), "right", "center"), ((0, 9), "center", "bottom"),
         ((0, -9), "center", "top"), ((8, 8), "left", "bottom"), ((8, -8), "left", "top"),
         ((-8, 8), "right", "bottom"), ((-8, -8), "right", "top")]


def _place_label(ax: Axes, renderer: RendererBase, text: str, x: float, y: float,
                 obstacles: list[Bbox], bounds: Bbox, *, color: str) -> Bbox:
    """Put ``text`` next to (x, y) where it overlaps nothing; return its box."""
    if x > 1:
        near = _EAST
    elif x < -1:
        near = [((-dx, dy), {"left": "right", "right": "left"}.get(ha, ha), va)
                for (dx, dy), ha, va in _EAST]
    else:
        near = [_EAST[3], _EAST[2]] + [c for i, c in enumerate(_EAST) if i not in (2, 3)]
    candidates = near + [((dx * 2.4, dy * 2.4), ha, va) for (dx, dy), ha, va in near]
    best: tuple[float, Any, Bbox] | None = None
    for i, (offset, ha, va) in enumerate(candidates):
        far = i >= len(near)
        props = {"arrowstyle": "-", "color": color, "lw": 0.5, "shrinkA": 0, "shrinkB": 5}
        label = ax.annotate(text, xy=(x, y), xytext=offset, textcoords="offset points", ha=ha,
                            va=va, fontsize=8.5, color=color, zorder=7,
                            arrowprops=props if far else None,
                            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none",
                                  "alpha": 0.75})
        box = label.get_window_extent(renderer).padded(1.5)
        overlap = sum(_area(box, o) for o in obstacles)
        outside = 0.0 if bounds.contains(box.x0, box.y0) and bounds.contains(box.x1, box.y1) \
            else box.width * box.height
        score = overlap + outside + (0.5 if far else 0.0)
        if overlap == 0 and outside == 0:
            return box
        label.remove()
        if best is None or score < best[0]:
            best = (score, (offset, ha, va, far), box)
    assert best is not None
    offset, ha, va, far = best[1]
    props = {"arrowstyle": "-", "color": color, "lw": 0.5, "shrinkA": 0, "shrinkB": 5}
    ax.annotate(text, xy=(x, y), xytext=offset, textcoords="offset points", ha=ha, va=va,
                fontsize=8.5, color=color, zorder=7,
                arrowprops=props if far else None,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.75})
    return best[2]


def _arc_boxes(a: Any, b: Any, rad: float, r: float = 3.0) -> list[Bbox]:
    """Small boxes along an ``arc3`` connection from a to b (display pixels): obstacles."""
    from matplotlib.transforms import Bbox

    (ax_, ay_), (bx, by) = a, b
    cx = (ax_ + bx) / 2 + rad * (by - ay_)
    cy = (ay_ + by) / 2 - rad * (bx - ax_)
    boxes = []
    for i in range(1, 40):
        t = i / 40
        x = (1 - t) ** 2 * ax_ + 2 * (1 - t) * t * cx + t * t * bx
        y = (1 - t) ** 2 * ay_ + 2 * (1 - t) * t * cy + t * t * by
        boxes.append(Bbox.from_extents(x - r, y - r, x + r, y + r))
    return boxes


def _area(a: Bbox, b: Bbox) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0

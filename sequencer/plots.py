"""Pictures of a rite: its timeline in lanes by 八音, and its hang seen from above.

Views only, like ``sequencer.views``: they read a ``Rite`` and its ``Timeline`` and write a PNG or
an SVG (chosen by the file's extension).  matplotlib is imported inside the functions and drawn on
an Agg canvas without pyplot, so importing this module is cheap and leaves no global figure
state.  Chinese labels need a CJK font: the first of ``CJK_FAMILIES`` that matplotlib knows, or
the first of ``CJK_FILES`` that exists; with none the picture is still drawn and the functions
return a warning (the glyphs show as boxes).  SVG text stays text (``svg.fonttype = 'none'``).
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cues.errors import UserError
from cues.model import Cue, Position, Rite
from sequencer.events import Timeline
from sequencer.timebase import TICKS_PER_SECOND

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

FORMATS: dict[str, str] = {".png": "png", ".svg": "svg"}
DPI = 150

CJK_FAMILIES: tuple[str, ...] = (
    "WenQuanYi Micro Hei", "WenQuanYi Zen Hei", "Noto Sans CJK TC", "Noto Sans CJK SC",
    "Noto Sans CJK JP", "Noto Sans CJK KR", "Noto Serif CJK TC", "Noto Serif CJK SC",
    "Source Han Sans TC", "Source Han Sans SC", "Source Han Sans", "Droid Sans Fallback",
    "AR PL UMing TW", "AR PL UKai TW", "AR PL UMing CN", "Microsoft JhengHei", "Microsoft YaHei",
    "SimHei", "PingFang TC", "PingFang SC", "Heiti TC", "Hiragino Sans GB", "Arial Unicode MS",
)
CJK_FILES: tuple[str, ...] = (
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/google-noto-cjk/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
    "/usr/share/fonts/truetype/arphic/uming.ttc",
    "/System/Library/Fonts/PingFang.ttc",
    "/Library/Fonts/Arial Unicode.ttf",
    "C:/Windows/Fonts/msjh.ttc",
    "C:/Windows/Fonts/msyh.ttc",
)

# the 八音 in the order of the lanes, with a colour each (the layout uses the same colours)
BAYIN_ORDER: tuple[str, ...] = ("金", "石", "絲", "竹", "匏", "土", "革", "木", "人聲")
BAYIN_COLORS: dict[str, str] = {
    "金": "#b8860b", "石": "#4f6d7a", "絲": "#7b3f9e", "竹": "#2e7d32", "匏": "#d2691e",
    "土": "#8d6e63", "革": "#b22222", "木": "#6d4c41", "人聲": "#1f5fa8", "": "#555555",
}
KIND_COLORS: dict[str, str] = {
    "金奏": "#f2c14e", "升歌": "#8ecae6", "笙": "#f4a261", "管": "#90be6d", "間歌": "#b5a8e0",
    "合樂": "#7fc8a9", "射節": "#ee8f78", "無算樂": "#a8dadc", "陔": "#e9c46a", "驁": "#d4a373",
    "舞": "#ffafcc", "遷樂": "#adb5bd", "獻": "#ced4da", "告備": "#dee2e6", "射": "#c9ada7",
    "停": "#e5e5e5",
}
BAYIN_ENGLISH: dict[str, str] = {
    "金": "bronze", "石": "stone", "絲": "silk", "竹": "bamboo", "匏": "gourd", "土": "clay",
    "革": "hide", "木": "wood", "人聲": "voice",
}
OPERATOR = "…operator"

# ── shared ──────────────────────────────────────────────────────────────────────────────────


def picture_format(path: str | Path) -> str:
    """``png`` or ``svg`` from the file's extension; anything else is the user's error."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise UserError(f"{path}: a picture is written as .png or .svg "
                        f"(got {suffix or 'no extension'!s})")
    return FORMATS[suffix]


def find_cjk_font(families: Sequence[str] = CJK_FAMILIES,
                  files: Sequence[str] = CJK_FILES) -> str | None:
    """The family name of the first CJK font matplotlib can use, or None."""
    from matplotlib import font_manager

    known = {f.name for f in font_manager.fontManager.ttflist}
    for family in families:
        if family in known:
            return family
    for file in files:
        if not Path(file).is_file():
            continue
        try:
            font_manager.fontManager.addfont(file)
            return font_manager.FontProperties(fname=file).get_name()
        except (OSError, RuntimeError, ValueError):
            continue
    return None


def _style(fonts: Sequence[str] | None) -> tuple[dict[str, Any], str | None]:
    """matplotlib settings for the pictures, and a warning when no CJK font was found."""
    family = find_cjk_font() if fonts is None else find_cjk_font(fonts, ())
    rc: dict[str, Any] = {
        "svg.fonttype": "none",
        "axes.unicode_minus": False,
        "hatch.linewidth": 0.6,
        "font.size": 8,
    }
    if family is None:
        tried = list(fonts if fonts is not None else CJK_FAMILIES)
        what = (f"tried {', '.join(tried[:3])}{', …' if len(tried) > 3 else ''}" if tried
                else "none given to try")
        rc["font.family"] = ["DejaVu Sans"]
        return rc, (f"no CJK font found ({what}): Chinese labels are drawn as boxes; "
                    f"install one, e.g. Debian's fonts-wqy-microhei")
    rc["font.family"] = [family, "DejaVu Sans"]
    return rc, None


def _draw(path: str | Path, fonts: Sequence[str] | None, draw: Any) -> list[str]:
    """Check the extension, set the style, let ``draw(fig)`` draw, save; return warnings."""
    fmt = picture_format(path)
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rc, warning = _style(fonts)
    with ExitStack() as stack:
        stack.enter_context(matplotlib.rc_context(rc))
        stack.enter_context(warnings.catch_warnings())
        warnings.filterwarnings("ignore", message=r"Glyph .* missing from")
        fig = Figure(dpi=DPI)
        FigureCanvasAgg(fig)
        draw(fig)
        fig.savefig(path, format=fmt, dpi=DPI, facecolor="white")
    return [warning] if warning else []


def _bayin(instrument: str | None) -> str:
    """The 八音 of an instrument name ('' when unknown); no instrument means people, 人聲."""
    if instrument is None:
        return "人聲"
    from cues.catalog import canonical_instrument, get_instrument

    name = canonical_instrument(instrument)
    return get_instrument(name).bayin if name else ""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _minutes(tick: int) -> float:
    return tick / TICKS_PER_SECOND / 60


# ── the timeline ────────────────────────────────────────────────────────────────────────────


def plot_timeline(rite: Rite, timeline: Timeline, path: str | Path, *,
                  fonts: Sequence[str] | None = None) -> list[str]:
    """Draw the timeline to ``path`` (.png or .svg); return warnings (e.g. no CJK font).

    One lane per instrument, grouped and coloured by 八音, with each note's onset as a short
    bar (its length faint behind it); a lane of 節 (grey: the listening 節 「先以聽」); each cue as
    a band labelled with its id and kind, shaded through the lanes, hatched where its music is
    lost, and with a fading, dashed right edge and "…operator" where the operator ends it.
    ``fonts``: CJK font families to try instead of ``CJK_FAMILIES``.
    """
    return _draw(path, fonts, lambda fig: _draw_timeline(fig, rite, timeline))


def _lanes(timeline: Timeline) -> list[tuple[str, str]]:
    """(八音, instrument) for every instrument that sounds, in 八音 then catalog order."""
    from cues.catalog import CATALOG

    order = {name: i for i, name in enumerate(CATALOG)}
    names = {n.instrument for n in timeline.notes}

    def key(name: str) -> tuple[int, int, str]:
        bayin = _bayin(name)
        group = BAYIN_ORDER.index(bayin) if bayin in BAYIN_ORDER else len(BAYIN_ORDER)
        return group, order.get(name, len(order)), name

    return [(_bayin(name), name) for name in sorted(names, key=key)]


def _draw_timeline(fig: Figure, rite: Rite, timeline: Timeline) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.ticker import MultipleLocator

    from sequencer.views import music_lost as _lost

    cues: dict[str, Cue] = {c.id: c for c in rite.cues}
    spans = sorted(timeline.spans, key=lambda s: (s.start, s.end))
    lanes = _lanes(timeline)
    n = len(lanes)
    start = min([s.start for s in spans] + [n.tick for n in timeline.notes[:1]] + [0])
    total = max(_minutes(timeline.end - start), 0.5)
    x0 = _minutes(start) - total * 0.01
    x1 = _minutes(start) + total * 1.02

    # geometry in inches: y data units are lanes, UNIT inches each
    unit, width = 0.3, 16.0
    left_in, right_in, top_in, bottom_in = 1.25, 0.3, 0.75, 1.05
    y_jie = n  # the 節 lane, above the instruments
    y_band = n + 1.25  # the cue bands
    y_rows = n + 1.85  # the first row of labels
    row_h = 1.15

    fig.set_size_inches(width, 6)
    ax = fig.add_axes((0.1, 0.1, 0.8, 0.8))
    ax.set_xlim(x0, x1)
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    axes_px = (width - left_in - right_in) * fig.dpi
    per_px = (x1 - x0) / axes_px

    # cue labels: placed latest first, each in the lowest row where it fits, so that no
    # leader line (from the band up to its label) crosses a label
    labels = []
    for span in spans:
        cue = cues.get(span.cue)
        kind = cue.kind if cue else span.kind
        open_ended = not span.fixed_length and span.end > span.start
        text = f"{span.cue}\n{kind}" + (f" {OPERATOR}" if open_ended else "")
        label = ax.annotate(text, xy=(_minutes(span.start), 0), xytext=(2.5, 1),
                            textcoords="offset points", ha="left", va="bottom", fontsize=7.5,
                            linespacing=1.05, annotation_clip=False)
        w = (label.get_window_extent(renderer).width + 10) * per_px
        labels.append((span, label, w))
    rows: list[list[tuple[float, float]]] = []
    for span, label, w in sorted(labels, key=lambda t: (-t[0].start, -t[0].end)):
        x = _minutes(span.start)
        lo = min(x, x1 - w)
        row = next((i for i, r in enumerate(rows)
                    if all(lo + w <= a or lo >= b for a, b in r)), len(rows))
        if row == len(rows):
            rows.append([])
        rows[row].append((lo, lo + w))
        y = y_rows + row * row_h
        label.xy = (lo, y)
        ax.plot([x, x], [y_band + 0.4, y + 0.05], color="#777777", lw=0.6, zorder=1)
        if lo < x:
            ax.plot([x, lo], [y + 0.05, y + 0.05], color="#777777", lw=0.6, zorder=1)
    n_rows = max(len(rows), 1)
    y_top = y_rows + n_rows * row_h
    height = top_in + bottom_in + (y_top + 0.5) * unit
    fig.set_size_inches(width, height)
    ax.set_position((left_in / width, bottom_in / height,
                     (width - left_in - right_in) / width, (y_top + 0.5) * unit / height))
    ax.set_ylim(-0.5, y_top)

    # lanes: alternate shading per 八音, names on the left
    groups: list[str] = []
    for i, (bayin, _name) in enumerate(lanes):
        y = n - 1 - i
        if bayin not in groups:
            groups.append(bayin)
        if len(groups) % 2 == 0:
            ax.axhspan(y - 0.5, y + 0.5, color="#f3f3f3", zorder=0, lw=0)
    ax.axhspan(y_jie - 0.5, y_jie + 0.5, color="#fbf3e4", zorder=0, lw=0)
    ax.set_yticks([n - 1 - i for i in range(n)] + [y_jie, y_band],
                  [f"{bayin or '?'}  {name}" for bayin, name in lanes] + ["節", "cues"])
    for tick, (bayin, _) in zip(ax.get_yticklabels(), lanes, strict=False):
        tick.set_color(BAYIN_COLORS.get(bayin, "#555555"))
    ax.tick_params(axis="y", length=0, labelsize=8.5)

    # cue bands, and their shading through the lanes
    for span in spans:
        cue = cues.get(span.cue)
        kind = cue.kind if cue else span.kind
        color = KIND_COLORS.get(kind, "#cccccc")
        lost = cue is not None and _lost(cue)
        a, b = _minutes(span.start), _minutes(span.end)
        hatch = "////" if lost else None
        if b > a:
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
            _band_title(ax, renderer, cue, a, b, y_band, per_px)
        else:  # a moment: a pause, a move, a report, taken by the operator
            ax.plot([a, a], [-0.5, y_jie + 0.5], ls=(0, (2, 2)), lw=0.6, color="#999999",
                    zorder=0.7)
            ax.plot([a], [y_band], marker="D", ms=5, mfc=color, mec="#333333", mew=0.6, zorder=3)

    # notes: faint lengths, dark onsets
    by_lane: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for note in timeline.notes:
        by_lane[note.instrument].append((_minutes(note.tick), _minutes(note.duration)))
    for i, (bayin, name) in enumerate(lanes):
        y = n - 1 - i
        color = BAYIN_COLORS.get(bayin, "#555555")
        bars = by_lane[name]
        ax.broken_barh(bars, (y - 0.16, 0.32), facecolors=color, alpha=0.22, lw=0, zorder=1)
        ax.vlines([t for t, _ in bars], y - 0.32, y + 0.32, colors=color, lw=0.7, zorder=1.5)

    # 節: grey while listening (先以聽), black for the shooting 節
    seen: dict[str, int] = defaultdict(int)
    by_cue = {s.cue: s for s in spans}
    listen_x, shoot_x = [], []
    for marker in timeline.markers:
        if marker.kind != "jie":
            continue
        span = by_cue.get(marker.cue)
        k = seen[marker.cue]
        seen[marker.cue] += 1
        listening = span is not None and span.jie > 0 and k % span.jie < span.listen
        (listen_x if listening else shoot_x).append(_minutes(marker.tick))
    ax.vlines(listen_x, y_jie - 0.35, y_jie + 0.35, colors="#9e9e9e", lw=1.1, zorder=2)
    ax.vlines(shoot_x, y_jie - 0.35, y_jie + 0.35, colors="#222222", lw=1.1, zorder=2)

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

    settings = dict(timeline.settings)
    detail = ", ".join(f"{k} {v}" for k, v in settings.items()
                       if k in ("tempo_bpm", "lost_zhong_seconds", "go_gap_s", "drum_pattern",
                                "tuning") and v != "None")
    counts = f"{_plural(len(spans), 'cue')}, {_plural(len(timeline.notes), 'note')}"
    fig.suptitle(f"{rite.title} ({rite.id}) — timeline, {total:.1f} min, {counts}",
                 x=left_in / width, ha="left",
                 y=1 - 0.18 / height, va="top", fontsize=12)
    fig.text(left_in / width, 1 - 0.48 / height, detail, fontsize=8, color="#555555",
             va="top")

    handles = [
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
    fig.legend(handles=handles, loc="lower left", ncol=5, frameon=False, fontsize=7.5,
               bbox_to_anchor=(left_in / width - 0.01, 0.0))


def _band_title(ax: Axes, renderer: RendererBase, cue: Cue | None, a: float, b: float,
                y: float, per_px: float) -> None:
    """The cue's title inside its band, when it fits."""
    if cue is None or not cue.title:
        return
    text = ax.text(a, y, " " + cue.title, ha="left", va="center", fontsize=7, zorder=4,
                   clip_on=True)
    if (text.get_window_extent(renderer).width + 4) * per_px > (b - a):
        text.remove()


# ── the layout ──────────────────────────────────────────────────────────────────────────────

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


def plot_layout(rite: Rite, path: str | Path, *, fonts: Sequence[str] | None = None) -> list[str]:
    """Draw the hang from above to ``path`` (.png or .svg); return warnings (e.g. no CJK font).

    The hall (堂) north of y = 0 with 阼階 (x = +3) and 西階 (x = −3); every position at its
    place, its marker shaped by kind (bells, chimes, drums, winds, strings, people) and coloured
    by 八音, an arrow where it faces; each 遷樂 move hollow, with a curved arrow from where the
    musicians stood and the cue's id; a compass and a metre scale.
    """
    return _draw(path, fonts, lambda fig: _draw_layout(fig, rite))


def _kind(instrument: str | None) -> str:
    return _SHAPE_OF_BAYIN.get(_bayin(instrument), "people")


def _facing(facing: str | None) -> tuple[float, float] | None:
    if not facing:
        return None
    dx = sum(_DIRECTIONS[ch][0] for ch in facing if ch in _DIRECTIONS)
    dy = sum(_DIRECTIONS[ch][1] for ch in facing if ch in _DIRECTIONS)
    norm = (dx * dx + dy * dy) ** 0.5
    return (dx / norm, dy / norm) if norm else None


def _moves(rite: Rite) -> list[tuple[Cue, Position, tuple[float, float] | None, str | None]]:
    """Every 遷樂 move in cue order: (cue, new position, old place or None, instrument)."""
    where = {p.name: (p.x, p.y) for p in rite.layout}
    instrument = {p.name: p.instrument for p in rite.layout}
    out = []
    for cue in rite.cues:
        for move in cue.moves:
            out.append((cue, move, where.get(move.name),
                        move.instrument or instrument.get(move.name)))
            where[move.name] = (move.x, move.y)
    return out


def _draw_layout(fig: Figure, rite: Rite) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch, Patch, Rectangle
    from mpl_toolkits.axes_grid1.anchored_artists import AnchoredSizeBar

    moves = _moves(rite)
    points = [(p.x, p.y) for p in rite.layout] + [(m.x, m.y) for _, m, _, _ in moves]
    on_hall = [(x, y) for x, y in points if y > 0]
    half = max([5.0] + [abs(x) + 1.0 for x, _ in on_hall])
    depth = max([3.0] + [y + 1.0 for _, y in on_hall])
    xs = [x for x, _ in points] + [-half, half, -3.0, 3.0]
    ys = [y for _, y in points] + [depth, -1.0]
    x0, x1 = min(xs) - 2.6, max(xs) + 2.6
    y0, y1 = min(ys) - 1.8, max(ys) + 0.8

    scale = min(0.62, 11.5 / (x1 - x0), 10.0 / (y1 - y0))  # inches a metre
    left_in, right_in, top_in, bottom_in = 0.65, 0.3, 0.8, 1.25
    width = left_in + right_in + (x1 - x0) * scale
    height = top_in + bottom_in + (y1 - y0) * scale
    fig.set_size_inches(width, height)
    ax = fig.add_axes((left_in / width, bottom_in / height, (x1 - x0) * scale / width,
                       (y1 - y0) * scale / height))
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")
    ax.grid(color="#eeeeee", lw=0.5, zorder=0)
    ax.set_axisbelow(True)
    ax.set_xlabel("metres east of the hall's axis", fontsize=8)
    ax.set_ylabel("metres north of the hall's edge", fontsize=8)
    ax.tick_params(labelsize=7, colors="#777777")

    # the hall and its two stairs
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

    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    obstacles: list[Bbox] = [t.get_window_extent(renderer).padded(2) for t in fixed_texts]
    obstacles.append(ax.texts[0].get_window_extent(renderer).padded(2))
    to_px = ax.transData.transform
    ms = 10.0
    marker_px = ms * fig.dpi / 72

    def marker_box(x: float, y: float, size: float = 1.0) -> Bbox:
        from matplotlib.transforms import Bbox

        cx, cy = to_px((x, y))
        r = marker_px * size / 2 + 1
        return Bbox.from_extents(cx - r, cy - r, cx + r, cy + r)

    def arrow_box(x: float, y: float, d: tuple[float, float], length: float) -> Bbox:
        from matplotlib.transforms import Bbox

        (ax_, ay_), (bx, by) = to_px((x, y)), to_px((x + d[0] * length, y + d[1] * length))
        return Bbox.from_extents(min(ax_, bx) - 3, min(ay_, by) - 3, max(ax_, bx) + 3,
                                 max(ay_, by) + 3)

    def arrow_len(x: float, y: float, d: tuple[float, float]) -> float:
        """0.75 m, or less so as to stop short of another marker in the way."""
        length = 0.75
        for ox, oy in points:
            along = (ox - x) * d[0] + (oy - y) * d[1]
            across = abs((ox - x) * d[1] - (oy - y) * d[0])
            if 0 < along < 1.5 and across < 0.3:
                length = min(length, max(0.3, along * 0.55))
        return length

    for p in rite.layout:
        obstacles.append(marker_box(p.x, p.y))
        d = _facing(p.facing)
        if d:
            obstacles.append(arrow_box(p.x, p.y, d, arrow_len(p.x, p.y, d)))
    def is_ring(m: Position) -> bool:
        """A move back to a place drawn already: drawn as a ring around it."""
        return any(abs(p.x - m.x) < 0.05 and abs(p.y - m.y) < 0.05 for p in rite.layout)

    for _, m, _, _ in moves:
        obstacles.append(marker_box(m.x, m.y, 1.7 if is_ring(m) else 1.0))
        d = _facing(m.facing)
        if d:
            obstacles.append(arrow_box(m.x, m.y, d, arrow_len(m.x, m.y, d)))

    # the places, with facing arrows
    used_kinds: set[str] = set()
    for p in rite.layout:
        kind = _kind(p.instrument)
        used_kinds.add(kind)
        color = BAYIN_COLORS.get(_bayin(p.instrument), "#555555")
        ax.plot([p.x], [p.y], marker=SHAPES[kind][0], ms=ms, mfc=color, mec="#222222", mew=0.7,
                ls="", zorder=4)
        d = _facing(p.facing)
        if d:
            n = arrow_len(p.x, p.y, d)
            ax.annotate("", xy=(p.x + d[0] * n, p.y + d[1] * n), xytext=(p.x, p.y),
                        arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.2,
                                    "shrinkA": marker_px * 72 / fig.dpi / 2, "shrinkB": 0,
                                    "mutation_scale": 9}, zorder=3)

    # the 遷樂 moves: hollow, with a curved arrow from where they stood
    for _cue, m, old, instrument in moves:
        kind = _kind(instrument)
        used_kinds.add(kind)
        # back to a place drawn already: a ring around it, so both stay visible
        ring = is_ring(m)
        ax.plot([m.x], [m.y], marker=SHAPES[kind][0], ms=ms * 1.7 if ring else ms,
                mfc="none" if ring else "white", mec=MOVE_COLOR, mew=1.3, ls="",
                zorder=3.8 if ring else 5)
        if old is not None and old != (m.x, m.y):
            obstacles.extend(_arc_boxes(to_px(old), to_px((m.x, m.y)), 0.25))
            ax.add_patch(FancyArrowPatch(old, (m.x, m.y), connectionstyle="arc3,rad=0.25",
                                         arrowstyle="-|>", mutation_scale=11, color=MOVE_COLOR,
                                         lw=1.1, ls=(0, (4, 2)), shrinkA=7, shrinkB=8,
                                         zorder=3.5))
        d = _facing(m.facing)
        if d:
            n = arrow_len(m.x, m.y, d)
            ax.annotate("", xy=(m.x + d[0] * n, m.y + d[1] * n), xytext=(m.x, m.y),
                        arrowprops={"arrowstyle": "-|>", "color": MOVE_COLOR, "lw": 1.0,
                                    "ls": "--", "shrinkA": marker_px * 72 / fig.dpi / 2,
                                    "shrinkB": 0, "mutation_scale": 8}, zorder=3)

    # labels, placed where they collide with nothing drawn so far
    bounds = ax.get_window_extent(renderer)
    for p in rite.layout:
        obstacles.append(_place_label(ax, renderer, p.name, p.x, p.y, obstacles, bounds,
                                      color="#111111"))
    for cue, m, _, _ in moves:
        obstacles.append(_place_label(ax, renderer, f"{m.name} → {cue.id}", m.x, m.y, obstacles,
                                      bounds, color=MOVE_COLOR))

    # compass and scale
    ax.annotate("", xy=(0.965, 0.9), xytext=(0.965, 0.78), xycoords="axes fraction",
                textcoords="axes fraction",
                arrowprops={"arrowstyle": "-|>", "color": "#222222", "lw": 1.4,
                            "mutation_scale": 14}, zorder=6)
    ax.text(0.965, 0.905, "北 N", transform=ax.transAxes, ha="center", va="bottom",
            fontsize=10, zorder=6)
    metres = 5 if (x1 - x0) > 14 else 2
    ax.add_artist(AnchoredSizeBar(ax.transData, metres, f"{metres} m", loc="lower right",
                                  pad=0.5, borderpad=0.6, sep=3, frameon=False, size_vertical=0.05,
                                  fontproperties={"size": 8}))

    handles = [Line2D([], [], marker=SHAPES[k][0], ls="", mfc="#bbbbbb", mec="#222222", ms=8,
                      label=SHAPES[k][1]) for k in SHAPES if k in used_kinds]
    if any(p.facing for p in rite.layout):
        handles.append(Line2D([], [], marker=r"$\rightarrow$", ls="", color="#333333", ms=10,
                              label="faces"))
    if moves:
        handles.append(Line2D([], [], marker="o", ls="", mfc="white", mec=MOVE_COLOR, mew=1.3,
                              ms=8, label="after a 遷樂 move (with its cue id)"))
    bayin_used = [b for b in BAYIN_ORDER if any(_bayin(p.instrument) == b for p in rite.layout)]
    handles += [Patch(color=BAYIN_COLORS[b], label=f"colour {b} {BAYIN_ENGLISH[b]}")
                for b in bayin_used]
    if handles:
        fig.legend(handles=handles, loc="lower left", ncol=min(len(handles), 5), frameon=False,
                   fontsize=7.5, bbox_to_anchor=(left_in / width - 0.02, 0.0),
                   columnspacing=1.2)
    if not rite.layout:
        ax.text(0, -3, "(the sheet gives no [[position]]s)", ha="center", va="center",
                fontsize=9, color="#777777")
    fig.suptitle(f"{rite.title} ({rite.id}) — the {rite.hang} seen from above",
                 x=left_in / width, ha="left", y=1 - 0.15 / height, va="top", fontsize=12)
    fig.text(left_in / width, 1 - 0.47 / height,
             "metres: x east, y north; y = 0 is the front edge of the hall (堂); "
             "阼階 at x = +3, 西階 at x = −3", fontsize=7.5, color="#555555", va="top")


# label offsets tried in order (points), with the alignment that keeps the text off the marker
_EAST = [((9, 0), "left", "center"), ((-9, 0), "right", "center"), ((0, 9), "center", "bottom"),
         ((0, -9), "center", "top"), ((8, 8), "left", "bottom"), ((8, -8), "left", "top"),
         ((-8, 8), "right", "bottom"), ((-8, -8), "right", "top")]
_FAR = [((dx * 2.4, dy * 2.4), ha, va) for (dx, dy), ha, va in _EAST]


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


__all__ = ["find_cjk_font", "picture_format", "plot_layout", "plot_timeline"]

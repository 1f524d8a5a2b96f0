"""Pictures of a rite, what they share: file formats, CJK fonts, the 八音 colours, saving.

The pictures (``sequencer.pictures.timeline``: the timeline in lanes by 八音;
``sequencer.pictures.layout``: the hang seen from above) are views only, like
``sequencer.timeline.rite_json``: they read a ``Rite`` and its ``Timeline`` and write a PNG or an
SVG (chosen by the file's extension).  matplotlib is imported inside the functions and drawn on an
Agg canvas without pyplot, so importing these modules is cheap and leaves no global figure state.
Chinese labels need a CJK font: the first of ``CJK_FAMILIES`` that matplotlib knows, or the first of
``CJK_FILES`` that exists; with none the picture is still drawn and the functions return a
warning (the glyphs show as boxes).  SVG text stays text (``svg.fonttype = 'none'``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from instruments.files.atomic import atomic_path
from instruments.files.targets import output_suffix

if TYPE_CHECKING:
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.figure import Figure

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

# the 八音 in the order of the timeline's lanes, with a colour each (the layout uses the same)
BAYIN_ORDER: tuple[str, ...] = ("金", "石", "絲", "竹", "匏", "土", "革", "木", "人聲")
BAYIN_COLORS: dict[str, str] = {
    "金": "#b8860b", "石": "#4f6d7a", "絲": "#7b3f9e", "竹": "#2e7d32", "匏": "#d2691e",
    "土": "#8d6e63", "革": "#b22222", "木": "#6d4c41", "人聲": "#1f5fa8", "": "#555555",
}


def picture_format(path: str | Path) -> str:
    """``png`` or ``svg`` from the file's extension; anything else is the user's error."""
    return FORMATS[output_suffix(path, tuple(FORMATS), "a picture")]


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


def draw_picture(path: str | Path, fonts: Sequence[str] | None,
                 draw: Callable[[Figure], None]) -> list[str]:
    """Check the extension, set the style, let ``draw(fig)`` draw, save; return warnings."""
    fmt = picture_format(path)
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rc, warning = _style(fonts)
    with ExitStack() as stack:
        stack.enter_context(matplotlib.rc_context(rc))  # type: ignore[arg-type]  # str keys
        stack.enter_context(warnings.catch_warnings())
        warnings.filterwarnings("ignore", message=r"Glyph .* missing from")
        fig = Figure(dpi=DPI)
        FigureCanvasAgg(fig)
        draw(fig)
        with atomic_path(path) as temp:
            fig.savefig(temp, format=fmt, dpi=DPI, facecolor="white")
    return [warning] if warning else []


def renderer_of(fig: Figure) -> RendererAgg:
    """The Agg renderer of a figure ``draw_picture`` made (text extents are measured on it)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg), "draw_picture gives every figure an Agg canvas"
    return canvas.get_renderer()


def bayin_of(instrument: str | None) -> str:
    """The 八音 of an instrument name ('' when unknown); no instrument means people, 人聲."""
    if instrument is None:
        return "人聲"
    from cues.catalog import canonical_instrument, get_instrument

    name = canonical_instrument(instrument)
    return get_instrument(name).bayin if name else ""

"""The pictures: `yuezheng plot` (the timeline) and `yuezheng layout` (the hang from above)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cli
from cues.errors import UserError
from cues.sheet.loader import BUILTIN_RITES, load_rite
from sequencer.pictures.common import find_cjk_font, picture_format
from sequencer.pictures.layout import plot_layout
from sequencer.pictures.timeline import plot_timeline
from sequencer.timeline.compiler import compile_rite, make_settings

# scores and pictures made and read back: seconds each
pytestmark = pytest.mark.render

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_size(path: Path) -> tuple[int, int]:
    """(width, height) of a PNG, read with matplotlib as well as from its header."""
    from matplotlib.image import imread

    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    pixels = imread(path)
    assert pixels.shape[:2] == (height, width)
    assert pixels.std() > 0  # not a blank picture
    return width, height


def _svg_texts(path: Path) -> str:
    """All the text of an SVG's <text> elements (svg.fonttype 'none' keeps text as text)."""
    svg = path.read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    return "\n".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))


@pytest.mark.render
@pytest.mark.parametrize("rite_id", BUILTIN_RITES)
def test_plot_timeline_png_and_svg(rite_id: str, tmp_path: Path, capsys) -> None:
    png, svg = tmp_path / "timeline.png", tmp_path / "timeline.svg"
    assert cli.main(["plot", rite_id, "-o", str(png)]) == 0
    assert cli.main(["plot", rite_id, "-o", str(svg)]) == 0
    assert "wrote" in capsys.readouterr().out
    width, height = _png_size(png)
    assert width > 1500 and height > 500
    texts = _svg_texts(svg)
    rite = load_rite(rite_id)
    for cue in rite.cues:
        assert cue.id in texts, cue.id
        assert cue.kind in texts, cue.kind
    assert rite.title in texts
    assert "節" in texts


@pytest.mark.render
@pytest.mark.parametrize("rite_id", BUILTIN_RITES)
def test_plot_layout_png_and_svg(rite_id: str, tmp_path: Path) -> None:
    png, svg = tmp_path / "layout.png", tmp_path / "layout.svg"
    assert cli.main(["layout", rite_id, "-o", str(png)]) == 0
    assert cli.main(["layout", rite_id, "-o", str(svg)]) == 0
    width, height = _png_size(png)
    assert width > 800 and height > 600
    texts = _svg_texts(svg)
    rite = load_rite(rite_id)
    for position in rite.layout:
        assert position.name in texts, position.name
    for cue in rite.cues:  # every 遷樂 move is labelled with its cue id
        for move in cue.moves:
            assert f"{move.name} → {cue.id}" in texts
    for mark in ("堂", "阼階", "西階", "北", "m"):
        assert mark in texts


def test_da_she_layout_has_the_east_and_west_sets(tmp_path: Path) -> None:
    svg = tmp_path / "da-she.svg"
    assert cli.main(["layout", "大射", "-o", str(svg)]) == 0
    texts = _svg_texts(svg)
    for name in ("笙磬", "笙鍾", "頌磬", "頌鍾", "朔鼙", "應鼙", "鼗", "簜"):
        assert name in texts
    assert "gong-jiang" in texts and "zu-guan" in texts


def test_plot_from_until_shows_only_the_range(tmp_path: Path) -> None:
    svg = tmp_path / "part.svg"
    assert cli.main(["plot", "xiang-she", "-o", str(svg), "--from", "she-jie",
                     "--until", "wu-suan-yue", "--jie-seconds", "6"]) == 0
    texts = _svg_texts(svg)
    assert "she-jie" in texts and "wu-suan-yue" in texts
    assert "he-yue" not in texts and "gai" not in texts


@pytest.mark.parametrize("command", ["plot", "layout"])
@pytest.mark.parametrize("name", ["out.pdf", "out.jpg", "out"])
def test_bad_extension_is_exit_2(command: str, name: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / name
    assert cli.main([command, "xiang-she", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert ".png or .svg" in err and "Traceback" not in err
    assert not out.exists()


def test_unwritable_output_and_bad_cue_are_exit_2(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "t.png"
    assert cli.main(["layout", "xiang-she", "-o", str(missing)]) == 2
    assert cli.main(["plot", "xiang-she", "-o", str(tmp_path / "t.png"), "--from", "nope"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_api_formats_and_the_png_svg_choice(tmp_path: Path) -> None:
    assert picture_format("a.PNG") == "png" and picture_format(Path("b.svg")) == "svg"
    with pytest.raises(UserError):
        picture_format("c.eps")
    rite = load_rite("yan")
    timeline = compile_rite(rite, make_settings(rite.settings, {}))
    with pytest.raises(UserError):
        plot_timeline(rite, timeline, tmp_path / "t.pdf")
    with pytest.raises(UserError):
        plot_layout(rite, tmp_path / "l.gif")
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(not Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc").is_file(),
                    reason="fonts-wqy-microhei is not installed (.ci/run installs it)")
def test_a_cjk_font_is_found_and_no_warning(tmp_path: Path) -> None:
    assert find_cjk_font() is not None
    rite = load_rite("xiang-yin-jiu")
    assert plot_layout(rite, tmp_path / "l.png") == []


def test_without_a_cjk_font_it_still_draws_and_warns(tmp_path: Path) -> None:
    assert find_cjk_font(families=("No Such Font Family",), files=("/no/such/font.ttc",)) is None
    rite = load_rite("xiang-she")
    timeline = compile_rite(rite, make_settings(rite.settings, {}))
    warnings = plot_timeline(rite, timeline, tmp_path / "t.png", fonts=())
    assert len(warnings) == 1 and "CJK" in warnings[0]
    assert plot_layout(rite, tmp_path / "l.png", fonts=("No Such Font Family",))
    _png_size(tmp_path / "t.png")
    _png_size(tmp_path / "l.png")


def test_help_does_not_import_matplotlib() -> None:
    import subprocess
    import sys

    code = ("import sys, cli\n"
            "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(cli.__file__).parent, check=True).stdout
    assert out.strip().splitlines()[-1] == "False"

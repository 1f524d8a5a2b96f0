"""The four standard hangs (周禮·小胥 with 鄭注) for sheets that place nothing."""

from __future__ import annotations

import pytest

from cues.layouts import HANG_SIDES, standard_hang
from cues.sheet.loader import parse_sheet
from cues.sources import quote_found

SHEET = '[rite]\nid = "x"\ntitle = "x"\nhang = "{hang}"\n[[cue]]\nid = "a"\nkind = "停"\nat = "x"\n'


def sides(positions) -> set[str]:
    out = set()
    for p in positions:
        out.add("東" if p.x > 3 else "西" if p.x < -3 else "南" if p.y < -5 else "北")
    return out


@pytest.mark.parametrize("hang", list(HANG_SIDES))
def test_standard_hangs(hang: str) -> None:
    positions = standard_hang(hang)
    assert sides(positions) == set(HANG_SIDES[hang])
    assert all(quote_found(p.source.quote, p.source.file) for p in positions)
    rite = parse_sheet(SHEET.format(hang=hang), "t.toml")
    assert rite.layout == positions  # a sheet that places nothing gets its hang's positions


def test_what_each_hang_holds() -> None:
    assert "南" not in sides(standard_hang("軒縣"))  # 「軒縣去南面，辟王也」
    assert {p.instrument for p in standard_hang("特縣")} == {"編磬"}  # 士: 磬 only
    pan = {p.name: p.instrument for p in standard_hang("判縣")}
    assert pan == {"東縣編磬": "編磬", "西縣編鐘": "編鐘"}  # 「東縣磬，西縣鍾」
    assert {p.instrument for p in standard_hang("宮縣")} == {"編磬", "編鐘", "鑮", "建鼓"}

"""The 樂懸: the four standard hangs, for a sheet that names its hang but places nothing.

周禮·小胥: 「正樂縣之位，王宮縣，諸侯軒縣，卿大夫判縣，士特縣」; 鄭玄: 「軒縣去南面，辟王也。判縣
左右之合，又空北面。特縣縣於東方，或於階間而已」; 「鍾磬者，編縣之二八十六枚，而在一虡，謂之堵。
鍾一堵，磬一堵，謂之肆」 (reference/yuexuan.txt). 賈疏: for the 宮縣 and 軒縣 「面皆鍾、磬、鎛各
一虡」; the 判縣 of an 諸侯's 卿大夫 「分一肆於兩廂，東縣磬，西縣鍾」; an 諸侯's 士 hangs 磬 only.

Each position here is one frame (堵) of sixteen pieces, or one single bell or drum, in the
project's coordinates (docs/layout.md): a side's frames stand 1.5 m apart, 7 m from the axis
(east and west), 10 m before the hall (south) or 1 m before it (north). The built-in rites give
their own hangs from their texts; these serve user sheets.
"""

from __future__ import annotations

from cues.model import Position, Source

HANG_SIDES = {
    "宮縣": ("東", "西", "南", "北"),
    "軒縣": ("東", "西", "北"),  # 「去南面，辟王也」
    "判縣": ("東", "西"),  # 「左右之合，又空北面」
    "特縣": ("東",),  # 「縣於東方，或於階間而已」
}
_FILE = "reference/yuexuan.txt"
_SOURCES = {
    "宮縣": "正乐县之位，王宫县，诸侯轩县，卿大夫判县，士特县",
    "軒縣": "玄谓轩县去南面，辟王也",
    "判縣": "判县左右之合，又空北面",
    "特縣": "特县县於东方，或於阶间而已",
}
FACINGS = ("東", "西", "南", "北")  # the ways a position may face
_FACING = {"東": "西", "西": "東", "南": "北", "北": "南"}  # a frame on a side faces the middle


def _side_frames(hang: str, side: str) -> list[tuple[str, str]]:
    """(name, instrument) of the frames a side holds."""
    if hang in ("宮縣", "軒縣"):  # 「面皆鍾、磬、鎛各一虡」, and a drum
        return [(f"{side}縣編磬", "編磬"), (f"{side}縣編鐘", "編鐘"), (f"{side}縣鑮", "鑮"),
                (f"{side}縣建鼓", "建鼓")]
    if hang == "判縣":  # 「分一肆於兩廂，東縣磬，西縣鍾」
        return [(f"{side}縣編磬", "編磬")] if side == "東" else [(f"{side}縣編鐘", "編鐘")]
    return [(f"{side}縣編磬", "編磬")]  # 特縣: 「縣磬而已」


def standard_hang(hang: str) -> tuple[Position, ...]:
    """The positions of a standard hang (one per frame, bell or drum)."""
    if hang not in HANG_SIDES:
        raise KeyError(f"unknown hang {hang!r}; expected one of {', '.join(HANG_SIDES)}")
    source = Source(work="周禮·春官·小胥 with 鄭注", quote=_SOURCES[hang], file=_FILE)
    out: list[Position] = []
    for side in HANG_SIDES[hang]:
        for i, (name, instrument) in enumerate(_side_frames(hang, side)):
            step = 1.5 * i
            if side == "東":
                x, y = 7.0, -2.0 - step
            elif side == "西":
                x, y = -7.0, -2.0 - step
            elif side == "南":
                x, y = -2.25 + step, -10.0
            else:
                x, y = -2.25 + step, -1.0
            out.append(Position(name, x, y, instrument, _FACING[side], source))
    return tuple(out)

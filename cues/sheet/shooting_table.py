"""The 射節 of a cue: the song that paces the shooting, its 節, and the order of the pairs (耦)."""

from __future__ import annotations

from cues import repertoire
from cues.model import ARROWS, Ou, ShootingMusic
from cues.sheet.checker import SheetChecker, Where, WhereKey, describe_value

SHOOTING_KEYS = ("song", "jie", "listen", "ou")
OU_KEYS = {"name", "upper", "lower", "exempt", "note"}
SIDES = ("右", "左")  # the 上射's side, the 下射's
JIE_RANGE = (2, 36)


def parse_shooting(
    checker: SheetChecker, data: dict, kind: str, *, index: int, cue: str,
) -> ShootingMusic | None:
    """The 射節 keys of a cue (only a 射節 cue may have them)."""
    keys = [k for k in SHOOTING_KEYS if k in data]
    if kind != "射節":
        if keys:
            checker.error(f"{', '.join(repr(k) for k in keys)} belong to a 射節 cue (this cue is "
                          f"{kind})", table="cue", index=index, key=keys[0], cue=cue)
        return None
    song, jie, listen = _song_and_jie(checker, data, index=index, cue=cue)
    order = _shooting_order(checker, data.get("ou", [{"name": "三耦"}]), index=index, cue=cue)
    if song is None or jie is None or listen is None:
        return None
    return ShootingMusic(song=song, jie=jie, listen=listen, ou=order, arrows=ARROWS)


def _song_and_jie(
    checker: SheetChecker, data: dict, *, index: int, cue: str,
) -> tuple[str | None, int | None, int | None]:
    """The song (canonical title), the number of 節 and of listening 節; None where wrong."""
    where: Where = {"table": "cue", "index": index, "cue": cue}
    song = checker.get(data, "song", str, "the song that paces the shooting, e.g. \"騶虞\"",
                       required=True, **where)
    jie = checker.get(data, "jie", int, "the number of 節: 9, 7 or 5", required=True, **where)
    listen = checker.get(data, "listen", int, "the number of listening 節 (先以聽)",
                         required=True, **where)
    if song is not None:
        song = repertoire.canonical_title(song)
        if song is None:
            checker.error(f"unknown song 《{data['song']}》 for the 射節; expected e.g. 騶虞, "
                          "貍首, 采蘋, 采蘩", key="song", **where)
    if jie is not None and not JIE_RANGE[0] <= jie <= JIE_RANGE[1]:
        checker.error(f"'jie' is {jie}: expected a number of 節 such as 9, 7 or 5", key="jie",
                      **where)
        jie = None
    if listen is not None and listen < 0:
        checker.error(f"'listen' is {listen}: expected 0 or more listening 節", key="listen",
                      **where)
        listen = None
    if jie is not None and listen is not None and jie - listen != ARROWS:
        checker.error(
            f"{jie} 節 with {listen} listening 節 leaves {jie - listen} 節 for the {ARROWS} "
            f"arrows (乘矢, one 拾 per 節): expected listen = {jie - ARROWS} "
            "(「鄉射之鼓五節…四節四拾，其一節先以聽也」)", key="listen", **where)
    return song, jie, listen


def _shooting_order(checker: SheetChecker, raw: object, *, index: int, cue: str) -> tuple[Ou, ...]:
    """The pairs in the order they shoot (a name alone is a pair with that name)."""
    where: WhereKey = {"table": "cue", "index": index, "key": "ou", "cue": cue}
    if not isinstance(raw, list) or not raw:
        checker.error(f"'ou' is {describe_value(raw)}: expected the shooting order, an array of "
                      "pairs { name = \"上耦\" }", **where)
        raw = []
    order: list[Ou] = []
    for item in raw:
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            checker.error("a pair (耦) needs a name: expected { name = \"…\" }", **where)
            continue
        checker.unknown_keys(item, OU_KEYS, "a pair (耦)", **where)
        exempt = item.get("exempt", [])
        if isinstance(exempt, str):
            exempt = [exempt]
        if not isinstance(exempt, list) or any(s not in SIDES for s in exempt):
            checker.error(f"pair {item['name']!r} has exempt = {exempt!r}: expected sides among "
                          "\"右\" (the 上射's) and \"左\"", **where)
            exempt = []
        order.append(Ou(name=item["name"], upper=str(item.get("upper", "上射")),
                        lower=str(item.get("lower", "下射")), exempt=tuple(exempt),
                        note=str(item.get("note", ""))))
    return tuple(order)

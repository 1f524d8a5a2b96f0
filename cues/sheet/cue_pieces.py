"""A cue's ``pieces``: titles of the repertoire (or pieces with their own realization file),
each with who plays it (歌, 笙, 管 or the bells)."""

from __future__ import annotations

from pathlib import Path

from cues import repertoire
from cues.model import BY_BELLS, BY_GUAN, BY_SHENG, BY_SINGERS, BY_VALUES, PieceRef
from cues.sheet.checker import SheetChecker, WhereKey, closest, describe_value

PIECE_KEYS = {"title", "by", "realization"}
REALIZATION_SUFFIXES = (".mid", ".midi", ".musicxml", ".xml", ".mxl")


def default_by(kind: str, piece: repertoire.Piece | None) -> str:
    """Who plays a piece a cue of ``kind`` names when the sheet does not say."""
    if piece is not None and piece.is_sheng_piece:
        return BY_SHENG
    if kind == "管":
        return BY_GUAN
    if kind in ("金奏", "陔", "驁"):
        return BY_BELLS
    if kind == "笙":
        return BY_SHENG
    return BY_SINGERS


def parse_pieces(
    checker: SheetChecker, data: dict, kind: str, *, index: int, cue: str, base: Path | None,
) -> tuple[PieceRef, ...]:
    """The cue's ``pieces`` (relative realization paths are taken from ``base``)."""
    where: WhereKey = {"table": "cue", "index": index, "key": "pieces", "cue": cue}
    raw = checker.array(data.get("pieces"), "pieces", "an array of titles or "
                        "{ title = \"…\", by = \"歌\"|\"笙\" }", **where)
    out: list[PieceRef] = []
    for item in raw or ():
        entry = _entry(checker, item, base, where)
        if entry is not None:
            ref = _piece_ref(checker, kind, *entry, where=where)
            if ref is not None:
                out.append(ref)
    return tuple(out)


def _entry(
    checker: SheetChecker, item: object, base: Path | None, where: WhereKey,
) -> tuple[str, str | None, str | None] | None:
    """(title, by, realization path) of one entry: a title, or a table."""
    if isinstance(item, str):
        return item, None, None
    if not isinstance(item, dict):
        checker.error(f"a piece is {describe_value(item)}: expected a title or a table", **where)
        return None
    checker.unknown_keys(item, PIECE_KEYS, "a piece", **where)
    title = item.get("title")
    by = item.get("by")
    realization = item.get("realization")
    if not isinstance(title, str):
        checker.error("a piece has no title: expected title = \"…\"", **where)
        return None
    if by is not None and by not in BY_VALUES:
        checker.error(f"piece 《{title}》 has by = {by!r}: expected one of "
                      f"{', '.join(BY_VALUES)}", **where)
        by = None
    if realization is not None:
        realization = _realization(checker, title, realization, base, where)
    return title, by, realization


def _realization(
    checker: SheetChecker, title: str, realization: object, base: Path | None, where: WhereKey,
) -> str | None:
    """The path of a piece's realization file (reported if it is not a MIDI/MusicXML file)."""
    if not isinstance(realization, str) or not realization.strip():
        checker.error(f"piece 《{title}》 has realization = {realization!r}: expected the path of "
                      "a MIDI or MusicXML file", **where)
        return None
    path = Path(realization)
    if base is not None and not path.is_absolute():
        path = base / path
    if path.suffix.lower() not in REALIZATION_SUFFIXES:
        checker.error(f"piece 《{title}》 realization {realization!r}: expected a .mid or "
                      ".musicxml file", **where)
    elif not path.exists():
        checker.error(f"piece 《{title}》 realization file {str(path)!r} does not exist",
                      **where)
    elif not path.is_file():
        checker.error(f"piece 《{title}》 realization {str(path)!r} is not a regular file (a "
                      "directory, a device or a FIFO): expected a MIDI or MusicXML file", **where)
    return str(path)


def _piece_ref(
    checker: SheetChecker, kind: str, title: str, by: str | None, realization: str | None, *,
    where: WhereKey,
) -> PieceRef | None:
    """The entry under its canonical title; an unknown title needs its own realization."""
    canon = repertoire.canonical_title(title)
    piece = None
    if canon is None:
        if realization is None:
            known = [p.title for p in repertoire.all_pieces()]
            hint = closest(title.strip("《》"), known)
            checker.error(
                f"unknown piece 《{title}》" + (f" (did you mean 《{hint}》?)" if hint else "")
                + "; expected a piece of the repertoire (yuezheng pieces lists them) or a "
                "piece with its own realization file", **where)
            return None
        canon = title.strip("《》")
    else:
        piece = repertoire.get_piece(canon)
    if piece is not None and piece.is_sheng_piece and by == BY_SINGERS:
        checker.error(f"《{canon}》 is a 笙詩 (no words survive; it is played, not sung): "
                      "expected by = \"笙\"", **where)
    return PieceRef(canon, by or default_by(kind, piece), realization)

"""``yuezheng source CUE|PIECE``: the passages a cue, a piece, a variant, a reading or a position
cites, each in its context — the file, the line numbers, the lines around it with the layer of
each (經, 記, 注, 疏, a later commentary, a modern note), the quote itself marked ⟦…⟧, and the
edition the file is."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cues.editions import APPARATUS, LATER, MODERN_TRANSLATION, char_layers
from cues.errors import UserError
from cues.model import Rite, Source
from cues.passages import citation_json, context, edition_of, file_text, layer_label, locate
from cues.pinyin import name_key
from cues.repertoire import canonical_title, get_piece
from cues.sheet.loader import BUILTIN_RITES, builtin_rite, load_rite
from cues.sources import texts_beside
from cues.text import display_width

QUOTE_OPENS, QUOTE_CLOSES = "⟦", "⟧"
SHORT = {APPARATUS: "apparatus", MODERN_TRANSLATION: "translation", LATER: "later"}


@dataclass(frozen=True)
class Cited:
    """One citation found for the name asked: what cites it (``what``), in which rite."""

    what: str
    rite: str
    source: Source
    folder: Path | None = None  # a sheet's folder: its own texts are relative to it


def _rite_citations(rite: Rite) -> list[Cited]:
    folder = Path(rite.path).parent if rite.path and Path(rite.path).is_file() else None
    return [replace(c, folder=folder) for c in _citations(rite)]


def _citations(rite: Rite) -> list[Cited]:
    out: list[Cited] = []
    title = f"{rite.title} ({rite.id})"
    if rite.layout_source is not None:
        out.append(Cited("layout", title, rite.layout_source))
    out += [Cited(f"cue {c.id}", title, c.source) for c in rite.cues]
    out += [Cited(f"position {p.name}", title, p.source) for p in rite.layout if p.source]
    out += [Cited(f"variant {v.id}", title, v.source) for v in rite.variants if v.source]
    out += [Cited(f"reading {r.name}={o.value}", title, o.source)
            for r in rite.readings for o in r.options if o.source]
    return out


def _matches(what: str, name: str) -> bool:
    kind, _, label = what.partition(" ")
    key = name_key(name)
    if kind == "reading":
        reading, _, value = label.partition("=")
        return key in (name_key(label), name_key(reading))
    return key == name_key(label) or (kind == "layout" and key == "layout")


def find_citations(name: str, rite: str | None = None) -> list[Cited]:
    """The citations ``name`` selects: a cue id, position, variant id, reading (``ID`` or
    ``ID=VALUE``) or ``layout`` of ``rite`` (a built-in rite or a sheet) or, without ``rite``,
    of the one built-in rite that has it; a piece (title, simplified form or pinyin) where
    ``rite`` names nothing so (a position 笙 is not the piece)."""
    title = canonical_title(name)
    found = [] if title is None or rite is None else _in_rites(name, rite)
    if title is not None and not found:  # a piece (also when the rite names nothing so)
        piece = get_piece(title)
        found = [Cited(f"piece 《{piece.title}》", "the repertoire",
                       Source(piece.source.work, piece.source.quote, piece.source.file))]
        if piece.fragment_source is not None:
            f = piece.fragment_source
            found.append(Cited(f"piece 《{piece.title}》, its surviving fragment",
                               "the repertoire", Source(f.work, f.quote, f.file)))
        return found
    found = found or _in_rites(name, rite)
    if not found:
        where = f"rite {rite!r}" if rite is not None else "any built-in rite"
        raise UserError(f"nothing cites {name!r} in {where}: expected a piece (`yuezheng "
                        "pieces`), or a cue id, position, variant, reading or `layout` of a rite "
                        "(`yuezheng show RITE` lists them)")
    in_rites = sorted({c.rite for c in found})
    if rite is None and len(in_rites) > 1:
        raise UserError(f"{name!r} is in {len(in_rites)} rites ({', '.join(in_rites)}): say which "
                        "with --rite RITE")
    return found


def _in_rites(name: str, rite: str | None) -> list[Cited]:
    rites = [load_rite(rite, variants=None)] if rite is not None else \
        [builtin_rite(rid, variants=None) for rid in BUILTIN_RITES]
    return [c for r in rites for c in _rite_citations(r) if _matches(c.what, name)]


def _line_layers(file: str, text: str, number: int) -> str:
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[:number - 1])
    marks = char_layers(file, text)
    seen = [m for m in marks[start:start + len(lines[number - 1])] if m is not None]
    return "/".join(dict.fromkeys(seen))


def source_lines(found: list[Cited]) -> list[str]:
    """Each citation: what cites it, the work and the quote's layer, the file and line, the
    edition, and the lines around the quote (layer by line; the quote marked ⟦…⟧)."""
    out: list[str] = []
    for cited in found:
        with texts_beside(cited.folder):
            out += _one_source_lines(cited, first=not out)
    return out


def _one_source_lines(cited: Cited, first: bool) -> list[str]:
    out: list[str] = [] if first else [""]
    s = cited.source
    passage = locate(s)
    out.append(f"{cited.what} — {cited.rite}")
    out.append(f"  {s.work} — {layer_label(passage, s)}: 「{s.quote}」")
    if s.file is None:
        out.append("  (no file: the quote is not checked)")
        return out
    where = f"{passage.file}, line {passage.first}" + (
        f"–{passage.last}" if passage.last != passage.first else "") if passage else s.file
    out.append(f"  {where}")
    out.append(f"  edition: {edition_of(s.file)}")
    if passage is None:
        out.append("  (the quote is not found in the file)")
        return out
    text = file_text(passage.file) or ""
    rows = context(passage, marks=(QUOTE_OPENS, QUOTE_CLOSES))
    tags = {n: "/".join(SHORT.get(x, x) for x in _line_layers(passage.file, text, n)
                        .split("/")) or "—" for n, _, _ in rows}
    tag_width = max((display_width(t) for t in tags.values()), default=0)
    for number, shown, inside in rows:
        tag = tags[number] + " " * (tag_width - display_width(tags[number]))
        out.append(f"  {'>' if inside else ' '}{number:>5} {tag} │ {shown.strip()}")
    return out


def source_json(found: list[Cited]) -> list[dict[str, Any]]:
    """``source --json``: each citation with its passage's lines around it."""
    rows: list[dict[str, Any]] = []
    for cited in found:
        with texts_beside(cited.folder):
            rows.append(_one_source_json(cited))
    return rows


def _one_source_json(cited: Cited) -> dict[str, Any]:
    passage = locate(cited.source)
    item: dict[str, Any] = {"what": cited.what, "rite": cited.rite,
                            "source": citation_json(cited.source)}
    if passage is not None:
        text = file_text(passage.file) or ""
        item["last_line"] = passage.last
        item["context"] = [{"line": n, "text": t, "quote": inside,
                            "layers": _line_layers(passage.file, text, n).split("/")
                            if _line_layers(passage.file, text, n) else []}
                           for n, t, inside in context(passage)]
    return item

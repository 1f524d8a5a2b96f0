"""What the listing commands list, as rows (their ``--json``) and as lines of a table: the
built-in rites (``rites``), the repertoire (``pieces``) and the instrument catalog
(``instruments``)."""

from __future__ import annotations

from typing import Any

from cues.catalog import CATALOG
from cues.model import Source
from cues.passages import citation_json
from cues.repertoire import all_pieces
from cues.sheet.loader import BUILTIN_RITES, builtin_rite
from cues.text import display_width, pad
from instruments.voices.notes import describe
from sequencer.timeline.rite_text import cited

Row = dict[str, Any]


def rites_rows() -> list[Row]:
    rows = []
    for rid in BUILTIN_RITES:
        rite = builtin_rite(rid)
        rows.append({"rite": rid, "title": rite.title, "work": rite.work, "hang": rite.hang,
                     "aliases": list(rite.aliases), "cues": len(rite.cues),
                     "variants": [v.id for v in rite.variants]})
    return rows


def rites_lines(rows: list[Row]) -> list[str]:
    title_width = max((display_width(r["title"]) for r in rows), default=0)
    lines = []
    for r in rows:
        variants = f"  variants: {', '.join(r['variants'])}" if r["variants"] else ""
        lines.append(f"{r['rite']:<14} {pad(r['title'], title_width)} {pad(r['hang'], 4)}  "
                     f"{r['cues']:>2} cues  aliases: {', '.join(r['aliases'])}{variants}")
    return lines


def pieces_rows() -> list[Row]:
    return [{"title": p.title, "pinyin": p.pinyin, "category": p.category,
             "text_lost": p.text_lost,
             "text": p.text_state, "melody_lost": p.melody_lost, "mode": p.mode,
             "stanzas": len(p.stanzas),
             "source": citation_json(Source(p.source.work, p.source.quote, p.source.file))}
            for p in all_pieces()]


def pieces_lines(rows: list[Row]) -> list[str]:
    title_width = max((display_width(r["title"]) for r in rows), default=0)
    category_width = max((display_width(r["category"]) for r in rows), default=0)
    lines = []
    for r in rows:
        melody = f"詩譜, {r['mode']}, {r['stanzas']} stanzas" if not r["melody_lost"] else \
            "melody lost"
        lines.append(f"{pad(r['pinyin'], 16)} {pad('《' + r['title'] + '》', title_width + 4)} "
                     f"{pad(r['category'], category_width)} text {r['text']}; {melody} — "
                     f"{cited(r['source'])}: 「{r['source']['quote']}」")
    return lines


def instruments_rows() -> list[Row]:
    return [{"name": inst.name, "english": inst.english, "bayin": inst.bayin,
             "pitched": inst.pitched, "aliases": list(inst.aliases), "pinyin": inst.pinyin,
             "gm_program": inst.gm_program, "gm_key": inst.gm_key,
             "description": inst.description, "voice": describe(inst.name)}
            for inst in CATALOG.values()]


def instruments_lines(rows: list[Row]) -> list[str]:
    name_width = max((display_width(r["name"]) for r in rows), default=0)
    lines = []
    for r in rows:
        gm = (f"GM program {r['gm_program']}" if r["gm_program"] is not None
              else f"GM drum key {r['gm_key']}")
        lines += [f"{pad(r['name'], name_width)}  [{r['bayin']}]  {r['english']}  "
                  f"({'pitched' if r['pitched'] else 'unpitched'}; {gm})",
                  f"    aliases: {' '.join([r['pinyin'], *r['aliases']])}",
                  f"    {r['description']}",
                  f"    voice: {r['voice']}"]
    return lines

"""Views of a rite and its timeline as plain data (the ``show --json`` contract)."""

from __future__ import annotations

from cues import repertoire
from cues.model import Count, Cue, Rite
from sequencer.events import Timeline
from sequencer.timebase import seconds


def _counts(items: tuple[Count, ...]) -> list[dict]:
    return [{"name": c.name, "count": c.count} for c in items]


def music_lost(cue: Cue) -> bool:
    titles = [p.title for p in cue.pieces]
    if cue.shooting is not None:
        titles.append(cue.shooting.song)
    for title in titles:
        if repertoire.canonical_title(title) is None:
            continue  # a user's own piece with its realization file
        if repertoire.get_piece(title).lost:
            return True
    return False


def cue_json(cue: Cue, timeline: Timeline | None) -> dict:
    span = timeline.span(cue.id) if timeline is not None else None
    out: dict = {
        "id": cue.id,
        "kind": cue.kind,
        "title": cue.title,
        "pieces": [p.title for p in cue.pieces],
        "played_by": [p.by for p in cue.pieces],
        "zhong": cue.zhong,
        "performers": _counts(cue.performers),
        "instruments": _counts(cue.instruments),
        "trigger": str(cue.trigger),
        "at": cue.at,
        "start_s": float(span.start_s) if span else None,
        "duration_s": float(span.duration_s) if span and span.fixed_length else None,
        "lost": music_lost(cue),
        "source": {"work": cue.source.work, "quote": cue.source.quote},
    }
    if cue.source.file:
        out["source"]["file"] = cue.source.file
    if cue.source.note:
        out["source"]["note"] = cue.source.note
    if cue.stop is not None:
        out["stop"] = {"event": cue.stop.event, "at": cue.stop.at}
    if cue.moves:
        out["moves"] = [{"name": m.name, "x": m.x, "y": m.y} for m in cue.moves]
    if cue.when or cue.unless:
        out["variant"] = {"when": list(cue.when), "unless": list(cue.unless)}
    if cue.shooting is not None:
        shoot = cue.shooting
        out["song"] = shoot.song
        out["jie"] = shoot.jie
        out["listen"] = shoot.listen
        out["ou"] = [{"name": o.name, "exempt": list(o.exempt)} for o in shoot.ou]
        if span is not None:
            out["jie_s"] = float(seconds(span.jie_ticks or 0))
            out["release_s"] = [float(seconds(t)) for t in span.release_ticks]
    return out


def rite_json(rite: Rite, timeline: Timeline | None = None) -> dict:
    return {
        "rite": rite.id,
        "title": rite.title,
        "work": rite.work,
        "hang": rite.hang,
        "layout": [{"name": p.name, "x": p.x, "y": p.y,
                    **({"instrument": p.instrument} if p.instrument else {}),
                    **({"facing": p.facing} if p.facing else {})} for p in rite.layout],
        "variants": [{"id": v.id, "title": v.title, "chosen": v.id in rite.active_variants}
                     for v in rite.variants],
        "readings": [{"name": r.name, "value": r.value, "choices": list(r.choices),
                      "note": r.note} for r in rite.readings],
        "settings": dict(timeline.settings) if timeline is not None else {},
        "cues": [cue_json(c, timeline) for c in rite.cues],
    }

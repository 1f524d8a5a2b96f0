"""Views of a rite and its timeline as plain data (the ``show --json`` contract)."""

from __future__ import annotations

from dataclasses import fields
from fractions import Fraction
from pathlib import Path

from cues import repertoire
from cues.model import WU_SHENG, Call, Count, Cue, Rite, Setting
from cues.passages import citation_json, edition_of
from cues.sheet.quotations import is_verbatim
from cues.sources import texts_beside
from sequencer.timeline.events import Timeline
from sequencer.timeline.project_choices import automatic_choices, sheet_choices
from sequencer.timeline.settings import CompileSettings, make_settings
from sequencer.timeline.timebase import seconds


def _counts(items: tuple[Count, ...]) -> list[dict]:
    return [{"name": c.name, "count": c.count, **({"silent": c.silent} if c.silent else {})}
            for c in items]


def music_lost(cue: Cue) -> bool:
    """Whether any piece the cue plays (or its 射節 song) has lost its music and plays as
    structure only (a piece the user's realization plays does not)."""
    titles = [p.title for p in cue.pieces if p.realization is None]
    if cue.shooting is not None:
        titles.append(cue.shooting.song)
    for title in titles:
        if repertoire.canonical_title(title) is None:
            continue  # a user's own piece with its realization file
        if repertoire.get_piece(title).lost:
            return True
    return False


def _fragments(cue: Cue) -> dict[str, str]:
    """The pieces of the cue whose words survive only in part: title → the fragment."""
    titles = [p.title for p in cue.pieces] + ([cue.shooting.song] if cue.shooting else [])
    known = (repertoire.get_piece(t) for t in titles if repertoire.canonical_title(t))
    return {p.title: p.fragment for p in known if p.fragment}


def cue_json(cue: Cue, timeline: Timeline | None,
             settings: CompileSettings | None = None) -> dict:
    """One cue of ``show --json``, with its times when a timeline is given, and the project's
    own choices (the sheet's and the compiler's, under ``settings``)."""
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
        "source": citation_json(cue.source),
    }
    realized = [{"piece": p.title, "file": p.realization} for p in cue.pieces if p.realization]
    if realized:
        out["realizations"] = realized
    if cue.source.note:
        out["source"]["note"] = cue.source.note
    if cue.stop is not None:
        out["stop"] = {"event": cue.stop.event, "at": cue.stop.at}
    fragments = _fragments(cue)
    if fragments:
        out["fragments"] = fragments
    if cue.calls:
        out["calls"] = [_call_json(c) for c in cue.calls]
    if cue.rules:
        out["rules"] = [{**citation_json(r), **({"note": r.note} if r.note else {})}
                        for r in cue.rules]
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
    settings = settings or compiled_settings(timeline)
    out["choices"] = (sheet_choices(cue, out, settings)
                      + automatic_choices(cue, settings, span, out["lost"]))
    return out


def _call_json(call: Call) -> dict:
    """A pitched call: who, the words, each pitch (五聲, semitones above 黃鍾) and its length."""
    out: dict = {"who": call.who, "words": call.words,
                 "pitches": [{"name": p, "semitones": WU_SHENG[p], "seconds": s}
                             for p, s in zip(call.pitches, call.seconds, strict=True)],
                 "times": call.times,
                 "source": {"work": call.source.work, "quote": call.source.quote}}
    if call.source.file:
        out["source"]["file"] = call.source.file
    return out


def compiled_settings(timeline: Timeline | None) -> CompileSettings:
    """The settings a timeline was compiled with (the defaults without one)."""
    return make_settings() if timeline is None else timeline.settings


def rite_length_s(timeline: Timeline) -> float:
    """The length of a rite: from 0 to the end of its last cue or note, whichever is later.

    The one figure every command reports (show, midi, plot, render), formatted by
    ``cues.text.clock``; a render's audio may stop a little earlier (its last note's ring-out
    ends before its cue does) or later (a ring-out past the last cue)."""
    return float(seconds(timeline.end))


def _json_value(value: object) -> object:
    """A setting as JSON: a whole Fraction as an int, another as a float, None as null."""
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else float(value)
    return value


def settings_json(settings: CompileSettings) -> dict[str, object]:
    """The compile settings of ``show --json`` with their own types (numbers, strings, null)."""
    return {f.name: _json_value(getattr(settings, f.name)) for f in fields(settings)}


def reading_json(reading: Setting) -> dict:
    """A reading of ``show --json``: its value in force and every choice with its passage."""
    choices: list[dict] = []
    for value in reading.choices:
        option = reading.option(value)
        item: dict = {"value": value}
        if option is not None and option.source is not None:
            item["source"] = citation_json(option.source)
        if option is not None:
            item["cues"] = list(option.cues)
            item["setting"] = dict(option.setting)
        choices.append(item)
    return {"name": reading.name, "value": reading.value, "choices": choices,
            "note": reading.note, **({"when": list(reading.when)} if reading.when else {})}


def rite_json(rite: Rite, timeline: Timeline | None = None) -> dict:
    """A rite as ``show --json`` prints it (cue times and settings when a timeline is given)."""
    settings = compiled_settings(timeline)
    cues = [cue_json(c, timeline, settings) for c in rite.cues]
    _mark_paraphrases(rite, cues)
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
        "readings": [reading_json(r) for r in rite.readings],
        "settings": settings_json(settings) if timeline is not None else {},
        "cues": cues,
        "texts": [{"file": f, "edition": edition_of(f)} for f in rite.cited_files()],
    }


def _mark_paraphrases(rite: Rite, cues: list[dict]) -> None:
    """Each cue's ``at_verbatim`` (and its stop's ``verbatim``): whether the moment is the
    texts' own words (pieces between ellipses found in the texts the sheet cites) or a
    paraphrase, which ``show`` marks as such."""
    cited = rite.cited_files()
    folder = Path(rite.path).parent if rite.path else None
    with texts_beside(folder):  # a user's own texts are beside the sheet
        for cue in cues:
            cue["at_verbatim"] = is_verbatim(cue["at"], cited)
            if "stop" in cue:
                cue["stop"]["verbatim"] = is_verbatim(cue["stop"]["at"], cited)

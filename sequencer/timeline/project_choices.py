"""The project's own choices in a compiled cue: the values no source fixes, each with one line
of reason (``show --json`` ``choices``; docs/fidelity-code.md section 4).

A sheet names its own (a cue's ``choices``); the compiler adds those its settings decide: the
length of a 射節's 節, of a lost piece's 終, the drum pattern and release rule of a 射節, its
silent winds and its pairs back to back, the 磬 (and 鍾) on each stanza's first note, the
4-second 節 of a bell-and-drum piece, and the nominal length of a cue the operator ends.
"""

from __future__ import annotations

from collections.abc import Mapping

from cues import repertoire
from cues.model import Cue
from sequencer.timeline import drums
from sequencer.timeline.events import CueSpan
from sequencer.timeline.piece_notes import (
    BELL_AND_DRUM_JIE_TICKS,
    BELL_AND_DRUM_KINDS,
    STANZA_STRUCK,
)
from sequencer.timeline.settings import CompileSettings
from sequencer.timeline.timebase import seconds

SHOOTING = "射節"


def automatic_choices(
    cue: Cue, settings: CompileSettings, span: CueSpan | None, lost: bool,
) -> list[dict]:
    """The choices the compiler makes for ``cue`` (``lost``: it plays a piece whose music is
    lost), as ``{"field", "value", "reason"}``."""
    out: list[dict] = []

    def add(field: str, value: object, reason: str) -> None:
        out.append({"field": field, "value": value, "reason": reason})

    if cue.kind == SHOOTING and settings.jie_seconds is None:
        jie_s = float(seconds(span.jie_ticks)) if span and span.jie_ticks else None
        add("jie_s", jie_s, "one 節 = one 終 of the song: the texts give no length")
    if lost:
        n = float(settings.lost_zhong_seconds)
        add("lost_zhong_s", n,
            f"one 終 of a lost piece: {n:g} s (--lost-zhong-seconds)")
    if cue.kind == SHOOTING:
        add("drum_pattern", settings.drum_pattern,
            f"the drum's strokes inside a 節: pattern {settings.drum_pattern}, "
            f"reading {settings.drum_reading} — "
            + ("no source: the 鼓 on the 節, the 鼙 on its quarters (the project's)"
               if settings.drum_pattern == drums.DEFAULT_PATTERN else
               "投壺's 魯鼓/薛鼓, the 燕射's (「射謂燕射」); which house's, the project's"))
        add("release_rule", settings.release_rule,
            f"when a release accords with the drum: rule {settings.release_rule}")
        add("winds", None, "the 笙, 和 and 管 are silent in a 射節: the texts name the 工's song "
            "and the drum, no winds")
        add("ou", None, "each 耦's 節 follow the last 耦's without a break: the texts give no "
            "pause between the pairs")
    if cue.kind not in BELL_AND_DRUM_KINDS and any(
            c.name in STANZA_STRUCK for c in cue.instruments) and any(
            repertoire.canonical_title(p.title) and not repertoire.get_piece(p.title).lost
            for p in cue.pieces):
        add("stanza_strike", None, "the 磬 (and a lord's 鍾) strike the first note of each "
            "stanza: the texts say they sound in the music, not when")
    if cue.kind in BELL_AND_DRUM_KINDS and any(p.realization is None for p in cue.pieces):
        add("jiu_xia_jie_s", float(seconds(BELL_AND_DRUM_JIE_TICKS)),
            "a bell-and-drum 節 every 4 s: the music is lost")
    if span is not None and not span.fixed_length and span.end > span.start:
        add("duration_s", float(span.duration_s), "nominal offline length")
    return out


def sheet_choices(cue: Cue, cue_view: Mapping[str, object],
                  settings: CompileSettings) -> list[dict]:
    """The cue's own ``choices``, each with the value it qualifies (from the cue's JSON view,
    else the compile setting of that name)."""
    return [{"field": c.field,
             "value": cue_view[c.field] if c.field in cue_view
             else getattr(settings, c.field, None),
             "reason": c.reason} for c in cue.choices]

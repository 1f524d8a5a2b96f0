"""The compiler: a rite and its settings → one deterministic Timeline of events in integer ticks.

Cues follow one another: offline, an operator's GO is taken ``go_gap_s`` after the previous cue
ends, a follow trigger starts a cue as the previous one ends, and each cue's pre- and post-waits
are added.  Every cue start has a marker (its id and title); a 射節 is played by
:mod:`sequencer.timeline.she_jie`, every other cue's pieces by
:mod:`sequencer.timeline.piece_notes`.  A cue whose length the operator decides (無算樂, a stop rule
such as 樂闋, a pause) gets a nominal length here and ``duration_s`` null in ``show --json``.  The
rules are documented in docs/timeline.md.
"""

from __future__ import annotations

from dataclasses import replace

from cues.catalog import canonical_instrument
from cues.errors import UserError
from cues.limits import TIMELINE_NOTES, TIMELINE_SECONDS, over_limit
from cues.model import TRIGGER_FOLLOW, TRIGGER_GO, Cue, Rite, Trigger
from sequencer.timeline.calls import round_calls
from sequencer.timeline.ensemble import Ensemble, rite_instruments
from sequencer.timeline.events import MARKER_CUE, CueSpan, Marker, Note, Timeline
from sequencer.timeline.piece_notes import default_voices, play_piece, played_pieces
from sequencer.timeline.settings import CompileSettings, make_settings
from sequencer.timeline.she_jie import shoot
from sequencer.timeline.timebase import TICKS_PER_SECOND, to_ticks

__all__ = ["CompileSettings", "compile_rite", "make_settings", "select_cues",
           "unsounded_instruments"]


def compile_rite(rite: Rite, settings: CompileSettings | None = None) -> Timeline:
    """The rite's timeline (deterministic: the same rite and settings give the same events)."""
    settings = settings or make_settings(rite.settings)
    ens = Ensemble(rite, settings)
    ens.present = rite_instruments(rite, default_voices)
    markers: list[Marker] = []
    spans: list[CueSpan] = []
    previous_end = 0
    for index, cue in enumerate(rite.cues):
        start = previous_end + to_ticks(cue.pre_wait_s)
        if index > 0 and cue.trigger.kind != TRIGGER_FOLLOW:
            start += to_ticks(settings.go_gap_s)
        for move in cue.moves:
            ens.move(move)
        label = f"{cue.id} {cue.title or cue.kind}".strip()
        markers.append(Marker(start, label, cue.id, MARKER_CUE))
        span, jie_markers = _play_cue(ens, start, cue)
        markers += jie_markers
        spans.append(span)
        previous_end = span.end + to_ticks(cue.post_wait_s)
        _check_size(rite, cue.id, previous_end, len(ens.notes))
    notes = tuple(sorted(ens.notes, key=_note_order))
    markers.sort(key=lambda m: (m.tick, m.kind != MARKER_CUE, m.text))
    return Timeline(rite.id, notes, tuple(markers), tuple(spans), settings)


def _play_cue(ens: Ensemble, start: int, cue: Cue) -> tuple[CueSpan, list[Marker]]:
    """Play ``cue`` from ``start``: its span, and its 節 markers (a 射節's)."""
    voices = {c.name for c in cue.instruments} or default_voices(cue)
    if cue.kind == "射節" and cue.shooting is not None:
        return shoot(ens, start, cue, voices)
    end = start
    sections = []
    for i, ref in enumerate(played_pieces(cue)):
        begin, end = end, play_piece(ens, end, ref, cue, voices, first=i == 0)
        sections.append((ref.title, begin, end))
    if cue.calls and not cue.is_music:
        end = max(end, round_calls(ens, start, cue))
    if cue.duration_s is not None:
        end = max(end, start + to_ticks(cue.duration_s))
    if cue.is_music:
        fixed = not cue.operator_ends and cue.stop is None
    else:
        fixed = cue.duration_s is not None or bool(cue.calls)
    return CueSpan(cue.id, cue.kind, start, end, fixed, sections=tuple(sections)), []


def _check_size(rite: Rite, cue_id: str, end: int, notes: int) -> None:
    """Refuse a timeline past TIMELINE_SECONDS or TIMELINE_NOTES at the cue that passes it."""
    where = f"{rite.path or rite.id}: the timeline up to cue {cue_id!r}"
    if end > TIMELINE_SECONDS.value * TICKS_PER_SECOND:
        raise UserError(f"{where} lasts {over_limit(TIMELINE_SECONDS, end // TICKS_PER_SECOND)}")
    if notes > TIMELINE_NOTES.value:
        raise UserError(f"{where} has {over_limit(TIMELINE_NOTES, notes)}")


def _note_order(n: Note) -> tuple:
    return (n.tick, n.channel, n.key, n.duration, n.instrument, n.cue)


def select_cues(rite: Rite, start: str | None = None, until: str | None = None) -> Rite:
    """The rite from cue ``start`` to cue ``until`` inclusive (``--from`` / ``--until``)."""
    ids = [c.id for c in rite.cues]
    for name, value in (("--from", start), ("--until", until)):
        if value is not None and value not in ids:
            raise UserError(f"{name} {value!r}: no such cue in {rite.title} "
                            f"(its cues: {', '.join(ids)})")
    lo = ids.index(start) if start else 0
    hi = ids.index(until) if until else len(ids) - 1
    if hi < lo:
        raise UserError(f"--until {until!r} comes before --from {start!r}")
    cues = rite.cues[lo:hi + 1]
    # the first cue selected starts the show: a follow trigger becomes the operator's GO
    if cues and cues[0].trigger.kind == TRIGGER_FOLLOW:
        cues = (replace(cues[0], trigger=Trigger(TRIGGER_GO)),) + tuple(cues[1:])
    return replace(rite, cues=tuple(cues))


def unsounded_instruments(rite: Rite, settings: CompileSettings | None = None,
                          ) -> list[tuple[Cue, str]]:
    """Every (cue, instrument) the cue lists that never sounds when the cue is compiled alone,
    and that does not say why (``silent``): the validator's warnings."""
    settings = settings or make_settings(rite.settings)
    out: list[tuple[Cue, str]] = []
    for cue in rite.cues:
        alone = replace(rite, cues=(replace(cue, trigger=Trigger(TRIGGER_GO)),))
        sounded = {n.instrument for n in compile_rite(alone, settings).notes}
        out += [(cue, c.name) for c in cue.instruments
                if not c.silent and canonical_instrument(c.name) not in sounded]
    return out

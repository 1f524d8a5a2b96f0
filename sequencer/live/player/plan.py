"""A show plan: everything a live show plays, compiled once before it opens — the rite, its
settings, the timeline of the part this machine sends (``--only``/``--except``), each cue's
schedule (the MIDI file's messages, its tuning carried as ``midi_tuning`` says), and what the
cue state machine needs of each cue (their lengths, loops and rest points are the whole
ensemble's, so a station playing a part stops where the rest does)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from cues.model import Rite
from instruments.midi import DEFAULT_MIDI_TUNING
from sequencer.live.cuelist import CueInfo
from sequencer.outputs.cue_schedule import CueSchedule, cue_schedules
from sequencer.timeline.events import Timeline
from sequencer.timeline.groups import NoteSelection
from sequencer.timeline.selection import compiled_part
from sequencer.timeline.settings import CompileSettings


@dataclass(frozen=True)
class ShowPlan:
    rite: Rite
    settings: CompileSettings
    timeline: Timeline  # the part this machine sends
    schedules: Mapping[str, CueSchedule]  # each cue's messages, of the part
    infos: tuple[CueInfo, ...]  # each cue as the state machine runs it, of the whole
    warnings: tuple[str, ...] = ()  # e.g. a part that keeps no note


def plan_show(rite: Rite, settings: CompileSettings, only: NoteSelection | None = None,
              midi_tuning: str = DEFAULT_MIDI_TUNING) -> ShowPlan:
    """The plan of ``rite`` under ``settings``, sending the part ``only`` selects (all: None),
    its tuning as ``midi_tuning`` says (``mts`` or ``bend``: as ``yuezheng midi`` writes it)."""
    whole, part, warnings = compiled_part(rite, settings, only)
    schedules = cue_schedules(part, midi_tuning)
    shape = schedules if only is None else cue_schedules(whole, midi_tuning)
    return ShowPlan(rite, settings, part, MappingProxyType(schedules),
                    tuple(cue_infos(rite, shape)), tuple(warnings))


def cue_infos(rite: Rite, schedules: Mapping[str, CueSchedule]) -> list[CueInfo]:
    """What the state machine needs of each cue of the rite."""
    out = []
    for cue in rite.cues:
        sched = schedules[cue.id]
        loops = bool(sched.messages) and (cue.stop is not None or cue.operator_ends)
        stop_text = f"「{cue.stop.event}」 at 「{cue.stop.at}」" if cue.stop else (
            "the operator ends it" if cue.operator_ends else "")
        out.append(CueInfo(
            id=cue.id, length_s=sched.length_s, trigger=cue.trigger.kind,
            target=cue.trigger.target, loops=loops, pre_wait_s=cue.pre_wait_s,
            post_wait_s=cue.post_wait_s, rest_points=sched.rest_points, cycle_s=sched.cycle_s,
            kind=cue.kind, title=cue.title, at=cue.at, stop_text=stop_text,
            stop_at=cue.stop.at if cue.stop else "", sections=sched.sections,
            rules=tuple(rule.quote for rule in cue.rules),
        ))
    return out

"""Standard MIDI files from a Timeline (mido): SMF type 1, one track per instrument.

- Track 0 (conductor): the tempo (1,000,000 µs a beat at 960 ticks a beat, so a tick is exactly
  1/960 s, the timeline's own tick), the rite's name, and the markers: every cue start (text
  beginning with the cue id) and every 節 of a 射節 (``節 k/N``).
- One track per instrument, named for it, with its channel and its General MIDI program (drums
  on channel 10, GM percussion keys); lyric events under sung notes.
- Pitch: each melodic note is preceded by a pitch-bend message when the tuning needs one (range
  ±2 semitones, set with RPN 0 at the start of each channel) — so 三分損益 sounds on any GM synth.
- Every note_on has its note_off; text meta events are UTF-8.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import mido

from instruments.catalog import GM_PERCUSSION_CHANNEL, get_instrument
from sequencer.compiler import iter_note_pairs
from sequencer.events import Note, Timeline
from sequencer.timebase import TICKS_PER_BEAT, US_PER_BEAT

BEND_RANGE = 2


def _delta_track(events: list[tuple[int, int, mido.Message | mido.MetaMessage]]) -> mido.MidiTrack:
    """Absolute (tick, order, message) → a track with delta times (integer ticks)."""
    track = mido.MidiTrack()
    now = 0
    for tick, _, msg in sorted(events, key=lambda e: (e[0], e[1])):
        track.append(msg.copy(time=tick - now))
        now = tick
    track.append(mido.MetaMessage("end_of_track", time=0))
    return track


def build_midi(timeline: Timeline, title: str = "") -> mido.MidiFile:
    mid = mido.MidiFile(type=1, ticks_per_beat=TICKS_PER_BEAT, charset="utf-8")
    conductor: list[tuple[int, int, mido.Message | mido.MetaMessage]] = [
        (0, 0, mido.MetaMessage("track_name", name=title or timeline.rite)),
        (0, 1, mido.MetaMessage("set_tempo", tempo=US_PER_BEAT)),
        (0, 2, mido.MetaMessage("time_signature", numerator=4, denominator=4)),
    ]
    for i, marker in enumerate(timeline.markers):
        conductor.append((marker.tick, 10 + i, mido.MetaMessage("marker", text=marker.text)))
    mid.tracks.append(_delta_track(conductor))

    by_instrument: dict[str, list[Note]] = defaultdict(list)
    for note in timeline.notes:
        by_instrument[note.instrument].append(note)
    order = sorted(by_instrument, key=lambda name: (get_instrument(name).channel, name))
    for name in order:
        inst = get_instrument(name)
        ch = inst.channel
        events: list[tuple[int, int, mido.Message | mido.MetaMessage]] = [
            (0, 0, mido.MetaMessage("track_name", name=f"{inst.name} ({inst.english})")),
        ]
        if ch != GM_PERCUSSION_CHANNEL:
            events += [
                (0, 1, mido.Message("program_change", channel=ch, program=inst.gm_program or 0)),
                (0, 2, mido.Message("control_change", channel=ch, control=101, value=0)),
                (0, 3, mido.Message("control_change", channel=ch, control=100, value=0)),
                (0, 4, mido.Message("control_change", channel=ch, control=6, value=BEND_RANGE)),
                (0, 5, mido.Message("control_change", channel=ch, control=38, value=0)),
                (0, 6, mido.Message("control_change", channel=ch, control=101, value=127)),
                (0, 7, mido.Message("control_change", channel=ch, control=100, value=127)),
            ]
        bend = 0
        seq = 100
        for tick, note, is_on in iter_note_pairs(by_instrument[name]):
            seq += 1
            if is_on:
                if ch != GM_PERCUSSION_CHANNEL and note.bend != bend:
                    events.append((tick, seq * 4, mido.Message(
                        "pitchwheel", channel=ch, pitch=note.bend)))
                    bend = note.bend
                if note.lyric:
                    events.append((tick, seq * 4 + 1, mido.MetaMessage("lyrics",
                                                                      text=note.lyric)))
                events.append((tick, seq * 4 + 2, mido.Message(
                    "note_on", channel=ch, note=note.key, velocity=note.velocity)))
            else:
                events.append((tick, seq * 4, mido.Message(
                    "note_off", channel=ch, note=note.key, velocity=0)))
        mid.tracks.append(_delta_track(events))
    return mid


def write_midi(timeline: Timeline, path: str | Path, title: str = "") -> mido.MidiFile:
    mid = build_midi(timeline, title)
    mid.save(str(path))
    return mid

"""Standard MIDI files from a Timeline (mido): SMF type 1, one track per instrument.

- Track 0 (conductor): the tempo (1,000,000 µs a beat at 960 ticks a beat, so a tick is exactly
  1/960 s, the timeline's own tick), the rite's name, and the markers: every cue start (text
  beginning with the cue id) and every 節 of a 射節 (``節 k/N``).
- One track per instrument, named for it, with its channel and its General MIDI program (drums
  on channel 10, GM percussion keys); lyric events under sung notes.
- Layout: each track starts with pan (CC 10) and volume (CC 7) from where its instrument first
  sounds, heard from the default listener: pan = 64 + 63·sin(azimuth), volume =
  ``LAYOUT_VOLUME`` × 10^((catalog balance + distance dB)/40) (the GM volume curve).  The GM
  drums share channel 10: its pan and volume come from the first drum track only.
- Pitch: each melodic note is preceded by a pitch-bend message when the tuning needs one (range
  ±2 semitones, set with RPN 0 at the start of each channel) — so 三分損益 sounds on any GM synth.
- Every note_on has its note_off; text meta events are UTF-8.
"""

from __future__ import annotations

import math
import struct
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from cues.catalog import ENSEMBLE_BALANCE_LU, GM_PERCUSSION_CHANNEL, get_instrument
from instruments.atomicfile import write_bytes_atomically
from instruments.midi import (
    CC_DATA_ENTRY,
    CC_PAN,
    CC_RPN_LSB,
    CC_RPN_MSB,
    CC_VOLUME,
    PITCH_BEND_CENTER,
    control_change,
    note_off,
    note_on,
    pitch_bend,
    program_change,
)
from instruments.placement import pan_position
from sequencer.events import Note, Timeline
from sequencer.timebase import TICKS_PER_BEAT, US_PER_BEAT

LAYOUT_VOLUME = 100  # CC 7 of a 0 LU voice at the reference distance (GM's default volume)

BEND_RANGE = 2  # semitones either way of a full pitch-bend (RPN 0)
CC_DATA_ENTRY_LSB = 38
META = 0xFF  # the status byte of a meta event (in a file only, never sent)
TRACK_NAME, LYRIC, MARKER, SET_TEMPO, TIME_SIGNATURE = 0x03, 0x05, 0x06, 0x51, 0x58
END_OF_TRACK = b"\x00\xff\x2f\x00"  # delta time 0, meta 0x2F, no data

# The bytes are written directly: mido builds and checks a Message object per event (about
# 13 µs each, 150 ms for a rite), which misses the "< 100 ms to compile and write" goal; the
# format is small and the tests read every file back with mido.  The channel messages come from
# the builders of instruments.midi; the meta events and chunks of the file format are made here.


def _vlq(value: int) -> bytes:
    if value < 0x80:
        return _SMALL_VLQ[value]
    out = [value & 0x7F]
    value >>= 7
    while value:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    return bytes(reversed(out))


_SMALL_VLQ = tuple(bytes((i,)) for i in range(0x80))


def _meta(kind: int, data: bytes) -> bytes:
    return bytes((META, kind)) + _vlq(len(data)) + data


def _text(kind: int, text: str) -> bytes:
    return _meta(kind, text.encode("utf-8"))


def _track(events: list[tuple[int, int, bytes]]) -> bytes:
    """Absolute (tick, order, event bytes) → an MTrk chunk with delta times."""
    events.sort()
    parts: list[bytes] = []
    now = 0
    for tick, _, data in events:
        parts.append(_vlq(tick - now))
        parts.append(data)
        now = tick
    parts.append(END_OF_TRACK)
    body = b"".join(parts)
    return b"MTrk" + struct.pack(">I", len(body)) + body


def instrument_order(notes: Sequence[Note]) -> list[str]:
    """The instruments of ``notes`` in track order (by channel, then name)."""
    names = {note.instrument for note in notes}
    return sorted(names, key=lambda name: (get_instrument(name).channel, name))


def layout_controls(name: str, first: Note) -> list[bytes]:
    """Pan (CC 10) and volume (CC 7) of instrument ``name`` where its note ``first`` sounds."""
    ch = get_instrument(name).channel
    p, attenuation = pan_position(first.x, first.y)
    db = ENSEMBLE_BALANCE_LU[get_instrument(name).name] + 20.0 * math.log10(attenuation)
    volume = round(LAYOUT_VOLUME * 10.0 ** (db / 40.0))
    return [control_change(ch, CC_PAN, max(0, min(127, round(64 + 63 * p)))),
            control_change(ch, CC_VOLUME, max(1, min(127, volume)))]


def track_events(name: str, notes: Sequence[Note], origin: int = 0,
                 ) -> list[tuple[int, int, bytes]]:
    """One instrument's track as (tick, order, event bytes), ticks relative to ``origin``,
    unsorted: the track name, the channel setup (program, RPN 0 bend range) at tick 0, then for
    every note a pitch bend when the tuning changes it, its lyric and its note_on, and its
    note_off (offs before ons at the same tick). Meta events start with META (0xFF); everything else
    is a channel message. ``build_midi_bytes`` writes these and the live player sends the
    channel messages, so a file and a live cue carry the same messages."""
    inst = get_instrument(name)
    ch = inst.channel
    events: list[tuple[int, int, bytes]] = [
        (0, 0, _text(TRACK_NAME, f"{inst.name} ({inst.english})")),
    ]
    if ch != GM_PERCUSSION_CHANNEL:
        events += [(0, 1 + i, data) for i, data in enumerate(channel_setup(ch, inst.gm_program))]
    bend = 0
    seq = 100
    for tick, note, is_on in iter_note_pairs(notes):
        seq += 1
        tick -= origin
        if is_on:
            if ch != GM_PERCUSSION_CHANNEL and note.bend != bend:
                events.append((tick, seq * 4, pitch_bend(ch, PITCH_BEND_CENTER + note.bend)))
                bend = note.bend
            if note.lyric:
                events.append((tick, seq * 4 + 1, _text(LYRIC, note.lyric)))
            events.append((tick, seq * 4 + 2, note_on(ch, note.key, note.velocity)))
        else:
            events.append((tick, seq * 4, note_off(ch, note.key)))
    return events


def channel_setup(ch: int, program: int | None) -> list[bytes]:
    """Program change and RPN 0 (pitch-bend range ±BEND_RANGE), then RPN null."""
    return [program_change(ch, program or 0),
            control_change(ch, CC_RPN_MSB, 0), control_change(ch, CC_RPN_LSB, 0),  # RPN 0
            control_change(ch, CC_DATA_ENTRY, BEND_RANGE),
            control_change(ch, CC_DATA_ENTRY_LSB, 0),
            control_change(ch, CC_RPN_MSB, 127), control_change(ch, CC_RPN_LSB, 127)]  # RPN null


def iter_note_pairs(notes: Sequence[Note]) -> list[tuple[int, Note, bool]]:
    """(tick, note, is_on) pairs sorted for output: offs before ons at the same tick."""
    keys: list[tuple[int, int, int, int, int]] = []
    for i, n in enumerate(notes):
        keys.append((n.tick, 1, n.channel, n.key, i))
        keys.append((n.tick + n.duration, 0, n.channel, n.key, i))
    keys.sort()
    return [(k[0], notes[k[4]], k[1] == 1) for k in keys]


def instrument_tracks(notes: Sequence[Note], origin: int = 0,
                      ) -> list[tuple[str, list[tuple[int, int, bytes]]]]:
    """(instrument, its track's events) in track order: ``track_events`` (ticks relative to
    ``origin``) and, at tick 0, the layout's pan and volume (``layout_controls``; the drums'
    shared channel once, from the first drum track).  The file's tracks and a live cue's
    schedule (``sequencer.cueschedule``) both come from here."""
    by_instrument: dict[str, list[Note]] = defaultdict(list)
    for note in notes:
        by_instrument[note.instrument].append(note)
    out = []
    drums_placed = False
    for name in instrument_order(notes):
        events = track_events(name, by_instrument[name], origin)
        drums = get_instrument(name).channel == GM_PERCUSSION_CHANNEL
        if not drums or not drums_placed:
            events += [(0, 50 + i, data)
                       for i, data in enumerate(layout_controls(name, by_instrument[name][0]))]
            drums_placed = drums_placed or drums
        out.append((name, events))
    return out


def build_midi_bytes(timeline: Timeline, title: str = "") -> bytes:
    """The SMF of ``timeline`` (its name ``title``, by default the rite's id)."""
    tempo = struct.pack(">I", US_PER_BEAT)[1:]
    conductor: list[tuple[int, int, bytes]] = [
        (0, 0, _text(TRACK_NAME, title or timeline.rite)),
        (0, 1, _meta(SET_TEMPO, tempo)),
        (0, 2, _meta(TIME_SIGNATURE, bytes((4, 2, 24, 8)))),  # 4/4, 24 clocks, 8 32nds a beat
    ]
    for i, marker in enumerate(timeline.markers):
        conductor.append((marker.tick, 10 + i, _text(MARKER, marker.text)))
    tracks = [_track(conductor)]

    tracks += [_track(events) for _, events in instrument_tracks(timeline.notes)]
    header = b"MThd" + struct.pack(">IHHH", 6, 1, len(tracks), TICKS_PER_BEAT)
    return header + b"".join(tracks)


def write_midi(timeline: Timeline, path: str | Path, title: str = "") -> int:
    """Write the timeline as an SMF; returns the number of bytes written."""
    data = build_midi_bytes(timeline, title)
    write_bytes_atomically(path, data)
    return len(data)

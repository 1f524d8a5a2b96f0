"""Standard MIDI files from a Timeline (mido): SMF type 1, one track per instrument.

- Track 0 (conductor): the tempo (1,000,000 µs a beat at 960 ticks a beat, so a tick is exactly
  1/960 s, the timeline's own tick), the rite's id as the track name (ASCII), the file's
  provenance (a text event: ``sequencer.outputs.provenance``), and the markers: every cue start
  (text beginning with the cue id) and every 節 of a 射節 (``節 k/N``).
- One track per instrument, named for it in ASCII (「bianzhong, graded bronze bells」: the track
  name reads back the same in mido's default latin-1 and in any DAW) with its Chinese name in an
  instrument-name event (UTF-8), with its channel and its General MIDI program (drums
  on channel 10, GM percussion keys); lyric events under sung notes.
- Layout: each track starts with pan (CC 10) and volume (CC 7) from where its instrument first
  sounds, heard from the default listener: pan = 64 + 63·sin(azimuth), volume =
  ``LAYOUT_VOLUME`` × 10^((catalog balance + distance dB)/40) (the GM volume curve).  The GM
  drums share channel 10: its pan and volume come from the first drum track only.
- Pitch (``midi_tuning``): a pitch between the keys (三分損益, or a 黃鍾 off the keys) goes out
  as the MIDI Tuning Standard by default (``mts``): a track with such a note selects tuning
  program 0 of bank 0 on its channel (RPN 4 and RPN 3, after the ±2-semitone bend range of RPN 0)
  and, at its start, sends one real-time single-note tuning change with the pitch of each key
  it plays (``F0 7F 7F 08 02 00 ll [kk xx yy zz]… F7``); a key is tuned again, just before the
  note that needs it, only when a note needs it at another pitch (a user's equal-tempered
  realization on a key the 三分損益 tunes). The tuning lives on the key, so no note retunes
  another that still rings. ``bend`` is the older way for synths that read no MTS: a channel
  pitch bend before each note whose bend differs from the channel's, which retunes every note
  still ringing on the channel. A track whose notes all fall on the keys (``--tuning equal``
  with 黃鍾 on a key) carries neither.
- Every note_on has its note_off; text meta events are UTF-8; a system exclusive message is
  written as the file format has it (F0, its length, the bytes after F0).
"""

from __future__ import annotations

import math
import re
import struct
from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from cues.catalog import ENSEMBLE_BALANCE_LU, GM_PERCUSSION_CHANNEL, get_instrument
from instruments.files.atomic import write_bytes_atomically
from instruments.files.targets import output_suffix
from instruments.midi import (
    CC_PAN,
    CC_VOLUME,
    DEFAULT_MIDI_TUNING,
    MIDI_TUNINGS,
    MTS_MAX_KEYS,
    PITCH_BEND_CENTER,
    RPN_PITCH_BEND_RANGE,
    RPN_TUNING_BANK,
    RPN_TUNING_PROGRAM,
    SYSEX,
    control_change,
    mts_pitch,
    note_off,
    note_on,
    note_tuning,
    pitch_bend,
    program_change,
    rpn,
    rpn_null,
)
from instruments.mix.placement import pan_position
from instruments.tuning import hz_midi_key
from sequencer.timeline.events import Note, Timeline
from sequencer.timeline.timebase import TICKS_PER_BEAT, US_PER_BEAT

LAYOUT_VOLUME = 100  # CC 7 of a 0 LU voice at the reference distance (GM's default volume)

BEND_RANGE = 2  # semitones either way of a full pitch-bend (RPN 0)
TUNING_BANK = TUNING_PROGRAM = 0  # the MTS tuning the tracks use (RP-020's default)
META = 0xFF  # the status byte of a meta event (in a file only, never sent)
TEXT, TRACK_NAME, INSTRUMENT_NAME, LYRIC, MARKER = 0x01, 0x03, 0x04, 0x05, 0x06
SET_TEMPO, TIME_SIGNATURE = 0x51, 0x58
END_OF_TRACK = b"\x00\xff\x2f\x00"  # delta time 0, meta 0x2F, no data
MIDI_SUFFIXES = (".mid", ".midi", ".smf")  # what `midi -o` may be named (a stream: any)

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


def ascii_track_name(pinyin: str, english: str) -> str:
    """A track's name in ASCII: 「bianzhong, graded bronze bells」 (a parenthesis with Chinese
    in it dropped; the pinyin alone when the English still has some).  The SMF leaves a meta
    text's encoding open; mido reads it as latin-1 unless told, and many DAWs as latin-1 or the
    system's code page, so a UTF-8 「編鐘」 there shows as 「ç·¨é\x90\x98」: ASCII reads back
    the same everywhere.  The Chinese name goes in the instrument-name event (UTF-8)."""
    plain = re.sub(r"\s*\([^)]*\)", lambda m: "" if not m.group(0).isascii() else m.group(0),
                   english).strip()
    return plain if plain.isascii() and plain else pinyin


def _track(events: list[tuple[int, int, bytes]]) -> bytes:
    """Absolute (tick, order, event bytes) → an MTrk chunk with delta times."""
    events.sort()
    parts: list[bytes] = []
    now = 0
    for tick, _, data in events:
        parts.append(_vlq(tick - now))
        if data[0] == SYSEX:  # in a file: F0, the length, then the rest (F7 included)
            parts.append(data[:1] + _vlq(len(data) - 1) + data[1:])
        else:
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
                 midi_tuning: str = DEFAULT_MIDI_TUNING) -> list[tuple[int, int, bytes]]:
    """One instrument's track as (tick, order, event bytes), ticks relative to ``origin``,
    unsorted: the track name, the channel setup at tick 0 (program, RPN 0 bend range, and with
    ``mts`` the tuning program and the keys' tuning when a note falls between the keys), then
    for every note what its pitch needs (``bend``: a pitch bend when it changes; ``mts``: a
    key's tuning when it changes), its lyric and its note_on, and its note_off (offs before ons
    at the same tick). Meta events start with META (0xFF); everything else is a MIDI message.
    ``build_midi_bytes`` writes these and the live player sends the MIDI messages, so a file
    and a live cue carry the same messages."""
    if midi_tuning not in MIDI_TUNINGS:
        raise ValueError(f"unknown MIDI tuning {midi_tuning!r}: expected one of "
                         f"{', '.join(MIDI_TUNINGS)}")
    inst = get_instrument(name)
    ch = inst.channel
    events: list[tuple[int, int, bytes]] = [
        (0, 0, _text(TRACK_NAME, ascii_track_name(inst.pinyin, inst.english))),
        (0, 0, _text(INSTRUMENT_NAME, inst.name)),
    ]
    pitched = ch != GM_PERCUSSION_CHANNEL
    mts = pitched and midi_tuning == "mts"
    keys = key_tunings(notes) if mts else {}
    if pitched:
        setup = channel_setup(ch, inst.gm_program, tuned=bool(keys))
        events += [(0, 1 + i, data) for i, data in enumerate(setup)]
    if keys:
        events += [(0, 30 + i, data) for i, data in enumerate(tuning_messages(keys))]
    bend = 0
    seq = 100
    for tick, note, is_on in iter_note_pairs(notes):
        seq += 1
        tick -= origin
        if is_on:
            if mts and keys:
                pitch = _mts_pitch(note.key, note.hz)
                if keys[note.key] != pitch:  # the key must sound otherwise: tune it again
                    events.append((tick, seq * 4, note_tuning([(note.key, pitch)])))
                    keys[note.key] = pitch
            elif pitched and not mts and note.bend != bend:
                events.append((tick, seq * 4, pitch_bend(ch, PITCH_BEND_CENTER + note.bend)))
                bend = note.bend
            if note.lyric:
                events.append((tick, seq * 4 + 1, _text(LYRIC, note.lyric)))
            events.append((tick, seq * 4 + 2, note_on(ch, note.key, note.velocity)))
        else:
            events.append((tick, seq * 4, note_off(ch, note.key)))
    return events


def note_pitch(note: Note) -> tuple[int, int, int]:
    """The MTS frequency data of ``note``'s own pitch (its key's when it has no frequency)."""
    return _mts_pitch(note.key, note.hz)


@lru_cache(maxsize=4096)  # a rite has a few dozen pitches and thousands of notes
def _mts_pitch(key: int, hz: float | None) -> tuple[int, int, int]:
    return (key, 0, 0) if hz is None else mts_pitch(hz_midi_key(hz))


def key_tunings(notes: Sequence[Note]) -> dict[int, tuple[int, int, int]]:
    """Each key's MTS frequency data at its first note (key order), or {} when every note sounds
    at its key's equal-tempered pitch (then the track needs no tuning at all)."""
    first: dict[int, tuple[int, Note]] = {}  # key → (tick, its first note)
    for note in notes:
        seen = first.get(note.key)
        if seen is None or note.tick < seen[0]:
            first[note.key] = (note.tick, note)
    pitches = {(n.key, n.hz) for n in notes}
    if all(_mts_pitch(key, hz) == (key, 0, 0) for key, hz in pitches):
        return {}
    return {key: note_pitch(first[key][1]) for key in sorted(first)}


def tuning_messages(keys: dict[int, tuple[int, int, int]]) -> list[bytes]:
    """Real-time single-note tuning changes giving each key its pitch (tuning program
    ``TUNING_PROGRAM`` of bank 0), up to ``MTS_MAX_KEYS`` keys a message."""
    items = list(keys.items())
    return [note_tuning(items[i:i + MTS_MAX_KEYS], program=TUNING_PROGRAM)
            for i in range(0, len(items), MTS_MAX_KEYS)]


def channel_setup(ch: int, program: int | None, tuned: bool = False) -> list[bytes]:
    """Program change and RPN 0 (pitch-bend range ±BEND_RANGE); ``tuned``: then RPN 4 and RPN 3
    (tuning bank and program ``TUNING_PROGRAM``, the MTS tuning the channel plays); RPN null."""
    out = [program_change(ch, program or 0)]
    out += rpn(ch, RPN_PITCH_BEND_RANGE, BEND_RANGE, 0)
    if tuned:
        out += rpn(ch, RPN_TUNING_BANK, TUNING_BANK) + rpn(ch, RPN_TUNING_PROGRAM, TUNING_PROGRAM)
    return out + rpn_null(ch)


def iter_note_pairs(notes: Sequence[Note]) -> list[tuple[int, Note, bool]]:
    """(tick, note, is_on) pairs sorted for output: offs before ons at the same tick."""
    keys: list[tuple[int, int, int, int, int]] = []
    for i, n in enumerate(notes):
        keys.append((n.tick, 1, n.channel, n.key, i))
        keys.append((n.tick + n.duration, 0, n.channel, n.key, i))
    keys.sort()
    return [(k[0], notes[k[4]], k[1] == 1) for k in keys]


def instrument_tracks(notes: Sequence[Note], origin: int = 0,
                      midi_tuning: str = DEFAULT_MIDI_TUNING,
                      ) -> list[tuple[str, list[tuple[int, int, bytes]]]]:
    """(instrument, its track's events) in track order: ``track_events`` (ticks relative to
    ``origin``, pitch as ``midi_tuning`` says) and, at tick 0, the layout's pan and volume
    (``layout_controls``; the drums' shared channel once, from the first drum track).  The
    file's tracks and a live cue's schedule (``sequencer.outputs.cue_schedule``) both come
    from here."""
    by_instrument: dict[str, list[Note]] = defaultdict(list)
    for note in notes:
        by_instrument[note.instrument].append(note)
    out = []
    drums_placed = False
    for name in instrument_order(notes):
        events = track_events(name, by_instrument[name], origin, midi_tuning)
        drums = get_instrument(name).channel == GM_PERCUSSION_CHANNEL
        if not drums or not drums_placed:
            events += [(0, 50 + i, data)
                       for i, data in enumerate(layout_controls(name, by_instrument[name][0]))]
            drums_placed = drums_placed or drums
        out.append((name, events))
    return out


def build_midi_bytes(timeline: Timeline, title: str = "",
                     midi_tuning: str = DEFAULT_MIDI_TUNING, *,
                     provenance: str | None = None) -> bytes:
    """The SMF of ``timeline`` (its name ``title``, by default the rite's id; pitches between
    the keys as ``midi_tuning`` says: ``mts`` or ``bend``; ``provenance``: a text event at tick
    0 of the conductor track)."""
    tempo = struct.pack(">I", US_PER_BEAT)[1:]
    conductor: list[tuple[int, int, bytes]] = [
        (0, 0, _text(TRACK_NAME, title if title and title.isascii() else timeline.rite)),
        (0, 1, _meta(SET_TEMPO, tempo)),
        (0, 2, _meta(TIME_SIGNATURE, bytes((4, 2, 24, 8)))),  # 4/4, 24 clocks, 8 32nds a beat
    ]
    if provenance:
        conductor.append((0, 3, _text(TEXT, provenance)))
    for i, marker in enumerate(timeline.markers):
        conductor.append((marker.tick, 10 + i, _text(MARKER, marker.text)))
    tracks = [_track(conductor)]

    tracks += [_track(events)
               for _, events in instrument_tracks(timeline.notes, midi_tuning=midi_tuning)]
    header = b"MThd" + struct.pack(">IHHH", 6, 1, len(tracks), TICKS_PER_BEAT)
    return header + b"".join(tracks)


def write_midi(timeline: Timeline, path: str | Path, title: str = "",
               midi_tuning: str = DEFAULT_MIDI_TUNING, *, provenance: str | None = None) -> int:
    """Write the timeline as an SMF (with its ``provenance``); returns the number of bytes
    written."""
    output_suffix(path, MIDI_SUFFIXES, "a Standard MIDI File")
    data = build_midi_bytes(timeline, title, midi_tuning, provenance=provenance)
    write_bytes_atomically(path, data)
    return len(data)

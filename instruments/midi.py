"""The MIDI table: status bytes, controller numbers, message checks and builders, the MIDI
Tuning Standard's single-note tuning messages, and a tracker of sounding notes. Every module
that reads or writes MIDI bytes uses these (as mido's ``specs`` is used throughout mido); none
decodes a status byte by hand.

The MIDI Tuning Standard (MMA, 1992; bank and scale/octave extensions CA-020/CA-021/RP-020):
a universal system exclusive message gives keys their own pitch, so a tuning lives on the key
and not, as a pitch bend does, on the whole channel. yuezheng sends the real-time
*single-note tuning change* (``F0 7F 7F 08 02 tt ll [kk xx yy zz]… F7``: tuning program tt,
ll keys, each key kk to the pitch xx + (yy·128 + zz)/16384 semitones, 0.0061 cents a step) and,
to leave a synth in equal temperament without touching what still rings, its non-real-time form
with a bank (``F0 7E 7F 08 07 bb tt ll … F7``). A channel plays a tuning program once RPN 4
(tuning bank) and RPN 3 (tuning program) select it (FluidSynth 2.3 needs them; newer
FluidSynth, after RP-020, gives every channel program 0 of bank 0 from the start).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

NOTE_OFF = 0x80
NOTE_ON = 0x90
POLY_PRESSURE = 0xA0
CONTROL_CHANGE = 0xB0
PROGRAM_CHANGE = 0xC0
CHANNEL_PRESSURE = 0xD0
PITCH_BEND = 0xE0
SYSEX = 0xF0
SYSEX_END = 0xF7
CLOCK = 0xF8
START = 0xFA
CONTINUE = 0xFB
STOP = 0xFC

CC_VOLUME = 7
CC_PAN = 10
CC_RPN_LSB = 100
CC_RPN_MSB = 101
CC_DATA_ENTRY = 6
CC_DATA_ENTRY_LSB = 38
RPN_PITCH_BEND_RANGE = 0
RPN_TUNING_PROGRAM = 3
RPN_TUNING_BANK = 4
RPN_NULL = 127  # both bytes: no parameter selected (data entry then does nothing)
CC_ALL_SOUND_OFF = 120
CC_ALL_NOTES_OFF = 123

CHANNELS = 16
PITCH_BEND_CENTER = 0x2000  # 14-bit value of no bend

# universal system exclusive: the MIDI Tuning Standard (sub-ID 08)
UNIVERSAL_NON_REALTIME = 0x7E
UNIVERSAL_REALTIME = 0x7F
ALL_CALL = 0x7F  # device ID: every device
MTS = 0x08
MTS_NOTE_CHANGE = 0x02  # single-note tuning change (real-time only; tuning bank 0)
MTS_NOTE_CHANGE_BANK = 0x07  # single-note tuning change with bank select (both forms)
MTS_UNITS = 1 << 14  # steps of a semitone in the frequency data (100/16384 cents each)
MTS_NO_CHANGE = (0x7F, 0x7F, 0x7F)  # reserved frequency data: leave the key as it is
MTS_MAX_KEYS = 127  # keys one message may carry (its count is a data byte)

#: how MIDI out carries a tuning that falls between the keys: ``mts`` (the MIDI Tuning
#: Standard: each key its own pitch) or ``bend`` (a channel pitch bend before each note)
MIDI_TUNINGS = ("mts", "bend")
DEFAULT_MIDI_TUNING = "mts"

# Data-byte counts of channel messages by high nibble, and of system common/real-time messages.
CHANNEL_LENGTHS = {NOTE_OFF: 3, NOTE_ON: 3, POLY_PRESSURE: 3, CONTROL_CHANGE: 3,
                   PROGRAM_CHANGE: 2, CHANNEL_PRESSURE: 2, PITCH_BEND: 3}
SYSTEM_LENGTHS = {0xF1: 2, 0xF2: 3, 0xF3: 2, 0xF6: 1, CLOCK: 1, START: 1, CONTINUE: 1, STOP: 1,
                  0xFE: 1, 0xFF: 1}


def kind_of(data: bytes | Sequence[int]) -> int:
    """The message kind: the high nibble of a channel message, else the whole status byte."""
    status = data[0]
    return status & 0xF0 if status < SYSEX else status


def channel_of(data: bytes | Sequence[int]) -> int:
    """The channel (0–15) of a channel message."""
    return data[0] & 0x0F


def is_note_on(data: bytes | Sequence[int]) -> bool:
    """A note-on with a velocity above 0 (a note-on at velocity 0 is a note-off)."""
    return len(data) == 3 and data[0] & 0xF0 == NOTE_ON and data[2] > 0


def is_note_off(data: bytes | Sequence[int]) -> bool:
    """A note-off, or a note-on at velocity 0."""
    return len(data) == 3 and (data[0] & 0xF0 == NOTE_OFF
                               or (data[0] & 0xF0 == NOTE_ON and data[2] == 0))


def is_pitch_bend(data: bytes | Sequence[int]) -> bool:
    """A pitch-wheel message (any value)."""
    return len(data) == 3 and kind_of(data) == PITCH_BEND


def is_all_off(data: bytes | Sequence[int]) -> bool:
    """CC 123 (all notes off) or CC 120 (all sound off)."""
    return (len(data) == 3 and data[0] & 0xF0 == CONTROL_CHANGE
            and data[1] in (CC_ALL_NOTES_OFF, CC_ALL_SOUND_OFF))


def check_message(message: bytes | bytearray | Sequence[int]) -> bytes:
    """Return ``message`` as bytes if it is one complete MIDI message, else raise ValueError."""
    data = bytes(message)
    if not data:
        raise ValueError("empty MIDI message")
    status = data[0]
    if status < 0x80:
        raise ValueError(f"MIDI message starts with data byte 0x{status:02X}, not a status byte")
    if status == SYSEX:
        if data[-1] != SYSEX_END or any(b >= 0x80 for b in data[1:-1]):
            raise ValueError("system exclusive must be F0, data bytes < 0x80, F7")
        return data
    expected = CHANNEL_LENGTHS.get(status & 0xF0) if status < SYSEX else SYSTEM_LENGTHS.get(status)
    if expected is None:
        raise ValueError(f"undefined MIDI status byte 0x{status:02X}")
    if len(data) != expected:
        raise ValueError(
            f"MIDI message with status 0x{status:02X} must be {expected} bytes, got {len(data)}"
        )
    if any(b >= 0x80 for b in data[1:]):
        raise ValueError(f"MIDI data bytes must be < 0x80: {data.hex(' ')}")
    return data


# ── builders ───────────────────────────────────────────────────────────────────────────────────

def note_on(channel: int, key: int, velocity: int) -> bytes:
    return bytes((NOTE_ON | channel, key, velocity))


def note_off(channel: int, key: int) -> bytes:
    return bytes((NOTE_OFF | channel, key, 0))


def control_change(channel: int, controller: int, value: int) -> bytes:
    return bytes((CONTROL_CHANGE | channel, controller, value))


def program_change(channel: int, program: int) -> bytes:
    return bytes((PROGRAM_CHANGE | channel, program))


def pitch_bend(channel: int, value: int = PITCH_BEND_CENTER) -> bytes:
    """A pitch bend to the 14-bit ``value`` (0x2000: centre)."""
    return bytes((PITCH_BEND | channel, value & 0x7F, (value >> 7) & 0x7F))


def bend_value(data: bytes | Sequence[int]) -> int:
    """The 14-bit value of a pitch-bend message."""
    return data[1] | (data[2] << 7)


def rpn(channel: int, number: int, value: int, lsb: int | None = None) -> list[bytes]:
    """Set registered parameter ``number`` (RPN MSB 0) to ``value`` (data entry MSB, and LSB
    when given). The selection is left standing: end a run of them with ``rpn_null``."""
    out = [control_change(channel, CC_RPN_MSB, 0), control_change(channel, CC_RPN_LSB, number),
           control_change(channel, CC_DATA_ENTRY, value)]
    if lsb is not None:
        out.append(control_change(channel, CC_DATA_ENTRY_LSB, lsb))
    return out


def rpn_null(channel: int) -> list[bytes]:
    """Deselect the registered parameter, so that a stray data entry changes nothing."""
    return [control_change(channel, CC_RPN_MSB, RPN_NULL),
            control_change(channel, CC_RPN_LSB, RPN_NULL)]


def mts_pitch(key: float) -> tuple[int, int, int]:
    """MTS frequency data (xx, yy, zz) of a fractional MIDI key: the equal-tempered key at or
    below it and the fraction above it in 1/16384 of a semitone (rounded to the nearest step;
    clamped to the keyboard, and never the reserved "no change" 7F 7F 7F)."""
    steps = max(0, min(round(key * MTS_UNITS), 128 * MTS_UNITS - 2))
    return steps >> 14, (steps >> 7) & 0x7F, steps & 0x7F


def mts_key(data: Sequence[int]) -> float:
    """The fractional MIDI key of MTS frequency data (xx, yy, zz) (the inverse of ``mts_pitch``)."""
    return data[0] + ((data[1] << 7) | data[2]) / MTS_UNITS


def note_tuning(changes: Iterable[tuple[int, tuple[int, int, int]]], *, program: int = 0,
                bank: int = 0, realtime: bool = True) -> bytes:
    """A single-note tuning change: each (key, MTS frequency data) of ``changes`` (at most
    ``MTS_MAX_KEYS``) in tuning ``program`` of ``bank``. Real-time in bank 0 is the 1992 message
    (08 02) that most receivers read; any other is the form with a bank (08 07)."""
    pairs = list(changes)
    if not 0 < len(pairs) <= MTS_MAX_KEYS:
        raise ValueError(f"a single-note tuning change carries 1–{MTS_MAX_KEYS} keys, "
                         f"not {len(pairs)}")
    head = [SYSEX, UNIVERSAL_REALTIME if realtime else UNIVERSAL_NON_REALTIME, ALL_CALL, MTS]
    if realtime and bank == 0:
        head += [MTS_NOTE_CHANGE, program]
    else:
        head += [MTS_NOTE_CHANGE_BANK, bank, program]
    body = [len(pairs)]
    for key, (xx, yy, zz) in pairs:
        body += [key, xx, yy, zz]
    return bytes(head + body + [SYSEX_END])


def equal_tuning(keys: Iterable[int], *, program: int = 0, bank: int = 0) -> list[bytes]:
    """Non-real-time single-note tuning changes that give ``keys`` their equal-tempered pitch
    again: new notes sound untuned, notes still ringing keep their pitch."""
    todo = sorted(set(keys))
    return [note_tuning([(k, (k, 0, 0)) for k in todo[i:i + MTS_MAX_KEYS]], program=program,
                        bank=bank, realtime=False)
            for i in range(0, len(todo), MTS_MAX_KEYS)]


class NoteTuning(NamedTuple):
    """A single-note tuning change read back: real-time or not, its tuning bank and program,
    and its (key, MTS frequency data) changes."""

    realtime: bool
    bank: int
    program: int
    changes: tuple[tuple[int, tuple[int, int, int]], ...]


def read_note_tuning(data: bytes | Sequence[int]) -> NoteTuning | None:
    """The single-note tuning change that ``data`` is (any device ID), else None."""
    if len(data) < 8 or data[0] != SYSEX or data[-1] != SYSEX_END or data[3] != MTS:
        return None
    if data[1] not in (UNIVERSAL_REALTIME, UNIVERSAL_NON_REALTIME):
        return None
    realtime = data[1] == UNIVERSAL_REALTIME
    if data[4] == MTS_NOTE_CHANGE and realtime:
        bank, at = 0, 5
    elif data[4] == MTS_NOTE_CHANGE_BANK:
        bank, at = data[5], 6
    else:
        return None
    program, count = data[at], data[at + 1]
    body = data[at + 2:-1]
    if len(body) != 4 * count:
        return None
    changes = tuple((body[i], (body[i + 1], body[i + 2], body[i + 3]))
                    for i in range(0, len(body), 4))
    return NoteTuning(realtime, bank, program, changes)


def is_tuning_restore(data: bytes | Sequence[int]) -> bool:
    """A non-real-time single-note tuning change that gives each of its keys its equal-tempered
    pitch (``equal_tuning``: what a port sends at its close)."""
    tuning = read_note_tuning(data) if data and data[0] == SYSEX else None
    return (tuning is not None and not tuning.realtime
            and all(pitch == (key, 0, 0) for key, pitch in tuning.changes))


def note_offs(notes: Iterable[tuple[int, int]]) -> list[bytes]:
    """Note-off messages (velocity 0) for (channel, key) pairs, sorted for determinism."""
    return [note_off(ch, key) for ch, key in sorted(notes)]


def all_off_messages(channels: Iterable[int] = range(CHANNELS), *,
                     sound_off: bool = True) -> list[bytes]:
    """Stage two of a panic: CC 123 (all notes off) then CC 120 (all sound off) per channel.
    ``sound_off=False``: CC 123 alone — the safety net of a normal end, which lets released
    notes ring out as their note-offs would (CC 120 cuts every tail at once)."""
    out: list[bytes] = []
    for ch in sorted(set(channels)):
        out.append(control_change(ch, CC_ALL_NOTES_OFF, 0))
        if sound_off:
            out.append(control_change(ch, CC_ALL_SOUND_OFF, 0))
    return out


class SoundingNotes:
    """Which (channel, key) notes sound, which channels were bent and which were used (any
    channel message since the channel's last CC 123/120: the channels a safety net's
    all-notes-off covers), and which keys a tuning message took off equal temperament
    ((bank, program, key) of single-note tuning changes), from the messages sent."""

    def __init__(self) -> None:
        self.notes: set[tuple[int, int]] = set()
        self.bent: set[int] = set()
        self.used: set[int] = set()
        self.tuned: set[tuple[int, int, int]] = set()

    def track(self, data: bytes | Sequence[int]) -> tuple[int, int] | None:
        """Account for one message; return the (channel, key) it started, if it started one."""
        if data and data[0] == SYSEX:
            tuning = read_note_tuning(data)
            if tuning is not None:
                for key, pitch in tuning.changes:
                    where = (tuning.bank, tuning.program, key)
                    if pitch == (key, 0, 0):
                        self.tuned.discard(where)
                    elif pitch != MTS_NO_CHANGE:
                        self.tuned.add(where)
            return None
        if len(data) < 2 or data[0] >= SYSEX:
            return None
        kind, ch = data[0] & 0xF0, data[0] & 0x0F
        if is_all_off(data):  # the channel is silenced: nothing on it is left to close
            self.notes = {n for n in self.notes if n[0] != ch}
            self.used.discard(ch)
            return None
        self.used.add(ch)
        if is_note_on(data):
            self.notes.add((ch, data[1]))
            return ch, data[1]
        if is_note_off(data):
            self.notes.discard((ch, data[1]))
        elif kind == PITCH_BEND:
            self.bent.add(ch)  # to be centred again when the sender is done with the channel
        return None

    def clear(self) -> None:
        self.notes.clear()
        self.bent.clear()
        self.used.clear()
        self.tuned.clear()

    def __len__(self) -> int:
        return len(self.notes)

    def __bool__(self) -> bool:
        return bool(self.notes)


class KeyPitches:
    """The pitch each key of each channel would sound at its next note-on, from the messages a
    synth reading the MIDI Tuning Standard follows: the single-note tuning changes of the tuning
    program the channel plays (RPN 4 and 3 select it; program 0 of bank 0 until then, as RP-020
    has it), plus the channel's pitch bend (its range from RPN 0, ±2 semitones until then)."""

    def __init__(self) -> None:
        self.bend = [0.0] * CHANNELS  # -1 … +1 of the range
        self.bend_range = [2.0] * CHANNELS  # semitones
        self.program = [(0, 0)] * CHANNELS  # the tuning (bank, program) each channel plays
        self.tunings: dict[tuple[int, int], dict[int, float]] = {}  # → key → fractional key
        self._rpn = [(RPN_NULL, RPN_NULL)] * CHANNELS

    def track(self, data: bytes | Sequence[int]) -> None:
        """Follow one message (anything that changes no pitch is ignored)."""
        if not data:
            return
        if data[0] == SYSEX:
            tuning = read_note_tuning(data)
            if tuning is not None:
                keys = self.tunings.setdefault((tuning.bank, tuning.program), {})
                keys.update((k, mts_key(pitch)) for k, pitch in tuning.changes
                            if pitch != MTS_NO_CHANGE)
            return
        if len(data) != 3 or data[0] > SYSEX:
            return
        kind, ch = data[0] & 0xF0, data[0] & 0x0F
        if kind == PITCH_BEND:
            self.bend[ch] = (bend_value(data) - PITCH_BEND_CENTER) / PITCH_BEND_CENTER
        elif kind == CONTROL_CHANGE:
            self._control(ch, data[1], data[2])

    def _control(self, ch: int, cc: int, value: int) -> None:
        rpn = self._rpn[ch]
        if cc == CC_RPN_MSB:
            self._rpn[ch] = (value, rpn[1])
        elif cc == CC_RPN_LSB:
            self._rpn[ch] = (rpn[0], value)
        elif rpn == (0, RPN_PITCH_BEND_RANGE) and cc == CC_DATA_ENTRY:
            self.bend_range[ch] = float(value)
        elif rpn == (0, RPN_PITCH_BEND_RANGE) and cc == CC_DATA_ENTRY_LSB:
            self.bend_range[ch] = float(int(self.bend_range[ch])) + value / 100.0
        elif rpn == (0, RPN_TUNING_BANK) and cc == CC_DATA_ENTRY:
            self.program[ch] = (value, self.program[ch][1])
        elif rpn == (0, RPN_TUNING_PROGRAM) and cc == CC_DATA_ENTRY:
            self.program[ch] = (self.program[ch][0], value)

    def key(self, channel: int, key: int) -> float:
        """The fractional MIDI key (A4 = 69) that ``key`` sounds on ``channel`` now."""
        tuned = self.tunings.get(self.program[channel], {}).get(key, float(key))
        return tuned + self.bend[channel] * self.bend_range[channel]

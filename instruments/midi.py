"""The MIDI table: status bytes, controller numbers, message checks and builders, and a tracker
of sounding notes. Every module that reads or writes MIDI bytes uses these (as mido's ``specs``
is used throughout mido); none decodes a status byte by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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
CC_EXPRESSION = 11
CC_RPN_LSB = 100
CC_RPN_MSB = 101
CC_DATA_ENTRY = 6
CC_ALL_SOUND_OFF = 120
CC_ALL_NOTES_OFF = 123

CHANNELS = 16
PITCH_BEND_CENTER = 0x2000  # 14-bit value of no bend

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
    all-notes-off covers), from the messages sent."""

    def __init__(self) -> None:
        self.notes: set[tuple[int, int]] = set()
        self.bent: set[int] = set()
        self.used: set[int] = set()

    def track(self, data: bytes | Sequence[int]) -> tuple[int, int] | None:
        """Account for one message; return the (channel, key) it started, if it started one."""
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

    def __len__(self) -> int:
        return len(self.notes)

    def __bool__(self) -> bool:
        return bool(self.notes)

"""A muted output: what a hot-standby backup's sending process does with each message.

While muted nothing reaches the port, but the process still plays its schedule — every cue's
sounding notes are tracked as if sent — and ``Muting`` keeps the channels' state that the
unsent messages set: each channel's program, pitch bend, pressure and the last value of each
controller, the RPN/NRPN sequences (select, data entry: the bend range, the MTS tuning program)
in their order, and each key's pitch that MIDI Tuning Standard single-note tuning changes set
(by tuning bank and program). At ``unmute`` that state is what is sent first — the sequences,
then the keys' tuning (one real-time single-note tuning change a tuning program), then the
channels' values — so the backup's synth stands where the main's stood. Other system exclusive
messages are not state and are not kept.

Notes sounding at the instant of unmuting (their note-on fell while muted) are **silent**: they
are not struck (a note-on in the middle of a note would be a second attack: a doubled note), and
their note-offs are not sent (the backup never sounded them); the channel joins at its next
note-on. Channel-mode messages (all notes off, all sound off: controller 120 and up) are not
state and are not kept.
"""

from __future__ import annotations

from collections.abc import Iterable

from instruments.midi import (
    CHANNEL_PRESSURE,
    CONTROL_CHANGE,
    MTS_MAX_KEYS,
    MTS_NO_CHANGE,
    PITCH_BEND,
    PROGRAM_CHANGE,
    SYSEX,
    channel_of,
    is_note_off,
    is_note_on,
    kind_of,
    note_tuning,
    read_note_tuning,
)

#: controllers whose meaning depends on order: NRPN/RPN select (98–101), data entry (6, 38),
#: increment/decrement (96, 97) — kept in sequence, the last ``SEQUENCE_KEPT`` per channel,
#: from a parameter's selection on (a data entry cut from its selection would land on whatever
#: parameter the synth has selected). A channel's setup in a file is at most 12 of them (RPN 0,
#: 4 and 3, then RPN null).
SEQUENCED_CONTROLLERS = frozenset({6, 38, 96, 97, 98, 99, 100, 101})
SELECTS = frozenset({99, 101})  # the MSB of an NRPN or RPN selection: a sequence starts there
SEQUENCE_KEPT = 16
FIRST_MODE_CONTROLLER = 120


class Muting:
    """See the module docstring. ``passes(data)`` for every message the process would send."""

    def __init__(self, muted: bool = False) -> None:
        self.muted = muted
        self._state: dict[tuple[int, ...], bytes] = {}  # (channel, kind[, controller]) → msg
        self._sequences: dict[int, list[bytes]] = {}  # channel → RPN/NRPN messages in order
        # (tuning bank, program) → key → MTS frequency data, from single-note tuning changes
        self._tunings: dict[tuple[int, int], dict[int, tuple[int, int, int]]] = {}
        self.silent: set[tuple[int, int]] = set()  # (channel, key) sounding unheard

    def passes(self, data: bytes) -> bool:
        """Whether ``data`` goes to the port (False while muted: its state is kept)."""
        if not self.muted and not self.silent:  # the usual case: one test per message
            return True
        if self.muted:
            self._keep(data)
            return False
        if not data or data[0] >= SYSEX:
            return True
        note = (channel_of(data), data[1])
        if is_note_off(data) and note in self.silent:
            self.silent.discard(note)
            return False
        if is_note_on(data):
            self.silent.discard(note)
        return True

    def _keep(self, data: bytes) -> None:
        if data and data[0] == SYSEX:
            tuning = read_note_tuning(data)
            if tuning is not None:
                keys = self._tunings.setdefault((tuning.bank, tuning.program), {})
                keys.update((k, pitch) for k, pitch in tuning.changes if pitch != MTS_NO_CHANGE)
            return
        if not data or data[0] >= SYSEX:
            return
        kind, ch = kind_of(data), channel_of(data)
        if kind in (PROGRAM_CHANGE, PITCH_BEND, CHANNEL_PRESSURE):
            self._state.pop((ch, kind), None)
            self._state[(ch, kind)] = data
        elif kind == CONTROL_CHANGE and data[1] in SEQUENCED_CONTROLLERS:
            kept = self._sequences.setdefault(ch, [])
            kept.append(data)
            if len(kept) > SEQUENCE_KEPT:
                del kept[:-SEQUENCE_KEPT]
                while kept and kept[0][1] not in SELECTS:
                    del kept[0]
        elif kind == CONTROL_CHANGE and data[1] < FIRST_MODE_CONTROLLER:
            self._state.pop((ch, kind, data[1]), None)
            self._state[(ch, kind, data[1])] = data

    def mute(self) -> None:
        self.muted = True

    def unmute(self, sounding: Iterable[tuple[int, int]]) -> list[bytes]:
        """Go live: the channel state to send first; ``sounding`` (what the schedule has
        sounding now) becomes silent."""
        self.muted = False
        self.silent = set(sounding)
        out = [m for seq in self._sequences.values() for m in seq]
        for (bank, program), keys in sorted(self._tunings.items()):
            items = sorted(keys.items())
            out += [note_tuning(items[i:i + MTS_MAX_KEYS], program=program, bank=bank)
                    for i in range(0, len(items), MTS_MAX_KEYS)]
        out += list(self._state.values())
        self._state.clear()
        self._sequences.clear()
        self._tunings.clear()
        return out

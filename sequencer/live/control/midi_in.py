"""MIDI input control of a live show: mapped notes and controllers, and MIDI Show Control.

A note-on or a controller (value above 0) mapped with ``--midi-go/--midi-stop/--midi-panic``
(``note:N`` or ``cc:N``) asks for its command; MIDI Show Control ``F0 7F dev 02 fmt cmd … F7``
GO asks for GO, STOP for hold, RESUME for resume.

Every incoming message is checked first (a complete MIDI message: ``check_message``); a bad
one is dropped and reported, rate-limited, and commands reach the player through a
``ControlGate`` (coalesced and paced: a flood of notes cannot starve the show; a panic jumps
it). Nothing that arrives can raise into rtmidi's callback thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from cues.errors import UserError
from instruments.midi import CONTROL_CHANGE, SYSEX, check_message, is_note_on, kind_of
from instruments.ports import PortError, parse_spec
from instruments.ports.base import choose_port
from instruments.ports.rtmidi import rtmidi_api
from sequencer.live.control.gate import ControlGate, shown
from sequencer.live.player.player import Player
from sequencer.live.protocol import Go, Hold, PlayerCommand, Resume

Trigger = tuple[str, int]  # ("note" | "cc", number)
MSC_COMMANDS: dict[int, PlayerCommand] = {0x01: Go(), 0x02: Hold(), 0x03: Resume()}
MSC_ALL_CALL, MSC_SUB_ID = 0x7F, 0x02  # real-time universal sysex, MIDI Show Control
#: the MIDI input's triggers unless set (--midi-go, --midi-stop, --midi-panic)
DEFAULT_GO, DEFAULT_STOP, DEFAULT_PANIC = "note:60", "note:62", "note:61"


def parse_trigger(text: str) -> Trigger:
    """``note:60`` or ``cc:64`` → ("note"|"cc", number)."""
    kind, _, number = text.partition(":")
    try:
        value = int(number)
    except ValueError:
        value = -1
    if kind not in ("note", "cc") or not 0 <= value <= 127:
        raise UserError(f"bad MIDI trigger {text!r}: expected note:N or cc:N (N 0–127)")
    return kind, value


def midi_command(data: bytes | Sequence[int],
                 mapping: Mapping[Trigger, PlayerCommand]) -> PlayerCommand | None:
    """What an incoming MIDI message asks: a mapped note-on or CC (value > 0), or a MIDI Show
    Control GO (→ Go), STOP (→ Hold), RESUME (→ Resume)."""
    msg = bytes(data)
    if not msg:
        return None
    if msg[0] == SYSEX:
        if len(msg) >= 6 and msg[1] == MSC_ALL_CALL and msg[3] == MSC_SUB_ID:
            return MSC_COMMANDS.get(msg[5])
        return None
    if is_note_on(msg):
        return mapping.get(("note", msg[1]))
    if kind_of(msg) == CONTROL_CHANGE and len(msg) >= 3 and msg[2] > 0:
        return mapping.get(("cc", msg[1]))
    return None


def midi_callback(gate: ControlGate, mapping: Mapping[Trigger, PlayerCommand]
                  ) -> Callable[[tuple[list[int], float], object], None]:
    """rtmidi's callback: each message checked, its command offered to the gate; a bad
    message (or event) is complained of, never raised into rtmidi's thread."""
    def callback(event: tuple[list[int], float], _data: object) -> None:
        try:
            command = midi_command(check_message(event[0]), mapping)
        except Exception as exc:
            gate.complain(f"{shown(event)}: {exc}")
            return
        if command is not None:
            gate.offer(command)

    return callback


def start_midi_in(player: Player, spec: str, mapping: Mapping[Trigger, PlayerCommand]) -> str:
    """Listen on a MIDI input (``jack:PORT`` an existing output to connect from,
    ``jack-virtual:NAME`` a new input others connect to, ``alsa:``/``virtual:`` likewise) until
    the player closes."""
    import rtmidi

    parsed = parse_spec(spec)
    try:
        midi_in = rtmidi.MidiIn(rtmidi_api(parsed.api), f"{player.sender.client_name}-in")
    except (rtmidi.SystemError, RuntimeError) as exc:
        raise PortError(f"--midi-in {spec}: cannot open a MIDI input: {exc}") from None
    midi_in.ignore_types(sysex=False, timing=True, active_sense=True)
    try:
        if parsed.virtual:
            midi_in.open_virtual_port(parsed.name)
        else:
            ports = midi_in.get_ports()
            midi_in.open_port(choose_port(ports, parsed.name, parsed.api), "in")
    except BaseException:
        midi_in.delete()
        raise

    midi_in.set_callback(midi_callback(ControlGate(player, "MIDI in", "midi"), mapping))

    def close() -> None:
        midi_in.cancel_callback()
        midi_in.close_port()
        midi_in.delete()

    player.add_closer(close)
    return spec

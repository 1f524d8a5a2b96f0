"""The hot-standby link's packets: OSC bundles (python-osc), signed (``peer_auth``).

Every packet is one bundle::

    #bundle  T                                 (an action: its instant; else "immediately")
      /yuezheng/peer  show seq kind role live actions position
      #bundle T_n  /yuezheng/act n ADDRESS ARGS…      (0 or more: the actions carried)
      /yuezheng/hmac  DIGEST                    (peer_auth)

``kind`` is ``action`` (the main mirrors an operator action: one nested bundle, T_n = T),
``heartbeat`` (every 100 ms, both ways; the main's carries its last ``RECENT`` actions, so a
lost action packet is made good by the next heartbeat, and a backup started late catches up),
``bye`` (the main ended the show on purpose: the backup must not take over), ``probe`` (a
backup that hears refused packets asks, over a second socket, whether its main lives: its
``position`` says why) or ``answer`` (the main's reply to a probe, sent back to the probe's own
address, carrying its recent actions as a heartbeat does). ``live`` is 1 on
the machine that sounds; ``actions`` the number of actions so far; ``position`` a short text of
where the show is (its last 節), for the other side's display. Time tags are NTP time: both
machines' clocks are kept by NTP/PTP (docs/standby.md).

The actions are the remote control's OSC addresses (``sequencer.live.control.osc``: ``/piece N``
and ``/piece/next|back`` too) plus ``/begin`` and ``/nudge 1|0``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pythonosc.osc_bundle import OscBundle
from pythonosc.osc_bundle_builder import IMMEDIATELY, OscBundleBuilder
from pythonosc.osc_message import OscMessage
from pythonosc.osc_message_builder import OscMessageBuilder

from sequencer.live.control.osc import (
    CUE_START,
    PLAIN_ADDRESSES,
    is_plain_argument,
    piece_command,
    release_command,
)
from sequencer.live.protocol import Begin, GoCue, MarkRelease, Nudge, PickPiece, PlayerCommand
from sequencer.live.standby.auth import sign, verified

PEER_ADDRESS = "/yuezheng/peer"
ACT_ADDRESS = "/yuezheng/act"
KINDS = ("action", "heartbeat", "bye", "probe", "answer")
ROLES = ("main", "backup")
RECENT = 16  # actions a main's heartbeat carries
MAX_PACKET = 8192
_COMMAND_ADDRESS = {type(c): a for a, c in PLAIN_ADDRESSES.items()}


@dataclass(frozen=True)
class PeerAction:
    """The main's ``n``-th action, to take effect at ``at`` (seconds since the epoch)."""

    n: int
    at: float
    command: PlayerCommand


@dataclass(frozen=True)
class PeerPacket:
    show: str
    seq: int
    kind: str
    role: str
    live: bool
    actions: int  # how many the sender has done
    position: str
    carried: tuple[PeerAction, ...] = ()


class BadPacket(ValueError):
    """A packet signed with the key whose content is not what this link sends."""


def command_address(command: PlayerCommand) -> tuple[str, list[object]]:
    """An action as an OSC address and arguments."""
    if isinstance(command, GoCue):
        return f"/cue/{command.cue}/start", []
    if isinstance(command, Nudge):
        return "/nudge", [int(command.faster)]
    if isinstance(command, MarkRelease):
        return "/release", [command.side, int(command.hit)]
    if isinstance(command, Begin):
        return "/begin", []
    if isinstance(command, PickPiece):
        if command.index is not None:
            return "/piece", [command.index]
        return ("/piece/next" if command.step >= 0 else "/piece/back"), []
    return _COMMAND_ADDRESS[type(command)], []


def address_command(address: str, args: tuple) -> PlayerCommand:
    """An OSC address and its arguments as an action (BadPacket if it is none)."""
    if address in PLAIN_ADDRESSES and not args:
        return PLAIN_ADDRESSES[address]
    if address == "/begin" and not args:
        return Begin()
    if address == "/nudge" and len(args) == 1 and is_plain_argument(args[0]):
        return Nudge(bool(args[0]))
    match = CUE_START.fullmatch(address)
    if match is not None and not args:
        return GoCue(match[1])
    if address == "/release" and (release := release_command(args)) is not None:
        return release
    if address == "/piece" and (piece := piece_command(args)) is not None:
        return piece
    raise BadPacket(f"not an action: {address} {args!r}"[:120])


def encode(key: bytes, packet: PeerPacket, timetag: float | None = None) -> bytes:
    """The signed bundle of ``packet`` (``timetag``: seconds since the epoch; None:
    immediately)."""
    # python-osc writes a float time tag (seconds since the epoch) exactly; its stub says int
    outer = OscBundleBuilder(IMMEDIATELY if timetag is None else timetag)  # type: ignore[arg-type]
    head = OscMessageBuilder(PEER_ADDRESS)
    for value, kind in ((packet.show, "s"), (packet.seq, "h"), (packet.kind, "s"),
                        (packet.role, "s"), (int(packet.live), "i"), (packet.actions, "i"),
                        (packet.position, "s")):
        head.add_arg(value, kind)
    outer.add_content(head.build())
    for action in packet.carried:
        address, args = command_address(action.command)
        act = OscMessageBuilder(ACT_ADDRESS)
        act.add_arg(action.n, "i")
        act.add_arg(address, "s")
        for arg in args:
            act.add_arg(arg)  # type: ignore[arg-type]  # command_address: OSC-typed values
        inner = OscBundleBuilder(action.at)  # type: ignore[arg-type]  # a float time tag
        inner.add_content(act.build())
        outer.add_content(inner.build())
    return sign(key, outer.build().dgram)


def decode(key: bytes, data: bytes) -> PeerPacket | None:
    """The packet, None if its HMAC is not valid (unread); BadPacket if it is valid but not
    one of ours."""
    if len(data) > MAX_PACKET:
        return None
    body = verified(key, data)
    if body is None:
        return None
    try:
        bundle = OscBundle(body)
        items = list(bundle)
    except Exception as exc:  # python-osc raises several kinds on malformed input
        raise BadPacket(f"unreadable bundle: {type(exc).__name__}") from None
    if not items or not isinstance(items[0], OscMessage) or items[0].address != PEER_ADDRESS:
        raise BadPacket("no /yuezheng/peer header")
    return _packet(tuple(items[0].params), [_action(i) for i in items[1:]])


def _packet(head: tuple, carried: list[PeerAction]) -> PeerPacket:
    types = (str, int, str, str, int, int, str)
    if len(head) != len(types) or not all(isinstance(v, t) for v, t in zip(head, types,
                                                                              strict=True)):
        raise BadPacket(f"bad header {head!r}"[:120])
    show, seq, kind, role, live, actions, position = head
    if kind not in KINDS or role not in ROLES:
        raise BadPacket(f"bad kind or role {kind!r} {role!r}")
    return PeerPacket(show, seq, kind, role, bool(live), actions, position[:200],
                      tuple(carried))


def _action(item: object) -> PeerAction:
    if not isinstance(item, OscBundle) or item.num_contents != 1:
        raise BadPacket("an action is a bundle of one message")
    message = item.content(0)
    params = tuple(getattr(message, "params", ()))
    if (getattr(message, "address", None) != ACT_ADDRESS or len(params) < 2
            or not isinstance(params[0], int) or not isinstance(params[1], str)):
        raise BadPacket("bad /yuezheng/act")
    return PeerAction(params[0], float(item.timestamp), address_command(params[1], params[2:]))

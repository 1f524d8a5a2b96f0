"""The OSC wire check: python-osc's own packets pass, the malformed ones python-osc would read a
``/go`` out of are refused — with a reply to their sender — and never reach the player."""

from __future__ import annotations

import json
import socket

from pythonosc.osc_bundle_builder import IMMEDIATELY, OscBundleBuilder
from pythonosc.osc_message import OscMessage
from pythonosc.osc_message_builder import OscMessageBuilder

from sequencer.live.control.osc import dispatcher_for
from sequencer.live.control.osc_wire import address_of, malformed
from sequencer.live.protocol import Go
from tests.test_osc_hostile import FakePlayer, _dgram

# read by python-osc 1.10 as a /go (or a /go with a plain argument): each must be refused
MALFORMED_GO = {
    "bytes after the arguments": b"/go\x00,\x00\x00\x00junkjunk",
    "an unknown type tag": b"/go\x00,Q\x00\x00",
    "an argument past the end": b"/go\x00,ff\x00\x00\x00\x00\x00\x01",
    "a length not a multiple of 4": b"/go\x00,\x00\x00\x00\x01",
    "a bundle element larger than the bundle": (b"#bundle\x00" + bytes(7) + b"\x01"
                                                b"\x00\x00\x00\x40/go\x00,\x00\x00\x00"),
}


def test_python_osc_packets_are_well_formed() -> None:
    builder = OscMessageBuilder("/release")
    for arg in ("右", 1, 1.5, True, False, None, b"blob", [1, 2]):
        builder.add_arg(arg)
    bundle = OscBundleBuilder(IMMEDIATELY)
    bundle.add_content(OscMessageBuilder("/go").build())
    bundle.add_content(builder.build())
    for packet in (_dgram("/go"), _dgram("/go", 1.0), builder.build().dgram,
                   bundle.build().dgram, b"/go\x00"):  # (no type tags: OSC 1.0 allows it)
        assert malformed(packet) is None, packet


def test_malformed_packets_are_named() -> None:
    for what, packet in MALFORMED_GO.items():
        why = malformed(packet)
        assert why is not None, what
        assert address_of(packet) == "/go", what
    assert malformed(b"/go\x00\x00\x00\x00,f\x00\x00") is not None
    assert malformed(b"#bundle\x00") is not None
    assert malformed(b"#bundle\x00" + bytes(7) + b"\x01" + bytes(4)) is not None  # size 0
    assert address_of(b"\xff\xfe\x00\x00") is None and address_of(b"/\x1b[2J\x00") is None


def test_a_malformed_go_is_refused_with_a_reply() -> None:
    player = FakePlayer()
    dispatcher = dispatcher_for(player)  # type: ignore[arg-type]
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        server.bind(("127.0.0.1", 0))
        client.bind(("127.0.0.1", 0))
        client.settimeout(2.0)
        dispatcher.reply_socket = server
        for what, packet in list(MALFORMED_GO.items())[:4]:  # (replies: 5 a second at most)
            dispatcher.call_handlers_for_packet(packet, client.getsockname())
            reply = OscMessage(client.recvfrom(65536)[0])
            assert reply.address == "/reply/go", what
            answer = json.loads(reply.params[0])
            assert answer["acted"] is False and "malformed OSC packet" in answer["message"], what
        assert player.queue == []  # nothing reached the player
        dispatcher.call_handlers_for_packet(_dgram("/go"), client.getsockname())
        assert [c for c, _ in player.queue] == [Go()]  # a well-formed /go still goes
    finally:
        dispatcher.gate.close()
        server.close()
        client.close()

"""The hot-standby link: keys, HMAC, the replay window, the packets, the muted output, the
options; and over two network namespaces, a forged, replayed or other show's GO changes nothing
while the main's own GO reaches the backup at the main's instant."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cues.errors import UserError
from instruments.midi import control_change, note_off, note_on, pitch_bend, program_change
from sequencer.live.protocol import Begin, Go, GoCue, MarkRelease, Nudge, Panic, Stop
from sequencer.live.sending.muting import Muting
from sequencer.live.standby.auth import ReplayWindow, load_key, sign, verified
from sequencer.live.standby.packets import PeerAction, PeerPacket, address_command, decode, encode
from sequencer.live.standby.pair import parse_listen, parse_peer, standby_options
from tests.standby_rig import BACKUP_PORT, KEY, TwoMachines, read_log, wait_for_log

pytestmark = pytest.mark.net

K = b"k" * 20


def _packet(seq: int = 1, show: str = "s" * 64, carried=()) -> PeerPacket:
    return PeerPacket(show, seq, "action", "main", True, len(carried), "she-jie 節 1/5",
                      tuple(carried))


def test_packets_round_trip_signed() -> None:
    actions = [PeerAction(i + 1, 1_800_000_000.25 + i, c) for i, c in enumerate(
        [Begin(), Go(), GoCue("she-jie"), Stop(), Panic(), Nudge(True), MarkRelease("右", False)])]
    packet = _packet(2**40 + 5, carried=actions)
    data = encode(K, packet, 1_800_000_000.5)
    back = decode(K, data)
    assert back is not None and back.carried[2].command == GoCue("she-jie")
    assert [a.command for a in back.carried] == [a.command for a in actions]
    assert back.seq == packet.seq and back.show == packet.show
    assert all(abs(a.at - b.at) < 1e-6 for a, b in zip(back.carried, actions, strict=True))


def test_a_packet_without_a_valid_hmac_is_not_read() -> None:
    data = encode(K, _packet(), None)
    assert decode(b"x" * 20, data) is None  # another key
    flipped = bytearray(data)
    flipped[30] ^= 1
    assert decode(K, bytes(flipped)) is None  # a byte changed
    assert decode(K, data[:-1]) is None and decode(K, b"#bundle\0" + b"\0" * 80) is None
    assert verified(K, sign(K, b"#bundle\0" + bytes(8))) == b"#bundle\0" + bytes(8)
    with pytest.raises(ValueError, match="not an action"):
        address_command("/quit/now", ())


def test_replay_window() -> None:
    w = ReplayWindow(8)
    assert w.accept(100) and not w.accept(100)
    assert w.accept(98) and not w.accept(98)  # late inside the window: once
    assert w.accept(110) and not w.accept(102) and not w.accept(50)  # below the window
    assert w.accept(109)


def test_key_from_file_or_environment(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_bytes(b"0123456789abcdefXYZ\n")
    assert load_key(str(path), {}) == b"0123456789abcdefXYZ"
    assert load_key(None, {"YUEZHENG_PEER_KEY": "e" * 16}) == b"e" * 16
    with pytest.raises(UserError, match="needs a shared key"):
        load_key(None, {})
    with pytest.raises(UserError, match="16 to 4096 bytes"):
        load_key(None, {"YUEZHENG_PEER_KEY": "short"})
    with pytest.raises(UserError, match="--peer-key-file .*none: no such file"):
        load_key(str(tmp_path / "none"), {})


def test_options_are_checked() -> None:
    assert parse_peer("osc.udp://10.0.0.2:53100") == ("10.0.0.2", 53100)
    assert parse_listen(None, ("10.0.0.2", 53100)) == ("127.0.0.1", 53100)
    assert parse_listen("0.0.0.0:9", ("h", 1)) == ("0.0.0.0", 9)
    for bad in ("osc://h:1", "osc.udp://h", "osc.udp://h:0", "osc.udp://h:x"):
        with pytest.raises(UserError, match="--peer"):
            parse_peer(bad)
    with pytest.raises(UserError, match="more than two heartbeats"):
        standby_options("backup", "osc.udp://h:1", None, K, 50, 100, 150)
    with pytest.raises(UserError, match="needs --peer"):
        standby_options("main", None, None, K, 50, 100, 500)


def test_muted_output_keeps_the_channel_state_and_silences_what_sounds() -> None:
    m = Muting(muted=True)
    rpn = [control_change(3, 101, 0), control_change(3, 100, 0), control_change(3, 6, 2),
           control_change(3, 101, 127), control_change(3, 100, 127)]
    sent = [m.passes(x) for x in [program_change(3, 1), program_change(3, 107), *rpn,
                                  control_change(3, 7, 90), control_change(3, 7, 100),
                                  control_change(3, 123, 0), pitch_bend(3, 8000),
                                  note_on(3, 60, 90)]]
    assert not any(sent)
    chased = m.unmute({(3, 60)})
    assert chased == [*rpn, program_change(3, 107), control_change(3, 7, 100),
                      pitch_bend(3, 8000)]
    assert not m.passes(note_off(3, 60))  # it never sounded here
    assert m.passes(note_on(3, 60, 90)) and m.passes(note_off(3, 60))  # a new note does


# ── over the network ────────────────────────────────────────────────────────────────────────────

def _starts(path: Path) -> list[tuple[str, float]]:
    return [(r["cue"], r["t"]) for r in read_log(path) if r.get("event") == "start"]


def _ignored(path: Path) -> list[str]:
    return [r["last"] for r in read_log(path) if r.get("event") == "ignored"]


@pytest.fixture
def linked(tmp_path: Path):
    """A main (operated by OSC) and its backup, not --auto, through a lossless relay that
    records what passes."""
    record = tmp_path / "relay.txt"
    with TwoMachines(os.getpid() + 2, loss=0.0, jitter_ms=20, record=record) as machines:
        show = ["xiang-she", "--from", "she-1", "--until", "she-jie", "--jie-seconds", "1",
                "--go-guard", "0"]
        backup = machines.live("backup", f"memory:{tmp_path / 'b.out'}", tmp_path / "b.jsonl",
                               *show)
        main = machines.live("main", f"memory:{tmp_path / 'm.out'}", tmp_path / "m.jsonl",
                             *show, "--control", "osc://127.0.0.1:47301")
        assert wait_for_log(tmp_path / "b.jsonl", lambda r: r.get("state") == "armed", 30), (
            backup.poll(), main.poll())
        while "OSC control on" not in (line := main.stderr.readline()):  # the main listens
            assert line, main.communicate()
        yield machines, tmp_path, record, main, backup


def _osc_go(machines: TwoMachines) -> None:
    from pythonosc.osc_message_builder import OscMessageBuilder

    machines.send_raw(machines.main_ns, ("127.0.0.1", 47301),
                      [OscMessageBuilder("/go").build().dgram])


def _go_packet(key: bytes, show: str, seq: int, n: int) -> bytes:
    action = PeerAction(n, time.time() + 0.05, Go())
    return encode(key, PeerPacket(show, seq, "action", "main", True, n, "", (action,)),
                  action.at)


def test_forged_replayed_or_other_show_go_changes_nothing(linked) -> None:
    machines, tmp, record, main, backup = linked
    _osc_go(machines)  # the main's GO: she-1 on both, at one instant
    assert wait_for_log(tmp / "b.jsonl", lambda r: r.get("event") == "start", 10)
    show = next(r["show"] for r in read_log(tmp / "b.jsonl") if r.get("state") == "armed")
    captured = [bytes.fromhex(line.split()[1]) for line in record.read_text().splitlines()
                if line.startswith("0 ")]
    go_packets = [p for p in captured if (d := decode(KEY.encode(), p)) is not None
                  and d.kind == "action" and d.carried[0].command == Go()]
    assert go_packets
    now_seq = time.time_ns() // 1000 + 10**9  # ahead of every sequence number sent
    attacks = {
        "no valid HMAC": _go_packet(b"wrong key, 20 bytes!", show, now_seq, 3),
        "another show": _go_packet(KEY.encode(), "0" * 64, now_seq + 1, 3),
        "replayed": go_packets[0],  # a captured GO, sent again verbatim
        "replayed (sequence": _go_packet(KEY.encode(), show, 5, 3),  # an old sequence number
    }
    for why, packet in attacks.items():
        machines.send_raw(machines.backup_ns, ("127.0.0.1", BACKUP_PORT), [packet])
        assert wait_for_log(tmp / "b.jsonl", lambda r, why=why: r.get("event") == "ignored"
                            and why in r["last"], 5), (why, _ignored(tmp / "b.jsonl"))
        time.sleep(1.1)  # drops are reported at most once a second
    assert [c for c, _ in _starts(tmp / "b.jsonl")] == ["she-1"]  # nothing more started
    # the link still works: the main's next GO starts she-2 on both at one instant (once she-1,
    # which sounds the 獲者's calls, has ended: a GO over sounding music asks for a second press)
    assert wait_for_log(tmp / "m.jsonl", lambda r: r.get("event") == "end"
                        and r.get("cue") == "she-1", 15)
    _osc_go(machines)
    assert wait_for_log(tmp / "b.jsonl", lambda r: r.get("cue") == "she-2", 10)
    time.sleep(0.3)
    main_starts, backup_starts = _starts(tmp / "m.jsonl"), _starts(tmp / "b.jsonl")
    assert [c for c, _ in backup_starts] == [c for c, _ in main_starts] == ["she-1", "she-2"]
    for (_, tm), (_, tb) in zip(main_starts, backup_starts, strict=True):
        assert abs(tm - tb) < 0.001  # the same instant (one clock here)
    assert not (tmp / "b.out").exists() or not (tmp / "b.out").read_text().strip()  # muted


def test_backup_of_another_show_refuses_to_arm(tmp_path: Path) -> None:
    with TwoMachines(os.getpid() + 3, loss=0.0, jitter_ms=0) as machines:
        show = ["xiang-she", "--from", "she-jie", "--until", "she-jie", "--auto"]
        backup = machines.live("backup", "memory:", tmp_path / "b.jsonl", *show,
                               "--jie-seconds", "2")
        machines.live("main", "memory:", tmp_path / "m.jsonl", *show, "--jie-seconds", "1")
        out, err = backup.communicate(timeout=30)
    assert backup.returncode == 2, out + err
    assert "backup refused to arm: the main plays another show" in err
    assert "Traceback" not in err

"""The ``memory:`` output: a record of the messages, no hardware; written whole or not at all."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from instruments.midi import all_off_messages, control_change, note_off, note_on
from instruments.ports import PortError, open_output, parse_spec
from instruments.ports.memory import MemoryOutput, read_memory_record


def test_spec_with_and_without_path() -> None:
    assert parse_spec("memory:") == parse_spec("memory:")
    assert parse_spec("memory:").name == ""
    assert parse_spec("memory:rehearsal.jsonl").name == "rehearsal.jsonl"
    assert parse_spec("memory:").virtual
    assert str(parse_spec("memory:")) == "memory:"
    with pytest.raises(PortError, match="memory:"):
        parse_spec("tape:x")  # the error message lists memory:
    assert isinstance(open_output("memory:"), MemoryOutput)


def test_send_records_deadline_and_bytes_in_order() -> None:
    port = open_output("memory:")
    assert port.closed  # built, not opened
    with port:
        port.send(note_on(0, 60, 100), at=12.5)
        port.send([0xB0, 7, 90], at=12.75)
        port.send(note_off(0, 60))
    assert port.messages[:2] == [(12.5, note_on(0, 60, 100)), (12.75, bytes((0xB0, 7, 90)))]
    at, data = port.messages[2]
    assert data == note_off(0, 60) and at > 12.75  # no deadline: the time of the send


def test_panic_closes_the_notes_and_close_silences() -> None:
    with open_output("memory:") as port:
        port.send(note_on(1, 62, 90), at=1.0)
        port.send(note_on(0, 60, 90), at=1.0)
        assert port.sounding == {(0, 60), (1, 62)}
        port.panic()
        sent = [data for _, data in port.messages[2:]]
        assert sent == [note_off(0, 60), note_off(1, 62), *all_off_messages()]
        assert port.sounding == frozenset()
        port.send(note_on(2, 64, 80), at=2.0)
    # close ended what the port started, then all notes off on the channel used since the
    # panic (only that one: the panic silenced every channel)
    assert [data for _, data in port.messages[-2:]] == [
        note_off(2, 64), *all_off_messages([2], sound_off=False)]


def test_bad_messages_are_rejected() -> None:
    with open_output("memory:") as port:
        for bad in (b"", bytes((0x3C, 1, 2)), bytes((0x90, 60)), bytes((0x90, 60, 200))):
            with pytest.raises(ValueError):
                port.send(bad)
        assert port.messages == []
    with pytest.raises(ValueError, match="closed"):
        port.send(note_on(0, 60, 1))


def test_record_written_on_close_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "rehearsal.jsonl"
    with open_output(f"memory:{path}") as port:
        port.send(note_on(9, 36, 100), at=3.25)
        port.send(control_change(0, 10, 64), at=3.5)
        assert not path.exists()  # written on close, not before
    assert read_memory_record(path) == port.messages
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert first == {"at": 3.25, "data": "99 24 64"}
    assert os.listdir(tmp_path) == ["rehearsal.jsonl"]  # no temporary file left


def test_record_is_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "show.jsonl"
    path.write_text("the old record\n", encoding="utf-8")

    def fail(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    port = open_output(f"memory:{path}").open()
    port.send(note_on(0, 60, 100), at=1.0)
    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(PortError, match="cannot write"):
        port.close()
    assert path.read_text(encoding="utf-8") == "the old record\n"
    assert os.listdir(tmp_path) == ["show.jsonl"]


def test_unwritable_path_is_refused_when_the_port_opens(tmp_path: Path) -> None:
    """Before a show starts, not silently at its end (issue 27)."""
    with pytest.raises(PortError, match="cannot write there"):
        open_output(f"memory:{tmp_path / 'no' / 'such' / 'dir.jsonl'}").open()
    with pytest.raises(PortError, match="it is a directory"):
        open_output(f"memory:{tmp_path}").open()


def test_a_path_that_goes_away_is_a_port_error_at_close(tmp_path: Path) -> None:
    folder = tmp_path / "gone"
    folder.mkdir()
    port = open_output(f"memory:{folder / 'record.jsonl'}").open()
    folder.rmdir()
    with pytest.raises(PortError, match="cannot write"):
        port.close()


def test_show_sender_on_memory_needs_no_hardware(tmp_path: Path) -> None:
    """The live sending process drives a ``memory:PATH`` output as any other: the messages on
    their deadlines, then the note-offs of what still sounded when it closed."""
    from sequencer.live.protocol import CueEnded, StartCue
    from sequencer.live.sending.sender import ShowSender

    path = tmp_path / "rehearsal.jsonl"
    schedule = [(0.0, note_on(0, 60, 100)), (0.05, note_on(1, 64, 90)), (0.1, note_off(0, 60))]
    with ShowSender(f"memory:{path}", realtime=0) as sender:
        sender.load("c", [t for t, _ in schedule], [m for _, m in schedule])
        t0 = time.perf_counter() + 0.05
        sender.send(StartCue("c", t0))
        limit = time.perf_counter() + 5.0
        while not any(isinstance(e, CueEnded) for e in sender.events()):
            assert time.perf_counter() < limit and sender.alive, "the cue did not end"
            time.sleep(0.02)
    record = read_memory_record(path)
    assert [(at, data) for at, data in record[:3]] == [(t0 + t, m) for t, m in schedule]
    assert record[3][1] == note_off(1, 64)

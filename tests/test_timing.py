"""The rules tests/timing.py holds, on messages made up for them: which differences from what
was sent are the output's answer to an xrun (closing messages written again), which the
machine's (after an xrun JACK counted), and which ours."""

from __future__ import annotations

import pytest

from tests.timing import (
    TimingFailure,
    as_sent,
    held_unless_xruns,
    near_xruns,
    off_time_is_the_machines,
    placed,
    placed_as_sent,
    resends_only,
)

ON, OFF = b"\x90\x3c\x40", b"\x80\x3c\x00"
ON2, OFF2 = b"\x90\x3e\x40", b"\x80\x3e\x00"
ALL_OFF = b"\xb0\x7b\x00"
SENT = [ON, OFF, ON2, OFF2]


def test_placed_finds_what_was_sent_among_closing_messages_written_again() -> None:
    assert placed([*SENT, ALL_OFF], SENT) == [0, 1, 2, 3]  # what follows is not looked at
    assert placed([ON, OFF, OFF, ON2, OFF, OFF2, OFF2], SENT) == [0, 1, 3, 5]


@pytest.mark.parametrize("got", [
    [ON, OFF2, OFF, ON2, OFF2],  # a note-off before its first writing is no resend
    [ON, ON2, OFF, OFF2],  # reordered
    [ON, OFF, ON, ON2, OFF2],  # a note-on is never written twice
    [ON, OFF],  # lost
])
def test_placed_refuses_anything_else(got: list[bytes]) -> None:
    assert placed(got, SENT) is None


def test_resends_only_looks_at_the_end_too() -> None:
    assert resends_only([ON, OFF, ON2, OFF, OFF2, OFF], SENT)
    assert not resends_only([ON, OFF, ON2, OFF2, ON], SENT)
    # the clean-up after a show: its all-offs, with the show's note-offs written again
    assert resends_only([OFF, ALL_OFF, ALL_OFF], [ALL_OFF], before=SENT)
    assert not resends_only([ALL_OFF, OFF], [ALL_OFF])


def test_as_sent_tells_the_machine_from_us() -> None:
    as_sent([ON, OFF, OFF, ON2, OFF2], SENT, 0, "sent", resent_ok=True)
    with pytest.raises(TimingFailure):  # lost after an xrun: the machine's
        as_sent([ON, OFF, ON2], SENT, 2, "sent")
    with pytest.raises(TimingFailure):  # written again with no xrun seen: the sender's
        as_sent([ON, OFF, OFF, ON2, OFF2], SENT, 0, "sent")
    with pytest.raises(AssertionError) as ours:  # lost with no xrun: ours
        as_sent([ON, OFF, ON2], SENT, 0, "sent")
    assert not isinstance(ours.value, TimingFailure)


def test_placed_as_sent_fails_as_as_sent_does() -> None:
    assert placed_as_sent([ON, OFF, OFF, ON2, OFF2, ALL_OFF], SENT, 0, "sent") == [0, 1, 3, 4]
    with pytest.raises(TimingFailure):
        placed_as_sent([ON, ON2, OFF, OFF2], SENT, 1, "sent")
    with pytest.raises(AssertionError) as ours:
        placed_as_sent([ON, ON2, OFF, OFF2], SENT, 0, "sent")
    assert not isinstance(ours.value, TimingFailure)


def test_off_time_is_the_machines_only_near_an_xrun() -> None:
    moments = [0.0, 1.0, 2.0, 3.0]
    off_time_is_the_machines([0.5, 0.5, 0.5, 0.5], moments, [], 3.0, 19.0, "on time")
    off_time_is_the_machines([0.5, 6.0, 0.5, 0.5], moments, [1.02], 3.0, 19.0, "an xrun's")
    with pytest.raises(TimingFailure, match="away from any of 1 xrun"):  # no xrun near it
        off_time_is_the_machines([0.5, 6.0, 0.5, 0.5], moments, [2.5], 3.0, 19.0, "far")
    with pytest.raises(TimingFailure, match="away from any"):  # more than an xrun's cycles
        off_time_is_the_machines([0.5, 40.0, 0.5, 0.5], moments, [1.0], 3.0, 19.0, "too far")
    with pytest.raises(TimingFailure, match="3 of 4 messages spoiled"):
        off_time_is_the_machines([6.0, 6.0, 6.0, 0.5], moments, [0.0, 1.0, 2.0], 3.0, 19.0,
                                 "a storm")
    assert near_xruns(1.0, [1.04]) and not near_xruns(1.0, [1.06, 0.9])


def test_held_unless_xruns_blames_the_machine_only_after_one() -> None:
    held_unless_xruns(True, 0, "held")
    with pytest.raises(TimingFailure, match="after 3 xrun"):
        held_unless_xruns(False, 3, "lost")
    with pytest.raises(AssertionError) as ours:
        held_unless_xruns(False, 0, "lost")
    assert not isinstance(ours.value, TimingFailure)

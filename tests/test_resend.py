"""What a JACK output writes again after an xrun (``instruments.ports.resend``): the closing
messages of its window, each once, unless a later note-on took their note or channel back."""

from __future__ import annotations

from instruments.midi import all_off_messages, note_off, note_on
from instruments.ports.resend import RecentWrites


def test_closing_messages_of_the_window_in_order_each_once() -> None:
    recent = RecentWrites(cycles=4)
    cc123 = all_off_messages([5], sound_off=False)[0]
    for cycle, data in [(1, note_off(0, 10)),  # out of the window by cycle 6
                        (3, note_on(0, 60, 90)), (3, note_off(0, 60)), (4, note_off(1, 61)),
                        (4, note_off(0, 60)), (5, cc123), (5, note_on(2, 62, 80))]:
        recent.wrote(cycle, data)
    recent.forget_before(6)
    assert recent.closing() == [note_off(1, 61), note_off(0, 60), cc123]


def test_a_later_note_on_keeps_its_note_sounding() -> None:
    recent = RecentWrites(cycles=4)
    for data in [note_off(0, 60), note_on(0, 60, 90),  # the note struck again: must sound
                 all_off_messages([3], sound_off=False)[0], note_on(3, 40, 90),  # channel back
                 note_off(4, 70)]:
        recent.wrote(1, data)
    assert recent.closing() == [note_off(4, 70)]

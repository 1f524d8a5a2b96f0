"""What a JACK output writes again after an xrun.

In an xrun a client of the graph did not finish its cycle in time; JACK then goes on without
it, and what the output wrote in that cycle can be lost on the way to the receiver (measured on
the dummy server, the process stopped 50 ms five times in 4 s: 22 of 1,765 messages lost, each
written in the cycles just before the xrun). The output cannot know which were heard, so after
an xrun it writes again what closes something — note-offs, CC 123/120 — of the last
``RESEND_CYCLES`` cycles: harmless when they were heard (a note-off for a note that is off does
nothing), and a hanging note's end when they were not. It does so at once and again
``RESEND_CYCLES`` cycles later: the cycles just after the notice (the re-sent messages among
them) were seen lost too. A closing message is not written again
when a later note-on took its note (or channel, for an all-off) back: that note must sound.
Note-ons are never written twice (a double attack is worse than a note missed); a message due in
a cycle the output itself never ran is written late in the next one (``JackMidiClient``).
"""

from __future__ import annotations

from collections import deque

from instruments.midi import channel_of, is_all_off, is_note_off, is_note_on

RESEND_CYCLES = 8  # cycles before an xrun's notice whose closing messages are written again


class RecentWrites:
    """The messages written in the last ``RESEND_CYCLES`` cycles, by cycle."""

    def __init__(self, cycles: int = RESEND_CYCLES) -> None:
        self.cycles = cycles
        self._recent: deque[tuple[int, bytes]] = deque()

    def wrote(self, cycle: int, data: bytes) -> None:
        self._recent.append((cycle, data))

    def forget_before(self, cycle: int) -> None:
        """Drop what was written before the window that ends at ``cycle``."""
        recent = self._recent
        while recent and recent[0][0] <= cycle - self.cycles:
            recent.popleft()

    def closing(self) -> list[bytes]:
        """The note-offs and all-offs of the window that no later note-on undid, each once,
        in the order they were last written."""
        out: list[bytes] = []
        taken: set[tuple[int, int]] = set()  # (channel, key) of later note-ons
        channels: set[int] = set()  # channels of later note-ons
        seen: set[bytes] = set()  # each message once (its last writing)
        for _, data in reversed(self._recent):
            ch = channel_of(data)
            if data in seen:
                continue
            seen.add(data)
            if is_note_on(data):
                taken.add((ch, data[1]))
                channels.add(ch)
            elif (is_note_off(data) and (ch, data[1]) not in taken
                  or is_all_off(data) and ch not in channels):
                out.append(data)
        out.reverse()
        return out

    def __len__(self) -> int:
        return len(self._recent)

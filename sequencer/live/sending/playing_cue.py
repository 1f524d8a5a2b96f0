"""A cue as the sending process plays it: its schedule, where it is, what it sounds, how late
its messages went out."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from instruments.midi import SoundingNotes
from sequencer.live.protocol import Lateness


@dataclass
class PlayingCue:
    """A cue loaded into the sending process: its schedule and where it is in it."""

    key: str
    seq: int
    times: list[float]
    messages: list[bytes]
    loop_s: float | None
    origin: float | None = None  # absolute start (before the held shift)
    i: int = 0
    end_at: float | None = None
    jump: tuple[float, float] | None = None  # (at, to_s): ``JumpCue`` (a 無算樂's next piece)
    sounding: SoundingNotes = field(default_factory=SoundingNotes)
    late: list[float] = field(default_factory=list)  # send lateness of each message, seconds
    sent: list[tuple[int, float, float]] = field(default_factory=list)  # when recording

    def deadline(self, shift: float) -> float:
        assert self.origin is not None
        if self.i < len(self.times):
            d = self.origin + self.times[self.i] + shift
        elif self.loop_s:
            d = self.origin + self.loop_s + shift  # never reached: _step wraps at once
        else:
            d = -math.inf  # ran out: end now
        if jump_due(self):
            assert self.jump is not None
            d = self.jump[0] + shift  # the jump comes first
        if self.end_at is not None and self.end_at + shift <= d:
            return self.end_at + shift
        return d


JUMP_EPS_S = 1e-6  # a message this close to a jump's time is the next piece's (float sums)


def jump_due(cue: PlayingCue) -> bool:
    """The cue's pending jump comes before its next message."""
    if cue.jump is None or cue.origin is None:
        return False
    return (cue.i >= len(cue.times)
            or cue.origin + cue.times[cue.i] >= cue.jump[0] - JUMP_EPS_S)


def lateness(late: list[float]) -> Lateness:
    """Count, median, 99th percentile and worst of a cue's send lateness."""
    if not late:
        return Lateness()
    late = sorted(late)
    return Lateness(len(late), late[len(late) // 2],
                    late[min(len(late) - 1, int(0.99 * len(late)))], late[-1])

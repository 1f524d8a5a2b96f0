"""MIDI clock out (``live --clock-out``): 24 pulses a quarter note at the rite's tempo, sent by
the sending process as a looping cue of its own, with start, stop and continue."""

from __future__ import annotations

from instruments.midi import CLOCK, CONTINUE, START, STOP
from sequencer.live.protocol import CLOCK_KEY, CancelCue, SendNow, StartCue
from sequencer.live.sending.sender import ShowSender

CLOCK_START, CLOCK_CONTINUE, CLOCK_STOP = bytes((START,)), bytes((CONTINUE,)), bytes((STOP,))


class ClockOut:
    """The clock of a show (``enabled`` false: nothing is sent, nothing runs)."""

    def __init__(self, sender: ShowSender, bpm: float, enabled: bool) -> None:
        self.sender = sender
        self.bpm = bpm
        self.enabled = enabled
        self.running = False

    def load(self) -> None:
        """Hand the pulse to the sending process (before the show)."""
        if self.enabled:
            self.sender.load(CLOCK_KEY, [0.0], [bytes((CLOCK,))], 60.0 / (24 * self.bpm))

    def start(self, t0: float) -> None:
        """The first cue starts: so does the clock (once)."""
        if self.enabled and not self.running:
            self.sender.send(SendNow(CLOCK_START))
            self.sender.send(StartCue(CLOCK_KEY, t0))
            self.running = True

    def hold(self) -> None:
        if self.running:
            self.sender.send(SendNow(CLOCK_STOP))

    def resume(self) -> None:
        if self.running:
            self.sender.send(SendNow(CLOCK_CONTINUE))

    def stop(self) -> None:
        if self.running:
            self.sender.send(CancelCue(CLOCK_KEY))
            self.sender.send(SendNow(CLOCK_STOP))
            self.running = False

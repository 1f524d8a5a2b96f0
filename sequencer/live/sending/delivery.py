"""What a live show delivered, not what it planned: the sending process's count of messages not
delivered on time (``DeliveryWatch``) and the player's account of the whole show
(``ShowDelivery``: outputs lost and regained, late and missed messages per cue), which the show
log records and ``yuezheng live`` sums up at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sequencer.live.protocol import MessagesLate, OutputLost, OutputReconnected

# a port that sends at once (ALSA, rtmidi): a message handed over later than this after its
# deadline is late — the window a JACK output absorbs into its latency (3 periods − 1 = 10.7 ms)
LATE_S = 0.010


MAX_TIMES = 1000  # deadlines kept per cue of the messages not on time (the count goes on)


@dataclass
class _CueCount:
    late: int = 0
    missed: int = 0
    lost: int = 0
    worst: float = 0.0
    times: list[float] = field(default_factory=list)  # deadlines of messages not on time

    def not_on_time(self, t: float) -> None:
        if len(self.times) < MAX_TIMES:
            self.times.append(t)


class DeliveryWatch:
    """In the sending process: per cue, the messages not delivered on time. ``port_missed``
    is a frame-accurate port's running count of messages it could not put on their frame
    (None for a port that sends at once); a rise is laid to the cue sending when it is seen."""

    def __init__(self) -> None:
        self.lost = False  # the output is lost (between OutputLost and OutputReconnected)
        self._cues: dict[str, _CueCount] = {}
        self._missed_seen: int | None = None

    def started(self, key: str) -> None:
        self._cues[key] = _CueCount()

    def sent(self, key: str, deadline: float, lateness: float, port_missed: int | None) -> None:
        count = self._cues.get(key)
        if count is None:
            return
        count.worst = max(count.worst, lateness)
        if self.lost:
            count.lost += 1
        elif port_missed is None and lateness > LATE_S:
            count.late += 1
            count.not_on_time(deadline)
        self._check_missed(count, deadline, port_missed)

    def _check_missed(self, count: _CueCount, t: float, port_missed: int | None) -> None:
        if port_missed is None:
            return
        seen, self._missed_seen = self._missed_seen, port_missed
        if seen is not None and port_missed > seen:
            count.missed += port_missed - seen
            count.not_on_time(t)

    def port_changed(self, event: OutputLost | OutputReconnected) -> None:
        self.lost = isinstance(event, OutputLost)

    def ended(self, key: str, t: float, port_missed: int | None) -> MessagesLate | None:
        """The cue ended: its count, if anything was not delivered on time."""
        count = self._cues.pop(key, None)
        if count is None:
            return None
        self._check_missed(count, t, port_missed)
        if not (count.late or count.missed or count.lost):
            return None
        return MessagesLate(key, t, count.late, count.missed, count.lost, count.worst,
                            tuple(count.times))


@dataclass
class ShowDelivery:
    """The player's account: the output's losses (lost at, regained at or None) and each
    cue's messages not delivered on time."""

    t0: float = 0.0  # the show's start on the show clock
    losses: list[tuple[float, float | None]] = field(default_factory=list)
    late: list[MessagesLate] = field(default_factory=list)

    def output_lost(self, t: float) -> None:
        self.losses.append((t, None))

    def output_regained(self, t: float) -> None:
        if self.losses and self.losses[-1][1] is None:
            self.losses[-1] = (self.losses[-1][0], t)

    @property
    def not_on_time(self) -> int:
        """Messages late, missed or lost, over the show."""
        return sum(e.late + e.missed + e.lost for e in self.late)

    @property
    def worst_s(self) -> float:
        return max((e.worst for e in self.late), default=0.0)

    @property
    def faultless(self) -> bool:
        """Everything was delivered on time, and the output never went away."""
        return not self.losses and not self.late

    def summary_lines(self) -> list[str]:
        """The end-of-show summary of what was not delivered."""
        def at(t: float) -> str:
            since = t - self.t0
            return f"{int(since // 60)}:{since % 60:04.1f}"

        lines = []
        for lost, regained in self.losses:
            lines.append(f"OUTPUT LOST at {at(lost)}: " + (
                "never regained — nothing sent after it was heard" if regained is None
                else f"regained at {at(regained)}"))
        if self.late:
            per_cue = ", ".join(f"{e.key} {e.late + e.missed + e.lost}" for e in self.late)
            lines.append(f"NOT ON TIME: {self.not_on_time} messages ({per_cue}); worst "
                         f"{self.worst_s * 1000:.1f} ms late")
        return lines or ["delivered: every message on time"]

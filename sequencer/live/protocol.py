"""The typed messages of a live show: everything that crosses a thread or a process boundary.

- ``CueStatus``: where a cue is in its life (the cue state machine, the console's cue list).
- Player commands (``PlayerCommand``): what the operator asks — from the console's keys, OSC
  or MIDI input, queued to the player's thread as a ``Request`` (with the OSC reply, if any).
- Sender commands (``SenderCommand``): what the sending process is told, through its pipe. The
  cue state machine returns them too (its "actions"): the player carries each out and passes
  it on.
- Sender events (``SenderEvent``): what the sending process reports back.
- Hearing events (``HearingEvent``): what the hearing process (``live --hear``: the drum
  heard, ``sequencer.live.hearing``) reports: each stroke, stamped on the show clock.
- ``CueLogEntry``: a cue's start or end as the state machine records it for the show log.

All are frozen dataclasses (they pickle through a multiprocessing pipe as they are). Times
``t``, ``t0`` and deadlines are absolute seconds on ``time.perf_counter()`` (the monotonic
clock every process shares); ``at_s`` and schedule times are seconds from a cue's start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

CLOCK_KEY = "__clock__"  # the sender's key of the MIDI clock (``--clock-out``), not a cue


class CueStatus(StrEnum):
    WAITING = "waiting"  # scheduled, its start not reached
    RUNNING = "running"
    ENDING = "ending"  # its end is set (a 樂闋 stop at a rest point)
    DONE = "done"
    STOPPED = "stopped"  # ended by a panic


# ── player commands ────────────────────────────────────────────────────────────────────────────

@dataclass(frozen=True)
class Go:
    """GO: start the standby cue."""


@dataclass(frozen=True)
class GoCue:
    """Make ``cue`` the standby cue and GO (OSC ``/cue/{id}/start``)."""

    cue: str


@dataclass(frozen=True)
class Stop:
    """樂闋: end what runs (looping cues at their next rest point; twice: at once)."""


@dataclass(frozen=True)
class Hold:
    pass


@dataclass(frozen=True)
class Resume:
    pass


@dataclass(frozen=True)
class Skip:
    """Move the standby one cue on."""


@dataclass(frozen=True)
class Back:
    """Move the standby one cue back."""


@dataclass(frozen=True)
class Panic:
    """Stage 1: every cue ends with note-offs; a second press: CC 123/120 too."""


@dataclass(frozen=True)
class Nudge:
    """Tempo of the running 射節 from its next 耦 cycle: faster or slower."""

    faster: bool


@dataclass(frozen=True)
class MarkRelease:
    """The judge marks an archer's release: side 右/左 (or an alias), hit or miss."""

    side: str
    hit: bool


@dataclass(frozen=True)
class PickPiece:
    """無算樂: the piece to play when the sounding one ends — ``index`` (1-based, in the cue's
    order), else ``step`` pieces on from the one chosen now (the next in order unless the
    operator chose)."""

    index: int | None = None
    step: int = 0


@dataclass(frozen=True)
class Quit:
    pass


@dataclass(frozen=True)
class Begin:
    """The show begins (``--auto``: its first cue starts). A hot-standby backup begins when its
    main's ``Begin`` comes over the peer link, at the main's instant."""


@dataclass(frozen=True)
class TakeOver:
    """A hot-standby backup goes live: its output, muted until now, sounds from its current
    position (``sequencer.live.standby.pair``)."""


PlayerCommand = (Go | GoCue | Stop | Hold | Resume | Skip | Back | Panic | Nudge | MarkRelease
                 | PickPiece | Quit | Begin | TakeOver)


@dataclass(frozen=True)
class Request:
    """A player command on its way to the player's thread; ``reply`` (OSC) receives the
    player's state once the command is done; ``origin``: who asked (``key``, ``osc``,
    ``midi``; logged with the action)."""

    command: PlayerCommand
    reply: Callable[[dict[str, Any]], None] | None = None
    origin: str = ""
    at: float | None = None  # when it takes effect (show clock); None: the player's lead ahead


# ── sender commands (the cue state machine's actions are the ones marked *) ────────────────────

@dataclass(frozen=True)
class LoadCue:
    """A chunk of a cue's schedule (``first``: it starts the cue's schedule anew); ``loop_s``:
    the cue starts over every so many seconds until ended."""

    key: str
    loop_s: float | None
    times: tuple[float, ...]
    messages: tuple[bytes, ...]
    first: bool


@dataclass(frozen=True)
class StartCue:
    """* Start the cue's music at ``t0``."""

    key: str
    t0: float


@dataclass(frozen=True)
class EndCueAt:
    """* End the cue at ``t``: what falls before is sent, then its notes get note-offs."""

    key: str
    t: float


@dataclass(frozen=True)
class CancelCue:
    """* End the cue now (note-offs), or forget a start not yet reached."""

    key: str


@dataclass(frozen=True)
class RetimeCue:
    """* From cue time ``at_s`` on, stretch the rest of the cue by ``factor`` (射節 nudge) and
    move it by ``shift_s`` (the drum followed, ``live --follow``): a time ``t ≥ at_s`` becomes
    ``at_s + shift_s + (t − at_s) × factor``."""

    key: str
    at_s: float
    factor: float
    shift_s: float = 0.0


@dataclass(frozen=True)
class JumpCue:
    """* At ``t`` (a piece's end, where no note sounds across) the looping cue's music goes on
    from ``to_s`` (another piece's start, seconds into a pass) without a gap; ``to_s`` None:
    forget the jump asked before."""

    key: str
    t: float
    to_s: float | None


@dataclass(frozen=True)
class HoldOutput:
    """* Pause everything and release the sounding notes."""


@dataclass(frozen=True)
class ResumeOutput:
    """* Continue: every later deadline moves by the time held."""


@dataclass(frozen=True)
class PanicOutput:
    """* Stage 1: every cue ends with note-offs for what sounds; stage 2: CC 123 and 120 on all
    16 channels too."""

    stage: int


@dataclass(frozen=True)
class SendNow:
    """One message at once (MIDI clock start, stop, continue)."""

    data: bytes


@dataclass(frozen=True)
class MuteOutput:
    """Muted: everything is scheduled and tracked, nothing is sent (a hot-standby backup).
    Unmuted: from now on it is sent, after the channels' state (programs, controllers, bends)
    that the muted messages set; notes sounding (silently) at that instant are not struck, and
    their note-offs are not sent."""

    muted: bool


@dataclass(frozen=True)
class QuitSender:
    """Every cue ends with note-offs, the port closes, the process ends."""


CueAction = (StartCue | EndCueAt | CancelCue | RetimeCue | JumpCue | HoldOutput | ResumeOutput
             | PanicOutput)
SenderCommand = CueAction | LoadCue | SendNow | MuteOutput | QuitSender


# ── sender events ──────────────────────────────────────────────────────────────────────────────

@dataclass(frozen=True)
class Ready:
    """The port is open: its own full name and destination (when known), SCHED_FIFO or not."""

    own_name: str | None
    destination: str | None
    realtime: bool


@dataclass(frozen=True)
class SenderFailed:
    """The process could not go on; ``user_fault``: the output spec is at fault."""

    user_fault: bool
    text: str


@dataclass(frozen=True)
class CueStarted:
    key: str
    t: float


@dataclass(frozen=True)
class MarkPassed:
    """The process reached a mark (an empty message: a 節) of the cue at ``t``."""

    key: str
    index: int
    deadline: float
    t: float


@dataclass(frozen=True)
class Lateness:
    """How late a cue's messages were handed to the port (seconds): count, p50, p99, max."""

    count: int = 0
    p50: float = 0.0
    p99: float = 0.0
    worst: float = 0.0


@dataclass(frozen=True)
class CueEnded:
    """The cue ended. ``records``: (index, deadline, sent) of every message (a recording
    sender; else empty); ``missed``: messages a frame-accurate output could not put on their
    frame since the show began."""

    key: str
    t: float
    lateness: Lateness
    records: tuple[tuple[int, float, float], ...]
    missed: int


@dataclass(frozen=True)
class OutputHeld:
    t: float


@dataclass(frozen=True)
class OutputResumed:
    t: float
    shift: float  # the time held so far, in all


@dataclass(frozen=True)
class OutputPanicked:
    stage: int
    t: float


@dataclass(frozen=True)
class OutputLost:
    """The destination went away (the port keeps time and tries to reconnect)."""

    t: float


@dataclass(frozen=True)
class OutputReconnected:
    t: float


@dataclass(frozen=True)
class MessagesLate:
    """A cue's messages that were not delivered on time (reported when it ends, if any):
    ``late`` handed to a port that sends at once more than ``LATE_S`` after their deadline,
    ``missed`` that a frame-accurate port could not put on their frame while the cue ran,
    ``lost`` handed over while the output was lost; ``worst``: the worst send lateness (s);
    ``times``: the deadlines of the late and missed messages (a missed one: of the message
    sent when it was noticed)."""

    key: str
    t: float
    late: int
    missed: int
    lost: int
    worst: float
    times: tuple[float, ...] = ()


@dataclass(frozen=True)
class OutputUnmuted:
    """The output went live at ``t``: ``chased`` channel messages sent first, ``silent`` notes
    sounding unheard (not struck again)."""

    t: float
    chased: int
    silent: int


@dataclass(frozen=True)
class SenderClosed:
    t: float


SenderEvent = (Ready | SenderFailed | CueStarted | MarkPassed | CueEnded | OutputHeld
               | OutputResumed | OutputPanicked | OutputLost | OutputReconnected | MessagesLate
               | OutputUnmuted | SenderClosed)


# ── hearing events (``live --hear``) ───────────────────────────────────────────────────────────

@dataclass(frozen=True)
class HearingReady:
    """The input is open: what is heard (``source``: the JACK port connected, or the file),
    the input's own JACK port, its rate and period, and the latency taken off every stroke
    (the input's own, from JACK, in frames; and ``--hear-latency``)."""

    source: str
    own_name: str | None
    rate: int
    period: int
    input_latency: int
    extra_latency_s: float


@dataclass(frozen=True)
class HearingFailed:
    """The hearing process could not go on; ``user_fault``: the ``--hear`` spec is at fault."""

    user_fault: bool
    text: str


@dataclass(frozen=True)
class StrokeHeard:
    """A stroke: its frame on the input's clock (fractional: JACK's frame counter, unwrapped,
    or the file's sample), the show clock's ``t`` (the latency taken off), its strength (dB),
    and ``latency_s``: from the stroke at the microphone to the moment the hearing process had
    decided it (a JACK input: its frame's time on JACK's cycle times less the input's capture
    latency, a period at least — what a sound card takes; a file: its sample's time)."""

    frame: float
    t: float
    strength_db: float
    latency_s: float


@dataclass(frozen=True)
class HeardUntil:
    """Everything the input brought up to ``t`` (show clock) has been listened to: a silence
    since the last stroke is the drum's, not a hearing process that fell behind."""

    t: float


@dataclass(frozen=True)
class InputGap:
    """``frames`` frames from ``frame`` on never came in (a period lost to an xrun): a stroke
    there was not heard, through no fault of the drummer."""

    frame: int
    frames: int
    t: float  # the gap's start on the show clock


@dataclass(frozen=True)
class HearingStatus:
    """What the input lost so far: xruns the server reported, frames no period brought,
    periods dropped because the reader fell behind; ``ended``: the file has been played;
    ``xrun_frames``: the input's frames of the xruns since the last status."""

    t: float
    xruns: int
    lost_frames: int
    dropped: int
    ended: bool = False
    xrun_frames: tuple[int, ...] = ()


@dataclass(frozen=True)
class HearFrom:
    """A file heard (``--hear FILE``): its first sample sounds at ``t0`` on the show clock."""

    t0: float


@dataclass(frozen=True)
class QuitHearing:
    """The hearing process closes its input and ends."""


HearingEvent = (HearingReady | HearingFailed | StrokeHeard | HeardUntil | InputGap
                | HearingStatus)


# ── the state machine's record ─────────────────────────────────────────────────────────────────

@dataclass(frozen=True)
class CueLogEntry:
    """A cue's ``start`` or ``end`` at ``t`` (``how``: "panic" for an end by panic)."""

    event: str
    cue: str
    t: float
    how: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.event, "cue": self.cue, "t": self.t}
        if self.how is not None:
            out["how"] = self.how
        return out

"""The sending process of a live show (the child side of
``sequencer.live.sending.sender.ShowSender``).

It opens the MIDI output, raises itself to SCHED_FIFO when asked (falling back silently),
freezes and disables garbage collection, and runs its loop: it sleeps in ``select`` on the
control pipe until a little before the next deadline, then spins (with ``sched_yield`` when the
output's audio callback, JACK or pyo, runs in this process and needs the GIL) and sends. Between
deadlines it reads one sender command (``sequencer.live.protocol``) at a time and reports
sender events. SIGINT, SIGTERM, SIGHUP and SIGQUIT wake its ``select`` through a wake-up pipe,
and so does the parent's death (``sequencer.live.sending.parent_watch``: a parent-death signal, and
the control pipe's end, taken as a hang-up); whatever way it ends it silences what it started
(panic on an abnormal end: a signal, the parent gone, or an exception) and closes the port.

A cue with ``loop_s`` starts over every ``loop_s`` seconds until ended; a ``JumpCue`` makes it go
on, when it next reaches a piece's end, from another piece's start (the note-offs due at that
end are sent, the rest of the pass is not). When a cue ends (run out,
``EndCueAt``, ``CancelCue``, a panic), its sounding notes get their note-offs; unless a panic
ended it, channels it bent are set back to the centre unless another running cue uses them, so
the next cue starts from the state a MIDI file assumes, and every channel it used that no
running cue uses gets CC 123 (all notes off: a safety net for a note-off lost on the way). The
keys' MIDI Tuning Standard tuning is left as it is at a cue's end (every cue sends its own at its
start, the same within a show). The port's close does the same for every channel the show used,
and gives the keys the show tuned their equal pitch again (``OutputPort.close``); an abnormal
end panics first (CC 123 and 120 on all 16 channels). A message ``b""`` in a
schedule is a mark: not sent, reported as ``MarkPassed`` when reached.

A muted process (a hot-standby backup, ``MuteOutput``) plays everything and sends nothing
(``sequencer.live.sending.muting``), not even a panic; unmuted, it sends from where it is.
"""

from __future__ import annotations

import bisect
import gc
import math
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from cues.errors import UserError
from instruments.midi import all_off_messages, check_message, note_offs, pitch_bend
from instruments.ports import OutputPort, open_output
from sequencer.live.protocol import (
    CancelCue,
    CueEnded,
    CueStarted,
    EndCueAt,
    HoldOutput,
    JumpCue,
    LoadCue,
    MarkPassed,
    MuteOutput,
    OutputHeld,
    OutputLost,
    OutputPanicked,
    OutputReconnected,
    OutputResumed,
    OutputUnmuted,
    PanicOutput,
    QuitSender,
    Ready,
    ResumeOutput,
    RetimeCue,
    SenderClosed,
    SenderCommand,
    SenderEvent,
    SenderFailed,
    SendNow,
    StartCue,
)
from sequencer.live.sending.delivery import DeliveryWatch
from sequencer.live.sending.muting import Muting
from sequencer.live.sending.parent_watch import drain_wake, watch_endings
from sequencer.live.sending.playing_cue import JUMP_EPS_S, PlayingCue, jump_due, lateness

SLACK_S = 0.003  # housekeeping only when the next deadline is at least this far away
MAINTAIN_EVERY_S = 0.5
# spin the last 2 ms before a send: wake-ups from select() on this shared VM came up to 2.5 ms
# late with a 1 ms spin (p99 send lateness 2.5 ms; 2 ms: see README)
SPIN_S = 0.002
YIELD_SPIN_S = 0.002  # before a deadline, when the port's callback needs the GIL (_loop)
# what OutputPort.maintain() says has changed, as the event the player gets
PORT_CHANGES: dict[str, type[OutputLost] | type[OutputReconnected]] = {
    "lost": OutputLost, "reconnected": OutputReconnected}


def set_realtime(priority: int) -> bool:
    """SCHED_FIFO at ``priority`` for this process (0: leave it); False where refused."""
    if not priority:
        return False
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return True
    except (OSError, AttributeError):
        return False


class SendingProcess:
    """Runs in the sending process: the control pipe, signals, the port's life, the loop."""

    def __init__(self, ctrl: Connection, spec: str, client_name: str, port_name: str,
                 realtime: int = 0, options: dict[str, Any] | None = None,
                 record: bool = False, muted: bool = False) -> None:
        self.ctrl = ctrl
        self.muting = Muting(muted)
        self.spec, self.client_name, self.port_name = spec, client_name, port_name
        self.options = dict(options or {})  # for open_output (the pyo output's notes)
        self.realtime = realtime
        self.record = record
        self.signalled: int | None = None
        self.wake_r = -1
        self.port: OutputPort | None = None
        self.cues: dict[str, PlayingCue] = {}
        self.active: list[PlayingCue] = []
        self.seq = 0
        self.shift = 0.0
        self.held_at: float | None = None
        self.outbox: list[SenderEvent] = []
        self.delivery = DeliveryWatch()  # messages not delivered on time, per cue
        # each handler returns True/False to end the loop (normally/abnormally), else None
        self.handlers: dict[type, Callable[[Any], bool | None]] = {
            LoadCue: self._load, StartCue: self._start, EndCueAt: self._end_at,
            CancelCue: self._cancel, RetimeCue: self._retime, JumpCue: self._jump_at,
            HoldOutput: self._hold,
            ResumeOutput: self._resume, SendNow: self._send_now, PanicOutput: self._panic,
            QuitSender: self._quit, MuteOutput: self._mute,
        }

    # plumbing ------------------------------------------------------------------------------
    def _on_signal(self, signum: int, frame: Any) -> None:
        self.signalled = signum

    def _report(self, event: SenderEvent) -> None:
        try:
            self.ctrl.send(event)
        except (OSError, EOFError):
            pass

    def _flush(self) -> None:
        for event in self.outbox:
            self._report(event)
        self.outbox.clear()

    def _readable(self, timeout: float | None) -> bool:
        """Wait for a control message or a signal; True if one is there."""
        if self.signalled is not None:
            return True
        try:
            ready, _, _ = select.select([self.ctrl.fileno(), self.wake_r], [], [], timeout)
        except InterruptedError:
            return True
        if self.wake_r in ready:
            drain_wake(self.wake_r)
        return bool(ready)

    def _next_command(self) -> SenderCommand | None:
        """The next control command, or None. The pipe's end without a ``QuitSender``: the
        parent is gone, taken as a hang-up (the loop ends abnormally: a panic)."""
        try:
            if self.ctrl.poll():
                return self.ctrl.recv()
        except (EOFError, OSError):
            self.signalled = signal.SIGHUP
        return None

    # main ----------------------------------------------------------------------------------
    def main(self) -> None:
        self.wake_r = watch_endings(self._on_signal)
        try:
            port = open_output(self.spec, client_name=self.client_name, port_name=self.port_name,
                               **self.options)
            port.open()
        except UserError as exc:
            self._report(SenderFailed(True, str(exc)))
            return
        except Exception as exc:  # reported to the parent, which raises it
            self._report(SenderFailed(False, f"{type(exc).__name__}: {exc}"))
            return
        self.port = port
        # a JACK port's process callback (another thread here) needs the GIL once a period:
        # hand it over within 0.5 ms rather than the default 5 ms
        sys.setswitchinterval(0.0005)
        abnormal = True
        try:
            rt = set_realtime(self.realtime)
            self._report(Ready(getattr(port, "own_name", None),
                               getattr(port, "destination", None), rt))
            gc.collect()
            gc.freeze()
            gc.disable()
            abnormal = not self._loop()
        except BaseException as exc:
            self._report(SenderFailed(False, f"{type(exc).__name__}: {exc}"))
            raise
        finally:
            try:
                if abnormal and not self.muting.muted:
                    port.panic()
                port.close()
            finally:
                self._flush()
                self._report(SenderClosed(time.perf_counter()))

    # commands ------------------------------------------------------------------------------
    def _load(self, cmd: LoadCue) -> None:
        cue = self.cues.get(cmd.key)
        if cmd.first or cue is None:
            self.seq += 1
            cue = self.cues[cmd.key] = PlayingCue(cmd.key, self.seq, [], [], cmd.loop_s)
        cue.times.extend(cmd.times)
        cue.messages.extend(cmd.messages)

    def _start(self, cmd: StartCue) -> None:
        cue = self.cues.get(cmd.key)
        if cue is not None and cue not in self.active:
            self.seq += 1
            cue.seq, cue.origin, cue.i, cue.end_at = self.seq, cmd.t0 - self.shift, 0, None
            cue.jump = None
            self.active.append(cue)
            self.outbox.append(CueStarted(cmd.key, cmd.t0))
            self.delivery.started(cmd.key)

    def _end_at(self, cmd: EndCueAt) -> None:
        cue = self.cues.get(cmd.key)
        if cue is not None and cue in self.active:
            cue.end_at = cmd.t - self.shift

    def _cancel(self, cmd: CancelCue) -> None:
        cue = self.cues.get(cmd.key)
        if cue is not None and cue in self.active:
            self._end(cue, time.perf_counter())

    def _retime(self, cmd: RetimeCue) -> None:
        cue = self.cues.get(cmd.key)
        if cue is None:
            return
        at_s, factor, shift, times = cmd.at_s, cmd.factor, cmd.shift_s, cue.times
        for j in range(cue.i, len(times)):
            if times[j] >= at_s:
                times[j] = at_s + shift + (times[j] - at_s) * factor
        if cue.loop_s is not None and cue.loop_s > at_s:
            cue.loop_s = at_s + shift + (cue.loop_s - at_s) * factor

    def _jump_at(self, cmd: JumpCue) -> None:
        cue = self.cues.get(cmd.key)
        if cue is not None and cue in self.active:
            cue.jump = None if cmd.to_s is None else (cmd.t - self.shift, cmd.to_s)

    def _jump(self, cue: PlayingCue) -> None:
        """Go on from the jump's piece: what still sounds gets its note-off now (at the end of
        the piece: the note-offs due there), and the schedule goes on from ``to_s``."""
        assert cue.jump is not None
        at, to_s = cue.jump
        cue.jump = None
        for data in note_offs(cue.sounding.notes):
            self._out(data)
        cue.sounding.notes.clear()
        cue.origin = at - to_s
        cue.i = bisect.bisect_left(cue.times, to_s - JUMP_EPS_S)

    def _hold(self, cmd: HoldOutput) -> None:
        if self.held_at is None:
            assert self.port is not None
            self.port.release_notes()
            for cue in self.active:
                cue.sounding.notes.clear()
            self.held_at = time.perf_counter()
            self.outbox.append(OutputHeld(self.held_at))

    def _resume(self, cmd: ResumeOutput) -> None:
        if self.held_at is not None:
            self.shift += time.perf_counter() - self.held_at
            self.held_at = None
            self.outbox.append(OutputResumed(time.perf_counter(), self.shift))

    def _send_now(self, cmd: SendNow) -> None:
        self._out(check_message(cmd.data))

    def _out(self, data: bytes) -> None:
        """Send at once, unless muted."""
        assert self.port is not None
        if self.muting.passes(data):
            self.port.send(data)

    def _mute(self, cmd: MuteOutput) -> None:
        if cmd.muted:
            self.muting.mute()
            return
        if not self.muting.muted:
            return
        sounding = {note for cue in self.active for note in cue.sounding.notes}
        chased = self.muting.unmute(sounding)
        for data in chased:
            self._out(data)
        self.outbox.append(OutputUnmuted(time.perf_counter(), len(chased), len(sounding)))

    def _panic(self, cmd: PanicOutput) -> None:
        assert self.port is not None
        now = time.perf_counter()
        for cue in list(self.active):
            self._end(cue, now, center=False)
        self.port.release_notes()
        if cmd.stage >= 2:
            for data in all_off_messages():
                self._out(data)
        self.outbox.append(OutputPanicked(cmd.stage, time.perf_counter()))

    def _quit(self, cmd: QuitSender) -> bool:
        for cue in list(self.active):
            self._end(cue, time.perf_counter())
        return True

    def _end(self, cue: PlayingCue, now: float, center: bool = True) -> None:
        port = self.port
        assert port is not None
        for data in note_offs(cue.sounding.notes):
            self._out(data)
        self.active.remove(cue)
        if center:  # a cue's end, not a panic (whose second stage silences every channel)
            busy = {ch for other in self.active for ch in other.sounding.bent}
            for ch in sorted(cue.sounding.bent - busy):
                self._out(pitch_bend(ch))
            # the safety net: all notes off on each channel the cue used that no running cue
            # uses (for a note-off lost on the way)
            in_use = {ch for other in self.active for ch in other.sounding.used}
            for data in all_off_messages(cue.sounding.used - in_use, sound_off=False):
                self._out(data)
        cue.sounding.clear()
        stats, cue.late = lateness(cue.late), []
        sent, cue.sent = tuple(cue.sent), []
        missed = int(getattr(port, "late", 0))  # a frame-accurate port's late messages
        self.outbox.append(CueEnded(cue.key, now, stats, sent, missed))
        not_on_time = self.delivery.ended(cue.key, now, getattr(port, "late", None))
        if not_on_time is not None:
            self.outbox.append(not_on_time)

    # the loop ------------------------------------------------------------------------------
    def _next_due(self) -> tuple[PlayingCue | None, float]:
        """The cue whose message is due first and its deadline (equal deadlines: the cue
        started first); (None, inf) while held or idle."""
        nxt: PlayingCue | None = None
        deadline = math.inf
        if self.held_at is None:
            for cue in self.active:
                d = cue.deadline(self.shift)
                if d < deadline or (d == deadline and nxt is not None and cue.seq < nxt.seq):
                    deadline, nxt = d, cue
        return nxt, deadline

    def _housekeep(self, now: float, last_maintain: float) -> float | None:
        """Report what waits in the outbox, or check the port every MAINTAIN_EVERY_S; the new
        time of the last check when something was done, else None."""
        if self.outbox:
            self._flush()
            return last_maintain
        if now - last_maintain >= MAINTAIN_EVERY_S:
            assert self.port is not None
            change = self.port.maintain()
            if change:
                event = PORT_CHANGES[change](time.perf_counter())
                self.delivery.port_changed(event)
                self.outbox.append(event)
            return time.perf_counter()
        return None

    def _loop(self) -> bool:
        """Until quit (True) or a signal (False)."""
        perf = time.perf_counter
        assert self.port is not None
        # a port with an audio callback in this process (JACK through ctypes, pyo) needs the
        # GIL once a period: the last stretch is spun with sched_yield, which lets go of it at
        # every turn (a frame-accurate port also absorbs any lateness into its latency)
        yielding = self.port.callback_needs_gil
        spin = YIELD_SPIN_S if yielding else SPIN_S
        sched_yield = os.sched_yield
        last_maintain = perf()
        while True:
            nxt, deadline = self._next_due()
            now = perf()
            remaining = deadline - now
            if remaining > spin:
                if remaining >= SLACK_S:
                    done = self._housekeep(now, last_maintain)
                    if done is not None:
                        last_maintain = done
                        continue
                if self._readable(min(remaining - spin, 0.25)):
                    if perf() >= deadline:
                        continue  # a message fell due meanwhile: it goes before the command
                    if self.signalled is not None:
                        return False
                    cmd = self._next_command()
                    if cmd is not None:
                        ended = self.handlers[type(cmd)](cmd)
                        if ended is not None:
                            return ended
                continue
            assert nxt is not None
            if yielding:
                while perf() < deadline:
                    sched_yield()
            else:
                while perf() < deadline:
                    pass
            self._step(nxt, deadline)

    def _step(self, cue: PlayingCue, deadline: float) -> None:
        """Send the cue's next message (or end or wrap it) at ``deadline``."""
        if cue.end_at is not None and cue.end_at + self.shift <= deadline:
            self._end(cue, time.perf_counter())
            return
        if jump_due(cue):
            self._jump(cue)
            return
        if cue.i >= len(cue.times):
            if cue.loop_s:
                assert cue.origin is not None
                cue.origin += cue.loop_s
                cue.i = 0
            else:
                self._end(cue, time.perf_counter())
            return
        data = cue.messages[cue.i]
        index = cue.i
        cue.i += 1
        if data:
            assert self.port is not None
            if self.muting.passes(data):  # muted: tracked as if sent, not counted as sent
                self.port.send(data, deadline)
                sent = time.perf_counter()
                cue.late.append(sent - deadline)
                self.delivery.sent(cue.key, deadline, sent - deadline,
                                   getattr(self.port, "late", None))
                if self.record:
                    cue.sent.append((index, deadline, sent))
            cue.sounding.track(data)
        else:
            self.outbox.append(MarkPassed(cue.key, index, deadline, time.perf_counter()))
        if cue.i >= len(cue.times) and cue.loop_s and not jump_due(cue):
            assert cue.origin is not None
            cue.origin += cue.loop_s
            cue.i = 0


def run_sending_process(ctrl: Connection, spec: str, client_name: str, port_name: str,
                        realtime: int, options: dict[str, Any] | None = None,
                        record: bool = False, muted: bool = False) -> None:
    """The process's entry point."""
    SendingProcess(ctrl, spec, client_name, port_name, realtime, options, record,
                   muted).main()

"""The hearing process of a live show (the child side of
``sequencer.live.hearing.hearer.Hearer``): the drum heard, stroke by stroke.

It opens what ``--hear`` names (``sequencer.live.hearing.source``) — a JACK audio input read on
JACK's own cycle (``instruments.ports.jackaudio.JackAudioInput``), or a file read at the pace
of the show clock — feeds every period to the stroke detector
(``sequencer.check.stroke_stream.StrokeStream``) and reports each stroke at once
(``StrokeHeard``): its frame, and its time on the show clock (``time.perf_counter``, the clock
every process of the show shares) by JACK's own estimate of its cycle times, less the input's
latency (JACK's capture latency of the port, and ``--hear-latency``). A period JACK did not
bring (an xrun) is a gap in the frames: it is passed over and counted (``HearingStatus``), so
that a stroke lost to the machine is told from one the drummer did not play.

Why a process of its own: the period callback is Python and needs the GIL once a period; in the
player's process the console, the web server and the show log would hold it up (the sending
process is separate for the same reason). It ends on ``QuitHearing``, on the end of its pipe
(the parent gone), on the parent's death (a parent-death signal) and on the ending signals.
"""

from __future__ import annotations

import select
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from cues.errors import UserError
from instruments.ports.base import PortError
from sequencer.check.stroke_stream import LOOKAHEAD_S, StrokeStream
from sequencer.live.hearing.source import HearSpec
from sequencer.live.protocol import (
    HeardUntil,
    HearFrom,
    HearingEvent,
    HearingFailed,
    HearingReady,
    HearingStatus,
    InputGap,
    QuitHearing,
    StrokeHeard,
)
from sequencer.live.sending.parent_watch import drain_wake, watch_endings
from sequencer.live.sending.process import set_realtime

# SCHED_FIFO when allowed, under the sending process's (20): its deadlines come first
REALTIME_PRIORITY = 10
STATUS_EVERY_S = 1.0  # what was lost is reported at most this often (when it changed)
UNTIL_EVERY_S = 0.05  # how far the input has been listened to, reported this often
FILE_BLOCK = 256  # a file is read in blocks of this many frames (JACK's period here)
PORT_NAME = "in"


class HearingProcess:
    """Runs in the hearing process (see the module docstring)."""

    def __init__(self, ctrl: Connection, spec: HearSpec, client_name: str,
                 refractory_s: float, extra_latency_s: float) -> None:
        self.ctrl = ctrl
        self.spec = spec
        self.client_name = client_name
        self.refractory_s = refractory_s
        self.extra_latency_s = extra_latency_s
        self.signalled: int | None = None
        self.wake_r = -1
        self.quit = False
        self.t0: float | None = None  # a file's first sample on the show clock
        self.status = HearingStatus(0.0, 0, 0, 0)
        self._until_sent = 0.0

    def _report(self, event: HearingEvent) -> None:
        try:
            self.ctrl.send(event)
        except (OSError, EOFError):
            self.quit = True

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.signalled = signum

    def main(self) -> None:
        self.wake_r = watch_endings(self._on_signal)
        sys.setswitchinterval(0.0005)  # JACK's callback needs the GIL once a period
        # before the JACK client exists: its thread (the period callback) inherits the policy
        set_realtime(REALTIME_PRIORITY)
        try:
            if self.spec.kind == "jack":
                self._hear_jack()
            else:
                self._hear_file()
        except UserError as exc:
            self._report(HearingFailed(True, str(exc)))
        except Exception as exc:  # reported to the parent, which says so
            self._report(HearingFailed(False, f"{type(exc).__name__}: {exc}"))

    # commands ------------------------------------------------------------------------------
    def _wait(self, fds: list[int], timeout: float | None) -> list[int]:
        """Wait for a command, a signal or one of ``fds``; handle the command; the fds ready."""
        if self.signalled is not None:
            self.quit = True
            return []
        try:
            ready, _, _ = select.select([self.ctrl.fileno(), self.wake_r, *fds], [], [], timeout)
        except InterruptedError:
            return []
        if self.wake_r in ready:
            drain_wake(self.wake_r)
        if self.signalled is not None:
            self.quit = True
        if self.ctrl.fileno() in ready:
            try:
                while self.ctrl.poll():
                    cmd = self.ctrl.recv()
                    if isinstance(cmd, QuitHearing):
                        self.quit = True
                    elif isinstance(cmd, HearFrom):
                        self.t0 = cmd.t0
            except (EOFError, OSError):  # the parent has gone
                self.quit = True
        return [fd for fd in ready if fd in fds]

    def _until(self, t: float) -> None:
        """Say that everything up to ``t`` (show clock) has been listened to (every
        UNTIL_EVERY_S)."""
        if t - self._until_sent >= UNTIL_EVERY_S:
            self._until_sent = t
            self._report(HeardUntil(t))

    def _lost(self, xruns: list[int], lost: int, dropped: int, ended: bool = False,
              unwrap: Any = None) -> None:
        """Report what was lost when it changed (at most every STATUS_EVERY_S, and at the
        end); ``xruns``: the frames of every xrun so far (``unwrap``: onto the input's
        frames)."""
        now = time.perf_counter()
        old = self.status
        count = len(xruns)
        if (count, lost, dropped, ended) == (old.xruns, old.lost_frames, old.dropped, old.ended):
            return
        if not ended and now - old.t < STATUS_EVERY_S:
            return
        new = tuple(unwrap(f) if unwrap else f for f in xruns[old.xruns:count])
        self.status = HearingStatus(now, count, lost, dropped, ended, new)
        self._report(self.status)

    # JACK ----------------------------------------------------------------------------------
    def _hear_jack(self) -> None:
        from instruments.ports.jackaudio import JackAudioInput

        try:
            port = JackAudioInput(self.client_name, PORT_NAME).open()
        except OSError as exc:
            raise UserError(f"--hear {self.spec.describe()}: libjack is missing ({exc})") from None
        except PortError as exc:
            raise UserError(f"--hear: {exc}") from None
        try:
            if self.spec.port:
                try:
                    port.connect_from(self.spec.port)
                except PortError as exc:
                    raise UserError(f"--hear jack:{self.spec.port}: {exc}") from None
            latency = port.capture_latency()[1]
            self._report(HearingReady(self.spec.port or "", port.own_name, port.rate,
                                      port.frames, latency, self.extra_latency_s))
            self._jack_loop(port, latency)
        finally:
            port.close()

    def _jack_loop(self, port: Any, latency: int) -> None:
        stream = StrokeStream(port.rate, refractory_s=self.refractory_s)
        # the detection latency is counted from the stroke at the microphone: its capture
        # takes the input's latency, a period at least (what a sound card takes)
        capture = max(latency, port.frames) / port.rate
        base: int | None = None  # the input's frame of the stream's first sample
        high = 0  # JACK's frame counter wraps at 2³²: the wraps so far
        last_raw: int | None = None
        lost = 0
        checked = time.perf_counter()
        while not self.quit:
            if port.server_gone:
                raise RuntimeError("the JACK server went away: nothing more is heard")
            self._wait([port.wake_fd], 0.25)
            for period in port.periods():
                if last_raw is not None and period.frame < last_raw:
                    high += 1
                last_raw = period.frame
                frame = (high << 32) + period.frame
                if base is None:
                    base = frame
                gap = frame - (base + stream.pos)
                if gap > 0:
                    stream.gap(gap)
                    lost += gap
                    self._report(InputGap(frame - gap, gap, period.start - gap / port.rate))
                strokes = stream.feed(period.samples)
                # the detector has decided on everything but its last LOOKAHEAD
                listened = (period.start + period.span - latency / port.rate
                            - self.extra_latency_s - LOOKAHEAD_S - 0.001)
                if not strokes:
                    self._until(listened)
                    continue
                now = time.perf_counter()
                step = period.span / len(period.samples)
                for stroke in strokes:
                    at = base + stroke.at
                    # the frame's time on JACK's cycle times: a period's frames are timed
                    # from the period's start, the frames of the period just delivered
                    frame_time = period.start + (at - frame) * step
                    self._report(StrokeHeard(
                        at, frame_time - latency / port.rate - self.extra_latency_s,
                        stroke.strength_db, now - (frame_time - capture)))
                self._until(listened)
            now = time.perf_counter()
            if now - checked >= STATUS_EVERY_S:
                checked = now
                self._lost(list(port.xrun_frames), lost, port.dropped,
                           unwrap=lambda f, h=high: (h << 32) + f)
        self._lost(list(port.xrun_frames), lost, port.dropped, ended=True,
                   unwrap=lambda f, h=high: (h << 32) + f)

    # a file --------------------------------------------------------------------------------
    def _hear_file(self) -> None:
        import soundfile

        assert self.spec.path is not None
        try:
            audio = soundfile.SoundFile(self.spec.path)
        except Exception as exc:  # soundfile.LibsndfileError, RuntimeError…
            raise UserError(f"--hear {self.spec.path}: not a readable audio file ({exc})"
                            ) from None
        with audio:
            rate = int(audio.samplerate)
            self._report(HearingReady(self.spec.path, None, rate, FILE_BLOCK, 0,
                                      self.extra_latency_s))
            while self.t0 is None and not self.quit:  # the show begins: the file does
                self._wait([], 0.25)
            if self.quit or self.t0 is None:
                return
            stream = StrokeStream(rate, refractory_s=self.refractory_s)
            t0 = self.t0
            done = 0
            for block in audio.blocks(blocksize=FILE_BLOCK, dtype="float32", always_2d=True):
                due = t0 + (done + len(block)) / rate  # the block has been "heard" by then
                while not self.quit and (left := due - time.perf_counter()) > 0:
                    self._wait([], left)
                if self.quit:
                    return
                done += len(block)
                strokes = stream.feed(np.asarray(block.mean(axis=1)))
                now = time.perf_counter()
                for stroke in strokes:
                    heard = t0 + stroke.at / rate
                    self._report(StrokeHeard(stroke.at, heard - self.extra_latency_s,
                                             stroke.strength_db, now - heard))
                self._until(t0 + done / rate - self.extra_latency_s - LOOKAHEAD_S - 0.001)
        self._lost([], 0, 0, ended=True)
        while not self.quit:  # the file is over; the show is not
            self._wait([], 0.25)


def run_hearing_process(ctrl: Connection, spec: HearSpec, client_name: str,
                        refractory_s: float, extra_latency_s: float) -> None:
    """The process's entry point."""
    HearingProcess(ctrl, spec, client_name, refractory_s, extra_latency_s).main()

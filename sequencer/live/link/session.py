"""Ableton Link for the live show: a 射節's 節 as Link beats, and the session's own clock.

``LinkSession`` runs one aalink ``Link`` in a thread of its own with its own asyncio event loop
(aalink wants a running loop to be created in; its callbacks and sync futures would go there —
yuezheng uses neither). Its getters and setters are short C++ calls (no network wait: Link's
network thread is its own), made from the player's thread; the sending process, another process,
never touches Link. Opened only when ``live --link`` or ``--link-follow`` asks.

Times here are seconds on ``time.perf_counter()`` (CLOCK_MONOTONIC, the show clock). Link's own
clock is CLOCK_MONOTONIC_RAW in microseconds; the two are mapped by sampling both around each
call (``LinkSession.link_time``), so a slewing NTP cannot open a gap between them.

The grid (``JieGrid``): one 節 is ``beats_per_jie`` Link beats — 1 wherever that keeps the tempo
within Link's range (tempo = 60 / 節 seconds: a 節 of 3 s or less), else the least power of two
that brings the tempo up to Link's 20 bpm floor (a 20 s 節: 8 beats at 24 bpm) — so a 節 always
starts on a beat and the drum's first stroke of every 節 falls on it. The quantum is the 節
count of a 耦's cycle (times ``beats_per_jie``), so phase 0 is 節 1.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from fractions import Fraction
from typing import Any, Self

MIN_TEMPO, MAX_TEMPO = 20.0, 999.0  # Link's tempo range (bpm)
TEMPO_DENOMINATOR = 10**6  # a followed tempo is taken as a Fraction to 1/10⁶ bpm


class LinkError(RuntimeError):
    """Link could not be started (aalink missing or its thread failed)."""


@dataclass(frozen=True)
class JieGrid:
    """How a 射節 is published as Link beats (see the module docstring)."""

    jie_s: Fraction  # one 節, seconds (exact)
    n: int  # 節 in a 耦's cycle
    beats_per_jie: int

    @property
    def tempo(self) -> float:
        return float(60 * self.beats_per_jie / self.jie_s)

    @property
    def quantum(self) -> int:
        return self.n * self.beats_per_jie

    def beat(self, index: int) -> int:
        """The Link beat of the ``index``-th 節 from the cue's start (0-based)."""
        return index * self.beats_per_jie


def jie_grid(jie_s: Fraction, n: int) -> JieGrid:
    """The grid of a 射節 whose 節 is ``jie_s`` seconds, ``n`` 節 a cycle."""
    beats = 1
    while 60 * beats / jie_s < MIN_TEMPO:
        beats *= 2
    return JieGrid(Fraction(jie_s), n, beats)


def followed_jie_s(tempo: float, beats_per_jie: int) -> Fraction:
    """The 節 a session's ``tempo`` asks for (exact: the tempo as a Fraction to 1/10⁶ bpm)."""
    exact = Fraction(tempo).limit_denominator(TEMPO_DENOMINATOR)
    return Fraction(60 * beats_per_jie) / exact


def phase_error_beats(beat: float, expected: float, quantum: float) -> float:
    """How far ``beat`` is from ``expected`` in phase (modulo ``quantum``), in (-q/2, q/2]."""
    d = math.fmod(beat - expected, quantum)
    if d > quantum / 2:
        d -= quantum
    elif d <= -quantum / 2:
        d += quantum
    return d


class LinkSession:
    """One Link peer in its own thread (see the module docstring). ``open()`` … ``close()``."""

    def __init__(self, tempo: float = 120.0) -> None:
        self.initial_tempo = min(MAX_TEMPO, max(MIN_TEMPO, tempo))
        self._link: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # life ----------------------------------------------------------------------------------
    def open(self, timeout: float = 10.0) -> Self:
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._run, name="yuezheng-link", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout) or self._link is None:
            self.close()
            raise LinkError(f"Ableton Link did not start: {self._error or 'timed out'}")
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            import aalink

            async def create() -> Any:
                return aalink.Link(self.initial_tempo)

            link = loop.run_until_complete(create())
            link.start_stop_sync_enabled = True
            link.enabled = True
            self._link = link
        except BaseException as exc:  # reported by open()
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._link = None
            link.enabled = False
            del link
            loop.close()

    def close(self) -> None:
        """Leave the session (stop playing first if this peer plays) and end the thread."""
        thread, loop = self._thread, self._loop
        if thread is None:
            return
        if self._link is not None:
            try:
                self.stop()
            finally:
                if loop is not None:
                    loop.call_soon_threadsafe(loop.stop)
        thread.join(5.0)
        self._thread = None

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # the session ---------------------------------------------------------------------------
    @property
    def link(self) -> Any:
        if self._link is None:
            raise LinkError("the Link session is not open")
        return self._link

    @property
    def peers(self) -> int:
        return int(self.link.num_peers)

    @property
    def tempo(self) -> float:
        return float(self.link.tempo)

    @property
    def playing(self) -> bool:
        return bool(self.link.playing)

    def sample(self, quantum: float) -> tuple[float, float, float]:
        """(show-clock time, the session's beat then for ``quantum``, tempo), sampled together:
        the beat is read between two clock reads and dated at their middle."""
        link = self.link
        link.quantum = quantum
        before = time.perf_counter()
        beat = link.beat
        after = time.perf_counter()
        return (before + after) / 2, float(beat), float(link.tempo)

    def beat_at(self, t: float, quantum: float) -> tuple[float, float]:
        """(the session's beat at show-clock time ``t``, tempo) — exact while the tempo has not
        changed between ``t`` and now."""
        now, beat, tempo = self.sample(quantum)
        return beat + (t - now) * tempo / 60.0, tempo

    def link_time(self, t: float) -> timedelta:
        """Show-clock time ``t`` on Link's clock (CLOCK_MONOTONIC_RAW)."""
        before = time.perf_counter()
        raw = time.clock_gettime(time.CLOCK_MONOTONIC_RAW)
        after = time.perf_counter()
        return timedelta(seconds=raw + t - (before + after) / 2)

    def wait_for_peers(self, timeout: float, settle: float = 0.3) -> int:
        """Wait up to ``timeout`` for another peer, then ``settle`` for the sessions to merge;
        the peers found."""
        deadline = time.perf_counter() + timeout
        while self.peers == 0 and time.perf_counter() < deadline:
            time.sleep(0.01)
        if self.peers:
            time.sleep(settle)
        return self.peers

    # leading -------------------------------------------------------------------------------
    def lead(self, grid: JieGrid, t0: float, first: int = 0) -> None:
        """Publish the grid: the tempo, 節 ``first`` (0-based from the cue's start, so its beat
        ``grid.beat(first)``) at show-clock time ``t0``, and the session playing from then."""
        link = self.link
        link.quantum = grid.quantum
        link.tempo = grid.tempo
        beat0 = grid.beat(first)
        now = time.perf_counter()
        link.force_beat(beat0 + (now - t0) * grid.tempo / 60.0)
        link.set_is_playing_and_request_beat_at_time(True, self.link_time(t0), float(beat0))

    def stop(self) -> None:
        """Stop the session's transport (Link start/stop sync), if it plays."""
        if self._link is not None and self._link.playing:
            self._link.playing = False

    # following -----------------------------------------------------------------------------
    def next_phase_zero(self, t: float, quantum: float) -> tuple[float, float]:
        """(the first show-clock time at or after ``t`` where the session's phase is 0 for
        ``quantum``, the session's tempo)."""
        beat, tempo = self.beat_at(t, quantum)
        target = math.ceil(beat / quantum - 1e-9) * quantum
        return t + (target - beat) * 60.0 / tempo, tempo

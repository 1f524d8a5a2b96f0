"""The live player: the cue state machine (``sequencer.cuelist``) driving one sending process
(``sequencer.showsender``) for the whole show, with a show log and remote controls.

Why one sender for the whole show, fed per cue: every cue's schedule is loaded into the sending
process before the show starts (nothing large crosses the pipe while music plays); a GO is one
small command carrying an absolute start time; a ``follow`` cue's exact start is handed over
while the previous cue still plays, so cues join without a gap and, at equal deadlines, in
order; one port knows every sounding note, so hold, stop and both panic stages reach everything.
A sender per cue would start a process and a JACK client at each GO, race its first messages
against the previous cue's last ones from another client, and panic could not reach a finished
process's port.

Commands come from the console's keys, OSC and MIDI input through one thread-safe queue; only
``Player.step()`` (the caller's thread) touches the state machine. Every way out — the end of
the show, quit, an exception, SIGINT, SIGTERM — closes the sender, which silences what it
started (an exception or a signal: both panic stages).

The show log is JSON lines: ``{"event": "show", "rite", "cues", "t"}``, then ``start`` and
``end`` of each cue (``t``: seconds on the monotonic show clock), every 節 as ``{"event":
"jie", "t", "k", "n", "cue"}`` (``t`` when the sending process reached it — what ``yuezheng
check LOG`` reads), and ``hold``, ``resume``, ``panic``, ``stop``, ``done``. ``--resume LOG``
starts again at the last cue the log started.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from cues.errors import UserError
from cues.model import Rite
from sequencer.compiler import CompileSettings, compile_rite
from sequencer.cuelist import CueInfo, CueList
from sequencer.cueschedule import CueSchedule, JieMark, cue_schedules
from sequencer.events import Timeline
from sequencer.judge import Release, Tally, judge_cycles
from sequencer.showsender import ShowSender
from sequencer.timebase import seconds

JUDGE_TOLERANCE_S = 0.15  # a release within this of a drum accord counts (yuezheng judge)
LEAD_S = 0.05  # a command takes effect this long after it is given (time to reach the sender)
CLOCK_KEY = "__clock__"
COMMANDS = ("go", "stop", "hold", "resume", "skip", "back", "panic", "quit", "start",
            "faster", "slower")
NUDGE = 1.02


def cue_infos(rite: Rite, timeline: Timeline,
              schedules: dict[str, CueSchedule]) -> list[CueInfo]:
    out = []
    for cue in rite.cues:
        sched = schedules[cue.id]
        loops = bool(sched.messages) and (cue.stop is not None or cue.operator_ends)
        stop_text = f"「{cue.stop.event}」 at 「{cue.stop.at}」" if cue.stop else (
            "the operator ends it" if cue.operator_ends else "")
        out.append(CueInfo(
            id=cue.id, length_s=sched.length_s, trigger=cue.trigger.kind,
            target=cue.trigger.target, loops=loops, pre_wait_s=cue.pre_wait_s,
            post_wait_s=cue.post_wait_s, rest_points=sched.rest_points, cycle_s=sched.cycle_s,
            kind=cue.kind, title=cue.title, at=cue.at, stop_text=stop_text,
        ))
    return out


def resume_point(log_path: str | Path) -> tuple[str | None, str]:
    """(rite id, the last cue the log started) — for ``--resume LOG``."""
    rite_id: str | None = None
    last: str | None = None
    try:
        with open(log_path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    if number > 1:  # a crash may cut the last line short
                        continue
                    raise UserError(f"{log_path}:{number}: not a JSON line") from None
                if rec.get("event") == "show":
                    rite_id = rec.get("rite")
                elif rec.get("event") == "start" and rec.get("cue") != CLOCK_KEY:
                    last = rec.get("cue")
    except OSError as exc:
        raise UserError(f"cannot read {log_path}: {exc.strerror or exc}") from None
    if last is None:
        raise UserError(f"{log_path}: the log records no cue start to resume from")
    return rite_id, last


class ShowLog:
    """JSON lines, flushed line by line (a crash loses nothing written)."""

    def __init__(self, path: str | Path | None) -> None:
        self._f: TextIO | None = None
        if path is not None:
            try:
                self._f = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
            except OSError as exc:
                raise UserError(f"cannot write the log {path}: {exc.strerror or exc}") from None
        self.records: list[dict[str, Any]] = []

    def write(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        if self._f is not None:
            self._f.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


@dataclass
class Snapshot:
    """What the console shows."""

    rite: str
    cues: list[tuple[str, str, str, str]]  # id, kind, title, status
    standby: str | None
    standby_at: str
    standby_trigger: str
    running: list[tuple[str, float, float | None]]  # id, elapsed, remaining (None: open)
    jie: tuple[str, int, int, float | None] | None  # cue, k, n, seconds to the next 節
    held: bool
    panic_stage: int
    message: str
    done: bool
    control: str
    tally: str = ""  # the running 「不鼓不釋」 tally of the current 射節


def output_options(spec: str, timeline: Timeline) -> dict[str, Any] | None:
    """What the output needs to know of the show beyond its messages: for ``pyo`` the notes
    to prepare tables for and each instrument's place in the hang (its first); else None."""
    from instruments.ports import parse_spec  # noqa: PLC0415

    if parse_spec(spec).kind != "pyo":
        return None
    from instruments.ports.pyo import LiveNote

    notes = sorted({LiveNote(n.instrument, n.hz, float(seconds(n.duration)), n.velocity)
                    for n in timeline.notes}, key=repr)
    places: dict[str, tuple[float, float]] = {}
    for n in timeline.notes:
        places.setdefault(n.instrument, (n.x, n.y))
    return {"notes": notes, "places": places}


class Player:
    """A live show (see the module docstring). ``open()``, then ``step()`` in a loop (or
    ``run()``), then ``close()``; or ``with``."""

    def __init__(self, rite: Rite, settings: CompileSettings, spec: str, *, auto: bool = False,
                 log_path: str | Path | None = None, clock_out: bool = False,
                 client_name: str = "yuezheng", lead_s: float = LEAD_S) -> None:
        self.rite = rite
        self.settings = settings
        self.timeline = compile_rite(rite, settings)
        self.schedules = cue_schedules(self.timeline)
        self.machine = CueList(cue_infos(rite, self.timeline, self.schedules), auto=auto,
                               go_gap_s=float(settings.go_gap_s))
        self.sender = ShowSender(spec, client_name=client_name,
                                 options=output_options(spec, self.timeline))
        self.log = ShowLog(log_path)
        self.clock_out = clock_out
        self.lead_s = lead_s
        self.commands: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.message = ""
        self.control = ""
        self.quit = False
        self._marks: dict[tuple[str, int], JieMark] = {}
        self._last_jie: dict[str, JieMark] = {}
        self._logged = 0
        self._clock_running = False
        self._closers: list[Callable[[], None]] = []
        self._started: set[str] = set()
        self._ended: set[str] = set()
        self.judge_tolerance_s = JUDGE_TOLERANCE_S
        self.releases: dict[str, list[Release]] = {}
        self.tallies: dict[str, Tally] = {}
        self._jie_sent: dict[str, tuple[JieMark, float]] = {}  # last 節 and when it went out

    # lifecycle -----------------------------------------------------------------------------
    def open(self) -> Player:
        self.sender.open()
        for info in self.machine.cues:
            sched = self.schedules[info.id]
            times, messages = self._with_marks(sched)
            self.sender.load(info.id, times, messages,
                             sched.length_s if info.loops and not self.machine.auto else None)
        if self.clock_out:
            bpm = float(self.settings.tempo_bpm)
            self.sender.load(CLOCK_KEY, [0.0], [b"\xf8"], 60.0 / (24 * bpm))
        self.log.write({"event": "show", "rite": self.rite.id, "title": self.rite.title,
                        "cues": [c.id for c in self.rite.cues], "t": time.perf_counter()})
        self._act(self.machine.begin(time.perf_counter() + self.lead_s))
        return self

    def _with_marks(self, sched: CueSchedule) -> tuple[list[float], list[bytes]]:
        """The schedule with an empty message (a mark) after the messages of each 節's time."""
        times: list[float] = []
        messages: list[bytes] = []
        marks = list(sched.jie)
        m = 0
        for t, data in zip(sched.times, sched.messages, strict=True):
            while m < len(marks) and marks[m].t < t:
                self._marks[(sched.cue, len(times))] = marks[m]
                times.append(marks[m].t)
                messages.append(b"")
                m += 1
            times.append(t)
            messages.append(data)
        for mark in marks[m:]:
            self._marks[(sched.cue, len(times))] = mark
            times.append(mark.t)
            messages.append(b"")
        return times, messages

    def close(self, *, panic: bool = False) -> None:
        for closer in self._closers:
            try:
                closer()
            except Exception:  # noqa: BLE001,S110 - closing the rest matters more
                pass
        self._closers.clear()
        try:
            if self._clock_running and self.sender.alive:
                self.sender.cancel(CLOCK_KEY)
                self.sender.send_now(b"\xfc")
            self.sender.close(panic=panic)
            self._drain_sender()
        finally:
            self.log.close()

    def __enter__(self) -> Player:
        return self.open()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(panic=exc_type is not None)

    def add_closer(self, closer: Callable[[], None]) -> None:
        self._closers.append(closer)

    # the loop ------------------------------------------------------------------------------
    def put(self, *command: Any) -> None:
        """Queue a command (any thread): ("go",), ("start", cue_id), ("panic",), …; a last
        element that is callable receives the state after the command (OSC replies)."""
        self.commands.put(command)

    def step(self, timeout: float = 0.05) -> None:
        """Wait up to ``timeout`` for a command, do what is due, log what happened."""
        deadline = self.machine.next_deadline()
        now = time.perf_counter()
        if deadline is not None:
            timeout = max(0.0, min(timeout, deadline - now))
        try:
            command = self.commands.get(timeout=timeout) if timeout > 0 else \
                self.commands.get_nowait()
        except queue.Empty:
            command = None
        while command is not None:
            self._do(command)
            try:
                command = self.commands.get_nowait()
            except queue.Empty:
                command = None
        self._act(self.machine.tick(time.perf_counter()))
        self._flush_log()
        self._drain_sender()
        if not self.sender.alive:
            raise UserError("the sending process ended unexpectedly")

    def run(self, stop: Callable[[], bool] | None = None) -> None:
        """Step until the show is done (auto), quit, or ``stop()`` is true."""
        while not self.quit and not (stop and stop()):
            if self.machine.auto and self.machine.done:
                break
            self.step()
        # the state machine ends a cue at its nominal end; let the sender finish its last
        # messages (a quit now would cut them short) — at most a second
        grace = time.perf_counter() + self.lead_s + 1.0
        while (not self.quit and self._started - self._ended - {CLOCK_KEY}
               and time.perf_counter() < grace):
            time.sleep(0.01)
            self._drain_sender()
        self._flush_log()
        self.log.write({"event": "done", "t": time.perf_counter()})

    def _do(self, command: tuple[Any, ...]) -> None:
        reply = command[-1] if command and callable(command[-1]) else None
        if reply is not None:
            command = command[:-1]
        what = command[0]
        now = time.perf_counter() + self.lead_s
        m = self.machine
        actions: list[tuple[Any, ...]] = []
        self.message = ""
        if what == "go":
            before = m.pos
            actions = m.go(now)
            if not actions and m.pos == before:
                self.message = "GO ignored (held, double GO, or no cue at standby)"
        elif what == "start":
            try:
                actions = m.start_cue(str(command[1]), now)
            except KeyError:
                self.message = f"no cue {command[1]!r}"
        elif what == "stop":
            actions = m.stop(now)
            self.log.write({"event": "stop", "t": now})
        elif what == "hold":
            actions = m.hold(now)
        elif what == "resume":
            actions = m.resume(now)
        elif what == "skip":
            actions = m.skip()
        elif what == "back":
            actions = m.back()
        elif what == "panic":
            actions = m.panic(time.perf_counter())
        elif what in ("faster", "slower"):
            actions = m.nudge(1 / NUDGE if what == "faster" else NUDGE, now)
            if not actions:
                self.message = "a nudge needs a running 射節 with a 耦 cycle still ahead"
        elif what == "release":
            self._release(str(command[1]), bool(int(command[2])), time.perf_counter())
        elif what == "quit":
            self.quit = True
        self._act(actions)
        if reply is not None:
            reply(what, self.state())

    def _act(self, actions: list[tuple[Any, ...]]) -> None:
        s = self.sender
        for action in actions:
            kind = action[0]
            if kind == "start":
                if self.clock_out and not self._clock_running:
                    s.send_now(b"\xfa")
                    s.go(CLOCK_KEY, action[2])
                    self._clock_running = True
                s.go(action[1], action[2])
                self._started.add(action[1])
                self._ended.discard(action[1])
            elif kind == "end_at":
                s.end_at(action[1], action[2])
            elif kind == "cancel":
                s.cancel(action[1])
            elif kind == "retime":
                s.retime(action[1], action[2], action[3])
            elif kind == "hold":
                s.hold()
                if self._clock_running:
                    s.send_now(b"\xfc")
                self.log.write({"event": "hold", "t": time.perf_counter()})
            elif kind == "resume":
                if self._clock_running:
                    s.send_now(b"\xfb")
                s.resume()
                self.log.write({"event": "resume", "t": time.perf_counter()})
            elif kind == "panic":
                s.panic(action[1])
                if self._clock_running:
                    s.cancel(CLOCK_KEY)
                    s.send_now(b"\xfc")
                    self._clock_running = False
                self.log.write({"event": "panic", "stage": action[1], "t": time.perf_counter()})
        if self.machine.done and self._clock_running:
            s.cancel(CLOCK_KEY)
            s.send_now(b"\xfc")
            self._clock_running = False

    def _drain_sender(self) -> None:
        for event in self.sender.new_events():
            if event[0] == "mark":
                _, cue, index, _deadline, t = event
                mark = self._marks.get((cue, index))
                if mark is not None:
                    self._last_jie[cue] = mark
                    self._jie_sent[cue] = (mark, t)
                    self.log.write({"event": "jie", "t": t, "k": mark.k, "n": mark.n,
                                    "cue": cue, "cycle": mark.cycle})
            if event[0] == "ended":
                self._ended.add(event[1])
            if event[0] == "ended" and event[1] != CLOCK_KEY and event[3][0]:
                n, p50, p99, worst = event[3]
                self.log.write({"event": "sent", "cue": event[1], "messages": n,
                                "late_p50_ms": round(p50 * 1000, 4),
                                "late_p99_ms": round(p99 * 1000, 4),
                                "late_max_ms": round(worst * 1000, 4),
                                "missed_frames": event[5] if len(event) > 5 else 0})
            elif event[0] == "error":
                self.message = f"sender: {event[2]}"
            elif event[0] in ("lost", "reconnected"):
                self.message = f"output {event[0]}"

    def _release(self, side: str, hit: bool, now: float) -> None:
        """An archer's release, marked by the judge (key, OSC or MIDI): judged 「不鼓不釋」
        against the running 射節's drum accords, tallied, logged."""
        m = self.machine
        shooting = [c for c in m.running() if self.schedules[c].jie]
        if not shooting:
            self.message = "no 射節 is running: the release is not judged"
            return
        cid = shooting[0]
        span = self.timeline.span(cid)
        jie_s = float(seconds(span.jie_ticks or 0))
        cycle_s = jie_s * span.jie
        sent = self._jie_sent.get(cid)
        if sent is not None:  # anchored on the last 節 actually sent (holds and nudges apply)
            mark, at = sent
            t = mark.cycle * cycle_s + (mark.k - 1) * jie_s + (now - at) / m.runs[cid].factor
        else:
            t = m.cue_time(cid, now)
        try:
            release = Release(t, side, hit)
        except UserError as exc:
            self.message = str(exc)
            return
        self.releases.setdefault(cid, []).append(release)
        cue = self.rite.cue(cid)
        exempt = [frozenset(o.exempt) for o in cue.shooting.ou] if cue.shooting else []
        tally = judge_cycles(self.releases[cid], [float(seconds(x)) for x in span.release_ticks],
                             cycle_s, jie_s * span.listen, self.judge_tolerance_s, exempt)
        self.tallies[cid] = tally
        decision = tally.decisions[-1]
        self.log.write({"event": "release", "cue": cid, "t": round(t, 4),
                        "side": release.side, "hit": release.hit, "counted": decision.counted,
                        "reason": decision.reason, "右": tally.right, "左": tally.left})
        self.message = (f"{release.side} {'hit' if hit else 'miss'} at {t:.2f} s: "
                        f"{'釋' if decision.counted else '不釋'} ({decision.reason})")

    def _flush_log(self) -> None:
        for record in self.machine.log[self._logged:]:
            self.log.write(dict(record))
        self._logged = len(self.machine.log)

    # views ---------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        m = self.machine
        out = {"standby": m.standby.id if m.standby else None, "running": m.running(),
               "held": m.held, "panic": m.panic_stage, "done": m.done}
        if self.tallies:
            cid, tally = list(self.tallies.items())[-1]
            out["tally"] = {"cue": cid, **tally.to_json(), "announcement": tally.announcement()}
            out["tally"].pop("decisions")
        return out

    def snapshot(self) -> Snapshot:
        m = self.machine
        now = time.perf_counter()
        status = {}
        for cid, r in m.runs.items():
            status[cid] = r.status
        cues = [(c.id, c.kind, c.title, status.get(c.id, "")) for c in m.cues]
        running = []
        jie = None
        for cid in m.running():
            r = m.runs[cid]
            elapsed = m.cue_time(cid, now)
            remaining = None if r.end is None else max(0.0, r.end - (m.held_at or now))
            running.append((cid, elapsed, remaining))
            sched = self.schedules[cid]
            if sched.jie:
                last = self._last_jie.get(cid)
                nxt = [j.t * r.factor for j in sched.jie if j.t * r.factor > elapsed]
                if last is not None:
                    jie = (cid, last.k, last.n, (nxt[0] - elapsed) if nxt else None)
        sb = m.standby
        return Snapshot(
            rite=self.rite.title, cues=cues, standby=sb.id if sb else None,
            standby_at=sb.at if sb else "", standby_trigger=(
                sb.trigger + (f":{sb.target}" if sb.target else "")) if sb else "",
            running=running, jie=jie, held=m.held, panic_stage=m.panic_stage,
            message=self.message, done=m.done, control=self.control,
            tally=self._tally_line(),
        )

    def _tally_line(self) -> str:
        if not self.tallies:
            return ""
        cid, tally = list(self.tallies.items())[-1]
        return f"{cid}: 右 {tally.right}  左 {tally.left} — 「{tally.announcement()}」"


# ── remote control ─────────────────────────────────────────────────────────────────────────────

def parse_control(url: str) -> tuple[str, int]:
    """``osc://HOST:PORT`` → (host, port); the host defaults to 127.0.0.1."""
    if not url.startswith("osc://"):
        raise UserError(f"--control {url!r}: expected osc://HOST:PORT, e.g. osc://127.0.0.1:53000")
    host, sep, port = url[len("osc://"):].rstrip("/").rpartition(":")
    if not sep:
        host, port = port, "53000"
    try:
        number = int(port)
        if not 0 <= number <= 65535:
            raise ValueError
    except ValueError:
        raise UserError(f"--control {url!r}: bad port {port!r}") from None
    return host or "127.0.0.1", number


def start_osc(player: Player, url: str) -> tuple[str, int]:
    """Serve QLab-style OSC: /go /stop /panic /hold /resume /cue/{id}/start (and /skip, /back);
    each gets a reply ``/reply/<address>`` with the state as JSON, sent to the sender's address.
    Returns the bound (host, port)."""
    from pythonosc.dispatcher import Dispatcher
    from pythonosc.osc_server import ThreadingOSCUDPServer
    from pythonosc.udp_client import SimpleUDPClient

    host, port = parse_control(url)

    def replier(address: str, client: tuple[str, int]) -> Callable[[str, dict], None]:
        def reply(what: str, state: dict) -> None:
            try:
                SimpleUDPClient(client[0], client[1]).send_message(
                    f"/reply{address}", json.dumps(state, ensure_ascii=False))
            except OSError:
                pass
        return reply

    def handler(client: tuple[str, int], address: str, *args: Any) -> None:
        parts = address.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "cue" and parts[2] == "start":
            player.put("start", parts[1], replier(address, client))
        elif len(parts) == 1 and parts[0] in ("go", "stop", "panic", "hold", "resume", "skip",
                                                "back", "quit"):
            player.put(parts[0], replier(address, client))
        elif parts == ["release"] and len(args) == 2:  # /release side hit: 右|左 (right|left), 1|0
            player.put("release", str(args[0]), args[1], replier(address, client))

    dispatcher = Dispatcher()
    dispatcher.set_default_handler(handler, needs_reply_address=True)
    try:
        server = ThreadingOSCUDPServer((host, port), dispatcher)
    except OSError as exc:
        raise UserError(f"--control {url}: cannot bind {host}:{port}: "
                        f"{exc.strerror or exc}") from None
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              name="yuezheng-osc", daemon=True)
    thread.start()

    def close() -> None:
        server.shutdown()
        server.server_close()

    player.add_closer(close)
    bound = server.server_address[:2]
    player.control = f"osc://{bound[0]}:{bound[1]}"
    return bound[0], bound[1]


def parse_trigger(text: str) -> tuple[str, int]:
    """``note:60`` or ``cc:64`` → ("note"|"cc", number)."""
    kind, _, number = text.partition(":")
    try:
        value = int(number)
    except ValueError:
        value = -1
    if kind not in ("note", "cc") or not 0 <= value <= 127:
        raise UserError(f"bad MIDI trigger {text!r}: expected note:N or cc:N (N 0–127)")
    return kind, value


MSC_COMMANDS = {0x01: "go", 0x02: "hold", 0x03: "resume"}  # MSC GO, STOP, RESUME


def midi_command(data: bytes | list[int], mapping: dict[tuple[str, int], str]) -> str | None:
    """What an incoming MIDI message asks: a mapped note-on or CC (value > 0), or MIDI Show
    Control ``F0 7F dev 02 fmt cmd … F7`` GO (→ go), STOP (→ hold), RESUME (→ resume)."""
    msg = bytes(data)
    if not msg:
        return None
    status = msg[0]
    if status == 0xF0:
        if len(msg) >= 6 and msg[1] == 0x7F and msg[3] == 0x02:
            return MSC_COMMANDS.get(msg[5])
        return None
    kind = status & 0xF0
    if kind == 0x90 and len(msg) >= 3 and msg[2] > 0:
        return mapping.get(("note", msg[1]))
    if kind == 0xB0 and len(msg) >= 3 and msg[2] > 0:
        return mapping.get(("cc", msg[1]))
    return None


def start_midi_in(player: Player, spec: str, mapping: dict[tuple[str, int], str]) -> str:
    """Listen on a MIDI input (``jack:PORT`` an existing output to connect from,
    ``jack-virtual:NAME`` a new input others connect to, ``alsa:``/``virtual:`` likewise)."""
    import rtmidi

    from instruments.ports import PortError, parse_spec
    from instruments.ports.base import choose_port
    from instruments.ports.rtmidi import rtmidi_api

    parsed = parse_spec(spec)
    try:
        midi_in = rtmidi.MidiIn(rtmidi_api(parsed.api), f"{player.sender.client_name}-in")
    except (rtmidi.SystemError, RuntimeError) as exc:  # type: ignore[attr-defined]
        raise PortError(f"--midi-in {spec}: cannot open a MIDI input: {exc}") from None
    midi_in.ignore_types(sysex=False, timing=True, active_sense=True)
    try:
        if parsed.virtual:
            midi_in.open_virtual_port(parsed.name)
        else:
            ports = midi_in.get_ports()
            midi_in.open_port(choose_port(ports, parsed.name, parsed.api), "in")
    except BaseException:
        midi_in.delete()
        raise

    def callback(event: tuple[list[int], float], _data: object) -> None:
        what = midi_command(event[0], mapping)
        if what is not None:
            player.put(what)

    midi_in.set_callback(callback)

    def close() -> None:
        midi_in.cancel_callback()
        midi_in.close_port()
        midi_in.delete()

    player.add_closer(close)
    return spec

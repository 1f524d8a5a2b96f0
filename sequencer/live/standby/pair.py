"""Hot standby: a main and a backup machine play one show; the backup takes over, muted until
then, when the main falls silent (docs/standby.md).

- Both load the same sheet; ``show_id`` is the SHA-256 of what the show plays (every cue's
  schedule, the cue list, the settings, ``--auto``). A backup refuses to arm when its main's
  differs.
- The **main** mirrors every command before it carries it out (``offer``): its ``n``-th action
  goes to the backup as a signed OSC bundle time-tagged ``lead_s`` ahead, and the main carries
  it out at that same instant (the player's ``at``). It sends a heartbeat every
  ``heartbeat_s`` carrying its recent actions, and ``bye`` when the show ends on purpose (the
  end of the show, a quit — not a crash or a signal).
- The **backup** starts muted (its sending process plays everything and sends nothing),
  arms on its main's first heartbeat, and hands each action, in order and once, to its player
  at the action's instant (on its own clock: NTP time tags). Its own operator's commands are
  refused while it stands by (quit and take-over excepted). When nothing valid has come from
  the main for ``takeover_s``, it takes over: unmuted where it is, no cue restarted
  (``sequencer.live.sending.muting`` for the notes sounding at that instant).
- Packets are checked by ``sequencer.live.standby.auth`` (HMAC, replay window, show id); a bad one
  is dropped and counted, and the counts reported, rate-limited, through a ``ControlGate``
  (console and show log). Only the main's own valid packets restart the silence clock.
- **A flood is not silence**: refused packets can fill the link's socket and crowd the main's
  out. While refused packets come (``FLOOD_QUIET_S``), the backup asks its main, over a second
  socket of its own (connected to the main: the flood does not reach it), whether it lives: a
  signed ``probe`` each heartbeat, which the main answers to the probe's own address. When the
  silence runs out and refused packets came during it (or just before), the backup takes over
  only after ``confirm_s`` more without any answer (a probe every ``PROBE_EVERY_S``); an answer
  keeps it muted. Either way the alarm goes to the operators' screens: the backup's (status line,
  message, show log) and the main's (the probe says why it was sent).
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from cues.errors import UserError
from sequencer.live.control.gate import ControlGate
from sequencer.live.player.player import Player
from sequencer.live.protocol import PlayerCommand, Quit, TakeOver
from sequencer.live.standby.auth import ReplayWindow, show_id
from sequencer.live.standby.packets import (
    MAX_PACKET,
    RECENT,
    BadPacket,
    PeerAction,
    PeerPacket,
    decode,
)
from sequencer.live.standby.packets import encode as encode_packet

ROLES = ("main", "backup")  # the two machines of a pair (live --role)
DEFAULT_LEAD_MS = 50.0
DEFAULT_HEARTBEAT_MS = 100.0
DEFAULT_TAKEOVER_MS = 500.0
DEFAULT_CONFIRM_MS = 250.0  # under a flood: how long probes go unanswered before a takeover
BYE_COPIES = 3
ACTION_COPIES = 2  # each action is sent twice at once, then carried by the next heartbeats
RCVBUF_BYTES = 1 << 20  # asked for the link's socket (the kernel caps it at rmem_max)
DRAIN_MAX = 256  # packets read from a socket before the silence is looked at again
PROBE_EVERY_S = 0.025  # while confirming a silence under a flood
FLOOD_QUIET_S = 1.0  # refused packets this recent: a flood (probe each heartbeat)
ALARM_EVERY_S = 5.0  # the same alarm is said again at most this often
ALARM_SHOWN_S = 30.0  # an alarm stays on the status line this long


@dataclass(frozen=True)
class StandbyOptions:
    role: str  # main | backup
    peer: tuple[str, int]  # where this machine sends
    listen: tuple[str, int]  # where it receives
    key: bytes
    lead_s: float = DEFAULT_LEAD_MS / 1000
    heartbeat_s: float = DEFAULT_HEARTBEAT_MS / 1000
    takeover_s: float = DEFAULT_TAKEOVER_MS / 1000
    confirm_s: float = DEFAULT_CONFIRM_MS / 1000


def parse_peer(url: str) -> tuple[str, int]:
    """``osc.udp://HOST:PORT`` → (host, port)."""
    prefix = "osc.udp://"
    host, sep, port = url[len(prefix):].rstrip("/").rpartition(":")
    if not url.startswith(prefix) or not sep or not host:
        raise UserError(f"--peer {url!r}: expected osc.udp://HOST:PORT, e.g. "
                        f"osc.udp://10.0.0.2:53100")
    return host.strip("[]"), _port(port, f"--peer {url}")


def parse_listen(text: str | None, peer: tuple[str, int]) -> tuple[str, int]:
    """``[ADDR:]PORT`` → (addr, port): loopback unless an address is given; None: loopback
    on the peer's port."""
    if text is None:
        return "127.0.0.1", peer[1]
    addr, _, port = text.rpartition(":")
    return addr.strip("[]") or "127.0.0.1", _port(port, f"--listen {text}")


def _port(text: str, where: str) -> int:
    try:
        number = int(text)
        if 1 <= number <= 65535:
            return number
    except ValueError:
        pass
    raise UserError(f"{where}: bad port {text!r}")


def standby_options(role: str, peer: str | None, listen: str | None, key: bytes,
                    lead_ms: float, heartbeat_ms: float, takeover_ms: float) -> StandbyOptions:
    """The options of ``live --role``, checked (UserError names the flag at fault)."""
    if peer is None:
        raise UserError(f"--role {role} needs --peer osc.udp://HOST:PORT (the other machine)")
    for flag, value, low in (("--peer-lead", lead_ms, 0.0), ("--heartbeat", heartbeat_ms, 1.0),
                             ("--takeover", takeover_ms, 1.0)):
        if not low <= value <= 60_000:
            raise UserError(f"{flag} {value:g}: must be {low:g} to 60000 ms")
    if takeover_ms <= 2 * heartbeat_ms:
        raise UserError(f"--takeover {takeover_ms:g} ms must be more than two heartbeats "
                        f"({2 * heartbeat_ms:g} ms): a lost heartbeat is not a dead main")
    target = parse_peer(peer)
    return StandbyOptions(role, target, parse_listen(listen, target), key, lead_ms / 1000,
                          heartbeat_ms / 1000, takeover_ms / 1000)


def _show_parts(player: Player) -> Iterator[bytes]:
    yield repr(player.settings).encode()
    yield f"{player.rite.id}|auto={player.machine.auto}".encode()
    for info in player.machine.cues:
        yield repr(info).encode()
        sched = player.schedules[info.id]
        yield repr((sched.cue, sched.ticks, sched.rest_points, sched.jie, sched.cycle_s)).encode()
        yield b"".join(len(m).to_bytes(1, "big") + m for m in sched.messages)


def show_id_of(player: Player) -> str:
    """What a show plays, as one hash (see the module docstring)."""
    return show_id(_show_parts(player))


def wall_to_show(wall: float) -> float:
    """Seconds since the epoch (an OSC time tag) → this machine's show clock."""
    return wall - (time.time() - time.perf_counter())


def _link_socket(listen: tuple[str, int]) -> socket.socket:
    """The link's socket, bound to ``listen``, with a bigger receive buffer (UserError if it
    cannot be bound)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF_BYTES)
        sock.bind(listen)
    except OSError as exc:
        sock.close()
        raise UserError(f"--listen {listen[0]}:{listen[1]}: cannot bind "
                        f"({exc.strerror or exc})") from None
    sock.setblocking(False)
    return sock


def _probe_socket(peer: tuple[str, int]) -> socket.socket | None:
    """A backup's second socket: an ephemeral port connected to its main (the kernel drops what
    comes from anywhere else); None if none can be made (probes then go from the link's
    socket)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.connect(peer)
    except OSError:
        sock.close()
        return None
    sock.setblocking(False)
    return sock


class Standby:
    """One machine's end of the link (see the module docstring); attach before ``open()``."""

    def __init__(self, player: Player, options: StandbyOptions) -> None:
        self.player, self.options, self.role = player, options, options.role
        self.show = show_id_of(player)
        self.sock = _link_socket(options.listen)
        self.probe_sock = _probe_socket(options.peer) if self.role == "backup" else None
        self.window = ReplayWindow()
        self.lock = threading.Lock()
        self.actions: list[PeerAction] = []  # main: mirrored so far
        self.applied = 0  # backup: actions handed to the player
        self.pending: dict[int, PeerAction] = {}
        self.armed = self.role == "main"
        self.live = self.role == "main"
        self.refused: str | None = None  # why a backup would not arm
        self.heard_at: float | None = None  # show clock of the last valid packet
        self.peer_live = False
        self.peer_position = ""
        self.said_bye = False
        self.took_over_at: float | None = None
        self.takeover_note: dict[str, Any] = {}  # how the silence was confirmed, for the log
        self.position = ""
        self.seq = time.time_ns() // 1000
        # refused packets (the receiving thread's; see _refuse_packet)
        self.dropped = 0  # all refused so far
        self.flood_count = 0  # refused in this flood (since the flood's first)
        self.flood_from = ""
        self.last_refused_at: float | None = None
        self._unreported = 0
        self._last_why = ""
        # confirming a silence under a flood (the receiving thread's)
        self.confirm_until: float | None = None
        self.probes = 0  # sent while confirming
        self.last_probe_at = -1e9
        self.last_answer_at = -1e9  # main: the last probe answered
        self.alarm = ""
        self.alarm_at = -1e9
        self._alarm_said: dict[str, float] = {}
        self._alarm_times: dict[str, int] = {}
        self.closed = threading.Event()
        self.gate = ControlGate(player, "peer", "peer")
        player.attach_peer(self)
        player.add_watcher(self._watch)
        player.add_closer(self.close)
        self._threads = [threading.Thread(target=f, name=f"yuezheng-standby-{n}", daemon=True)
                         for n, f in (("rx", self._receive_loop), ("hb", self._heartbeat_loop))]
        for thread in self._threads:
            thread.start()

    # the player's side -----------------------------------------------------------------------
    def offer(self, command: PlayerCommand, at: float, origin: str) -> str | None:
        """Asked before each command (``PeerHooks``): mirror it (main), or refuse it (a backup
        standing by)."""
        if isinstance(command, TakeOver):
            return self._take_over(origin) if self.role == "backup" else "the main is live"
        if self.role == "main":
            self._mirror(command, at)
            return None
        if origin == "peer" or self.live or isinstance(command, Quit):
            return None
        return "standing by: commands come from the main (or take over)"

    def status(self) -> dict[str, Any]:
        now = time.perf_counter()
        heard = None if self.heard_at is None else round(now - self.heard_at, 3)
        out = {"role": self.role, "live": self.live, "armed": self.armed,
               "peer_heard_s": heard, "peer_live": self.peer_live, "show": self.show[:12],
               "refused_packets": self.dropped}
        if self.alarm and now - self.alarm_at < ALARM_SHOWN_S:
            out["alarm"] = self.alarm
        out["line"] = self._line(heard) + (f"; ALARM: {out['alarm']}" if "alarm" in out else "")
        return out

    def _line(self, heard: float | None) -> str:
        peer = "backup" if self.role == "main" else "main"
        seen = f"{peer} not heard" if heard is None else (
            f"{peer} {'LIVE' if self.peer_live else 'muted' if peer == 'backup' else 'live'}"
            f" at {self.peer_position or '—'}, heard {heard:.2f} s ago")
        if self.refused:
            return f"BACKUP — NOT ARMED: {self.refused}"
        if self.role == "main":
            return f"MAIN — LIVE; {seen}" + ("; BOTH LIVE" if self.peer_live else "")
        if self.live:
            return f"BACKUP — LIVE (took over); {seen}"
        return f"BACKUP — muted, {'armed' if self.armed else 'not armed'}; {seen}"

    def _watch(self) -> None:
        """After each step, in the player's thread: where the show is, for the heartbeat."""
        marks = list(self.player.marks.last.items())
        self.position = f"{marks[-1][0]} 節 {marks[-1][1].k}/{marks[-1][1].n}" if marks else ""

    def _take_over(self, origin: str) -> str | None:
        with self.lock:
            if self.live:
                return "this machine is live already"
            self.live = True
            self.took_over_at = time.perf_counter()
        silent = None if self.heard_at is None else self.took_over_at - self.heard_at
        self.player.log.write({"event": "standby", "state": "takeover", "how": origin,
                               "t": self.took_over_at, "main_position": self.peer_position,
                               "silent_ms": None if silent is None else round(silent * 1e3, 1),
                               **self.takeover_note})
        return None

    def _mirror(self, command: PlayerCommand, at: float) -> None:
        wall = at + (time.time() - time.perf_counter())
        with self.lock:
            action = PeerAction(len(self.actions) + 1, wall, command)
            self.actions.append(action)
        for _ in range(ACTION_COPIES):
            self._send("action", (action,), wall)

    # the alarm -------------------------------------------------------------------------------
    def _alarm(self, kind: str, text: str, record: dict[str, Any]) -> None:
        """Raise the alarm ``text`` on this machine's screens (the status line; the message
        and the show log's ``record`` at most once an ``ALARM_EVERY_S`` for one ``kind``, with
        how many times it was raised meanwhile)."""
        now = time.perf_counter()
        self.alarm, self.alarm_at = text, now
        self._alarm_times[kind] = self._alarm_times.get(kind, 0) + 1
        if now - self._alarm_said.get(kind, -1e9) < ALARM_EVERY_S:
            return
        self._alarm_said[kind] = now
        self.player.log.write({"event": "standby", "state": kind, "t": now,
                               "times": self._alarm_times.pop(kind), **record})
        self.player.status.say(f"hot standby ALARM: {text}")

    # the network's side ----------------------------------------------------------------------
    def _packet(self, kind: str, carried: tuple[PeerAction, ...] = (),
                position: str | None = None) -> PeerPacket:
        with self.lock:
            self.seq += 1
            return PeerPacket(self.show, self.seq, kind, self.role, self.live,
                              len(self.actions), self.position if position is None else position,
                              carried)

    def _send(self, kind: str, carried: tuple[PeerAction, ...] = (),
              timetag: float | None = None, to: tuple[str, int] | None = None) -> None:
        data = encode_packet(self.options.key, self._packet(kind, carried), timetag)
        try:
            self.sock.sendto(data, to or self.options.peer)
        except OSError:
            pass  # the peer is unreachable: its silence is its own to notice

    def _probe(self, why: str) -> None:
        """Ask the main whether it lives, over the second socket (``why``: for its screens)."""
        self.last_probe_at = time.perf_counter()
        data = encode_packet(self.options.key, self._packet("probe", position=why[:200]))
        try:
            if self.probe_sock is not None:
                self.probe_sock.send(data)
            else:
                self.sock.sendto(data, self.options.peer)
        except OSError:
            pass  # unreachable (or an ICMP error from the last probe): the silence decides

    def _heartbeat_loop(self) -> None:
        while not self.closed.wait(self.options.heartbeat_s):
            with self.lock:
                recent = tuple(self.actions[-RECENT:])
            self._send("heartbeat", recent)
            if (self.role == "backup" and not self.live and self._flooded()
                    and self.confirm_until is None):
                self._probe(self._flood_words())

    def _flooded(self, since: float | None = None) -> bool:
        """Refused packets came within FLOOD_QUIET_S (or after ``since``)."""
        last = self.last_refused_at
        if last is None:
            return False
        return last > since if since is not None else time.perf_counter() - last < FLOOD_QUIET_S

    def _flood_words(self) -> str:
        heard = "" if self.heard_at is None else (
            f", the main last heard {time.perf_counter() - self.heard_at:.2f} s ago")
        return (f"{self.flood_count} refused packet(s) at the backup's port "
                f"{self.options.listen[1]} (last from {self.flood_from}){heard}")

    def _receive_loop(self) -> None:
        selector = selectors.DefaultSelector()
        for sock in (self.sock, self.probe_sock):
            if sock is not None:
                selector.register(sock, selectors.EVENT_READ)
        try:
            while not self.closed.is_set():
                try:
                    ready = selector.select(self._wait_s())
                except (OSError, ValueError):
                    return  # closed
                # the second socket first: the main's answers are never behind a flood
                for key, _ in sorted(ready, key=lambda r: r[0].fileobj is self.sock):
                    self._drain(key.fileobj)  # type: ignore[arg-type]
                self._report_refused()
                self._check_silence()
        finally:
            selector.close()

    def _drain(self, sock: socket.socket) -> None:
        """Read what waits on ``sock``, at most DRAIN_MAX packets (then the silence is looked
        at, and the rest read on the next turn)."""
        for _ in range(DRAIN_MAX):
            try:
                data, sender = sock.recvfrom(MAX_PACKET + 1)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # closed, or an ICMP error on the probe socket
            self._receive(data, sender)

    def _wait_s(self) -> float:
        now = time.perf_counter()
        if self.confirm_until is not None:
            return max(0.0005, min(self.last_probe_at + PROBE_EVERY_S, self.confirm_until)
                       - now)
        if self.role == "main" or not self.armed or self.live or self.heard_at is None:
            return 0.1
        left = self.heard_at + self.options.takeover_s - now
        return min(0.1, max(0.0005, left))

    def _refuse_packet(self, why: str, sender: tuple[str, int]) -> None:
        """Count a refused packet (cheaply: a flood comes through here); reported by
        ``_report_refused`` once a turn, and the gate reports at most once a second. The
        silence clock is not touched."""
        now = time.perf_counter()
        if self.last_refused_at is None or now - self.last_refused_at >= FLOOD_QUIET_S:
            self.flood_count = 0
        self.last_refused_at = now
        self.dropped += 1
        self.flood_count += 1
        self._unreported += 1
        self._last_why = why
        self.flood_from = f"{sender[0]}:{sender[1]}"

    def _report_refused(self) -> None:
        if not self._unreported:
            return
        count, self._unreported = self._unreported, 0
        self.gate.complain(f"from {self.flood_from}: {self._last_why}", count)
        if self.role != "backup" or self.live:
            return
        if self.flood_count > count:  # the same flood: the alarm stays up, with its count
            self.alarm = f"{self.flood_count} refused packet(s) at the link's port (from " \
                f"{self.flood_from}): the main's silence is confirmed by a probe"
            self.alarm_at = time.perf_counter()
        else:
            self._alarm("flood", f"{count} refused packet(s) at the link's port (from "
                        f"{self.flood_from}): a silence of the main will be confirmed by a "
                        f"probe before any takeover",
                        {"refused": count, "from": self.flood_from})

    def _receive(self, data: bytes, sender: tuple[str, int]) -> None:
        try:
            packet = decode(self.options.key, data)
        except BadPacket as exc:
            self._refuse_packet(str(exc), sender)
            return
        if packet is None:
            self._refuse_packet("no valid HMAC", sender)
            return
        if packet.role == self.role:
            self._refuse_packet(f"another {packet.role}", sender)
            return
        if packet.show != self.show:
            if self.role == "backup" and not self.armed:
                self._refuse(f"the main plays another show (id {packet.show[:12]}, here "
                             f"{self.show[:12]}): load the same sheet, readings, variants and "
                             f"settings on both")
            else:
                self._refuse_packet(f"another show {packet.show[:12]}", sender)
            return
        if not self.window.accept(packet.seq):
            self._refuse_packet(f"replayed (sequence {packet.seq})", sender)
            return
        silent = None if self.heard_at is None else time.perf_counter() - self.heard_at
        self.heard_at = time.perf_counter()
        self.peer_live = packet.live
        if self.role == "main":
            if packet.kind == "probe":
                self._answer(packet, sender)
            else:
                self.peer_position = packet.position
            return
        self.peer_position = packet.position
        if self.confirm_until is not None:
            self._confirmed_alive(packet, silent or 0.0)
        self._from_main(packet)

    def _answer(self, probe: PeerPacket, sender: tuple[str, int]) -> None:
        """The main: answer a backup's probe at the address it came from, and raise the alarm
        (the probe says what the backup saw)."""
        now = time.perf_counter()
        if now - self.last_answer_at >= PROBE_EVERY_S / 2:
            self.last_answer_at = now
            with self.lock:
                recent = tuple(self.actions[-RECENT:])
            self._send("answer", recent, to=sender)
        self._alarm("probed", f"the backup probes (it may not hear us): {probe.position}",
                    {"from": f"{sender[0]}:{sender[1]}", "why": probe.position})

    def _confirmed_alive(self, packet: PeerPacket, silent: float) -> None:
        """A packet of the main's came while the backup confirmed a silence: no takeover."""
        self.confirm_until = None
        self._alarm("main-alive", f"the main answered ({packet.kind}) after {silent:.2f} s of "
                    f"silence while {self.flood_count} refused packet(s) came: not taking over",
                    {"how": packet.kind, "silent_ms": round(silent * 1e3, 1),
                     "probes": self.probes, "refused": self.flood_count})

    def _from_main(self, packet: PeerPacket) -> None:
        if self.refused:
            return
        if packet.kind == "bye":
            if not self.said_bye and not self.live:
                self.said_bye = True
                self.player.log.write({"event": "standby", "state": "main-ended",
                                       "t": time.perf_counter()})
                self.player.put(Quit(), origin="peer")
            return
        if self.live:
            return  # taken over: the main's actions no longer apply here
        for action in packet.carried:
            if action.n > self.applied:
                self.pending[action.n] = action
        if not self.armed and packet.kind == "heartbeat":
            missing = [n for n in range(1, packet.actions + 1) if n not in self.pending]
            if missing:
                self._refuse(f"started too late: {len(missing)} of the main's {packet.actions} "
                             f"actions are gone; start the backup before the main")
                return
            self.armed = True
            self.player.log.write({"event": "standby", "state": "armed", "show": self.show,
                                   "t": time.perf_counter()})
        while self.armed and self.applied + 1 in self.pending:
            action = self.pending.pop(self.applied + 1)
            self.applied += 1
            self.player.put(action.command, origin="peer", at=wall_to_show(action.at))

    def _refuse(self, why: str) -> None:
        if self.refused is None:
            self.refused = why
            self.player.log.write({"event": "standby", "state": "refused", "why": why,
                                   "t": time.perf_counter()})
            self.player.put(Quit(), origin="standby")

    def _check_silence(self) -> None:
        """Take over when the main has been silent for ``takeover_s`` — and, if refused packets
        came during that silence (or just before it), for ``confirm_s`` more in which it
        answered none of the probes sent."""
        if not (self.role == "backup" and self.armed and not self.live and not self.said_bye
                and self.heard_at is not None and self.took_over_at is None):
            return
        now = time.perf_counter()
        if now - self.heard_at <= self.options.takeover_s:
            self.confirm_until = None
            return
        if self.confirm_until is None:
            if not self._flooded(since=self.heard_at - self.options.takeover_s):
                self._ask_takeover({})
                return
            self.confirm_until = now + self.options.confirm_s
            self.probes = 0
            self.player.log.write({"event": "standby", "state": "confirming", "t": now,
                                   "refused": self.flood_count})
        if now < self.confirm_until:
            if now - self.last_probe_at >= PROBE_EVERY_S:
                self.probes += 1
                self._probe(f"confirming the main's silence: {self._flood_words()}")
            return
        note = {"confirmed": "no answer to probes", "probes": self.probes,
                "refused": self.flood_count}
        self.confirm_until = None
        self._alarm("takeover-under-flood", f"taking over: the main was silent "
                    f"{now - self.heard_at:.2f} s and answered none of {self.probes} probes, "
                    f"while {self.flood_count} refused packet(s) came", note)
        self._ask_takeover(note)

    def _ask_takeover(self, note: dict[str, Any]) -> None:
        self.takeover_note = note
        self.took_over_at = -1.0  # asked once; _take_over sets the instant
        self.player.put(TakeOver(), origin="standby")

    # the end ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the link; a main whose show ended on purpose says ``bye`` first."""
        if self.closed.is_set():
            return
        player = self.player
        if self.role == "main" and (player.quit or player.machine.done):
            for _ in range(BYE_COPIES):
                self._send("bye")
        self.closed.set()
        for thread in self._threads:
            thread.join(1.0)
        self.sock.close()
        if self.probe_sock is not None:
            self.probe_sock.close()

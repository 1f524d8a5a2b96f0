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
  is dropped and reported, rate-limited, through a ``ControlGate`` (console and show log).
"""

from __future__ import annotations

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
BYE_COPIES = 3
ACTION_COPIES = 2  # each action is sent twice at once, then carried by the next heartbeats


@dataclass(frozen=True)
class StandbyOptions:
    role: str  # main | backup
    peer: tuple[str, int]  # where this machine sends
    listen: tuple[str, int]  # where it receives
    key: bytes
    lead_s: float = DEFAULT_LEAD_MS / 1000
    heartbeat_s: float = DEFAULT_HEARTBEAT_MS / 1000
    takeover_s: float = DEFAULT_TAKEOVER_MS / 1000


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


class Standby:
    """One machine's end of the link (see the module docstring); attach before ``open()``."""

    def __init__(self, player: Player, options: StandbyOptions) -> None:
        self.player, self.options, self.role = player, options, options.role
        self.show = show_id_of(player)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.sock.bind(options.listen)
        except OSError as exc:
            self.sock.close()
            raise UserError(f"--listen {options.listen[0]}:{options.listen[1]}: cannot bind "
                            f"({exc.strerror or exc})") from None
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
        self.position = ""
        self.seq = time.time_ns() // 1000
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
               "peer_heard_s": heard, "peer_live": self.peer_live, "show": self.show[:12]}
        out["line"] = self._line(heard)
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
                               "silent_ms": None if silent is None else round(silent * 1e3, 1)})
        return None

    def _mirror(self, command: PlayerCommand, at: float) -> None:
        wall = at + (time.time() - time.perf_counter())
        with self.lock:
            action = PeerAction(len(self.actions) + 1, wall, command)
            self.actions.append(action)
        for _ in range(ACTION_COPIES):
            self._send("action", (action,), wall)

    # the network's side ----------------------------------------------------------------------
    def _send(self, kind: str, carried: tuple[PeerAction, ...] = (),
              timetag: float | None = None) -> None:
        with self.lock:
            self.seq += 1
            packet = PeerPacket(self.show, self.seq, kind, self.role, self.live,
                                len(self.actions), self.position, carried)
        try:
            self.sock.sendto(encode_packet(self.options.key, packet, timetag), self.options.peer)
        except OSError:
            pass  # the peer is unreachable: its silence is its own to notice

    def _heartbeat_loop(self) -> None:
        while not self.closed.wait(self.options.heartbeat_s):
            with self.lock:
                recent = tuple(self.actions[-RECENT:])
            self._send("heartbeat", recent)

    def _receive_loop(self) -> None:
        while not self.closed.is_set():
            try:
                self.sock.settimeout(self._wait_s())
                data, sender = self.sock.recvfrom(MAX_PACKET + 1)
            except TimeoutError:
                data = None
            except OSError:
                return  # closed
            if data is not None:
                self._receive(data, f"{sender[0]}:{sender[1]}")
            self._check_silence()

    def _wait_s(self) -> float:
        if self.role == "main" or not self.armed or self.live or self.heard_at is None:
            return 0.1
        left = self.heard_at + self.options.takeover_s - time.perf_counter()
        return min(0.1, max(0.0005, left))

    def _receive(self, data: bytes, sender: str) -> None:
        try:
            packet = decode(self.options.key, data)
        except BadPacket as exc:
            self.gate.complain(f"from {sender}: {exc}")
            return
        if packet is None:
            self.gate.complain(f"from {sender}: no valid HMAC")
            return
        if packet.role == self.role:
            self.gate.complain(f"from {sender}: another {packet.role}")
            return
        if packet.show != self.show:
            if self.role == "backup" and not self.armed:
                self._refuse(f"the main plays another show (id {packet.show[:12]}, here "
                             f"{self.show[:12]}): load the same sheet, readings, variants and "
                             f"settings on both")
            else:
                self.gate.complain(f"from {sender}: another show {packet.show[:12]}")
            return
        if not self.window.accept(packet.seq):
            self.gate.complain(f"from {sender}: replayed (sequence {packet.seq})")
            return
        self.heard_at = time.perf_counter()
        self.peer_live, self.peer_position = packet.live, packet.position
        if self.role == "backup":
            self._from_main(packet)

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
        if (self.role == "backup" and self.armed and not self.live and not self.said_bye
                and self.heard_at is not None and self.took_over_at is None
                and time.perf_counter() - self.heard_at > self.options.takeover_s):
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

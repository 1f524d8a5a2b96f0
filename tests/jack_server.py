"""JACK servers of the tests' own, started and stopped the one safe way.

A jackd killed by SIGKILL or by SIGPIPE keeps its slot in JACK's registry of servers, which
holds eight; with eight stale slots no server starts on the machine.  So every jackd a test
starts is started by :func:`popen_jackd` — with Python's ignored SIGPIPE inherited
(``restore_signals=False``: jackd writes to the sockets of clients that died) — and stopped by
:func:`stop_jackd`, with SIGTERM.  :class:`OwnServer` is a dummy server under a unique name
(never the shared default one), with a JACK MIDI receiver on it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def popen_jackd(argv: list[str], **popen_args: object) -> subprocess.Popen:
    """Start ``argv`` (a jackd command line, possibly behind ``ip netns exec``) with SIGPIPE
    left ignored, so a dead client's socket cannot kill it."""
    return subprocess.Popen(argv, restore_signals=False, **popen_args)  # type: ignore[call-overload]


def stop_jackd(proc: subprocess.Popen, timeout: float = 10.0) -> bool:
    """SIGTERM ``proc`` (never SIGKILL: that leaks a registry slot) and reap it; False if it
    is still running after ``timeout`` seconds."""
    if proc.poll() is not None:
        return True
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


class OwnServer:
    """A dummy JACK server of this test's own, under a unique name."""

    def __init__(self, name: str = "yz-restart") -> None:
        self.name = f"{name}-{os.getpid()}"
        self.env = dict(os.environ, JACK_DEFAULT_SERVER=self.name, JACK_NO_START_SERVER="1")
        self.proc: subprocess.Popen | None = None
        self.log = tempfile.TemporaryFile()  # what jackd says (a pipe left unread would fill)

    def start(self) -> None:
        """Start the server and wait until it takes clients (AssertionError if it does not)."""
        self.log.seek(0)
        self.log.truncate()
        self.proc = popen_jackd(["jackd", "-n", self.name, "-d", "dummy", "-r", "48000",
                                 "-p", "256"], stdout=self.log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        waited = subprocess.run(["jack_wait", "-w", "-t", "10"], env=self.env,
                                capture_output=True, timeout=20)
        if waited.returncode != 0 or self.proc.poll() is not None:
            self.stop()
            self.log.seek(0)
            raise AssertionError(f"jackd -n {self.name} did not start: "
                                 f"{self.log.read().decode(errors='replace')[-1500:]}")

    def stop(self) -> None:
        """Stop the server (SIGTERM) and reap it."""
        if self.proc is not None:
            assert stop_jackd(self.proc), f"jackd -n {self.name} outlived SIGTERM"

    def receiver(self) -> subprocess.Popen:
        """A JACK receiver on this server, in a process of its own (a process's libjack
        keeps to one server): it prints its port's name, and at a line on its stdin the
        messages it got, in hex."""
        proc = subprocess.Popen([sys.executable, "-c", RECEIVER, f"yzrx{os.getpid()}"],
                                cwd=ROOT, env=self.env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        proc.port_name = proc.stdout.readline().strip()  # type: ignore[attr-defined]
        return proc


RECEIVER = """
import sys
from instruments.ports.jacklib import JackMidiInput
rx = JackMidiInput(sys.argv[1]).open()
print(rx.own_name, flush=True)
sys.stdin.readline()
print(" ".join(data.hex() for _, data, _, _ in list(rx.messages)), flush=True)
"""


def received(receiver: subprocess.Popen) -> list[bytes]:
    """What a :data:`RECEIVER` process got, in order (it ends after saying)."""
    out, _ = receiver.communicate("\n", timeout=10)
    return [bytes.fromhex(h) for h in out.split()]

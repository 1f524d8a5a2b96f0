"""A JACK server that dies, restarts or stalls under a live show whose output is its own
(``jack-virtual:NAME``, ``pyo:jack``): the show tells the truth (``OUTPUT LOST …``, exit 1, a
log ``check`` refuses), re-creates its port on a server that comes back, and leaves nothing
sounding there.

Each test starts a dummy server of its own under a unique name (``tests.jack_server``) and runs
the show and the receivers with ``JACK_DEFAULT_SERVER`` set to it: the shared server is never
touched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.jack_server import OwnServer, received
from tests.test_ports_jack import _unsilenced

pytestmark = pytest.mark.jack

ROOT = Path(__file__).resolve().parent.parent
SHOW = ("live", "xiang-she", "--from", "she-jie", "--until", "she-jie", "--jie-seconds", "0.5",
        "--auto")


def _ports(server: OwnServer) -> list[str]:
    """The server's ports; none while ``jack_lsp`` does not answer within 20 s (seen in an
    xrun storm, a server booting pyo's client: the caller's own deadline bounds the wait)."""
    try:
        out = subprocess.run(["jack_lsp"], env=server.env, capture_output=True, text=True,
                             timeout=20).stdout
    except subprocess.TimeoutExpired:
        return []
    return out.split()


def _wait_port(server: OwnServer, name: str, proc: subprocess.Popen,
               timeout: float = 90.0) -> bool:
    """True once a port ``name`` is on the server (False: time out, or the show ended)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if name in _ports(server):
            return True
        time.sleep(0.2)
    return False


def _connect(server: OwnServer, source: str, rx: subprocess.Popen) -> None:
    done = subprocess.run(["jack_connect", source, rx.port_name],  # type: ignore[attr-defined]
                          env=server.env, capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr


def _show(server: OwnServer, output: str, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "cli.py"), *SHOW, "--output", output,
                             "--log", str(log)], cwd=ROOT, env=server.env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _check_refuses(log: Path) -> str:
    """`check LOG` fails the show's log (exit 4), naming the loss."""
    done = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", str(log),
                           "--verbose"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "the output was lost" in done.stdout, done.stdout
    return done.stdout


def test_jack_virtual_rejoins_a_restarted_server(tmp_path: Path) -> None:
    """Killed mid-show and started again: the port is registered again under its name, the
    show goes on to its end there, nothing is left sounding, and the summary, exit code and
    log say the output was lost and regained."""
    server = OwnServer("yz-virt")
    server.start()
    name = f"yzv{os.getpid()}"
    log = tmp_path / "show.jsonl"
    proc = _show(server, f"jack-virtual:{name}", log)
    receivers: list[subprocess.Popen] = []
    try:
        assert _wait_port(server, f"yuezheng:{name}", proc), proc.communicate()
        receivers.append(server.receiver())
        _connect(server, f"yuezheng:{name}", receivers[0])
        time.sleep(2.5)
        server.stop()
        assert any(m[0] & 0xF0 == 0x90 for m in received(receivers[0])), "nothing was heard"
        time.sleep(1)
        server.start()
        assert _wait_port(server, f"yuezheng:{name}", proc, 10.0), "the port was not re-created"
        receivers.append(server.receiver())
        _connect(server, f"yuezheng:{name}", receivers[1])
        out, err = proc.communicate(timeout=90)
        assert proc.returncode == 1, out + err
        assert "OUTPUT LOST at" in out and "regained at" in out, out
        assert "delivered: every message on time" not in out
        assert "not delivered whole" in err and "Traceback" not in err, err
        after = received(receivers[1])
        assert sum(m[0] & 0xF0 == 0x90 for m in after) > 10, "nothing reached the new server"
        assert _unsilenced(after) == set()
        _check_refuses(log)
    finally:
        for child in [proc, *receivers]:
            if child.poll() is None:
                child.kill()
        server.stop()


@pytest.mark.parametrize("how", ["dies", "stalls"])
def test_jack_virtual_tells_a_dead_or_stalled_server(tmp_path: Path, how: str) -> None:
    """A server that dies for good: "never regained"; one that stops running cycles for two
    seconds (SIGSTOP, SIGCONT): lost and regained. Exit 1 and a log `check` refuses, both."""
    server = OwnServer(f"yz-{how}")
    server.start()
    name = f"yzv{os.getpid()}"
    log = tmp_path / "show.jsonl"
    proc = _show(server, f"jack-virtual:{name}", log)
    try:
        assert _wait_port(server, f"yuezheng:{name}", proc), proc.communicate()
        time.sleep(2.5)
        assert server.proc is not None
        if how == "dies":
            server.stop()
        else:
            server.proc.send_signal(signal.SIGSTOP)
            time.sleep(2.0)
            server.proc.send_signal(signal.SIGCONT)
        out, err = proc.communicate(timeout=90)
        assert proc.returncode == 1, out + err
        assert "OUTPUT LOST at" in out, out
        assert ("never regained" if how == "dies" else "regained at") in out, out
        assert "Traceback" not in err and "internal error" not in err, err
        _check_refuses(log)
    finally:
        if proc.poll() is None:
            proc.kill()
        if server.proc is not None and server.proc.poll() is None:
            server.proc.send_signal(signal.SIGCONT)
        server.stop()


def test_pyo_rejoins_a_restarted_server_or_says_it_never_did(tmp_path: Path) -> None:
    """`--output pyo:jack`: a JACK death is no "bad input" (exit 2) but an output lost; pyo's
    server is booted again on the server that comes back (its ports reappear), and the summary,
    exit 1 and the log say so."""
    server = OwnServer("yz-pyo")
    server.start()
    log = tmp_path / "show.jsonl"
    proc = _show(server, "pyo:jack", log)
    try:
        assert _wait_port(server, "yuezheng:output_1", proc), proc.communicate()
        time.sleep(2.5)
        server.stop()
        time.sleep(1)
        server.start()
        assert _wait_port(server, "yuezheng:output_1", proc, 15.0), "pyo was not booted again"
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 1, out + err
        assert "OUTPUT LOST at" in out and "regained at" in out, out
        assert "sending process ended" not in err and "Traceback" not in err, err
        assert "Pyo error" not in out + err
        _check_refuses(log)
    finally:
        if proc.poll() is None:
            proc.kill()
        server.stop()

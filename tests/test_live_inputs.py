"""Odd input at the operator's console is answered, never an internal error: the ``--plain``
reader (digits that are not ASCII, huge lines, bytes that are not UTF-8, control characters, a
closed standard input) and the curses console on terminals curses cannot fully drive."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sequencer.live.protocol import PickPiece, Quit
from sequencer.live.screens.plain import MAX_LINE_BYTES, TypedLines, plain_command
from tests.timing import delivered, timing_flaky

ROOT = Path(__file__).resolve().parent.parent
SHOW = [sys.executable, str(ROOT / "cli.py"), "live", "xiang-she", "--from", "she-jie",
        "--until", "she-jie", "--output", "memory:"]

class _Queue:
    """What ``plain_command`` needs of a player: ``put``."""

    def __init__(self) -> None:
        self.queue: list = []

    def put(self, command, origin: str = "") -> None:
        self.queue.append(command)

def test_piece_numbers_are_ascii_digits() -> None:
    player = _Queue()
    for line in ("piece ²", "piece ٣", "piece 𝟗", "piece " + "9" * 5000, "piece -1", "piece"):
        assert plain_command(player, line) is None, line  # type: ignore[arg-type]
    assert plain_command(player, "piece 2") == PickPiece(index=2)  # type: ignore[arg-type]
    assert plain_command(player, "QUIT\r") == Quit()  # type: ignore[arg-type]
    assert player.queue == [PickPiece(index=2), Quit()]

def test_typed_lines_drop_huge_lines_and_keep_what_follows() -> None:
    said: list[str] = []
    read, write = os.pipe()
    with os.fdopen(read, "r") as typed:
        lines = TypedLines(typed, said.append)
        os.write(write, b"\xff\xfe\x00\x1c\x1b[A\n" + b"x" * (MAX_LINE_BYTES * 10))  # (within a pipe's buffer)
        got = [lines.next_line() for _ in range(3)]
        os.write(write, b"y" * 100 + b"\ngo\n")
        os.close(write)
        for _ in range(10):
            got.append(lines.next_line())
    assert got[0] == "\ufffd\ufffd\x00\x1c\x1b[A"  # not UTF-8: replaced, never an error
    assert [g for g in got[1:] if g is not None] == ["go", ""]  # (the end: a last empty line)
    assert said == [f"a typed line longer than {MAX_LINE_BYTES} bytes: dropped"]

def test_a_closed_standard_input_is_said() -> None:
    said: list[str] = []
    assert TypedLines(None, said.append).next_line() is None
    assert said and "standard input is closed" in said[0]

@pytest.mark.live
@timing_flaky
def test_live_with_standard_input_closed() -> None:
    """``0<&-``: --auto plays; --plain with nothing else to operate it is refused (exit 2).
    (A play the OS woke late — its honest "NOT ON TIME", exit 1 — is the machine's.)"""
    def closed() -> None:
        os.close(0)

    auto = subprocess.run([*SHOW, "--auto", "--jie-seconds", "0.2"], cwd=ROOT,
                          capture_output=True, text=True, preexec_fn=closed, timeout=180)
    delivered(auto.returncode, auto.stdout + auto.stderr)
    assert "played 鄉射禮" in auto.stdout
    plain = subprocess.run([*SHOW, "--plain"], cwd=ROOT, capture_output=True, text=True,
                           preexec_fn=closed, timeout=180)
    assert plain.returncode == 2, plain.stderr
    assert "standard input, which is closed" in plain.stderr
    assert "internal error" not in auto.stderr + plain.stderr

def _console(term: str) -> tuple[int, str]:
    """Run the curses console in a pseudo-terminal with ``TERM=term``; q q once it is up
    (or once it has ended); (exit code, what it wrote)."""
    main, sub = pty.openpty()
    proc = subprocess.Popen(SHOW, cwd=ROOT, stdin=sub, stdout=sub, stderr=sub,
                            env=dict(os.environ, TERM=term), start_new_session=True)
    os.close(sub)
    seen = b""
    deadline = time.monotonic() + 120
    try:
        while proc.poll() is None and time.monotonic() < deadline:

            if select.select([main], [], [], 0.2)[0]:
                try:
                    seen += os.read(main, 65536)
                except OSError:
                    break
            if b"she-jie" in seen:  # the console is drawn
                os.write(main, b"q")
                time.sleep(0.5)
                os.write(main, b"q")
                time.sleep(0.5)
        proc.wait(timeout=30)
        try:
            while select.select([main], [], [], 0.2)[0]:
                seen += os.read(main, 65536)
        except OSError:
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    return proc.returncode, seen.decode("utf-8", "replace")

@pytest.mark.live
@pytest.mark.parametrize(("term", "code", "words"), [
    ("dumb", 0, "delivered"),  # curses draws, the cursor cannot be hidden
    ("no-such-terminal", 2, "the live console cannot drive this terminal"),
])
def test_console_on_terminals_curses_cannot_fully_drive(term: str, code: int,
                                                         words: str) -> None:
    returncode, seen = _console(term)
    assert returncode == code, seen[-2000:]
    assert words in seen and "internal error" not in seen, seen[-2000:]

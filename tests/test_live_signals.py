"""Ending signals in any sequence: a live show ends on the first with 128 + its number, says
what each later one did, silences its output and never reports an internal error.

Real processes, real signals: `yuezheng live` plays 和樂 to a ``memory:PATH`` output (the record
of every message it sent, written when the port closes) and is sent pairs and triples of
SIGINT, SIGTERM, SIGQUIT and SIGHUP — to the process, or to its whole process group (a terminal's
Ctrl-C then Ctrl-\\ reach the sending process too).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from instruments.midi import SoundingNotes

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parent.parent
S = signal.Signals


def _sent(path: Path) -> list[bytes]:
    return [bytes.fromhex(json.loads(line)["data"])
            for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(("signals", "gap", "group"), [
    ((S.SIGTERM, S.SIGTERM, S.SIGTERM), 0.0, False),
    ((S.SIGTERM, S.SIGTERM, S.SIGTERM), 0.1, False),
    ((S.SIGINT, S.SIGQUIT), 0.05, False),
    ((S.SIGINT, S.SIGQUIT), 0.05, True),  # Ctrl-C then Ctrl-\ at the console
    ((S.SIGHUP, S.SIGINT, S.SIGQUIT, S.SIGTERM), 0.2, True),
    ((S.SIGINT,), 0.0, False),
])
def test_ending_signals_in_any_sequence(tmp_path: Path, signals: tuple[S, ...], gap: float,
                                        group: bool) -> None:
    record, log = tmp_path / "sent.jsonl", tmp_path / "show.jsonl"
    proc = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "live", "xiang-she", "--from",
                             "he-yue", "--until", "he-yue", "--auto", "--output",
                             f"memory:{record}", "--log", str(log)], cwd=ROOT,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while b'"event": "start"' not in (log.read_bytes() if log.exists() else b""):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        time.sleep(1.0)  # notes sound
        for signum in signals:
            (os.killpg if group else os.kill)(proc.pid, signum)
            time.sleep(gap)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    first = signals[0]
    assert proc.returncode == 128 + first, (proc.returncode, err)
    assert f"{first.name}: silenced and stopped" in err, err
    assert "internal error" not in err and "Traceback" not in err, err
    sent = _sent(record)
    notes = SoundingNotes()
    for data in sent:
        notes.track(data)
    assert sum(d[0] & 0xF0 == 0x90 and d[2] > 0 for d in sent) > 5, "nothing played"
    assert notes.notes == set(), "notes left sounding"
    assert bytes([0xB0, 120, 0]) in sent, "no panic (CC 120)"
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert any(r.get("event") == "interrupted" for r in records)

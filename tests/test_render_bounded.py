"""A multi-hour render keeps its memory bounded by blocks and reports its progress.

The render runs in a child process (started by a small launcher that reports the child's peak
memory, as tests/bounded_run.py does): two drum strokes three hours apart at 8 kHz, written to
FLAC (the silence between them costs little disk).  The whole timeline as one float32 stereo
array would be 691 MB; the render stays far under it, and its progress callback is called
block after block up to the end.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf

from instruments.mix.mixer import DEFAULT_BLOCK_S
from tests.bounded_run import LAUNCHER, ROOT

pytestmark = pytest.mark.render

HOURS = 3.0
RATE = 8000
WHOLE_ARRAY_MB = HOURS * 3600 * RATE * 2 * 4 / 2 ** 20  # 659 MiB
MAX_RSS_MB = 250

CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from instruments.mix.render_files import write_audio
from instruments.mix.mixer import Mastering, RenderNote
calls = []
notes = [RenderNote(t, "鼓", None, 0.5, 100, 0.0, -8.0, "drums") for t in (0.0, {end})]
report = write_audio(sys.argv[2], notes, sample_rate={rate}, how=Mastering(loudness=-20.0),
                     progress=lambda done, total: calls.append((done, total)))
print(len(calls), calls[0][0], calls[-1][0], calls[-1][1], report.frames)
"""


def test_a_three_hour_render_stays_bounded(tmp_path: Path) -> None:
    out = tmp_path / "long.flac"
    report = tmp_path / "rss"
    child = CHILD.format(end=HOURS * 3600, rate=RATE)
    proc = subprocess.run([sys.executable, "-c", LAUNCHER, str(report), str(3 * 1024 ** 3),
                           sys.executable, "-c", child, str(ROOT), str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    code, peak_kb = (int(field) for field in report.read_text().split()[:2])
    assert code == 0, proc.stderr[-2000:]
    rss_mb = peak_kb / 1024
    assert rss_mb < MAX_RSS_MB < WHOLE_ARRAY_MB, f"peak {rss_mb:.0f} MB"
    calls, first, last, total, frames = proc.stdout.split()
    assert int(calls) > HOURS * 3600 / (2 * DEFAULT_BLOCK_S)  # block after block
    assert 0 < float(first) <= DEFAULT_BLOCK_S + 0.1 and float(last) == float(total)
    info = sf.info(str(out))
    assert info.frames == int(frames) and info.samplerate == RATE
    assert info.frames / RATE > HOURS * 3600
    print(f"peak RSS {rss_mb:.0f} MB for {info.frames / RATE / 3600:.2f} h")


def test_a_long_render_prints_its_progress_every_tenth(capsys) -> None:
    import cli

    show = cli._progress_lines("render long")
    total = 3 * 3600.0
    for done in range(0, int(total) + 1, 60):
        show(float(done), total)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ")[1].split(" %")[0] for line in lines] == [
        str(p) for p in range(10, 101, 10)]
    short = cli._progress_lines("render short")
    for done in range(0, 61):
        short(float(done), 60.0)
    assert capsys.readouterr().err == ""  # a short render says nothing off a terminal

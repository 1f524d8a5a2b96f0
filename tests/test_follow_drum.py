"""The drum leads (``live --follow``): a "human" drummer's recording heard (``--hear FILE``: the
file's sample ``i`` sounds at the show's first instant + ``i / rate``, exactly) and the
accompaniment sent to a ``memory:`` output, whose record keeps every message's deadline — so
the accompaniment is measured against the drummer's grid exactly, with no JACK in between
(tests/test_hear_jack.py hears over JACK).

The drummer (tests/human_drummer.py): the 鄉射's 射節 drum, 1 s 節, slowing by 3 % across its
six 耦 cycles, every stroke a seeded ±20 ms off; and a steady one (±5 ms, no drift).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from instruments.ports.memory import read_memory_record
from sequencer.check.tempo import check_file
from tests.human_drummer import HumanDrum, human_drum, she_jie_timeline
from tests.timing import delivered, on_time, timing_flaky

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _follow(drum: HumanDrum, tmp: Path, release_at: tuple[int, int] | None = None) -> dict:
    """Run the 射節 following ``drum``; with ``release_at`` (cycle, 節) the judge marks a
    右 hit at that 節 of the drummer's, by OSC. Returns the log's records, the memory record,
    the show's first instant, and the run's output."""
    log, out = tmp / "show.jsonl", tmp / "sent.jsonl"
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "cli.py"), "live", "xiang-she", "--from", "she-jie",
         "--until", "she-jie", "--auto", "--jie-seconds", "1", "--output", f"memory:{out}",
         "--hear", str(drum.path), "--follow", "--log", str(log),
         "--mark-delay", "0",  # the release below is marked at its instant (no reaction time)
         "--control", f"osc://127.0.0.1:{port}"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if release_at is not None:
        from pythonosc.udp_client import SimpleUDPClient

        start = None
        while start is None and proc.poll() is None:
            time.sleep(0.02)
            if log.exists():
                start = next((json.loads(line)["t"] for line in log.read_text("utf-8")
                              .splitlines() if '"file-start"' in line), None)
        cycle, k = release_at
        at = start + drum.jie_grid()[cycle * drum.n + k - 1] + 0.01
        time.sleep(max(0.0, at - time.perf_counter()))
        SimpleUDPClient("127.0.0.1", port).send_message("/release", ["右", 1])
    stdout, stderr = proc.communicate(timeout=120)
    delivered(proc.returncode, stdout + stderr)  # a sender woken late: the machine
    records = [json.loads(line) for line in log.read_text("utf-8").splitlines()]
    start = next(r["t"] for r in records if r.get("what") == "file-start")
    return {"records": records, "sent": read_memory_record(out), "start": start,
            "output": stdout + stderr}


def _accompaniment(run: dict) -> np.ndarray:
    """The deadlines of the 瑟's note-ons: one at every 節 the accompaniment plays."""
    channels = {n.channel for n in she_jie_timeline("1").notes if n.instrument == "瑟"}
    return np.array(sorted({round(at, 9) for at, data in run["sent"]
                            if data[0] & 0xF0 == 0x90 and data[2] and data[0] & 0x0F in channels}))


def _errors_by_cycle(run: dict, drum: HumanDrum) -> dict[int, np.ndarray]:
    """Each cycle's 節 as played less the drummer's 節 (their grid: where they meant them), ms."""
    played = _accompaniment(run)
    grid = run["start"] + drum.jie_grid()
    out: dict[int, list[float]] = {}
    for j, due in enumerate(grid):
        near = np.abs(played - due)
        if near.min() < 0.3:
            out.setdefault(j // drum.n, []).append((played[near.argmin()] - due) * 1000)
    return {c: np.array(e) for c, e in out.items()}


@pytest.fixture(scope="module")
def human(tmp_path_factory: pytest.TempPathFactory) -> tuple[HumanDrum, dict]:
    tmp = tmp_path_factory.mktemp("follow")
    drum = human_drum(tmp / "human.wav")
    return drum, _follow(drum, tmp, release_at=(1, 3))


@timing_flaky
def test_each_cycle_keeps_one_interval_and_the_drummers_grid(human) -> None:
    drum, run = human
    follows = [r for r in run["records"] if r["event"] == "follow"]
    assert [r["cycle"] for r in follows] == list(range(6))
    played = _accompaniment(run)
    for record in follows:  # inside a cycle every interval the same (「間若一」): to the tick
        start, jie = record["played"]["start"], record["played"]["jie_s"]
        mine = played[(played > start - 0.001) & (played < start + 4.5 * jie)]
        assert len(mine) == (4 if record["cycle"] == 0 else 5)  # the first 節: the drum's
        assert np.ptp(np.diff(mine)) < 1e-6
        assert np.diff(mine).mean() == pytest.approx(jie, abs=1e-6)
    errors = _errors_by_cycle(run, drum)
    later = np.abs(np.concatenate([errors[c] for c in range(1, 6)]))
    # the grid carried a cycle ahead from strokes ±20 ms off, drifting 3 % (see
    # docs/hearing.md: a cycle cannot show the drift it is about to make): within 50 ms
    assert len(later) == 25 and np.percentile(later, 99) <= 50, errors
    print(f"\nfollow from the second cycle: p99 {np.percentile(later, 99):.1f} ms, median "
          f"{np.median(later):.1f} ms; by cycle: "
          + ", ".join(f"{np.abs(errors[c]).max():.1f}" for c in sorted(errors)))
    jie = [r for r in run["records"] if r["event"] == "jie"]
    assert len(jie) == 30 and [r.get("by") for r in jie[:2]] == ["drum", None]


@timing_flaky
def test_check_log_tells_the_drummer_as_check_tells_the_recording(human) -> None:
    drum, run = human
    log = next(p for p in Path(drum.path).parent.iterdir() if p.name == "show.jsonl")
    heard = [b for b in check_file(log).blocks if "the drum heard" in b.label]
    recording = check_file(drum.path).blocks[0]
    assert len(heard) == 1
    block = heard[0]
    assert block.count == recording.count == 120
    assert block.mean_interval_s == pytest.approx(recording.mean_interval_s, abs=2e-5)
    assert block.max_deviation_ms == pytest.approx(recording.max_deviation_ms, abs=0.5)
    assert block.cv == pytest.approx(recording.cv, abs=1e-4)
    assert block.drift_pct == pytest.approx(recording.drift_pct, abs=0.05)
    assert block.jitter_sd_ms == pytest.approx(recording.jitter_sd_ms, abs=0.1)
    assert block.drift_pct == pytest.approx(3.0, abs=0.5)  # what the drummer did
    assert block.jitter_sd_ms == pytest.approx(20 / 3 ** 0.5, abs=1.5)  # ±20 ms uniform
    assert not block.ok  # and so the drum did not keep 間若一


@timing_flaky
def test_the_judge_places_a_release_on_the_drum_heard(human) -> None:
    drum, run = human
    release = next(r for r in run["records"] if r["event"] == "release")
    said = next(r for r in run["records"] if r["event"] == "operator"
                and r["action"].startswith("release"))
    assert "by the drum heard" in said["result"]
    # marked 10 ms after the drummer's 3rd 節 of the second cycle (plus the way to the
    # player): at that 節 of the compiled 射節, 5 + 2 s in
    # (a press the player read late, the machine's, is judged later)
    on_time(abs(release["t"] - 7.0) < 0.08, f"the release judged at {release['t']:.3f} s")
    assert release["counted"] is True


@timing_flaky
def test_a_steady_drum_is_followed_within_10_ms(tmp_path) -> None:
    drum = human_drum(tmp_path / "steady.wav", seed=5, jitter_s=0.005, drift=0.0)
    run = _follow(drum, tmp_path)
    errors = _errors_by_cycle(run, drum)
    later = np.abs(np.concatenate([errors[c] for c in range(1, 6)]))
    assert len(later) == 25 and np.percentile(later, 99) <= 10, errors
    print(f"\nsteady drum, from the second cycle: p99 {np.percentile(later, 99):.1f} ms")


@timing_flaky
def test_when_the_drum_stops_the_accompaniment_holds_and_comes_back_on_it(tmp_path) -> None:
    # the drummer stops a second before the fourth cycle and for 2.7 s, then plays on
    stop = (0.5 + 14.0, 0.5 + 16.7)
    drum = human_drum(tmp_path / "pause.wav", seed=7, jitter_s=0.005, drift=0.0, pause=stop)
    run = _follow(drum, tmp_path)
    played = _accompaniment(run) - run["start"]
    # nothing of the fourth cycle was played while the drum was silent …
    assert not np.any((played > stop[0] + 1.05) & (played < stop[1]))
    # … and once it came back, each 節 played falls on one of its strokes
    struck = drum.strokes[(drum.grid < stop[0]) | (drum.grid >= stop[1])]
    # (the drummer's 射節 ends with its last stroke; the accompaniment, held, ends later)
    after = played[(played > stop[1] + 1.0) & (played < struck.max() + 0.02)]
    assert len(after) >= 10
    said = [r for r in run["records"] if r["event"] == "follow"]
    off = max(np.abs(struck - t).min() for t in after)
    # a cycle the follower placed too late to start on the drum says so ("clipped": "late":
    # the process or its input was behind on this machine): a timing failure, not a wrong grid
    late = [r["cycle"] for r in said if r.get("clipped") == "late"]
    on_time(off < 0.02 or not late, f"cycles {late} placed late: {1000 * off:.0f} ms off")
    assert off < 0.02, (off, said)
    assert len(said) == 6  # every cycle placed, the held one after the drum came back

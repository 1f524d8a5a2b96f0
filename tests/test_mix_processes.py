"""Mixing on several processes or threads gives the bytes of one run, and leaves nothing behind.

A render's mix is split in segments (``instruments.mix.blocks``), each mixed after a pre-roll;
these tests compare every block with the one-run mix, in the courtyard (reflections, tail and
delays carried from block to block) and dry, and check the children's end: reaped after a
whole render and after an early stop, and a child killed mid-mix is a clear error.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from cues.errors import UserError
from instruments.files.riff_info import read_info
from instruments.files.wav24 import pack24
from instruments.mix import blocks as mix_blocks
from instruments.mix import mixer
from instruments.mix import processes as mix_processes
from instruments.mix import render_files as audio_files
from instruments.mix.limiter import PeakLimiter
from instruments.mix.mixer import RenderNote
from instruments.mix.room import Room

pytestmark = pytest.mark.render

SR = 48000
BLOCK = SR  # 1 s blocks
SEGMENT = 4  # small segments: many boundaries in a short piece


def _notes(seconds: int) -> list[RenderNote]:
    """Struck, plucked and sung notes at several places, some ringing across segment ends."""
    out = []
    for i in range(seconds):
        out.append(RenderNote(i + 0.37, "編磬", 330.0 * (1 + (i % 5) / 10), 0.5, 90, -6.0, -4.0,
                              "磬", seed=i))
        if i % 3 == 0:
            out.append(RenderNote(i + 0.9, "瑟", 220.0, 1.5, 80, -2.0, 2.0, "瑟"))
        if i % 4 == 1:
            out.append(RenderNote(i + 0.05, "歌", 262.0, 0.9, 90, 0.0, 2.0, "歌", lyric="關"))
    return out


def _placed(seconds: int, room_name: str) -> tuple[list, int, Room]:
    room = Room(room_name, SR)
    placed = mixer._plan(_notes(seconds), SR, room)
    room.start_at_nearest({p.place for p in placed})
    total = max(p.end for p in placed) + room.extra
    return placed, total, room


def _dense(blocks, n_stems: tuple[str, ...]) -> list[np.ndarray]:
    """Each block as one (stems, 2, n) array (silent stems as zeros)."""
    out = []
    for item in blocks:
        n, raw = item[0], item[1]
        out.append(np.stack([raw[s] if s in raw else np.zeros((2, n), np.float32)
                             for s in n_stems]))
    return out


def _one_process(placed: list, total: int, room: Room) -> list[np.ndarray]:
    """The mastered mix of one process: raw blocks through ``_Mastering``."""
    mastering = mixer._Mastering(SR, ("",), False)
    raw = mix_blocks.raw_blocks(placed, total, BLOCK, room, merged=True)
    return [mix for mix, _ in mastering.blocks(raw)]


@pytest.mark.parametrize("room_name", ["courtyard", "dry"])
@pytest.mark.parametrize("pack", [False, True])
def test_processes_give_the_bytes_of_one_run(room_name: str, pack: bool) -> None:
    placed, total, room = _placed(30, room_name)
    for p in placed:  # loud enough that the limiter works across segment ends
        object.__setattr__(p, "gain", p.gain * 30.0)
    one = _one_process(placed, total, room)
    limiter = PeakLimiter(SR)
    many = [(n, (bytes(b.data), b.peak) if pack else b)  # a Packed view lasts one block
            for n, b in mix_processes.mastered(placed, total, BLOCK, room, limiter, pack, 2,
                                               SEGMENT)]
    assert limiter.limited_chunks > 0
    assert len(one) == len(many) == -(-total // BLOCK) and len(one) > 3 * SEGMENT
    for j, (a, (n, b)) in enumerate(zip(one, many, strict=True)):
        assert n == a.shape[0]
        if pack:
            assert b[0] == pack24(a).tobytes(), f"block {j} differs"
            assert b[1] == float(np.abs(a).max())
        else:
            assert np.array_equal(a, b), f"block {j} differs"
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("block", [BLOCK, 12288])  # short blocks: a pre-roll of several
def test_a_run_from_any_block_gives_the_bytes_of_one_run(block: int) -> None:
    placed, total, room = _placed(12, "courtyard")
    one = _dense(mix_blocks.raw_blocks(placed, total, block, room, merged=True), ("",))
    assert mix_blocks.preroll_blocks(room, block) >= (2 if block < BLOCK else 1)
    for first in range(1, len(one)):
        later = _dense(mix_blocks.raw_blocks(placed, total, block, room, True, first), ("",))
        assert all(np.array_equal(a, b) for a, b in zip(one[first:], later, strict=True)), first


def test_threads_give_the_bytes_of_one_run_per_stem() -> None:
    placed, total, room = _placed(30, "courtyard")
    stems = tuple(sorted({p.stem for p in placed}))
    one = _dense(mix_blocks.raw_blocks(placed, total, BLOCK, room), stems)
    many = _dense(mix_blocks.parallel_raw_blocks(placed, total, BLOCK, room, False, 2, SEGMENT),
                  stems)
    assert len(one) == len(many)
    for j, (a, b) in enumerate(zip(one, many, strict=True)):
        assert np.array_equal(a, b), f"block {j} differs"


def test_a_render_is_the_same_file_with_or_without_processes(tmp_path: Path,
                                                             monkeypatch) -> None:
    notes = _notes(80)  # 80 blocks: more than two segments of 32
    how = mixer.Mastering(loudness=-18.0)
    tags = {"title": "鄉射禮", "comment": '{"provenance": "yuezheng/1"}', "software": "yuezheng"}
    monkeypatch.setenv("YUEZHENG_MIX_PROCESSES", "0")
    audio_files.write_audio(tmp_path / "one.wav", notes, how=how, tags=tags)
    monkeypatch.delenv("YUEZHENG_MIX_PROCESSES")
    assert mix_processes.usable(80)
    audio_files.write_audio(tmp_path / "many.wav", notes, how=how, tags=tags)
    assert (tmp_path / "one.wav").read_bytes() == (tmp_path / "many.wav").read_bytes()
    assert read_info(tmp_path / "many.wav") == tags  # the provenance's tags, as one process
    assert multiprocessing.active_children() == []


def test_an_early_stop_reaps_the_children() -> None:
    placed, total, room = _placed(30, "courtyard")
    blocks = mix_processes.mastered(placed, total, BLOCK, room, PeakLimiter(SR), True, 2,
                                    SEGMENT)
    next(blocks)
    assert len(multiprocessing.active_children()) == 2
    blocks.close()
    assert multiprocessing.active_children() == []


def test_a_child_killed_mid_mix_is_a_clear_error() -> None:
    placed, total, room = _placed(30, "courtyard")
    blocks = mix_processes.mastered(placed, total, BLOCK, room, PeakLimiter(SR), False, 2,
                                    SEGMENT)
    next(blocks)
    for child in multiprocessing.active_children():
        os.kill(child.pid, signal.SIGKILL)
    with pytest.raises(UserError, match="mixing process ended unexpectedly"):
        for _ in blocks:
            pass
    assert multiprocessing.active_children() == []


def _children_of(pid: int) -> list[int]:
    tasks = Path(f"/proc/{pid}/task")
    found: list[int] = []
    try:
        listed = list(tasks.iterdir())
    except OSError:  # the process has gone
        return found
    for task in listed:
        try:
            text = (task / "children").read_text()
        except OSError:  # a thread that ended meanwhile
            continue
        found += [int(c) for c in text.split()]
    return found


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGINT])
def test_a_render_killed_mid_mix_leaves_no_process(tmp_path: Path, signum: int) -> None:
    """The render's children die with it (parent-death signal), Ctrl-C included."""
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, str(root / "cli.py"), "render", "xiang-she", "-o",
                             str(tmp_path / "x.wav")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    children: list[int] = []
    while time.monotonic() < deadline and proc.poll() is None:
        children = _children_of(proc.pid)
        if len(children) == 2:  # the voice or the mixing processes at work
            break
        time.sleep(0.01)
    assert len(children) == 2, "the render ended before its processes were seen"
    os.kill(proc.pid, signum)
    proc.wait(timeout=30)
    gone = time.monotonic() + 10  # they die with it; on a loaded machine that takes a moment
    while [c for c in children if _alive(c)] and time.monotonic() < gone:
        time.sleep(0.05)
    assert not [c for c in children if _alive(c)]
    assert not (tmp_path / "x.wav").exists()

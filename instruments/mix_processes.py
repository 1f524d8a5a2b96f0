"""The mix of a long render on several processes: the same bytes as ``raw_blocks``, sooner.

A thread cannot mix much faster than one core: the mixing loop holds the GIL between its many
small array steps.  So a render that writes no stems is mixed by ``MIX_PROCESSES`` forked
processes instead, each taking a segment of ``SEGMENT_BLOCKS`` blocks at a time
(``instruments.mix_blocks.raw_blocks`` with its pre-roll, so every segment gives exactly the
bytes one run from the start would) and writing it into a slot of an anonymous shared memory
map; this process reads the slots in order and masters them as before.  The children read
the notes the loudness estimate rendered from the note cache the fork shares with them (and
render the others themselves, lazily, as one process would), and at most
``MIX_PROCESSES + 1`` segments are mixed or waiting at once: memory stays bounded by blocks.
The limiter's requirements (each chunk's peak) are found by the children too.

The children ignore SIGINT (the render's own interrupt handling stays in this process), die
with this process (``instruments.parent_death``), and are stopped and reaped on every way
out of ``process_raw_blocks``.  Where ``fork`` is missing (not Linux or macOS) the mix runs
in this process.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import queue
import signal
from collections.abc import Iterator, Sequence

import numpy as np

from cues.errors import UserError
from instruments.limiter import LIMITER_CHUNK, PeakLimiter
from instruments.mix_blocks import SEGMENT_BLOCKS, PlacedNote, raw_blocks
from instruments.parent_death import die_with_parent
from instruments.room import Room

MIX_PROCESSES = 2

PeakedBlock = tuple[int, dict[str, np.ndarray], np.ndarray]
"""(n, {"": the mix (2, n)}, the limiter's requirement per chunk of it)"""
_POLL_S = 0.5  # how often a wait for a segment checks that the children still live


def usable(blocks: int, segment: int = SEGMENT_BLOCKS) -> bool:
    """Whether mixing ``blocks`` blocks on processes is possible and worth it."""
    return (MIX_PROCESSES > 1 and blocks > 2 * segment
            and "fork" in multiprocessing.get_all_start_methods()
            and os.environ.get("YUEZHENG_MIX_PROCESSES", "") != "0")


def _slot_bytes(segment: int, block: int) -> int:
    return segment * (block * 2 * 4 + -(-block // LIMITER_CHUNK) * 8)


def _slot(shared: mmap.mmap, slot: int, segment: int, block: int,
          ) -> tuple[np.ndarray, np.ndarray]:
    """A slot's blocks as frames (segment, block, 2) float32 and the limiter's requirement
    per chunk of each (segment, chunks) float64."""
    base = slot * _slot_bytes(segment, block)
    chunks = -(-block // LIMITER_CHUNK)
    frames = np.frombuffer(shared, dtype=np.float32, count=segment * block * 2, offset=base)
    reqs = np.frombuffer(shared, dtype=np.float64, count=segment * chunks,
                         offset=base + segment * block * 2 * 4)
    return frames.reshape(segment, block, 2), reqs.reshape(segment, chunks)


def _child(placed: Sequence[PlacedNote], total: int, block: int, room: Room, shared: mmap.mmap,
           segment: int, tasks: multiprocessing.SimpleQueue, done: multiprocessing.Queue,
           ) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(signal.SIGKILL)
    while (task := tasks.get()) is not None:
        index, slot = task
        try:
            frames, reqs = _slot(shared, slot, segment, block)
            first = index * segment
            for i, (n, out) in enumerate(raw_blocks(placed, total, block, room, True, first,
                                                    first + segment)):
                mix = out.get("")
                if mix is None:
                    frames[i, :n] = 0.0
                    reqs[i] = 1.0
                    continue
                frames[i, :n] = mix.T
                req = PeakLimiter.required(mix, 1.0)
                reqs[i] = 1.0
                if req is not None:
                    reqs[i, :req.size] = req
            done.put((index, None))
        except UserError as exc:
            done.put((index, str(exc)))
        except BaseException as exc:  # handed to the parent, which raises it
            done.put((index, f"mixing process: {type(exc).__name__}: {exc}"))


def process_raw_blocks(
    placed: Sequence[PlacedNote], total: int, block: int, room: Room,
    processes: int = MIX_PROCESSES, segment: int = SEGMENT_BLOCKS,
) -> Iterator[PeakedBlock]:
    """The merged mix's raw blocks (one stem ""), mixed on ``processes`` processes."""
    for p in placed:  # and the room's per-place delays and gains
        room.taps(*p.place)
        room.low_reflections(*p.place)
    ctx = multiprocessing.get_context("fork")
    slots = processes + 1
    shared = mmap.mmap(-1, slots * _slot_bytes(segment, block))
    tasks: multiprocessing.SimpleQueue = ctx.SimpleQueue()
    done: multiprocessing.Queue = ctx.Queue()
    children = [ctx.Process(target=_child, name=f"yuezheng-mix-{i}", daemon=True,
                            args=(placed, total, block, room, shared, segment, tasks, done))
                for i in range(processes)]
    for child in children:
        child.start()
    try:
        yield from _in_order(total, block, segment, slots, shared, tasks, done, children)
    finally:
        for _ in children:
            tasks.put(None)
        for child in children:
            child.join(timeout=2.0)
            if child.is_alive():
                child.kill()
                child.join()
        done.close()
        done.join_thread()
        # the map is unmapped when the last view of it (a block the caller holds) is gone


def _in_order(total: int, block: int, segment: int, slots: int, shared: mmap.mmap,
              tasks: multiprocessing.SimpleQueue, done: multiprocessing.Queue,
              children: list[multiprocessing.process.BaseProcess]) -> Iterator[PeakedBlock]:
    """Hand out the segments, ``slots`` at first, and yield their blocks in order.  A
    segment's slot is handed out again once the first block of the next segment has been
    taken: the caller masters a block when it takes the one after it, so by then it is done
    with the previous segment."""
    count = -(-total // block)
    segments = -(-count // segment)
    handed = 0
    while handed < min(slots, segments):
        tasks.put((handed, handed % slots))
        handed += 1
    finished: set[int] = set()
    for index in range(segments):
        while index not in finished:
            finished.add(_next_done(done, children))
        finished.discard(index)
        frames, reqs = _slot(shared, index % slots, segment, block)
        first = index * segment
        for i in range(min(segment, count - first)):
            n = min(block, total - (first + i) * block)
            yield n, {"": frames[i, :n].T}, reqs[i, :-(-n // LIMITER_CHUNK)]
            if i == 0 and index > 0 and handed < segments:
                tasks.put((handed, handed % slots))  # the previous segment's slot
                handed += 1


def _next_done(done: multiprocessing.Queue,
               children: list[multiprocessing.process.BaseProcess]) -> int:
    """The index of the next segment a child has finished; a child's error is raised here,
    and a child that died without a word is one."""
    while True:
        try:
            index, error = done.get(timeout=_POLL_S)
        except queue.Empty:
            dead = [c for c in children if not c.is_alive()]
            if dead:
                raise UserError(f"a mixing process ended unexpectedly (exit code "
                                f"{dead[0].exitcode}): the render was not written") from None
            continue
        if error is not None:
            raise UserError(error)
        return index

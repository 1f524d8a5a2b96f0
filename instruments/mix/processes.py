"""A render without stems, mixed and mastered on several processes: the bytes of one process.

A thread cannot mix much faster than one core (the mixing loop holds the GIL between its many
small array steps), so a long render that writes no stems is made by ``MIX_PROCESSES`` forked
processes, a segment of ``SEGMENT_BLOCKS`` blocks at a time, in two steps:

1. *mix*: a child mixes the segment (``instruments.mix.blocks.raw_blocks`` after its pre-roll:
   exactly the bytes of one run), one block more to know the limiter's next requirement, and
   writes the mix and each chunk's requirement (its peak) into the segment's slot of an
   anonymous shared memory map;
2. *master*: this process runs the limiter over the requirements, segment after segment in
   order (``PeakLimiter.nodes``: a few numbers per chunk), writes the gains into the slot, and
   a child applies them (``limiter.curve``), measures the peak and, for a WAV file, packs the
   24-bit bytes (``instruments.files.wav24.pack24``) — the operations and the order of one
   process, so the same bytes.

This process only runs the limiter and hands the blocks on in order (a WAV file's bytes as
``Packed`` views of the map, written before the next block is taken).  At most
``MIX_PROCESSES + 2`` segments are held, so memory stays bounded by blocks.  The children read
the notes that the loudness estimate rendered from the note cache the fork shares with them
(and render any others themselves), ignore SIGINT (this process handles it), die with this
process (``instruments.processes.parent_death``) and are stopped and reaped on every way out; a
child that dies is a clear error and the render is not written.
"""

from __future__ import annotations

import mmap
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from instruments.files.wav24 import pack24
from instruments.mix.blocks import SEGMENT_BLOCKS, as_frames, raw_blocks
from instruments.mix.limiter import LIMITER_CHUNK, PeakLimiter, curve
from instruments.mix.placement import PlacedNote
from instruments.mix.room import Room
from instruments.processes import workers
from instruments.processes.workers import Workers

MIX_PROCESSES = 2


@dataclass(frozen=True)
class Packed:
    """One mastered block as 24-bit PCM bytes (a view of the shared map: valid until the
    next block is taken), its frame count and its largest |sample| before packing."""

    data: memoryview
    frames: int
    peak: float


def usable(blocks: int, segment: int = SEGMENT_BLOCKS) -> bool:
    """Whether a render of ``blocks`` blocks can and should be made on processes."""
    return MIX_PROCESSES > 1 and blocks > 2 * segment and workers.possible()


class _Slot:
    """One segment's place in the shared map: the mix (segment, 2, block) float32, a block's
    two channels one after the other (its packed bytes overwrite its own samples), the
    requirements (segment, chunks), gains at the chunk boundaries (segment, chunks + 1; NaN
    first: unity), the next requirement and the peaks."""

    def __init__(self, shared: mmap.mmap, index: int, segment: int, block: int) -> None:
        chunks = -(-block // LIMITER_CHUNK)
        self.offset = index * self.size(segment, block)
        self.block = block
        at = self.offset
        self.mix = np.frombuffer(shared, np.float32, segment * 2 * block, at
                                 ).reshape(segment, 2, block)
        at += self.mix.nbytes
        self.reqs = np.frombuffer(shared, np.float64, segment * chunks, at
                                  ).reshape(segment, chunks)
        at += self.reqs.nbytes
        self.nodes = np.frombuffer(shared, np.float64, segment * (chunks + 1), at
                                   ).reshape(segment, chunks + 1)
        at += self.nodes.nbytes
        self.next_req = np.frombuffer(shared, np.float64, 1, at)
        self.peaks = np.frombuffer(shared, np.float64, segment, at + 8)
        self.shared = shared

    @staticmethod
    def size(segment: int, block: int) -> int:
        chunks = -(-block // LIMITER_CHUNK)
        return segment * (block * 8 + chunks * 8 + (chunks + 1) * 8 + 8) + 8

    def packed(self, i: int, n: int) -> memoryview:
        start = self.offset + i * self.block * 8
        return memoryview(self.shared)[start:start + n * 6]


def _mix(slot: _Slot, first: int, segment: int, args: tuple) -> None:
    placed, total, block, room = args
    slot.next_req[0] = 1.0
    for i, (n, out) in enumerate(raw_blocks(placed, total, block, room, True, first,
                                            first + segment + 1)):
        mix = out.get("")
        req = None if mix is None else PeakLimiter.required(mix, 1.0)
        if i == segment:  # the block after the segment: its first requirement only
            slot.next_req[0] = 1.0 if req is None else float(req[0])
            break
        slot.mix[i, :, :n] = 0.0 if mix is None else mix
        slot.reqs[i] = 1.0
        if req is not None:
            slot.reqs[i, :req.size] = req


def _master(slot: _Slot, first: int, segment: int, total: int, block: int, pack: bool) -> None:
    for i in range(min(segment, -(-total // block) - first)):
        n = min(block, total - (first + i) * block)
        nodes = slot.nodes[i, :-(-n // LIMITER_CHUNK) + 1]
        mix = slot.mix[i, :, :n]
        out = mix if np.isnan(nodes[0]) else mix * curve(nodes, n)
        slot.peaks[i] = max(float(out.max(initial=0.0)), -float(out.min(initial=0.0)))
        if pack:  # interleaved into this process's memory first: the bytes overwrite ``mix``
            pack24(as_frames(out), slot.packed(i, n))
        elif out is not mix:
            mix[:] = out


def _work(task: tuple[str, int, int], args: tuple, shared: mmap.mmap, segment: int,
          pack: bool) -> tuple[str, int]:
    """A child's step: mix or master one segment in its slot; returns (step, segment)."""
    _, total, block, _ = args
    kind, index, slot_index = task
    slot = _Slot(shared, slot_index, segment, block)
    if kind == "mix":
        workers.populate(shared, slot.offset, _Slot.size(segment, block))
        _mix(slot, index * segment, segment, args)
    else:
        _master(slot, index * segment, segment, total, block, pack)
    return kind, index


def mastered(
    placed: Sequence[PlacedNote], total: int, block: int, room: Room, limiter: PeakLimiter,
    pack: bool, processes: int = MIX_PROCESSES, segment: int = SEGMENT_BLOCKS,
) -> Iterator[tuple[int, np.ndarray | Packed]]:
    """Per block in order: (n, its mastered frames (n, 2) float32, or ``Packed`` 24-bit bytes
    when ``pack``) of the merged mix of ``placed``, limited by ``limiter``."""
    for p in placed:  # the room's per-place delays and gains, before the children share it
        room.taps(*p.place)
        room.low_reflections(*p.place)
    slots = processes + 2
    shared = mmap.mmap(-1, slots * _Slot.size(segment, block))
    args = (placed, total, block, room)
    pool = Workers("mixing", "mix", lambda task: _work(task, args, shared, segment, pack),
                   processes)
    whole = False
    try:  # started inside: an interrupt at any point after the first fork stops them
        pool.start()
        run = _Run(total, block, segment, slots, processes, shared, limiter, pool)
        yield from run.blocks(pack)
        whole = True
    finally:
        pool.stop(whole)
        # the map is unmapped when the last view of it is gone


class _Run:
    """This process's side: hands out the segments, limits them in order, yields blocks."""

    def __init__(self, total: int, block: int, segment: int, slots: int, processes: int,
                 shared: mmap.mmap, limiter: PeakLimiter, workers: Workers) -> None:
        self.total, self.block, self.segment = total, block, segment
        self.count = -(-total // block)
        self.segments = -(-self.count // segment)
        self.processes = processes
        self.shared = shared
        self.limiter = limiter
        self.workers = workers
        self.free = deque(range(slots))
        self.slot_of: dict[int, int] = {}
        self.handed = 0
        self.mixed: set[int] = set()
        self.mastered: set[int] = set()

    def _top_up(self) -> None:
        """Hand out mixing while a slot is free and fewer than ``processes`` mixes wait."""
        while (self.handed < self.segments and self.free
               and self.handed - len(self.mixed) < self.processes):
            self.slot_of[self.handed] = slot = self.free.popleft()
            self.workers.put(("mix", self.handed, slot))
            self.handed += 1

    def _slot(self, index: int) -> _Slot:
        return _Slot(self.shared, self.slot_of[index], self.segment, self.block)

    def _limit(self, index: int) -> None:
        """The limiter's gains for the segment's blocks, in order (one state for the piece)."""
        slot = self._slot(index)
        first = index * self.segment
        blocks = min(self.segment, self.count - first)
        for i in range(blocks):
            n = min(self.block, self.total - (first + i) * self.block)
            m = -(-n // LIMITER_CHUNK)
            nxt = float(slot.reqs[i + 1, 0]) if i + 1 < blocks else float(slot.next_req[0])
            nodes = self.limiter.nodes(slot.reqs[i, :m], nxt)
            slot.nodes[i] = np.nan
            if nodes is not None:
                slot.nodes[i, :m + 1] = nodes
        self.workers.put(("master", index, self.slot_of[index]))

    def blocks(self, pack: bool) -> Iterator[tuple[int, np.ndarray | Packed]]:
        limited = written = 0
        self._top_up()
        while written < self.segments:
            kind, index = self.workers.result()
            (self.mixed if kind == "mix" else self.mastered).add(index)
            while limited < self.segments and limited in self.mixed:
                self._limit(limited)
                limited += 1
            while written < self.segments and written in self.mastered:
                slot = self._slot(written)
                first = written * self.segment
                for i in range(min(self.segment, self.count - first)):
                    n = min(self.block, self.total - (first + i) * self.block)
                    yield n, (Packed(slot.packed(i, n), n, float(slot.peaks[i])) if pack
                              else as_frames(slot.mix[i, :, :n]))
                self.free.append(self.slot_of.pop(written))
                written += 1
            self._top_up()

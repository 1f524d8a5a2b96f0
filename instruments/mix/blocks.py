"""Mixing placed notes into raw blocks: each block's notes summed per place, heard through the
room (``instruments.mix.room``), before any loudness gain or limiter.

``raw_blocks`` mixes a run of blocks in order.  Its state from block to block — the direct
sound that a path's delay carries past the block and the room's reflections and tail
(``Wet``) — depends only on the last few blocks, so a run can start anywhere: it mixes
``preroll_blocks(room, block)`` blocks before its first one and drops them, and then gives
exactly the bytes a run from the start would.  ``parallel_raw_blocks`` uses that to mix
segments of the piece on ``MIX_THREADS`` threads (numpy releases the GIL in its array work)
and yields the blocks in order; at most ``MIX_THREADS + 1`` segments are held at once, so
memory stays bounded by blocks whatever the length of the piece.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator, Sequence

import numpy as np

from instruments.mix.placement import PlacedNote
from instruments.mix.room import TAIL_DECIMATION, Room, Wet, decimated, room_tone
from instruments.voices import notes as voices

MIX_THREADS = 2
SEGMENT_BLOCKS = 32
"""Blocks one thread mixes at a time (besides its pre-roll)."""

RawBlock = tuple[int, dict[str, np.ndarray]]
"""(n, {stem: float32 (2, n)}): one block before loudness gain and limiter (silent stems are
absent from the dict)."""


class _Spill:
    """Per-stem output that runs past the block (the direct sound's delay and the room's
    reflections and tail), carried over."""

    def __init__(self, room: Room) -> None:
        self.room = room
        self.carry: dict[str, np.ndarray] = {}
        self.wets: dict[str, Wet] = {}

    def _stem_block(self, stem: str, n: int) -> np.ndarray:
        """A stem's (2, n + max_direct) float32 block, opening with what the last one left."""
        d = self.room.max_direct
        st = np.empty((2, n + d), dtype=np.float32)
        carry = self.carry.pop(stem, None)
        if carry is None:
            st.fill(0.0)
        else:
            st[:, :d] = carry
            st[:, d:].fill(0.0)
        return st

    def block(self, groups: dict[tuple[str, tuple[float, float]], np.ndarray], n: int,
              ) -> dict[str, np.ndarray]:
        """The block's (2, n) float32 per stem from its per-place mono sums: the direct sound
        at the full rate, the reflections and the tail through the stem's ``Wet``."""
        room = self.room
        out: dict[str, np.ndarray] = {}
        tmp = np.empty(n, dtype=np.float32)
        for (stem, place), buf in groups.items():
            st = out.get(stem)
            if st is None:
                st = out[stem] = self._stem_block(stem, n)
            delay, left, right = room.taps(*place)[0]
            st[0, delay:delay + n] += np.multiply(buf, np.float32(left), out=tmp)
            st[1, delay:delay + n] += np.multiply(buf, np.float32(right), out=tmp)
            if room.has_tail:
                ground = room.ground(*place)
                if ground is not None:  # the ground's reflection: the full band, just after
                    delay, left, right = ground
                    st[0, delay:delay + n] += np.multiply(buf, np.float32(left), out=tmp)
                    st[1, delay:delay + n] += np.multiply(buf, np.float32(right), out=tmp)
                wet = self.wets.get(stem)
                if wet is None:
                    wet = self.wets[stem] = room.new_wet()
                wet.add(decimated(buf, room.sample_rate), place)
        return self._finish(out, n)

    def _finish(self, out: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
        room = self.room
        for stem in set(self.carry) | set(self.wets):
            if stem not in out:
                out[stem] = self._stem_block(stem, n)
        for stem, st in out.items():
            wet = self.wets.get(stem)
            if wet is not None and not wet.add_to(st, n):
                del self.wets[stem]
            if room.max_direct and np.any(st[:, n:]):
                self.carry[stem] = st[:, n:]
        return {stem: st[:, :n] for stem, st in out.items()}


def _add_tone(out: dict[str, np.ndarray], stems: Sequence[str], sample_rate: int, b0: int,
              n: int) -> None:
    """The courtyard's room tone (``room_tone``) at samples b0 … b0 + n, shared equally by
    ``stems`` (so that they still sum to the mix)."""
    tone = room_tone(sample_rate)
    size = tone.shape[1]
    share = np.float32(1.0 / len(stems))
    for stem in stems:
        st = out.get(stem)
        if st is None:
            st = out[stem] = np.zeros((2, n), dtype=np.float32)
        at, done = b0 % size, 0
        while done < n:
            step = min(n - done, size - at)
            piece = tone[:, at:at + step]
            st[:, done:done + step] += piece if share == 1.0 else piece * share
            done += step
            at = 0


def as_frames(x: np.ndarray) -> np.ndarray:
    """(2, n) → (n, 2) float32 frames (column copies: ~8× faster than a strided cast; one
    copy when ``x`` is a view of frames already)."""
    if x.T.flags.c_contiguous and x.dtype == np.float32:
        return x.T.copy()
    out = np.empty((x.shape[1], 2), dtype=np.float32)
    out[:, 0] = x[0]
    out[:, 1] = x[1]
    return out


def preroll_blocks(room: Room, block: int) -> int:
    """Blocks a run must mix before its first one to hold the state a run from the start
    would: the carried direct sound (``room.max_delay``) and the ``Wet``'s overlap (the tail
    and the reflections' spread at the low rate), plus one for the interpolation's last
    sample."""
    if room.mode == "dry":
        return 0
    reach = max(room.max_delay, Wet(room).overlap.shape[1] * TAIL_DECIMATION)
    return math.ceil(reach / block)


def raw_blocks(
    placed: Sequence[PlacedNote], total: int, block: int, room: Room, merged: bool = False,
    first: int = 0, stop: int | None = None,
) -> Iterator[RawBlock]:
    """Blocks ``first`` to ``stop`` (exclusive; None: to the end) of the mix of ``placed``
    (sorted by start) in ``room``; ``merged``: one stem "" holding everything (no stems
    wanted).  A run that starts past block 0 mixes its pre-roll first and drops it."""
    count = -(-total // block)
    stop = count if stop is None else min(stop, count)
    begin = max(0, first - preroll_blocks(room, block)) if first else 0
    b_start = begin * block
    nxt = _first_starting_at(placed, b_start)
    active: list[tuple[PlacedNote, np.ndarray]] = [
        (p, voices.render_key(p.key)) for p in placed[:nxt] if p.end > b_start]
    spill = _Spill(room)
    stems = ("",) if merged else tuple(sorted({p.stem for p in placed}))
    spare: list[np.ndarray] = []  # group buffers reused from block to block (no page faults)
    scratch = np.empty(block, np.float32)  # a note's part at its gain, before it is added
    for j in range(begin, stop):
        b0 = j * block
        b1 = min(total, b0 + block)
        n = b1 - b0
        while nxt < len(placed) and placed[nxt].start < b1:
            p = placed[nxt]
            active.append((p, voices.render_key(p.key)))
            nxt += 1
        # group by (stem, place): notes at one place are summed in mono at their gains
        # (float32, like the waveforms: half the memory traffic), then heard through the room
        groups: dict[tuple[str, tuple[float, float]], np.ndarray] = {}
        for p, samples in active:
            lo = max(b0, p.start)
            hi = min(b1, p.end)
            if hi <= lo:
                continue
            gkey = ("" if merged else p.stem, p.place)
            part = samples[lo - p.start:hi - p.start]
            buf = groups.get(gkey)
            if buf is None:
                buf = spare.pop() if spare and spare[-1].size == n else np.empty(n, np.float32)
                groups[gkey] = buf
                if hi - lo == n:  # the place's first note fills the block: no zeros to add to
                    np.multiply(part, np.float32(p.gain), out=buf)
                    continue
                buf.fill(0.0)
            view = buf[lo - b0:hi - b0]
            np.add(view, np.multiply(part, np.float32(p.gain), out=scratch[:hi - lo]), out=view)
        active = [(p, w) for p, w in active if p.end > b1]
        out = spill.block(groups, n)
        spare.extend(groups.values())
        if room.tone:
            _add_tone(out, stems, room.sample_rate, b0, n)
        if j >= first:
            yield n, out


def _first_starting_at(placed: Sequence[PlacedNote], sample: int) -> int:
    """The index of the first note of ``placed`` (sorted by start) starting at or after
    ``sample``."""
    lo, hi = 0, len(placed)
    while lo < hi:
        mid = (lo + hi) // 2
        if placed[mid].start < sample:
            lo = mid + 1
        else:
            hi = mid
    return lo


def parallel_raw_blocks(
    placed: Sequence[PlacedNote], total: int, block: int, room: Room, merged: bool = False,
    threads: int = MIX_THREADS, segment: int = SEGMENT_BLOCKS,
) -> Iterator[RawBlock]:
    """``raw_blocks`` of the whole piece, the same bytes, mixed a segment of ``segment``
    blocks per thread on ``threads`` threads and yielded in order."""
    count = -(-total // block)
    if threads < 2 or count <= segment:
        yield from raw_blocks(placed, total, block, room, merged)
        return
    from concurrent.futures import ThreadPoolExecutor

    for p in placed:  # the room's per-place caches filled before the threads share it
        room.taps(*p.place)
        room.low_reflections(*p.place)

    def mix(first: int) -> list[RawBlock]:
        return list(raw_blocks(placed, total, block, room, merged, first, first + segment))

    starts = iter(range(0, count, segment))
    pending: deque = deque()
    with ThreadPoolExecutor(threads, thread_name_prefix="yuezheng-mix") as pool:
        try:
            for first in starts:
                pending.append(pool.submit(mix, first))
                if len(pending) > threads:
                    yield from pending.popleft().result()
            while pending:
                yield from pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def heard(sound: np.ndarray, place: tuple[float, float], room: Room,
          block: int = 1 << 16) -> np.ndarray:
    """A mono ``sound`` (float32) played at ``place`` and heard through ``room`` alone (no room
    tone, no DC blocker, no gain): (2, its length + ``room.extra``) float32, mixed block by
    block as a render is.  The courtyard's impulse response is ``heard`` of a unit impulse."""
    spill = _Spill(room)
    total = sound.size + room.extra
    out = np.zeros((2, total), dtype=np.float32)
    for b0 in range(0, total, block):
        n = min(block, total - b0)
        part = np.zeros(n, dtype=np.float32)
        piece = sound[b0:b0 + n]
        part[:piece.size] = piece
        groups = {("", place): part} if piece.size else {}
        got = spill.block(groups, n).get("")
        if got is not None:
            out[:, b0:b0 + n] = got
    return out

"""The notes of a render and their loudness energies, computed on several processes.

Before a render normalised to a loudness target is mixed, every distinct note is synthesized
and its K-weighted energy measured (``instruments.loudness_estimate``).  In one process the
voices take turns on the GIL; so ``rendered`` forks ``VOICE_PROCESSES`` children that take the
notes from a queue in the order the estimate reads them, write each sound into its place in
an anonymous shared memory map and send back its energies.  This process puts views of that
map into the note cache (``instruments.voices.keep_wave``) and the energies into the
estimate's cache, and hands each note on as it comes, so the estimate runs while the children
render; the mix then finds every note ready, and the mixing processes forked later share the
same map.  The sounds are the bytes ``synthesize`` gives in one process.

It is skipped (the caller renders as before, on threads) where ``fork`` is missing, when
``YUEZHENG_MIX_PROCESSES=0``, for a handful of notes, or when the notes would take more than
half the note cache's bound (``YUEZHENG_VOICE_CACHE_MB``): memory stays bounded.  The children
ignore SIGINT, die with this process and are reaped on every way out.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import queue
import signal
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from cues.errors import UserError
from instruments import voices
from instruments.loudness_estimate import keep_energy, note_energy
from instruments.parent_death import die_with_parent
from instruments.synthesis import synthesize
from instruments.voice_models import NoteKey, key_length

VOICE_PROCESSES = 2
MIN_NOTES = 16  # fewer notes than this: not worth a fork
_POLL_S = 0.5


def _usable(keys: Sequence[NoteKey], nbytes: int) -> bool:
    return (VOICE_PROCESSES > 1 and len(keys) >= MIN_NOTES
            and "fork" in multiprocessing.get_all_start_methods()
            and os.environ.get("YUEZHENG_MIX_PROCESSES", "") != "0"
            and nbytes <= voices.cache_limit_bytes() // 2)


def _child(keys: Sequence[NoteKey], offsets: Sequence[int], shared: mmap.mmap,
           tasks: multiprocessing.SimpleQueue, done: multiprocessing.Queue) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(signal.SIGKILL)
    while (i := tasks.get()) is not None:
        try:
            wave = synthesize(keys[i])
            np.frombuffer(shared, dtype=np.float32, count=wave.size, offset=offsets[i])[:] = wave
            done.put((i, note_energy(wave, keys[i].sample_rate), None))
        except UserError as exc:
            done.put((i, None, str(exc)))
        except BaseException as exc:  # handed to the parent, which raises it
            done.put((i, None, f"voice process: {type(exc).__name__}: {exc}"))


def rendered(keys: Iterable[NoteKey], processes: int = VOICE_PROCESSES,
             ) -> Iterator[tuple[NoteKey, np.ndarray]] | None:
    """(key, sound) for each of ``keys`` in order, as soon as a child has rendered it (its
    energies go to the estimate's cache on the way), so that the loudness estimate runs while
    the children render; None where processes are not possible or not worth it (the caller
    renders on threads: ``voices.render_keys``)."""
    order = list(dict.fromkeys(keys))
    todo = [k for k in order if voices.cached_wave(k) is None]
    lengths = [key_length(k) for k in todo]
    if not _usable(todo, 4 * sum(lengths)):
        return None
    return _rendered(order, todo, lengths, processes)


def _rendered(order: list[NoteKey], todo: list[NoteKey], lengths: list[int], processes: int,
              ) -> Iterator[tuple[NoteKey, np.ndarray]]:
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) * 4
    shared = mmap.mmap(-1, max(1, 4 * sum(lengths)))
    ctx = multiprocessing.get_context("fork")
    tasks: multiprocessing.SimpleQueue = ctx.SimpleQueue()
    done: multiprocessing.Queue = ctx.Queue()
    for i in range(len(todo)):  # in the order of first use: the estimate reads them so
        tasks.put(i)
    children = [ctx.Process(target=_child, name=f"yuezheng-voice-{c}", daemon=True,
                            args=(todo, offsets.tolist(), shared, tasks, done))
                for c in range(processes)]
    for child in children:
        tasks.put(None)
        child.start()
    index = {k: i for i, k in enumerate(todo)}
    ready: set[int] = set()
    whole = False
    try:
        for key in order:
            i = index.get(key)
            while i is not None and i not in ready:
                j, energies = _next(done, children)
                voices.keep_wave(todo[j], np.frombuffer(shared, dtype=np.float32,
                                                        count=lengths[j],
                                                        offset=int(offsets[j])))
                keep_energy(todo[j], energies)
                ready.add(j)
            wave = voices.cached_wave(key)
            yield key, wave if wave is not None else voices.render_key(key)
        whole = True
    finally:
        for child in children:
            if not whole:  # stopped early (an error, Ctrl-C): what they do is not wanted
                child.kill()
            child.join(timeout=2.0)
            if child.is_alive():
                child.kill()
                child.join()
        done.close()
        done.join_thread()


def _next(done: multiprocessing.Queue, children: list[multiprocessing.process.BaseProcess],
          ) -> tuple[int, tuple]:
    while True:
        try:
            i, energies, error = done.get(timeout=_POLL_S)
        except queue.Empty:
            dead = [c for c in children if not c.is_alive() and c.exitcode != 0]
            if dead:
                raise UserError(f"a voice process ended unexpectedly (exit code "
                                f"{dead[0].exitcode}): the render was not written") from None
            continue
        if error is not None:
            raise UserError(error)
        return i, energies

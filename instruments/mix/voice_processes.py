"""The notes of a render and their loudness energies, computed on several processes.

Before a render normalised to a loudness target is mixed, every distinct note is synthesized
and its K-weighted energy measured (``instruments.mix.loudness_estimate``).  In one process the
voices take turns on the GIL; so ``rendered`` forks ``VOICE_PROCESSES`` children that take the
notes from a queue in the order the estimate reads them, write each sound into its place in
an anonymous shared memory map and send back its energies.  This process puts views of that
map into the note cache (``instruments.voices.notes.keep_wave``) and the energies into the
estimate's cache, and hands each note on as it comes, so the estimate runs while the children
render; the mix then finds every note ready, and the mixing processes forked later share the
same map.  The sounds are the bytes ``synthesize`` gives in one process.

It is skipped (the caller renders as before, on threads) where ``fork`` is missing, when
``YUEZHENG_MIX_PROCESSES=0``, for a handful of notes, or when the notes would take more than
half the note cache's bound (``YUEZHENG_VOICE_CACHE_MB``): memory stays bounded.  The children
ignore SIGINT, die with this process and are reaped on every way out.
"""

from __future__ import annotations

import itertools
import mmap
from collections.abc import Callable, Generator, Iterable, Sequence

import numpy as np

from instruments.mix.loudness_estimate import Energies, keep_energy, note_energy
from instruments.processes import workers
from instruments.processes.workers import Workers
from instruments.voices import notes as voices
from instruments.voices.models import NoteKey, key_length
from instruments.voices.synthesis import synthesize

VOICE_PROCESSES = 2
MIN_NOTES = 16  # fewer notes than this: not worth a fork


def _usable(keys: Sequence[NoteKey], nbytes: int) -> bool:
    return (VOICE_PROCESSES > 1 and len(keys) >= MIN_NOTES and workers.possible()
            and nbytes <= voices.cache_limit_bytes() // 2)


def _work(i: int, keys: Sequence[NoteKey], offsets: Sequence[int], shared: mmap.mmap,
          ) -> tuple[int, Energies]:
    """A child's step: note ``i`` synthesized into its place in the map; (i, its energies)."""
    wave = synthesize(keys[i])
    workers.populate(shared, offsets[i], wave.nbytes)
    np.frombuffer(shared, dtype=np.float32, count=wave.size, offset=offsets[i])[:] = wave
    return i, note_energy(wave, keys[i].sample_rate)


def rendered(keys: Iterable[NoteKey], processes: int = VOICE_PROCESSES,
             meanwhile: Callable[[], None] | None = None,
             ) -> Generator[tuple[NoteKey, np.ndarray], None, None] | None:
    """(key, sound) for each of ``keys`` in order, as soon as a child has rendered it (its
    energies go to the estimate's cache on the way), so that the loudness estimate runs while
    the children render; None where processes are not possible or not worth it (the caller
    renders on threads: ``voices.render_keys``).  ``meanwhile()`` is called once the children
    have their tasks, before the first sound is awaited."""
    order = list(dict.fromkeys(keys))
    todo = [k for k in order if voices.cached_wave(k) is None]
    lengths = [key_length(k) for k in todo]
    if not _usable(todo, 4 * sum(lengths)):
        return None
    return _rendered(order, todo, lengths, processes, meanwhile)


def _rendered(order: list[NoteKey], todo: list[NoteKey], lengths: list[int], processes: int,
              meanwhile: Callable[[], None] | None,
              ) -> Generator[tuple[NoteKey, np.ndarray], None, None]:
    offsets = list(itertools.accumulate((4 * n for n in lengths[:-1]), initial=0))  # bytes
    shared = mmap.mmap(-1, max(1, 4 * sum(lengths)))
    pool = Workers("voice", "voice", lambda i: _work(i, todo, offsets, shared), processes)
    index = {k: i for i, k in enumerate(todo)}
    ready: set[int] = set()
    whole = False
    try:  # started inside: an interrupt at any point after the first fork stops them
        pool.start()  # before the tasks go in: more than a pipe holds would wait for a reader
        for task in range(len(todo)):  # in the order of first use: the estimate reads them so
            pool.put(task)
        if meanwhile is not None:
            meanwhile()
        for key in order:
            i = index.get(key)
            while i is not None and i not in ready:
                j, energies = pool.result()
                voices.keep_wave(todo[j], np.frombuffer(shared, dtype=np.float32,
                                                        count=lengths[j],
                                                        offset=offsets[j]))
                keep_energy(todo[j], energies)
                ready.add(j)
            wave = voices.cached_wave(key)
            yield key, wave if wave is not None else voices.render_key(key)
        whole = True
    finally:
        pool.stop(whole)

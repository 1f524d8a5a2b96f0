"""Files written whole or not at all.

Every output (audio, stems, MIDI, scores, pictures, new sheets) is written to a temporary file
beside its target (``.NAME.XXXXXX.tmp.SUFFIX``: each run its own, so two runs writing one path
never mix) and renamed over the target only when the whole file is written and synced.  A failed
or interrupted run removes its temporary files and leaves any old file as it was; the exception
carries a note saying so (``"OUT not written; the old file is untouched"``), which ``cli``
prints.  While files are being written, SIGTERM raises ``Interrupted`` as Ctrl-C raises
KeyboardInterrupt, so that a killed run cleans up too (in the main thread only: signal handlers
live there); SIGHUP (the terminal closed) does the same.  The renames of one group (a mix and its
stems) are done with those signals blocked, so that an interruption cannot leave half a group
renamed.

What is at the target decides how it is written (``instruments.files.targets``): a symlink is
followed and its target replaced in its own folder; ``-`` (standard output), a FIFO or a
character device is never replaced — the whole file is made in a temporary file (in the
system's temporary folder) and then written through; a directory, a disk or a socket is refused.

A long file is opened with ``open_write_behind``: its written pages are handed to the disk as
it grows (every ``WRITE_BEHIND_BYTES``), not all at its close and sync — on ext4 a 600 MB
render's close (the temporary was truncated on opening) or sync otherwise waited 0.2–0.3 s
for everything at the end.
"""

from __future__ import annotations

import io
import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from instruments.files.targets import OutputTarget, open_stream, output_target, write_through

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_ENDING = (signal.SIGTERM, signal.SIGHUP)  # raise Interrupted while files are being written
WRITE_BEHIND_BYTES = 32 << 20


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal (``signum``) while it was writing files."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class AtomicFiles:
    """A group of outputs committed together: ``temp_for(target)`` gives the path to write."""

    def __init__(self, fsync: bool = True) -> None:
        self.fsync = fsync
        self._staged: dict[Path, Path] = {}  # target → its temporary file
        self._streams: dict[Path, tuple[Path, int, OutputTarget]] = {}  # (temp, descriptor, …)

    def temp_for(self, target: str | Path) -> Path:
        """A new empty temporary file to write ``target``'s content to: beside the file (a
        symlink's target is written), or for a stream (``-``, a FIFO, a character device) in
        the system's temporary folder, the stream opened now (a FIFO without a reader, a
        terminal, a directory: UserError before anything is made)."""
        where = output_target(target)
        final = where.final
        if final in self._staged or final in self._streams:
            raise ValueError(f"{target} is staged twice")
        stream_fd = open_stream(where) if where.stream else None
        try:
            fd, name = tempfile.mkstemp(dir=None if where.stream else final.parent,
                                        prefix=f".{final.stem}.", suffix=f".tmp{final.suffix}")
        except OSError as exc:  # no room for it beside the target: nothing was written
            if stream_fd is not None:
                os.close(stream_fd)
            exc.add_note(_not_written(final))
            raise
        os.close(fd)
        if stream_fd is not None:
            self._streams[final] = (Path(name), stream_fd, where)
        else:
            self._staged[final] = Path(name)
        return Path(name)

    def commit(self) -> None:
        """Sync every temporary file and rename it over its target."""
        for final, temp in self._staged.items():
            _settle(temp, final, self.fsync)
        old_mask = _block_signals()
        try:
            folders = {final.parent for final in self._staged}
            for final, temp in list(self._staged.items()):
                os.replace(temp, final)
                del self._staged[final]
        finally:
            _unblock_signals(old_mask)
        if self.fsync:
            for folder in folders:
                _sync_directory(folder)
        for final, (temp, fd, where) in list(self._streams.items()):
            try:
                write_through(fd, temp)
            except OSError as exc:
                exc.add_note(f"{where.path} ({where.what}) may have been written in part")
                raise
            del self._streams[final]
            os.close(fd)
            temp.unlink(missing_ok=True)

    def discard(self, exc: BaseException) -> None:
        """Remove every temporary file; note on ``exc`` that the targets were not written."""
        for final, temp in self._staged.items():
            temp.unlink(missing_ok=True)
            exc.add_note(_not_written(final))
        self._staged.clear()
        for temp, fd, where in self._streams.values():
            temp.unlink(missing_ok=True)
            os.close(fd)
            if not any(where.path in note for note in getattr(exc, "__notes__", ())):
                exc.add_note(f"{where.path} ({where.what}) not written")
        self._streams.clear()


class _WriteBehind(io.BufferedWriter):
    """A buffered file that starts the write-back of what it holds every ``WRITE_BEHIND_BYTES``
    (``posix_fadvise(DONTNEED)``: the kernel writes the dirty pages out in the background and
    keeps no clean ones; nothing waits, and the sync at the commit finds little left)."""

    def __init__(self, raw: io.FileIO) -> None:
        super().__init__(raw, buffer_size=1 << 20)
        self._unsent = 0
        self.failure: OSError | None = None  # the first write error (a full disk): see write

    # the bytes types a render hands over, where io's stub says Buffer (not on 3.11's typing)
    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        """Write ``data``; a write error is kept and raised at ``flush`` and ``close``, the
        rest taken and dropped (the file is discarded) — libsndfile calls this from C, where
        an exception would be printed as a traceback and lost."""
        if self.failure is not None:
            return memoryview(data).nbytes
        try:
            n = super().write(data)
            self._unsent += n
            if self._unsent >= WRITE_BEHIND_BYTES:
                self._unsent = 0
                super().flush()
                os.posix_fadvise(self.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError as exc:
            self.failure = exc
            return memoryview(data).nbytes
        return n

    def seek(self, offset: int, whence: int = 0) -> int:
        if self.failure is not None:
            return 0  # nothing more reaches the disk; the error is raised at close
        try:
            return super().seek(offset, whence)
        except OSError as exc:  # the buffer could not be flushed
            self.failure = exc
            return 0

    def flush(self) -> None:
        if self.failure is not None:
            raise self.failure
        super().flush()

    def close(self) -> None:
        if self.raw.closed:
            return
        if self.failure is None:
            try:
                super().flush()
            except OSError as exc:
                self.failure = exc
        if self.failure is not None:
            failure, self.failure = self.failure, None
            self.raw.close()  # what is still buffered cannot be written: dropped
            raise failure
        super().close()


def open_write_behind(path: str | Path) -> io.BufferedWriter:
    """``path`` opened for writing from its start, as ``open(path, "wb")`` but without
    truncating it (a ``temp_for`` file is new and empty) and, where the system can, handing
    its pages to the disk as it grows (``_WriteBehind``)."""
    raw = io.FileIO(os.open(path, os.O_WRONLY | os.O_CREAT, 0o666), "w")
    if os.fstat(raw.fileno()).st_size:
        raw.close()
        raise ValueError(f"{path} is not empty")
    if not hasattr(os, "posix_fadvise"):
        return io.BufferedWriter(raw, buffer_size=1 << 20)
    return _WriteBehind(raw)


def _not_written(final: Path) -> str:
    return f"{final.name} not written" + ("; the old file is untouched" if final.exists() else "")


@contextmanager
def atomic_files(fsync: bool = True) -> Iterator[AtomicFiles]:
    """Stage outputs with ``temp_for``; on a clean exit they replace their targets together,
    on any exception (Ctrl-C and SIGTERM included) they are removed and the targets left."""
    group = AtomicFiles(fsync)
    with interrupt_on_ending():
        try:
            yield group
        except BaseException as exc:
            group.discard(exc)
            raise
        try:
            group.commit()
        except BaseException as exc:
            group.discard(exc)
            raise


@contextmanager
def atomic_path(target: str | Path, fsync: bool = True) -> Iterator[Path]:
    """The temporary path to write ``target`` to, renamed over it at the end."""
    with atomic_files(fsync) as group:
        yield group.temp_for(target)


def write_bytes_atomically(target: str | Path, data: bytes) -> None:
    with atomic_path(target) as temp:
        temp.write_bytes(data)


def write_text_atomically(target: str | Path, text: str) -> None:
    with atomic_path(target) as temp:
        temp.write_text(text, encoding="utf-8")


def _settle(temp: Path, final: Path, fsync: bool) -> None:
    """Give ``temp`` the mode the target has (or a new file would get) and sync it."""
    if final.exists():
        mode = final.stat().st_mode & 0o7777
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(temp, mode)
    if fsync:
        fd = os.open(temp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _sync_directory(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a directory; the rename is done
    finally:
        os.close(fd)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def interrupt_on_ending() -> Iterator[None]:
    """Within: SIGTERM and SIGHUP raise Interrupted, as Ctrl-C raises KeyboardInterrupt, so
    that temporary files and folders are removed on the way out (a signal someone else
    already handles is left to them)."""
    if not _in_main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise Interrupted(signum)

    taken = [s for s in _ENDING if signal.getsignal(s) is signal.SIG_DFL]
    for signum in taken:
        signal.signal(signum, interrupt)
    try:
        yield
    finally:
        for signum in taken:
            signal.signal(signum, signal.SIG_DFL)




def _block_signals() -> set[int] | None:
    if not _in_main_thread():
        return None
    return set(signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS))


def _unblock_signals(old: set[int] | None) -> None:
    if old is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)

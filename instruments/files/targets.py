"""Where an output goes, and the format its name asks for.

Every file a command writes (``-o OUT``, ``--stems DIR``'s files, ``memory:PATH``, ``new``'s
sheet) goes through ``instruments.files.atomic``, which asks ``output_target`` what is at the
path first:

- nothing, or a regular file: a new file is put there whole (a temporary file beside it,
  renamed over it); a symlink is followed, so that its target is replaced in the target's own
  folder and the link stays a link;
- ``-``: standard output, written through once the whole file is made (refused when it is a
  terminal);
- a FIFO or a character device (``/dev/null``, a serial line): opened for writing without
  creating or truncating anything and written through once the whole file is made — a FIFO
  that no one reads is refused at once rather than waited on;
- a directory, a block device (a disk) or a socket: refused.

Nothing is ever renamed over a FIFO or a device node.  ``output_suffix`` is the rule for the
format: a name's extension must be one the command writes (``midi -o take.wav`` is refused);
a stream with no extension (``-``, ``/dev/null``) gets the command's first format.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cues.errors import UserError

STDOUT = "-"
"""The output name that means standard output."""


@dataclass(frozen=True)
class OutputTarget:
    """What ``path`` (as the user named it) is: a regular file to be replaced whole at
    ``final`` (symlinks resolved), or a stream (``stream`` True) written through."""

    path: str
    final: Path
    stream: bool
    what: str  # "standard output", "a FIFO", "a character device", "a file"


def is_stream(path: str | Path) -> bool:
    """True when ``path`` is ``-`` or (through its symlinks) a FIFO or a character device."""
    if str(path) == STDOUT:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def output_target(path: str | Path) -> OutputTarget:
    """What is at ``path``, or UserError when nothing may be written there (a directory, a
    block device, a socket)."""
    name = str(path)
    if name == STDOUT:
        return OutputTarget(name, Path(STDOUT), True, "standard output")
    final = Path(os.path.realpath(path))
    try:
        mode = os.stat(final).st_mode
    except FileNotFoundError:
        return OutputTarget(name, final, False, "a file")
    except OSError as exc:
        raise UserError(f"cannot write {name}: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        return OutputTarget(name, final, False, "a file")
    if stat.S_ISFIFO(mode):
        return OutputTarget(name, final, True, "a FIFO")
    if stat.S_ISCHR(mode):
        return OutputTarget(name, final, True, "a character device")
    kind = ("a directory" if stat.S_ISDIR(mode) else "a block device (a disk)"
            if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")
    shown = name if str(final) == os.path.abspath(name) else f"{name} (→ {final})"
    raise UserError(f"cannot write {shown}: it is {kind}; give a file name, -, a FIFO or a "
                    "character device")


def open_stream(target: OutputTarget) -> int:
    """A descriptor open for writing to stream ``target`` (nothing created, nothing truncated,
    never blocking on a FIFO with no reader: that is refused); UserError when it cannot be."""
    if target.final == Path(STDOUT):
        fd = os.dup(1)
    else:
        try:
            fd = os.open(target.final, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise UserError(f"cannot write {target.path}: it is a FIFO that no one is "
                                "reading; start its reader first") from None
            raise UserError(f"cannot write {target.path}: {exc.strerror or exc}") from None
    if os.isatty(fd):
        os.close(fd)
        where = "standard output" if target.final == Path(STDOUT) else target.path
        raise UserError(f"cannot write {where}: it is a terminal; redirect it to a file or a "
                        "pipe (… > FILE, … | PROGRAM)")
    os.set_blocking(fd, True)
    return fd


def write_through(fd: int, source: Path) -> None:
    """Copy the whole file ``source`` to descriptor ``fd`` (a stream)."""
    with open(source, "rb") as src:
        while block := src.read(1 << 20):
            view = memoryview(block)
            while view:
                view = view[os.write(fd, view):]


def output_suffix(path: str | Path, suffixes: Sequence[str], what: str) -> str:
    """The extension (lower case, one of ``suffixes``) that ``path`` asks ``what`` to be
    written as; a stream with no extension gets ``suffixes[0]``.  UserError for any other."""
    suffix = Path(str(path)).suffix.lower() if str(path) != STDOUT else ""
    if suffix in suffixes:
        return suffix
    if not suffix and is_stream(path):
        return suffixes[0]
    got = f"not {suffix}" if suffix else "and the name has no extension"
    raise UserError(f"{path}: {what} is written as {' or '.join(suffixes)}, {got}")

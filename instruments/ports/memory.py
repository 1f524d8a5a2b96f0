"""The ``memory:`` output: no hardware, a record of every message sent.

``memory:`` keeps the record in ``MemoryOutput.messages``; ``memory:PATH`` also writes it to
PATH when the port closes, whole or not at all (``instruments.files.atomic``: a temporary file
beside it, then a rename; a FIFO or a device written through, never replaced), as JSON lines
``{"at": <deadline>, "data": "90 3c 64"}``; a PATH it could not write is refused when the port
opens, before a show starts.  So a rite can be run live on any machine
(``yuezheng live RITE --output memory:rehearsal.jsonl --auto``) and what it sent
read back with ``read_memory_record``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from cues.errors import UserError
from instruments.files.atomic import atomic_path
from instruments.files.targets import output_target
from instruments.ports.base import OutputPort, PortError, PortSpec


class MemoryOutput(OutputPort):
    """An output that records ``(deadline, bytes)`` per message in ``messages`` (send order;
    the deadline is the ``at`` given to ``send()``, else ``time.perf_counter()`` at the send)."""

    def __init__(self, spec: PortSpec, **_names: str) -> None:
        """``_names``: the client and port names other outputs take (a record has none)."""
        super().__init__(str(spec))
        self.spec = spec
        self.path: Path | None = Path(spec.name) if spec.name else None
        self.messages: list[tuple[float, bytes]] = []
        self.own_name: str | None = str(spec)
        self.destination: str | None = str(self.path) if self.path else None

    def _open(self) -> None:
        if self.path is not None:
            writable(self.path)
        self.messages = []

    def _send(self, data: bytes) -> None:
        self.messages.append((time.perf_counter(), data))

    def _send_at(self, data: bytes, at: float | None) -> None:
        self.messages.append((time.perf_counter() if at is None else at, data))

    def _close(self) -> None:
        if self.path is not None:
            write_memory_record(self.path, self.messages)


OUTPUT = MemoryOutput


def writable(path: Path | str) -> None:
    """PortError now, before a show starts, if the record could not be written to ``path`` at
    its end: a folder that is missing or read-only, a directory, a FIFO no one reads."""
    try:
        where = output_target(path)
        if where.stream:
            return  # opened, and a FIFO's reader looked for, when the record is written
        fd, name = tempfile.mkstemp(dir=where.final.parent, prefix=f".{where.final.name}.",
                                    suffix=".tmp")
    except UserError as exc:
        raise PortError(f"memory:{path}: {exc}") from None
    except OSError as exc:
        raise PortError(f"memory:{path}: cannot write there ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(name)


def write_memory_record(path: Path | str, messages: list[tuple[float, bytes]]) -> None:
    """Write ``messages`` to ``path`` as JSON lines, whole or not at all
    (``instruments.files.atomic``)."""
    try:
        with atomic_path(path) as temp, open(temp, "w", encoding="utf-8") as f:
            for at, data in messages:
                f.write(json.dumps({"at": at, "data": data.hex(" ")}) + "\n")
    except (OSError, UserError) as exc:
        notes = "; ".join(getattr(exc, "__notes__", ()))
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise PortError(f"cannot write {path}: {why}" + (f" ({notes})" if notes else "")) from None


def read_memory_record(path: Path | str) -> list[tuple[float, bytes]]:
    """The ``(deadline, bytes)`` pairs a ``memory:PATH`` output wrote, in send order."""
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [(float(row["at"]), bytes.fromhex(row["data"])) for row in rows]

"""Text tags in a WAV file: the RIFF ``LIST``/``INFO`` chunk, written and read.

An ``INFO`` list holds sub-chunks named by four-letter ids — ``INAM`` (title), ``ICMT``
(comment), ``ISFT`` (software) … — each a NUL-terminated string, padded to an even length.
Players, editors and ``ffprobe`` show them; yuezheng writes its files' provenance there
(``sequencer.outputs.provenance``), as UTF-8.

libsndfile (1.2) reads ``INFO`` strings only up to about 4 KB and drops longer ones, so they are
read here: the chunks of a RIFF or RF64 ``WAVE`` file are walked (a chunk after the audio is
found too: the ``data`` chunk is skipped, its 64-bit size taken from ``ds64`` in an RF64 file).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from pathlib import Path

INFO_IDS = {"title": b"INAM", "comment": b"ICMT", "software": b"ISFT"}
"""The tags yuezheng writes, by name, and their ``INFO`` ids."""

MAX_INFO_BYTES = 1 << 20  # an INFO list longer than this is not read (a hostile file)
_MAX_CHUNKS = 10_000  # chunks walked before giving up on a file


def info_chunk(tags: Mapping[str, str]) -> bytes:
    """A ``LIST`` chunk of type ``INFO`` holding ``tags`` (names of ``INFO_IDS``, or four-letter
    ids) as UTF-8, in the order given; empty bytes when there is nothing to hold."""
    parts = [b"INFO"]
    for name, text in tags.items():
        if not text:
            continue
        key = INFO_IDS.get(name, name.encode("ascii"))
        if len(key) != 4:
            raise ValueError(f"an INFO id has four letters, got {name!r}")
        data = text.encode("utf-8") + b"\x00"
        parts += [key, struct.pack("<I", len(data)), data, b"\x00" * (len(data) % 2)]
    if len(parts) == 1:
        return b""
    body = b"".join(parts)
    return b"LIST" + struct.pack("<I", len(body)) + body


def read_info(path: str | Path) -> dict[str, str]:
    """The ``INFO`` strings of a WAV file by tag name (``INFO_IDS``; other ids by their four
    letters), decoded as UTF-8 (bytes that are not: replaced); {} for a file without them or
    that is not a RIFF/RF64 WAVE file."""
    names = {v: k for k, v in INFO_IDS.items()}
    out: dict[str, str] = {}
    with open(path, "rb") as f:
        head = f.read(12)
        if len(head) < 12 or head[:4] not in (b"RIFF", b"RF64") or head[8:12] != b"WAVE":
            return {}
        data_size: int | None = None  # an RF64 file's data chunk size (ds64)
        for _ in range(_MAX_CHUNKS):
            chunk = f.read(8)
            if len(chunk) < 8:
                break
            cid, size = chunk[:4], struct.unpack("<I", chunk[4:])[0]
            if cid == b"ds64" and size >= 16:
                body = f.read(size)
                data_size = struct.unpack("<Q", body[8:16])[0]
                size = 0
            elif cid == b"data" and size == 0xFFFFFFFF and data_size is not None:
                size = data_size
            elif cid == b"LIST" and 4 <= size <= MAX_INFO_BYTES:
                body = f.read(size)
                if body[:4] == b"INFO":
                    out.update(_info_strings(body[4:], names))
                size = 0
            f.seek(size + size % 2, 1)
    return out


def _info_strings(body: bytes, names: Mapping[bytes, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    at = 0
    while at + 8 <= len(body):
        key, size = body[at:at + 4], struct.unpack("<I", body[at + 4:at + 8])[0]
        data = body[at + 8:at + 8 + size]
        name = names.get(key) or key.decode("latin-1")
        out[name] = data.split(b"\x00", 1)[0].decode("utf-8", errors="replace")
        at += 8 + size + size % 2
    return out

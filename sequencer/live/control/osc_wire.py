"""The OSC 1.0 wire format, checked strictly before python-osc reads a packet.

python-osc is lenient: it reads ``/go`` out of a message with bytes left over after its
arguments, with a type tag it does not know (skipped with a warning), and out of a bundle whose
element claims more bytes than the packet holds. A remote control must not act on a packet it
could only guess at, so ``malformed(data)`` walks the packet as the specification lays it out —
strings NUL-terminated and padded to four bytes, a type tag string that starts with ``,`` and
names only known types, each argument's bytes present, bundle elements of a positive size that
is a multiple of four and fits, nothing left over — and says what is wrong (None: well formed).
``address_of(data)`` is the message's address when it can be read, for the refusal's reply.

A message with no type tag string at all (OSC 1.0 asks receivers to accept the older senders
that omit it) is well formed: it has no arguments.
"""

from __future__ import annotations

import struct

BUNDLE = b"#bundle\x00"
MAX_DEPTH = 8  # bundles within bundles
FIXED = {"i": 4, "f": 4, "c": 4, "r": 4, "m": 4, "d": 8, "h": 8, "t": 8}  # argument bytes
EMPTY = set("TFNI[]")  # types with no bytes


def _string(data: bytes, at: int) -> tuple[bytes, int] | None:
    """A NUL-terminated string padded to four bytes at ``at``: (its bytes, the index after)."""
    end = data.find(b"\x00", at)
    if end < 0:
        return None
    after = (end // 4 + 1) * 4
    if after > len(data) or any(data[end:after]):
        return None
    return data[at:end], after


def _message(data: bytes) -> str | None:
    if len(data) % 4:
        return "its length is not a multiple of 4"
    address = _string(data, 0)
    if address is None or not address[0].startswith(b"/"):
        return "no NUL-terminated, padded address starting with /"
    at = address[1]
    if at == len(data):
        return None  # no type tag string: no arguments
    tags = _string(data, at)
    if tags is None or not tags[0].startswith(b","):
        return "the type tag string does not start with ','"
    at = tags[1]
    for tag in tags[0][1:].decode("latin-1"):
        if tag in EMPTY:
            continue
        if tag in FIXED:
            at += FIXED[tag]
        elif tag in "sS":
            found = _string(data, at)
            if found is None:
                return f"argument '{tag}' is not a padded string"
            at = found[1]
        elif tag == "b":
            if at + 4 > len(data):
                return "a blob without its size"
            size = struct.unpack(">i", data[at:at + 4])[0]
            if size < 0:
                return "a blob of negative size"
            at += 4 + (size + 3) // 4 * 4
        else:
            return f"unknown type tag {tag!r}"
        if at > len(data):
            return f"argument '{tag}' runs past the end"
    if at != len(data):
        return f"{len(data) - at} byte(s) left after the arguments"
    return None


def malformed(data: bytes, depth: int = 0) -> str | None:
    """Why ``data`` is not a well-formed OSC packet (a message or a bundle), or None."""
    if not data.startswith(BUNDLE):
        return _message(data)
    if depth >= MAX_DEPTH:
        return "bundles nested too deep"
    if len(data) < 16:
        return "a bundle without its time tag"
    at = 16
    while at < len(data):
        if at + 4 > len(data):
            return "a bundle element without its size"
        size = struct.unpack(">i", data[at:at + 4])[0]
        at += 4
        if size <= 0 or size % 4 or at + size > len(data):
            return f"a bundle element of size {size} in {len(data) - at} byte(s)"
        why = malformed(data[at:at + size], depth + 1)
        if why is not None:
            return why
        at += size
    return None


def address_of(data: bytes, depth: int = 0) -> str | None:
    """The address of the (first) message in ``data`` when it can be read, else None."""
    if data.startswith(BUNDLE):
        if depth >= MAX_DEPTH or len(data) < 20:
            return None
        return address_of(data[20:], depth + 1)
    end = data.find(b"\x00")
    if not data.startswith(b"/") or end < 0:
        return None
    try:
        text = data[:end].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text.isprintable() else None

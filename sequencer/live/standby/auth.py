"""The hot-standby link's security: the shared key, each packet's HMAC, the replay window, and
the show id both machines must share.

- **Key**: from a file (``--peer-key-file``) or the environment (``YUEZHENG_PEER_KEY``): at
  least ``MIN_KEY_BYTES`` bytes (a file's trailing newline is not part of it).
- **HMAC**: every packet is an OSC bundle whose last element is the message ``/yuezheng/hmac``
  with one blob: HMAC-SHA256, under the key, of every byte of the bundle before that element
  (the ``#bundle`` header, the time tag, every other element). A packet is checked before it is
  parsed: one that does not end in a valid HMAC is dropped unread.
- **Sequence**: each packet carries a 64-bit sequence number, starting at the sender's clock in
  microseconds (a restarted sender starts above where it was) and rising by one a packet. The
  receiver keeps the highest it has accepted and a window of the ``WINDOW`` before it (as IPsec
  does): a packet at or below the window, or one already seen, is a replay and is dropped;
  a late packet inside the window (reordered by the network) is accepted once.
- **Show id**: the SHA-256 of what the show will play (``show_id``): two machines with another
  sheet, reading, variant or setting that changes the timeline have different ids.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
from collections.abc import Iterable

from cues.errors import UserError
from cues.limits import SECRET_BYTES, InputFileError, read_limited

KEY_ENV = "YUEZHENG_PEER_KEY"
MIN_KEY_BYTES = 16
MAX_KEY_BYTES = 4096
HMAC_ADDRESS = "/yuezheng/hmac"
DIGEST_BYTES = 32
WINDOW = 256


def _osc_string(text: str) -> bytes:
    raw = text.encode() + b"\0"
    return raw + b"\0" * (-len(raw) % 4)


#: the HMAC element before its digest: size, address, type tags ",b", blob size
_HMAC_HEAD = _osc_string(HMAC_ADDRESS) + _osc_string(",b") + struct.pack(">i", DIGEST_BYTES)
HMAC_ELEMENT_BYTES = 4 + len(_HMAC_HEAD) + DIGEST_BYTES


def load_key(key_file: str | None, environ: dict[str, str] | None = None) -> bytes:
    """The shared key: from ``key_file``, else from ``YUEZHENG_PEER_KEY``; UserError if
    neither gives one of at least MIN_KEY_BYTES bytes."""
    env = os.environ if environ is None else environ
    if key_file:
        try:
            key = read_limited(key_file, SECRET_BYTES, "a file holding the shared key")
        except InputFileError as exc:
            raise UserError(f"--peer-key-file {exc}") from None
        key = key[:MAX_KEY_BYTES + 2].rstrip(b"\r\n")
        where = f"--peer-key-file {key_file}"
    elif env.get(KEY_ENV):
        key, where = env[KEY_ENV].encode(), KEY_ENV
    else:
        raise UserError(f"a peer link needs a shared key: --peer-key-file FILE or {KEY_ENV} "
                        f"(the same on both machines, at least {MIN_KEY_BYTES} bytes)")
    if not MIN_KEY_BYTES <= len(key) <= MAX_KEY_BYTES:
        raise UserError(f"{where}: the key must be {MIN_KEY_BYTES} to {MAX_KEY_BYTES} bytes, "
                        f"not {len(key)}")
    return key


def sign(key: bytes, bundle: bytes) -> bytes:
    """``bundle`` (an OSC bundle's bytes) with its HMAC element appended."""
    digest = hmac.digest(key, bundle, "sha256")
    return bundle + struct.pack(">i", HMAC_ELEMENT_BYTES - 4) + _HMAC_HEAD + digest


def verified(key: bytes, packet: bytes) -> bytes | None:
    """The signed bundle (without its HMAC element) if ``packet`` ends in a valid HMAC of it,
    else None."""
    if len(packet) <= HMAC_ELEMENT_BYTES or not packet.startswith(b"#bundle\0"):
        return None
    body, tail = packet[:-HMAC_ELEMENT_BYTES], packet[-HMAC_ELEMENT_BYTES:]
    if tail[:-DIGEST_BYTES] != struct.pack(">i", HMAC_ELEMENT_BYTES - 4) + _HMAC_HEAD:
        return None
    digest = hmac.digest(key, body, "sha256")
    return body if hmac.compare_digest(digest, tail[-DIGEST_BYTES:]) else None


class ReplayWindow:
    """Which sequence numbers were accepted (see the module docstring)."""

    def __init__(self, size: int = WINDOW) -> None:
        self.size = size
        self.highest: int | None = None
        self._seen = 0  # bit i: highest - i was accepted

    def accept(self, seq: int) -> bool:
        """True (and remembered) for a new sequence number; False for a replay."""
        if self.highest is None or seq > self.highest:
            shift = seq - self.highest if self.highest is not None else self.size
            self._seen = ((self._seen << shift) | 1) & ((1 << self.size) - 1)
            self.highest = seq
            return True
        behind = self.highest - seq
        if behind >= self.size or self._seen >> behind & 1:
            return False
        self._seen |= 1 << behind
        return True


def show_id(parts: Iterable[bytes]) -> str:
    """The SHA-256 (hex) of a show's canonical parts, each length-prefixed."""
    h = hashlib.sha256()
    for part in parts:
        h.update(struct.pack(">Q", len(part)))
        h.update(part)
    return h.hexdigest()

"""What ``live --hear SPEC`` hears: a JACK audio port, or a file played in as if live.

- ``jack:PORT`` — a JACK audio input of yuezheng's own (``yuezheng-hear:in``), connected from
  ``PORT`` (``system:capture_1``: a microphone on the drum through the sound card; any client's
  audio output: a recording fed into JACK);
- ``jack:`` — the input alone, for a patchbay to connect;
- ``FILE`` (``.wav``, ``.flac``, ``.aif(f)``, ``.ogg``) — a recording heard in real time from
  the moment the show begins (rehearsal without a drummer, tests).

``--hear-latency MS`` is taken off every stroke besides the input's own latency (JACK's capture
latency): the sound's way from the drum to the microphone (about 3 ms a metre).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from cues.errors import UserError

AUDIO_SUFFIXES = frozenset({".wav", ".flac", ".aif", ".aiff", ".ogg"})
MAX_EXTRA_LATENCY_MS = 1000.0


@dataclass(frozen=True)
class HearSpec:
    """A parsed ``--hear``: ``kind`` "jack" (``port``: the source to connect, or None) or
    "file" (``path``)."""

    kind: str
    port: str | None = None
    path: str | None = None

    def describe(self) -> str:
        if self.kind == "file":
            return f"the file {self.path}"
        return f"JACK port {self.port}" if self.port else "a JACK input (connect it yourself)"


def parse_hear(spec: str) -> HearSpec:
    """``spec`` checked (UserError naming the flag)."""
    text = spec.strip()
    kind, sep, name = text.partition(":")
    if sep and kind == "jack":
        return HearSpec("jack", name.strip() or None)
    path = Path(text)
    if path.suffix.lower() in AUDIO_SUFFIXES:
        if not path.is_file():
            raise UserError(f"--hear {spec}: no such file")
        return HearSpec("file", path=str(path))
    raise UserError(f"--hear {spec!r}: expected jack:PORT (a JACK audio output to hear, e.g. "
                    f"jack:system:capture_1), jack: (an input to connect yourself) or an audio "
                    f"file ({', '.join(sorted(AUDIO_SUFFIXES))})")


def checked_latency_ms(ms: float) -> float:
    """``--hear-latency`` checked: 0 or more milliseconds, under a second."""
    if not (math.isfinite(ms) and 0 <= ms <= MAX_EXTRA_LATENCY_MS):
        raise UserError(f"--hear-latency {ms:g}: expected 0–{MAX_EXTRA_LATENCY_MS:g} ms (the "
                        f"sound's way from the drum to the microphone: about 3 ms a metre)")
    return ms

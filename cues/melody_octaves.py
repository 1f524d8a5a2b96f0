"""Who plays a melody, at what octave of it — one table for the timeline, MIDI, audio and score.

The 工 sing the 詩譜's 律; the 瑟 doubles them an octave below; in 合樂 and 無算樂 the 笙 double
at pitch and the 和 an octave above; the 管 plays at pitch.  Offsets are in semitones from the
written 律.  ``sequencer.pieces`` plays the timeline by this table, ``instruments.score`` writes
the 瑟 staff by it, so the score, the MIDI file and the render agree.
"""

from __future__ import annotations

MELODY_OCTAVES: tuple[tuple[str, int], ...] = (
    ("歌", 0), ("瑟", -12), ("笙", 0), ("和", 12), ("管", 0))


def melody_octave(instrument: str) -> int:
    """Semitones from the written 律 at which ``instrument`` plays a melody (KeyError if none)."""
    return dict(MELODY_OCTAVES)[instrument]

"""Who plays a melody, at what octave of it — one table for the timeline, MIDI, audio and score.

The 工 sing the 詩譜's 律 an octave under the written octave: the 工 were men, and with 黃鍾 at
C4 (the default: the sources give no absolute pitch) the written melodies lie at C4–G5, where
60 % of the syllables fall at G4–D5 — a soprano's place; an octave down (C3–G4, median G3) is
where a man sings, tenor or baritone, and the score says so (the voice in the treble-8 clef,
as tenors are written).  The 瑟 doubles the singers at the unison, on the same 律 (熊朋來's
《瑟譜》 gives the 瑟 the same 律 per syllable as the voice), an octave under the written 律 as
before; in 合樂 and 無算樂 the 笙 double the written 律 (an octave over the men) and the 和 an
octave above that; the 管 plays at the written pitch.  Offsets are in semitones from the written
律.  ``sequencer.timeline.piece_notes`` plays the timeline by this table,
``instruments.notation.score`` writes the staves by it, so the score, the MIDI file and the
render agree.
"""

from __future__ import annotations

MELODY_OCTAVES: tuple[tuple[str, int], ...] = (
    ("歌", -12), ("瑟", -12), ("笙", 0), ("和", 12), ("管", 0))


def melody_octave(instrument: str) -> int:
    """Semitones from the written 律 at which ``instrument`` plays a melody (KeyError if none)."""
    return dict(MELODY_OCTAVES)[instrument]

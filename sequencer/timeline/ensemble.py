"""The ensemble as the compiler plays it: which instrument sounds a note, how loud, in what
tuning, and from where in the layout — every Note of a timeline is made here.

An instrument stands at the layout position that names it (the 歌 and 瑟 with the 工 when the
layout has one; one the layout does not place stands with its fellows), and a cue's moves put
a position, and the instrument standing there, somewhere new from that cue on.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from cues.catalog import Instrument, canonical_instrument, get_instrument
from cues.model import Cue, Position, Rite
from instruments.tuning import A4_HZ, A4_MIDI, Tuning
from sequencer.timeline.events import Note
from sequencer.timeline.humanize import Drummer
from sequencer.timeline.settings import CompileSettings
from sequencer.timeline.timebase import TICKS_PER_SECOND

VELOCITY = {
    "歌": 88, "瑟": 80, "笙": 72, "和": 60, "管": 76, "編磬": 90, "編鐘": 96, "鑮": 100,
    "建鼓": 110, "鼓": 110, "朔鼙": 92, "應鼙": 92, "鼙": 92, "鼗": 80,
}
PITCHED_VELOCITY = 80  # an instrument VELOCITY does not list
STROKE_VELOCITY = 90
STROKE_TICKS = TICKS_PER_SECOND // 8  # how long a drum stroke is written

# an instrument the layout does not place stands with its fellows: (follower, leader)
_STANDS_WITH = (("和", "笙"), ("鼓", "建鼓"), ("鼙", "鼓"), ("鼙", "建鼓"), ("應鼙", "建鼓"),
                ("朔鼙", "建鼓"), ("鑮", "編鐘"))


def rite_instruments(rite: Rite, defaults: Callable[[Cue], set[str]] | None = None,
                     ) -> frozenset[str]:
    """The instruments a rite has: those its layout places and its cues list (the 歌 and 瑟
    with the 工 where the layout seats them), and ``defaults(cue)`` of a cue that lists none."""
    names = {p.instrument for p in rite.layout if p.instrument}
    names |= {c.name for cue in rite.cues for c in cue.instruments}
    if defaults is not None:
        names |= {n for cue in rite.cues if not cue.instruments for n in defaults(cue)}
    if any(p.name == "工" for p in rite.layout):
        names |= {"歌", "瑟"}
    return frozenset(n for n in (canonical_instrument(x) for x in names) if n is not None)


class Ensemble:
    """The players of one compilation and the notes they have played so far."""

    def __init__(self, rite: Rite, settings: CompileSettings) -> None:
        self.settings = settings
        self.tuning = Tuning(settings.tuning, settings.huangzhong_hz)
        self.syllable_ticks = Fraction(60 * TICKS_PER_SECOND) / settings.tempo_bpm
        self.notes: list[Note] = []
        self._pitches: dict[int, tuple[int, int, float]] = {}  # semitones → key, bend, Hz
        self._instruments: dict[str, Instrument] = {}
        self._where: dict[str, str] = {}  # instrument → position name
        self._coords: dict[str, tuple[float, float]] = {}  # position → (x, y); moves update it
        # (instrument, place) → (position, x, y), until the next move
        self._places: dict[tuple[str, str | None], tuple[str, float, float]] = {}
        self.rite_title = rite.title
        self.present = rite_instruments(rite)  # the compiler adds each cue's default voices
        self._drummers: dict[str, Drummer] = {}  # drum → its timing errors (humanize_ms)
        for pos in rite.layout:
            self._coords[pos.name] = (pos.x, pos.y)
            if pos.instrument and pos.instrument not in self._where:
                self._where[pos.instrument] = pos.name
        for singer in ("歌", "瑟"):
            if "工" in self._coords:
                self._where[singer] = "工"
        for follower, leader in _STANDS_WITH:
            if follower not in self._where and leader in self._where:
                self._where[follower] = self._where[leader]

    def move(self, move: Position) -> None:
        """A position (and the instrument it names) moves, for this cue and those after it."""
        self._coords[move.name] = (move.x, move.y)
        if move.instrument:
            self._where[move.instrument] = move.name
        self._places.clear()

    def instrument(self, name: str) -> Instrument:
        inst = self._instruments.get(name)
        if inst is None:
            inst = self._instruments[name] = get_instrument(name)
        return inst

    def _place(self, instrument: str, place: str | None = None) -> tuple[str, float, float]:
        """(position, x, y) where ``instrument`` stands now (or of position ``place``)."""
        found = self._places.get((instrument, place))
        if found is None:
            name = place if place is not None else self._where.get(instrument, "")
            x, y = self._coords.get(name, (0.0, 0.0))
            found = self._places[(instrument, place)] = (name, x, y)
        return found

    def pitched(
        self, tick: int, length: int, instrument: str, semitones: int, cue: str,
        lyric: str | None = None, velocity: int | None = None, place: str | None = None,
    ) -> None:
        """A note ``semitones`` above 黃鍾 in the tuning (none when it falls off the keyboard),
        where ``instrument`` stands, or at the position ``place`` (a caller's voice)."""
        inst = self.instrument(instrument)
        pitch = self._pitches.get(semitones)
        if pitch is None:
            key, bend = self.tuning.pitch_bend(semitones)
            pitch = self._pitches[semitones] = (key, bend, self.tuning.hz(semitones))
        key, bend, hz = pitch
        if not 0 <= key <= 127:
            return
        self.notes.append(Note(  # positional: the compiler makes millions (Note's field order)
            tick, max(1, length), inst.channel, key,
            velocity or VELOCITY.get(instrument, PITCHED_VELOCITY), inst.name, cue, bend,
            semitones, hz, lyric, *self._place(inst.name, place),
        ))

    def keyed(self, tick: int, length: int, instrument: str, key: int, velocity: int,
              cue: str) -> None:
        """A note given as a MIDI key (a user's realization), in equal temperament at A 440."""
        inst = self.instrument(instrument)
        position, x, y = self._place(inst.name)
        self.notes.append(Note(
            tick=tick, duration=length, channel=inst.channel, key=key, velocity=velocity,
            instrument=inst.name, cue=cue, hz=A4_HZ * 2 ** ((key - A4_MIDI) / 12),
            position=position, x=x, y=y,
        ))

    def stroke(self, tick: int, instrument: str, cue: str, velocity: int | None = None) -> int:
        """A drum stroke (the instrument's GM percussion key) due at ``tick``; returns the tick
        it is played at: ``tick`` itself, or with ``humanize_ms`` set its drummer's error
        (``sequencer.timeline.humanize``)."""
        inst = self.instrument(instrument)
        assert inst.gm_key is not None
        if self.settings.humanize_ms:
            drummer = self._drummers.get(inst.name)
            if drummer is None:
                drummer = self._drummers[inst.name] = Drummer(inst.name,
                                                              self.settings.humanize_ms)
            tick = max(0, tick + drummer.next_ticks())
        position, x, y = self._place(inst.name)
        self.notes.append(Note(
            tick=tick, duration=STROKE_TICKS, channel=inst.channel, key=inst.gm_key,
            velocity=velocity or VELOCITY.get(instrument, STROKE_VELOCITY), instrument=inst.name,
            cue=cue, position=position, x=x, y=y,
        ))
        return tick

"""The compiler: a rite and its settings → one deterministic Timeline of events in integer ticks.

How each cue sounds (the realization rules, all documented in docs/timeline.md):

- A piece whose melody survives (the 風雅十二詩譜) is sung one note per syllable, every stanza,
  at ``tempo_bpm`` syllables a minute: the 工 sing (歌, with the lyric) and the 瑟 double an
  octave below; in 合樂 and 無算樂 the 笙 double at pitch and the 和 an octave above, and the
  磬 strikes the first note of every stanza.  One 終 is one pass through the whole piece.
- A piece whose melody is lost is never given one.  It is realized as structure only, for
  ``lost_zhong_seconds`` a 終: the 瑟 pluck a drone on 黃鍾 and 林鍾 (sung pieces), the 笙/和 or
  管 hold it (笙詩, 新宮), and bell-and-drum pieces (金奏, 陔, 驁, 舞) sound their 節: the 鼗 as
  the music begins, 朔鼙 then 應鼙 (「先擊朔鼙，應鼙應之」, small before large), the 建鼓, then the
  bells (鐘, 鑮: 「以鐘鑮播之」) answered by the 磬 (「鼓磬應之」).
- A 射節 has N 節 per 耦, back to back, each exactly ``jie`` ticks (「間若一」): the first
  ``listen`` 節 are for listening, then one 拾 per 節.  Each 節 is one 終 of the song; the drum
  pattern's strokes are spaced evenly across the 節.  Release times that accord with the drum
  follow ``release_rule``.
- Only the instruments a cue lists are played (a cue listing none plays its kind's defaults).
- Offline, an operator's GO is taken ``go_gap_s`` after the previous cue ends; a cue whose length
  the operator decides (無算樂, a stop rule such as 樂闋, a pause) gets a nominal length here and
  ``duration_s`` null in ``show --json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from fractions import Fraction

from cues import repertoire
from cues.catalog import Instrument, get_instrument
from cues.errors import UserError
from cues.model import (
    BY_BELLS,
    BY_GUAN,
    BY_SHENG,
    BY_SINGERS,
    TRIGGER_FOLLOW,
    TRIGGER_GO,
    Cue,
    PieceRef,
    Rite,
    Trigger,
)
from instruments.tuning import DEFAULT_HUANGZHONG_HZ, Tuning, parse_tuning
from sequencer import drums
from sequencer.events import CueSpan, Marker, Note, Timeline
from sequencer.realization import load_realization
from sequencer.timebase import TICKS_PER_SECOND, split_evenly, to_ticks

RELEASE_RULES = ("half", "quarters")
DRONE = (0, 7)  # 黃鍾 and 林鍾: the drone of a lost piece (no melody is invented)

VELOCITY = {
    "歌": 88, "瑟": 80, "笙": 72, "和": 60, "管": 76, "編磬": 90, "編鐘": 96, "鑮": 100,
    "建鼓": 110, "鼓": 110, "朔鼙": 92, "應鼙": 92, "鼙": 92, "鼗": 80,
}


@dataclass(frozen=True)
class CompileSettings:
    """Every setting the timeline depends on (the sheet's [settings], then the command line)."""

    tempo_bpm: Fraction = Fraction(60)  # sung syllables a minute
    jie_seconds: Fraction | None = None  # None: one 終 of the 射節 song
    lost_zhong_seconds: Fraction = Fraction(20)
    go_gap_s: Fraction = Fraction(2)
    huangzhong_hz: float = DEFAULT_HUANGZHONG_HZ
    tuning: str = "sanfen"
    drum_pattern: str = drums.DEFAULT_PATTERN
    drum_reading: str = drums.DEFAULT_READING
    release_rule: str = "half"

    def describe(self) -> tuple[tuple[str, str], ...]:
        return tuple((f.name, str(getattr(self, f.name))) for f in fields(self))


_SETTING_TYPES = {
    "tempo_bpm": Fraction, "jie_seconds": Fraction, "lost_zhong_seconds": Fraction,
    "go_gap_s": Fraction, "huangzhong_hz": float, "tuning": str, "drum_pattern": str,
    "drum_reading": str, "release_rule": str,
}


def make_settings(
    sheet: Mapping[str, object] | None = None, overrides: Mapping[str, object] | None = None,
) -> CompileSettings:
    """Settings from a sheet's [settings] and command-line overrides, validated (UserError)."""
    values: dict[str, object] = {}
    for source in (sheet or {}, overrides or {}):
        for key, value in source.items():
            if value is None or key not in _SETTING_TYPES:
                continue
            kind = _SETTING_TYPES[key]
            try:
                if kind is Fraction:
                    if isinstance(value, bool):
                        raise ValueError
                    values[key] = Fraction(str(value)) if isinstance(value, float) else Fraction(
                        value)  # type: ignore[arg-type]
                elif kind is float:
                    values[key] = float(value)  # type: ignore[arg-type]
                else:
                    values[key] = str(value)
            except (ValueError, TypeError, ZeroDivisionError):
                raise UserError(f"setting {key} = {value!r}: expected a number") from None
    settings = CompileSettings(**values)  # type: ignore[arg-type]
    _validate(settings)
    return settings


def _validate(s: CompileSettings) -> None:
    if not 1 <= s.tempo_bpm <= 600:
        raise UserError(f"tempo {s.tempo_bpm} is out of range: expected 1–600 syllables a minute")
    if s.jie_seconds is not None and not Fraction(1, 10) <= s.jie_seconds <= 3600:
        raise UserError(f"節 length {float(s.jie_seconds)} s is out of range: expected 0.1–3600 s")
    if not 1 <= s.lost_zhong_seconds <= 3600:
        raise UserError("lost_zhong_seconds is out of range: expected 1–3600 s")
    if not 0 <= s.go_gap_s <= 3600:
        raise UserError("go_gap_s is out of range: expected 0–3600 s")
    if s.release_rule not in RELEASE_RULES:
        raise UserError(f"unknown release rule {s.release_rule!r}: expected one of "
                        f"{', '.join(RELEASE_RULES)}")
    if s.drum_pattern not in drums.PATTERNS:
        raise UserError(f"unknown drum pattern {s.drum_pattern!r}: expected one of "
                        f"{', '.join(drums.PATTERNS)}")
    drums.pattern_string(s.drum_pattern, s.drum_reading)  # checks the reading
    parse_tuning(s.tuning, s.huangzhong_hz)


# ── the compiler ────────────────────────────────────────────────────────────────────────────


class _Builder:
    def __init__(self, rite: Rite, settings: CompileSettings) -> None:
        self.rite = rite
        self.s = settings
        self.tuning = Tuning(settings.tuning, settings.huangzhong_hz)
        self.note_ticks = Fraction(60 * TICKS_PER_SECOND) / settings.tempo_bpm
        self.pitch_cache: dict[int, tuple[int, int, float]] = {}
        self.instruments: dict[str, Instrument] = {}
        self.notes: list[Note] = []
        self.markers: list[Marker] = []
        self.spans: list[CueSpan] = []
        self.where: dict[str, str] = {}  # instrument → position name
        self.coords: dict[str, tuple[float, float]] = {}  # position → (x, y); moves update it
        for pos in rite.layout:
            self.coords[pos.name] = (pos.x, pos.y)
            if pos.instrument and pos.instrument not in self.where:
                self.where[pos.instrument] = pos.name
        for singer in ("歌", "瑟"):
            if "工" in self.coords:
                self.where[singer] = "工"
        # an instrument the layout does not place stands with its fellows
        for follower, leader in (("和", "笙"), ("鼙", "鼓"), ("鼓", "建鼓"), ("應鼙", "建鼓"),
                                 ("朔鼙", "建鼓"), ("鑮", "編鐘")):
            if follower not in self.where and leader in self.where:
                self.where[follower] = self.where[leader]

    def instrument(self, name: str) -> Instrument:
        inst = self.instruments.get(name)
        if inst is None:
            inst = self.instruments[name] = get_instrument(name)
        return inst

    def place(self, instrument: str) -> dict:
        name = self.where.get(instrument, "")
        x, y = self.coords.get(name, (0.0, 0.0))
        return {"position": name, "x": x, "y": y}

    # notes
    def pitched(
        self, tick: int, length: int, instrument: str, semitones: int, cue: str,
        lyric: str | None = None, velocity: int | None = None,
    ) -> None:
        inst = self.instrument(instrument)
        pitch = self.pitch_cache.get(semitones)
        if pitch is None:
            key, bend = self.tuning.pitch_bend(semitones)
            pitch = self.pitch_cache[semitones] = (key, bend, self.tuning.hz(semitones))
        key, bend, hz = pitch
        if not 0 <= key <= 127:
            return
        self.notes.append(Note(
            tick=tick, duration=max(1, length), channel=inst.channel, key=key,
            velocity=velocity or VELOCITY.get(instrument, 80), instrument=inst.name, cue=cue,
            bend=bend, semitones=semitones, hz=hz, lyric=lyric,
            **self.place(inst.name),
        ))

    def stroke(self, tick: int, instrument: str, cue: str, velocity: int | None = None) -> None:
        inst = self.instrument(instrument)
        assert inst.gm_key is not None
        self.notes.append(Note(
            tick=tick, duration=TICKS_PER_SECOND // 8, channel=inst.channel, key=inst.gm_key,
            velocity=velocity or VELOCITY.get(instrument, 90), instrument=inst.name, cue=cue,
            **self.place(inst.name),
        ))

    # realizations
    def melody(self, tick: int, piece: repertoire.Piece, cue: Cue, voices: set[str]) -> int:
        step = self.note_ticks
        i = 0
        for stanza in piece.stanzas:
            for n, (semi, syllable) in enumerate(zip(stanza.semitones, stanza.lyric, strict=False)):
                at = tick + int(i * step)
                length = tick + int((i + 1) * step) - at
                if "歌" in voices:
                    self.pitched(at, length, "歌", semi, cue.id, lyric=syllable)
                if "瑟" in voices:
                    self.pitched(at, length, "瑟", semi - 12, cue.id)
                if "笙" in voices:
                    self.pitched(at, length, "笙", semi, cue.id)
                if "和" in voices:
                    self.pitched(at, length, "和", semi + 12, cue.id)
                if "管" in voices:
                    self.pitched(at, length, "管", semi, cue.id)
                if n == 0 and "編磬" in voices:
                    self.pitched(at, length * 2, "編磬", semi, cue.id)
                i += 1
        return tick + int(i * step)

    def drone(self, tick: int, length: int, cue: Cue, voices: set[str], by: str) -> None:
        if by == BY_SINGERS and "瑟" in voices:
            pluck = TICKS_PER_SECOND * 2
            for at in range(tick, tick + length, pluck):
                for semi in DRONE:
                    self.pitched(at, min(pluck, tick + length - at), "瑟", semi - 12, cue.id)
        for inst, octave in (("笙", 0), ("和", 12), ("管", 0)):
            if inst in voices and (by in (BY_SHENG, BY_GUAN) or cue.kind == "合樂"):
                for semi in DRONE:
                    self.pitched(tick, length, inst, semi + octave, cue.id)

    def bells_and_drums(self, tick: int, length: int, cue: Cue, voices: set[str],
                        first: bool) -> None:
        """One pass of a bell-and-drum piece whose music is lost: its 節 every 4 s."""
        jie = TICKS_PER_SECOND * 4
        count = max(1, length // jie)
        for j in range(count):
            at = tick + j * jie
            offset = 0
            if j == 0 and first and "鼗" in voices:  # 「賓至，搖之以奏樂也」: it starts the music
                self.stroke(at, "鼗", cue.id)
                offset = TICKS_PER_SECOND // 4
            for small in ("朔鼙", "應鼙", "鼙"):
                if small in voices:
                    self.stroke(at + offset, small, cue.id)
                    offset += TICKS_PER_SECOND // 4
            for big in ("建鼓", "鼓"):
                if big in voices:
                    self.stroke(at + offset, big, cue.id)
                    offset += TICKS_PER_SECOND // 4
                    break
            if "編鐘" in voices:
                self.pitched(at + offset, jie - offset, "編鐘", 0, cue.id)
            if "鑮" in voices:
                self.pitched(at + offset, jie - offset, "鑮", -12, cue.id)
            if "編磬" in voices:
                self.pitched(at + offset + jie // 2, jie // 2, "編磬", 7, cue.id)

    def piece(self, tick: int, ref: PieceRef, cue: Cue, voices: set[str], first: bool) -> int:
        if ref.realization is not None:
            return self.realized(tick, ref, cue)
        piece = repertoire.get_piece(ref.title) if repertoire.canonical_title(ref.title) else None
        if piece is not None and not piece.lost and ref.by in (BY_SINGERS, BY_SHENG, BY_GUAN):
            sung = set(voices)
            if ref.by == BY_SINGERS and cue.kind not in ("合樂", "無算樂"):
                sung -= {"笙", "和", "管"}
            return self.melody(tick, piece, cue, sung)
        length = to_ticks(self.s.lost_zhong_seconds)
        if ref.by == BY_BELLS or cue.kind in ("金奏", "陔", "驁", "舞"):
            self.bells_and_drums(tick, length, cue, voices, first)
        else:
            self.drone(tick, length, cue, voices, ref.by)
        return tick + length

    def realized(self, tick: int, ref: PieceRef, cue: Cue) -> int:
        """A user's own realization file: its notes, played by the piece's performers."""
        assert ref.realization is not None
        real = load_realization(ref.realization, self.s.tempo_bpm)
        melodic = {BY_SINGERS: "歌", BY_SHENG: "笙", BY_GUAN: "管", BY_BELLS: "編鐘"}[ref.by]
        drum = next((d for d in ("建鼓", "鼓") if d in {c.name for c in cue.instruments}), "建鼓")
        for n in real.notes:
            if n.drum:
                self.stroke(tick + n.offset, drum, cue.id, velocity=n.velocity)
                continue
            inst = self.instrument(melodic)
            self.notes.append(Note(
                tick=tick + n.offset, duration=n.length, channel=inst.channel, key=n.key,
                velocity=n.velocity, instrument=inst.name, cue=cue.id,
                hz=440.0 * 2 ** ((n.key - 69) / 12), **self.place(inst.name),
            ))
        return tick + real.length

    def played(self, cue: Cue) -> list[PieceRef]:
        pieces = list(cue.pieces)
        if cue.zhong and pieces and cue.zhong % len(pieces) == 0:
            return pieces * (cue.zhong // len(pieces))
        return pieces

    def shooting(self, tick: int, cue: Cue, voices: set[str]) -> tuple[int, CueSpan]:
        shoot = cue.shooting
        assert shoot is not None
        song = repertoire.get_piece(shoot.song)
        syllables = sum(st.syllables for st in song.stanzas)
        if self.s.jie_seconds is not None:
            jie = to_ticks(self.s.jie_seconds)
        elif not song.lost:
            jie = int(syllables * self.note_ticks)
        else:
            jie = to_ticks(self.s.lost_zhong_seconds)
        pattern = drums.strokes(self.s.drum_pattern, self.s.drum_reading)
        stroke_at = split_evenly(jie, len(pattern))
        small = next((d for d in ("朔鼙", "鼙", "應鼙") if d in voices), None)
        large = next((d for d in ("建鼓", "鼓") if d in voices), None)
        n = shoot.jie
        cycles = max(1, len(shoot.ou))
        for c in range(cycles):
            for k in range(1, n + 1):
                at = tick + (c * n + k - 1) * jie
                self.markers.append(Marker(at, f"節 {k}/{n}", cue.id, "jie"))
                for offset, kind in zip(stroke_at, pattern, strict=True):
                    drum = small if kind == drums.SMALL else large
                    drum = drum or small or large
                    if drum:
                        self.stroke(at + offset, drum, cue.id)
                if song.lost:
                    for semi in DRONE:
                        if "瑟" in voices:
                            self.pitched(at, jie, "瑟", semi - 12, cue.id)
                else:
                    self.sung_jie(at, jie, song, cue, voices)
        end = tick + cycles * n * jie
        releases: list[int] = []
        for k in range(shoot.listen, n):
            base = k * jie
            if self.s.release_rule == "half":
                releases += [base, base + jie // 2]
            else:
                releases += [base + jie // 4, base + 3 * jie // 4]
        span = CueSpan(cue.id, cue.kind, tick, end, True, tuple(releases), jie, shoot.listen, n,
                       cycles)
        return end, span

    def sung_jie(self, tick: int, jie: int, song: repertoire.Piece, cue: Cue,
                 voices: set[str]) -> None:
        """One 終 of an extant song fitted exactly into one 節."""
        notes = [(semi, syl) for st in song.stanzas
                 for semi, syl in zip(st.semitones, st.lyric, strict=False)]
        starts = split_evenly(jie, len(notes)) + [jie]
        for i, (semi, syl) in enumerate(notes):
            at, length = tick + starts[i], starts[i + 1] - starts[i]
            if "歌" in voices:
                self.pitched(at, length, "歌", semi, cue.id, lyric=syl)
            if "瑟" in voices:
                self.pitched(at, length, "瑟", semi - 12, cue.id)

    def build(self) -> Timeline:
        tick = 0
        previous_end = 0
        for index, cue in enumerate(self.rite.cues):
            if index > 0 and cue.trigger.kind != TRIGGER_FOLLOW:
                tick = previous_end + to_ticks(self.s.go_gap_s)
            else:
                tick = previous_end
            tick += to_ticks(cue.pre_wait_s)
            start = tick
            for move in cue.moves:
                self.coords[move.name] = (move.x, move.y)
                if move.instrument:
                    self.where[move.instrument] = move.name
            label = f"{cue.id} {cue.title or cue.kind}".strip()
            self.markers.append(Marker(start, label, cue.id, "cue"))
            voices = {c.name for c in cue.instruments} or _default_voices(cue)
            if cue.kind == "射節" and cue.shooting is not None:
                end, span = self.shooting(start, cue, voices)
            else:
                end = start
                for i, ref in enumerate(self.played(cue)):
                    end = self.piece(end, ref, cue, voices, first=i == 0)
                if cue.duration_s is not None:
                    end = max(end, start + to_ticks(cue.duration_s))
                fixed = cue.is_music and not cue.operator_ends and cue.stop is None
                if not cue.is_music:
                    fixed = cue.duration_s is not None
                span = CueSpan(cue.id, cue.kind, start, end, fixed)
            self.spans.append(span)
            previous_end = end + to_ticks(cue.post_wait_s)
        notes = tuple(sorted(self.notes, key=_note_order))
        markers = tuple(sorted(self.markers, key=lambda m: (m.tick, m.kind != "cue", m.text)))
        return Timeline(self.rite.id, notes, markers, tuple(self.spans), self.s.describe())


def _note_order(n: Note) -> tuple:
    return (n.tick, n.channel, n.key, n.duration, n.instrument, n.cue)


def _default_voices(cue: Cue) -> set[str]:
    if cue.kind in ("金奏", "陔", "驁", "舞"):
        return {"編鐘", "鑮", "建鼓", "編磬"}
    if cue.kind == "射節":
        return {"歌", "瑟", "鼓"}
    if cue.kind in ("笙",):
        return {"笙", "和"}
    if cue.kind == "管":
        return {"管"}
    return {"歌", "瑟"}


def compile_rite(rite: Rite, settings: CompileSettings | None = None) -> Timeline:
    """The rite's timeline (deterministic: the same rite and settings give the same events)."""
    return _Builder(rite, settings or make_settings(rite.settings)).build()


def select_cues(rite: Rite, start: str | None = None, until: str | None = None) -> Rite:
    """The rite from cue ``start`` to cue ``until`` inclusive (``--from`` / ``--until``)."""
    ids = [c.id for c in rite.cues]
    for name, value in (("--from", start), ("--until", until)):
        if value is not None and value not in ids:
            raise UserError(f"{name} {value!r}: no such cue in {rite.title} "
                            f"(its cues: {', '.join(ids)})")
    lo = ids.index(start) if start else 0
    hi = ids.index(until) if until else len(ids) - 1
    if hi < lo:
        raise UserError(f"--until {until!r} comes before --from {start!r}")
    cues = rite.cues[lo:hi + 1]
    # the first cue selected starts the show: a follow trigger becomes the operator's GO
    if cues and cues[0].trigger.kind == TRIGGER_FOLLOW:
        cues = (replace(cues[0], trigger=Trigger(TRIGGER_GO)),) + tuple(cues[1:])
    return replace(rite, cues=tuple(cues))


def iter_note_pairs(notes: Sequence[Note]) -> list[tuple[int, Note, bool]]:
    """(tick, note, is_on) pairs sorted for output: offs before ons at the same tick."""
    keys: list[tuple[int, int, int, int, int]] = []
    for i, n in enumerate(notes):
        keys.append((n.tick, 1, n.channel, n.key, i))
        keys.append((n.tick + n.duration, 0, n.channel, n.key, i))
    keys.sort()
    return [(k[0], notes[k[4]], k[1] == 1) for k in keys]

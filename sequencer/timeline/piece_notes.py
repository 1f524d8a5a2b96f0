"""How the pieces of a cue sound (every cue but a 射節; the rules are in docs/timeline.md).

- A piece whose melody survives (the 風雅十二詩譜) is sung one note per syllable, every stanza,
  at ``tempo_bpm`` syllables a minute: the 工 sing (歌, with the lyric, an octave under the
  written 律: they were men, ``cues.melody_octaves``; each syllable's velocity its stress and
  its phrase's arch, ``sequencer.timeline.phrasing``) and the 瑟 double them; in 合樂 and
  無算樂 the 笙 double the written 律 and the 和 an octave above, and the 磬 (and the 鍾 of a
  lord's 合樂, 「鍾磬之節」) strikes the first note of every stanza.  One 終 is one pass
  through the whole piece.
- A piece whose melody is lost is never given one.  It is realized as structure only, for
  ``lost_zhong_seconds`` a 終: the 瑟 pluck a drone on 黃鍾 and 林鍾 (sung pieces), the 笙/和 or
  管 hold it (笙詩, 新宮); a 舞 sung by the 工 (the 勺) adds one stroke of each listed drum a
  節 of 4 s, the dancers' step.  Bell-and-drum pieces (金奏, 陔, 驁, and any piece played by
  鍾鼓) sound their 節 every 4 s: the 鼗 as the music begins (「賓至，搖之以奏樂也」), then, by
  the setting ``jiu_xia_order``, either the bells first (``鍾先``, 鄭: 「先擊鍾，次擊鼓」,
  「以鐘鏄播之，鼔磬應之」) — 鐘 and 鑮, then 朔鼙, 應鼙 (「先擊朔鼙，應鼙應之」), the 建鼓, and the
  磬 at half the 節 — or the drums first (``鼓先``, 大射 疏: 「先擊鼓，後擊鍾鑮」) — the small
  drums, the 建鼓, then the bells, the 磬 half a 節 after them.
- A piece with a realization file of the user's plays that file's notes, each on the
  instrument the file says (a track's or part's name, a GM percussion key, a GM program:
  ``sequencer.timeline.realization``), within the rite: a drum the rite has not is played by a
  drum of the same size it has (the 鼓 for 建鼓), else by any drum the cue lists or the rite
  has; the 編鐘 and the 鑮, the 笙 and the 和 stand for each other; any other instrument the
  rite has not is an error naming the file.  A note the file says nothing of is played by the
  piece's performers (``by``: the 歌, 笙, 管 or 編鐘) where the rite has them, else by the first
  instrument the cue lists (a drum strikes it).
- Only the instruments a cue lists are played (a cue listing none plays its kind's defaults).
"""

from __future__ import annotations

from cues import repertoire
from cues.catalog import canonical_instrument
from cues.errors import UserError
from cues.melody_octaves import MELODY_OCTAVES
from cues.model import BY_BELLS, BY_GUAN, BY_SHENG, BY_SINGERS, Cue, PieceRef
from sequencer.timeline import phrasing
from sequencer.timeline.ensemble import VELOCITY, Ensemble
from sequencer.timeline.realization import load_realization
from sequencer.timeline.settings import BELLS_FIRST
from sequencer.timeline.timebase import TICKS_PER_SECOND, to_ticks

DRONE = (0, 7)  # 黃鍾 and 林鍾: the drone of a lost piece (no melody is invented)
BELL_AND_DRUM_KINDS = ("金奏", "陔", "驁")
DANCE = "舞"
BELL_AND_DRUM_JIE_TICKS = TICKS_PER_SECOND * 4  # a lost bell-and-drum piece: a 節 every 4 s
DRUM_STAGGER_TICKS = TICKS_PER_SECOND // 4  # between the drums of one such 節
BELLS = frozenset({"編鐘", "鑮"})
SMALL_DRUMS = ("朔鼙", "應鼙", "鼙")
LARGE_DRUMS = ("建鼓", "鼓")
DRONE_PLUCK_TICKS = TICKS_PER_SECOND * 2  # the 瑟's drone is plucked every 2 s
# 「以鐘鏄播之，鼓磬應之」 (燕禮 記 鄭注): in a bell-and-drum piece the bells carry the music and
# the drums answer them — the bells struck harder than elsewhere, the drums softer (PROJECT
# CHOICE of the velocities: with them the bells lead the 金奏's loudness, docs/voices.md)
BELLS_LEAD_VELOCITY = 112
DRUMS_ANSWER_VELOCITY = {"建鼓": 70, "鼓": 70, "朔鼙": 64, "應鼙": 64, "鼙": 64}
_MELODY_VOICES = MELODY_OCTAVES  # who plays a melody, at what octave of it
_HELD = _MELODY_VOICES[2:]  # the winds hold a lost piece's drone
SINGERS = frozenset({"歌", "瑟"})
# the hung instruments a sung piece strikes on each stanza's first note (PROJECT CHOICE: the
# texts say the 磬, and at a lord's 合樂 the 鍾, sound — 「不用鍾磬之節」 sets apart the one
# music that lacks them — but not when)
STANZA_STRUCK = ("編磬", "編鐘")  # the voices of a song without the winds
_REALIZATION_VOICE = {BY_SINGERS: "歌", BY_SHENG: "笙", BY_GUAN: "管", BY_BELLS: "編鐘"}


def default_voices(cue: Cue) -> set[str]:
    """The instruments of a cue that lists none: its kind's defaults."""
    if cue.kind in BELL_AND_DRUM_KINDS:
        return {"編鐘", "鑮", "建鼓", "編磬"}
    if cue.kind == DANCE:  # danced to bells and drums, or to the 工's song
        return {"編鐘", "鑮", "建鼓", "編磬", "歌", "瑟"}
    if cue.kind == "射節":
        return {"歌", "瑟", "鼓"}
    if cue.kind == "笙":
        return {"笙", "和"}
    if cue.kind == "管":
        return {"管"}
    return {"歌", "瑟"}


def played_pieces(cue: Cue) -> list[PieceRef]:
    """The pieces in the order played: the list repeated when its 終 count is a multiple of it."""
    pieces = list(cue.pieces)
    if cue.zhong and pieces and cue.zhong % len(pieces) == 0:
        return pieces * (cue.zhong // len(pieces))
    return pieces


def play_piece(ens: Ensemble, tick: int, ref: PieceRef, cue: Cue, voices: set[str],
               first: bool) -> int:
    """Play one 終 of ``ref`` from ``tick``; returns where it ends."""
    if ref.realization is not None:
        return _play_realization(ens, tick, ref, cue)
    piece = repertoire.get_piece(ref.title) if repertoire.canonical_title(ref.title) else None
    if piece is not None and not piece.lost and ref.by in (BY_SINGERS, BY_SHENG, BY_GUAN):
        sung = set(voices)
        if ref.by == BY_SINGERS and cue.kind not in ("合樂", "無算樂"):
            sung -= {"笙", "和", "管"}
        return _melody(ens, tick, piece, cue, sung)
    length = to_ticks(ens.settings.lost_zhong_seconds)
    if ref.by == BY_BELLS or cue.kind in BELL_AND_DRUM_KINDS:
        _bells_and_drums(ens, tick, length, cue, voices, first)
    else:
        _drone(ens, tick, length, cue, voices, ref.by)
        if cue.kind == DANCE:
            _dancers_steps(ens, tick, length, cue, voices)
    return tick + length


def _melody(ens: Ensemble, tick: int, piece: repertoire.Piece, cue: Cue, voices: set[str]) -> int:
    num, den = ens.syllable_ticks.numerator, ens.syllable_ticks.denominator  # exact, in ints
    i = 0
    for number, stanza in enumerate(piece.stanzas):
        levels = phrasing.stanza_levels(piece.title, number)
        for n, (semi, syllable) in enumerate(zip(stanza.semitones, stanza.lyric, strict=False)):
            at = tick + i * num // den
            length = tick + (i + 1) * num // den - at
            play_syllable(ens, at, length, semi, syllable, cue.id, voices, levels[n])
            for struck in STANZA_STRUCK:  # 「鍾磬之節」: they mark the stanza's start
                if n == 0 and struck in voices:
                    ens.pitched(at, length * 2, struck, semi, cue.id)
            i += 1
    return tick + i * num // den


def play_syllable(ens: Ensemble, at: int, length: int, semitones: int, syllable: str,
                  cue_id: str, voices: set[str] | frozenset[str], level_db: float = 0.0) -> None:
    """One note of a melody by each of ``voices`` that plays melodies (the 歌 with the lyric,
    ``level_db`` over its usual velocity: the syllable's stress and phrasing,
    ``sequencer.timeline.phrasing``)."""
    for inst, octave in _MELODY_VOICES:
        if inst in voices:
            sung = inst == "歌"
            ens.pitched(at, length, inst, semitones + octave, cue_id,
                        lyric=syllable if sung else None,
                        velocity=phrasing.velocity(VELOCITY["歌"], level_db) if sung else None)


def _drone(ens: Ensemble, tick: int, length: int, cue: Cue, voices: set[str], by: str) -> None:
    if by == BY_SINGERS and "瑟" in voices:
        pluck = DRONE_PLUCK_TICKS
        for at in range(tick, tick + length, pluck):
            for semi in DRONE:
                ens.pitched(at, min(pluck, tick + length - at), "瑟", semi - 12, cue.id)
    for inst, octave in _HELD:
        if inst in voices and (by in (BY_SHENG, BY_GUAN) or cue.kind == "合樂"):
            for semi in DRONE:
                ens.pitched(tick, length, inst, semi + octave, cue.id)


def _bells_and_drums(ens: Ensemble, tick: int, length: int, cue: Cue, voices: set[str],
                     first: bool) -> None:
    """One pass of a bell-and-drum piece whose music is lost: its 節 every 4 s."""
    jie = BELL_AND_DRUM_JIE_TICKS
    bells_first = ens.settings.jiu_xia_order == BELLS_FIRST
    for j in range(max(1, length // jie)):
        at = tick + j * jie
        offset = 0
        if j == 0 and first and "鼗" in voices:  # 「賓至，搖之以奏樂也」: it starts the music
            ens.stroke(at, "鼗", cue.id)
            offset = DRUM_STAGGER_TICKS
        if bells_first:
            bells_at = offset
            offset += DRUM_STAGGER_TICKS if voices & BELLS else 0
            offset = _drums(ens, at, offset, cue, voices)
            chime_at = jie // 2  # 「鼔磬應之」
        else:
            offset = _drums(ens, at, offset, cue, voices)
            bells_at = offset
            chime_at = offset + jie // 2
        if "編鐘" in voices:
            ens.pitched(at + bells_at, jie - bells_at, "編鐘", 0, cue.id,
                        velocity=BELLS_LEAD_VELOCITY)
        if "鑮" in voices:
            ens.pitched(at + bells_at, jie - bells_at, "鑮", -12, cue.id,
                        velocity=BELLS_LEAD_VELOCITY)
        if "編磬" in voices:
            ens.pitched(at + chime_at, jie // 2, "編磬", 7, cue.id)


def _drums(ens: Ensemble, at: int, offset: int, cue: Cue, voices: set[str]) -> int:
    """The drums of one bell-and-drum 節 from ``offset``: 朔鼙, 應鼙, 鼙 (「先擊朔鼙，應鼙應之」),
    then the large drum, each a stagger after the last; returns the offset after them."""
    for small in SMALL_DRUMS:
        if small in voices:
            ens.stroke(at + offset, small, cue.id, DRUMS_ANSWER_VELOCITY[small])
            offset += DRUM_STAGGER_TICKS
    big = next((d for d in LARGE_DRUMS if d in voices), None)
    if big is not None:
        ens.stroke(at + offset, big, cue.id, DRUMS_ANSWER_VELOCITY[big])
        offset += DRUM_STAGGER_TICKS
    return offset


def _dancers_steps(ens: Ensemble, tick: int, length: int, cue: Cue, voices: set[str]) -> None:
    """A dance sung by the 工: one stroke of each listed drum a 節 of 4 s, the dancers' step."""
    drums = [d for d in (*SMALL_DRUMS, *LARGE_DRUMS) if d in voices]
    for at in range(tick, tick + length, BELL_AND_DRUM_JIE_TICKS):
        for drum in drums:
            ens.stroke(at, drum, cue.id)


def _play_realization(ens: Ensemble, tick: int, ref: PieceRef, cue: Cue) -> int:
    """A user's own realization file: its notes, each on its instrument (module docstring)."""
    assert ref.realization is not None
    real = load_realization(ref.realization, ens.settings.tempo_bpm)
    listed = [n for n in (canonical_instrument(c.name) for c in cue.instruments) if n]
    chosen: dict[tuple[str | None, str], str] = {}
    for n in real.notes:
        said = (n.instrument, n.said)
        if said not in chosen:
            chosen[said] = realization_instrument(ens, ref, n.instrument, n.said, listed)
        inst = chosen[said]
        if ens.instrument(inst).is_drum:
            ens.stroke(tick + n.offset, inst, cue.id, velocity=n.velocity)
        else:
            ens.keyed(tick + n.offset, n.length, inst, n.key, n.velocity, cue.id)
    return tick + real.length


_STAND_IN = (LARGE_DRUMS, SMALL_DRUMS, ("編鐘", "鑮"), ("笙", "和"))


def realization_instrument(ens: Ensemble, ref: PieceRef, said: str | None, where: str,
                           listed: list[str]) -> str:
    """The instrument of the rite that plays a realization's note the file says ``said`` plays
    (None: the file says nothing); UserError naming the file when the rite has no such one."""
    if said is None:
        voice = _REALIZATION_VOICE[ref.by]
        if voice in ens.present:
            return voice
        if listed:
            return listed[0]
        raise UserError(f"{ref.realization}: 《{ref.title}》 is played by the {voice}, which "
                        f"{ens.rite_title} has not, and its cue lists no instrument: name one in "
                        f"the file (a track's name, a General MIDI program)")
    for group in ([said], *(g for g in _STAND_IN if said in g)):
        for choice in (*[i for i in listed if i in group], *[i for i in group
                                                             if i in ens.present]):
            return choice
    if ens.instrument(said).is_drum:
        drums = [i for i in (*listed, *sorted(ens.present)) if ens.instrument(i).is_drum]
        if drums:
            return drums[0]
    have = " ".join(sorted(ens.present)) or "none"
    raise UserError(f"{ref.realization}: {where} says 《{ref.title}》 is played by {said}, which "
                    f"{ens.rite_title} has not (its instruments: {have})")

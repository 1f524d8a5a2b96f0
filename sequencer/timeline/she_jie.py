"""The 射節 engine: the song and the drum of an archery contest, 節 by 節, to the tick.

A 射節 has N 節 per 耦, back to back, each exactly ``jie`` ticks (「間若一」): the first
``listen`` 節 are for listening, then one 拾 per 節.  Each 節 is one 終 of the song (a lost song:
the 瑟's drone), and the drum pattern's strokes are spaced evenly across the 節, so every onset
lies on one equal grid; where the cue lists both 朔鼙 and 應鼙, the small strokes alternate
between them, 朔鼙 first (「先擊朔鼙，應鼙應之」).  A 鑮 or 編鐘 the cue lists strikes 黃鍾 on
every 節's first tick (大射 注: 「奏樂以鼓鑮為節」).  Release times that accord with the drum
follow ``release_rule``.  With ``humanize_ms`` the drummers are off the tick
(``sequencer.timeline.humanize``): a 節's marker is where its stroke fell, and the bells, the
瑟 and the song of that 節 come in with it (they follow the drum) and end on the next 節's tick —
the file says when each 節 sounded, and ``check`` measures it.
"""

from __future__ import annotations

from cues import repertoire
from cues.model import Cue
from sequencer.timeline import drums, phrasing
from sequencer.timeline.calls import turn_calls
from sequencer.timeline.ensemble import Ensemble
from sequencer.timeline.events import CueSpan, Marker
from sequencer.timeline.piece_notes import DRONE, LARGE_DRUMS, SINGERS, SMALL_DRUMS, play_syllable
from sequencer.timeline.timebase import split_evenly, to_ticks

JIE_BELLS = (("編鐘", 0), ("鑮", -12))  # a bell that marks the 節: 黃鍾, the 鑮 an octave below
JIE_STROKE_VELOCITY = 127  # the stroke that opens a 節: accented
BEAT_STROKE_VELOCITY = 88  # the strokes inside it: (88/127)^1.5 is 4.8 dB under the accent


def shoot(ens: Ensemble, tick: int, cue: Cue, voices: set[str],
          ) -> tuple[CueSpan, list[Marker]]:
    """Play the 射節 of ``cue`` from ``tick``, every 耦 in turn: its span and its 節 markers."""
    shooting = cue.shooting
    assert shooting is not None
    song = repertoire.get_piece(shooting.song)
    jie = jie_ticks(ens, song)
    pattern = drums.strokes(ens.settings.drum_pattern, ens.settings.drum_reading)
    stroke_at = split_evenly(jie, len(pattern))
    smalls = [d for d in SMALL_DRUMS if d in voices]  # 「先擊朔鼙，應鼙應之」: they alternate
    large = next((d for d in LARGE_DRUMS if d in voices), None)
    bells = [(b, octave) for b, octave in JIE_BELLS if b in voices]
    n = shooting.jie
    cycles = max(1, len(shooting.ou))
    markers: list[Marker] = []
    for cycle in range(cycles):
        for k in range(1, n + 1):
            at = tick + (cycle * n + k - 1) * jie
            small_strokes = 0
            struck = at  # where the 節 is struck: its tick, or the drummer's (humanize_ms)
            for offset, kind in zip(stroke_at, pattern, strict=True):
                small = smalls[small_strokes % len(smalls)] if smalls else None
                drum = (small if kind == drums.SMALL else large) or small or large
                if drum:
                    played = ens.stroke(at + offset, drum, cue.id, JIE_STROKE_VELOCITY
                                        if offset == 0 else BEAT_STROKE_VELOCITY)
                    struck = played if offset == 0 else struck
                    small_strokes += drum == small
            markers.append(Marker.jie(struck, cue.id, k, n, cycle))
            if k == shooting.listen + 1 and cue.calls:  # the first hit of this 耦's turn
                turn_calls(ens, at, jie, cue)
            # the others play the 節 with the drum that strikes it, until the next 節's tick
            length = at + jie - struck
            for bell, octave in bells:  # 「奏樂以鼓鑮為節」
                ens.pitched(struck, length, bell, octave, cue.id)
            if song.lost:
                for semi in DRONE:
                    if "瑟" in voices:
                        ens.pitched(struck, length, "瑟", semi - 12, cue.id)
            else:
                _sung_jie(ens, struck, length, song, cue, voices)
    releases = release_ticks(shooting.listen, n, jie, ens.settings.release_rule)
    span = CueSpan(cue.id, cue.kind, tick, tick + cycles * n * jie, True, releases, jie,
                   shooting.listen, n, cycles)
    return span, markers


def jie_ticks(ens: Ensemble, song: repertoire.Piece) -> int:
    """The length of one 節: the setting, else one 終 of the song (or of a lost piece)."""
    if ens.settings.jie_seconds is not None:
        return to_ticks(ens.settings.jie_seconds)
    if not song.lost:
        return int(sum(st.syllables for st in song.stanzas) * ens.syllable_ticks)
    return to_ticks(ens.settings.lost_zhong_seconds)


def release_ticks(listen: int, n: int, jie: int, rule: str) -> tuple[int, ...]:
    """Release times in one 耦's cycle that accord with the drum: two in each shooting 節, at
    its start and middle (``half``) or at its quarters (``quarters``)."""
    releases: list[int] = []
    for k in range(listen, n):
        base = k * jie
        if rule == "half":
            releases += [base, base + jie // 2]
        else:
            releases += [base + jie // 4, base + 3 * jie // 4]
    return tuple(releases)


def _sung_jie(ens: Ensemble, tick: int, jie: int, song: repertoire.Piece, cue: Cue,
              voices: set[str]) -> None:
    """One 終 of an extant song fitted exactly into one 節."""
    notes = [(semi, syl, level) for number, st in enumerate(song.stanzas)
             for semi, syl, level in zip(st.semitones, st.lyric,
                                         phrasing.stanza_levels(song.title, number),
                                         strict=False)]
    starts = split_evenly(jie, len(notes)) + [jie]
    singers = voices & SINGERS  # the winds do not play the 射節
    for i, (semi, syl, level) in enumerate(notes):
        play_syllable(ens, tick + starts[i], starts[i + 1] - starts[i], semi, syl, cue.id, singers,
                      level)

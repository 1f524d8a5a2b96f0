"""The pitched calls at the shooting, sounded where the caller stands (the 獲者 at the 乏).

鄉射 and 大射: 「舉旌以宮，偃旌以商」 — the 獲者 calls 獲 on 宮 as the flag goes up and again on
商 as it comes down (注 「再言獲也」); the 大射's 負侯 answer the order to leave the target
「以宮趨，直西，及乏南，又諾以商，至乏，聲止」.  注 「宮為君，商為臣，其聲和相生也」; 疏 「宮數
八十一，商數七十二」: the 商 sounds 9:8 above the 宮 (``cues.model.WU_SHENG``: 宮 on 黃鍾, 商 on
太簇, exactly 9:8 in the default 三分損益 tuning).  The caller is a man: the call is an octave
under the written 律, as the 工 sing (``cues.melody_octaves``), on the 歌 voice with the words
as its lyric, at the caller's position in the layout.

In a round without music the calls follow one another from the cue's start, each ``times``
times, ``CALL_GAP_TICKS`` apart (PROJECT CHOICE: the texts give no count of hits; one 獲 a 耦
is the sheets' choice).  In a 射節 each call sounds once in each 耦's turn, in its first shooting
節 from a quarter of the 節 on (after the first release, as the arrow lands), shortened
proportionally where the 節 is too short to hold it.
"""

from __future__ import annotations

from cues.melody_octaves import melody_octave
from cues.model import WU_SHENG, Call, Cue
from sequencer.timeline.ensemble import Ensemble
from sequencer.timeline.timebase import TICKS_PER_SECOND, to_ticks

CALL_VOICE = "歌"
CALL_VELOCITY = 112  # 「大言獲」 (鄉射 注, quoted in the 大射 疏): called out loud
CALL_GAP_TICKS = TICKS_PER_SECOND * 2  # between two calls of a round without music


def call_ticks(call: Call) -> list[int]:
    """How long each pitch of ``call`` is held, in ticks."""
    return [to_ticks(s) for s in call.seconds]


def sound_call(ens: Ensemble, tick: int, call: Call, cue_id: str, fit: int | None = None) -> int:
    """Call ``call`` once from ``tick`` (within ``fit`` ticks when given); returns its end."""
    lengths = call_ticks(call)
    total = sum(lengths)
    if fit is not None and total > fit:
        lengths = [max(1, n * fit // total) for n in lengths]
    octave = melody_octave(CALL_VOICE)
    for pitch, length in zip(call.pitches, lengths, strict=True):
        ens.pitched(tick, length, CALL_VOICE, WU_SHENG[pitch] + octave, cue_id,
                    lyric=call.words, velocity=CALL_VELOCITY, place=call.who)
        tick += length
    return tick


def round_calls(ens: Ensemble, tick: int, cue: Cue) -> int:
    """The calls of a round without music, one after another from ``tick``; returns the end."""
    end = tick
    for call in cue.calls:
        for _ in range(call.times):
            end = sound_call(ens, tick, call, cue.id)
            tick = end + CALL_GAP_TICKS
    return end


def turn_calls(ens: Ensemble, jie_start: int, jie: int, cue: Cue) -> None:
    """The calls of one 耦's turn in a 射節, in the 節 that starts at ``jie_start``."""
    tick = jie_start + jie // 4
    room = jie_start + jie - tick
    for call in cue.calls:
        tick = sound_call(ens, tick, call, cue.id, fit=room // max(1, len(cue.calls)))

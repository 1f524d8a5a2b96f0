"""A short demonstration of one voice (``yuezheng audition``), as notes for the mixer."""

from __future__ import annotations

from collections.abc import Callable

from cues.catalog import CATALOG, canonical_instrument
from cues.errors import UserError
from instruments.mix.mixer import RenderNote
from instruments.mix.placement import DEFAULT_LISTENER, REFERENCE_DISTANCE_M
from instruments.tuning import DEFAULT_HUANGZHONG_HZ, Tuning
from instruments.voices import notes as voices

PENTATONIC_SEMITONES: tuple[int, ...] = (0, 2, 4, 7, 9, 12)  # 宮 商 角 徵 羽 清宮


def audition_notes(
    instrument: str, huangzhong_hz: float = DEFAULT_HUANGZHONG_HZ, *,
    bell_interval: str = "minor", pitch_hz: Callable[[int], float] | None = None,
) -> list[RenderNote]:
    """A short demonstration: for pitched instruments the pentatonic 宮 商 角 徵 羽 清宮 on 黃鍾
    (``pitch_hz(semitones above 黃鍾)`` gives the frequencies, e.g. ``Tuning.hz``; default
    equal temperament on ``huangzhong_hz``), five strokes for drums, three shakes for the 鼗;
    placed 5 m in front of the listener."""
    canon = canonical_instrument(instrument)
    if canon is None:
        raise UserError(f"unknown instrument {instrument!r}; known: {', '.join(CATALOG)}")
    if not isinstance(huangzhong_hz, int | float) or not 20.0 <= huangzhong_hz <= 2000.0:
        raise UserError(f"黃鍾 must be from 20 to 2000 Hz, got {huangzhong_hz!r}")
    x, y = 0.0, DEFAULT_LISTENER[1] + REFERENCE_DISTANCE_M
    if pitch_hz is None:
        pitch_hz = Tuning("equal", huangzhong_hz).hz
    if CATALOG[canon].pitched:
        step = 0.8 if voices.is_sustained(canon) else 0.9
        return [
            RenderNote(i * step, canon, pitch_hz(st), step * 0.85, 100,
                       x, y, canon, bell_interval)
            for i, st in enumerate(PENTATONIC_SEMITONES)
        ]
    if canon == "鼗":
        return [RenderNote(i * 1.0, canon, None, 0.5, 100, x, y, canon) for i in range(3)]
    vels = (100, 80, 90, 80, 120)
    return [RenderNote(i * 0.75, canon, None, 0.5, v, x, y, canon) for i, v in enumerate(vels)]

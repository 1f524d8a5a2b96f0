"""``yuezheng judge``'s report: the 射節 cue a round is judged in, and the tally as lines."""

from __future__ import annotations

from cues.errors import UserError
from cues.model import Cue, Rite
from cues.text import pad
from sequencer.judge.tally import ShootingSetup, Tally


def shooting_cue(rite: Rite, cue_id: str | None = None) -> Cue:
    """The 射節 cue ``cue_id`` (default: the rite's first); UserError naming the rite's cues."""
    shooting = [c for c in rite.cues if c.kind == "射節" and c.shooting is not None]
    if cue_id:
        shooting = [c for c in shooting if c.id == cue_id]
    if not shooting:
        which = f"no 射節 cue {cue_id!r}" if cue_id else "no 射節 cue"
        raise UserError(f"{rite.title}: {which} (its cues: {', '.join(c.id for c in rite.cues)})")
    return shooting[0]


def tally_lines(rite: Rite, cue: Cue, setup: ShootingSetup, tally: Tally,
                tolerance_ms: float) -> list[str]:
    """The set-up, one line per release (釋, 不釋, or — for a miss) and the announcement."""
    song = cue.shooting.song if cue.shooting else ""
    lines = [f"{rite.title} {cue.id}: 《{song}》 {setup.jie} 節 of {setup.jie_s:g} s, "
             f"{setup.listen} to listen; drum accords ±{tolerance_ms:g} ms at "
             + ", ".join(f"{w:g} {side}" for w, side in zip(setup.windows_s, setup.window_sides,
                                                             strict=True))
             + " s of each cycle (右: the 上射's, 左: the 下射's)"]
    for d in tally.decisions:
        mark = "釋" if d.counted else ("—" if not d.release.hit else "不釋")
        turn = " !" if d.out_of_turn else "  "
        lines.append(f"  {d.release.time_s:9.3f} s  {d.release.side}{turn}"
                     f"{'hit ' if d.release.hit else 'miss'}  {pad(mark, 4)}  {d.reason}")
    if tally.out_of_turn:
        lines.append(f"{tally.out_of_turn} release{'s' if tally.out_of_turn != 1 else ''} out "
                     f"of turn (marked !): the 上射 and the 下射 shoot in turn, the 上射 first")
    lines.append(f"右 {tally.right}, 左 {tally.left}: 「{tally.announcement()}」")
    return lines

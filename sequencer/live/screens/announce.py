"""What changed between two published states, as short sentences: the plain console
(``live --plain``, one line each, for screen readers) and the backstage calls (``live --speak``,
standby and GO spoken by espeak-ng) are both made of these.
"""

from __future__ import annotations

import queue
import shutil
import subprocess
import threading
from dataclasses import dataclass

from cues.errors import UserError
from sequencer.live.screens.show_state import JieAt, ShowState

SPOKEN = ("standby", "go")  # the calls --speak makes


@dataclass(frozen=True)
class Announcement:
    kind: str  # standby, go, end, jie, hold, resume, panic, message, done
    text: str


def changes(before: ShowState | None, after: ShowState) -> list[Announcement]:
    """The announcements from ``before`` to ``after``."""
    out: list[Announcement] = []
    was_running = {c.id for c in before.cues if c.running} if before else set()
    for cue in after.cues:
        if cue.running and cue.id not in was_running:
            out.append(Announcement("go", f"GO {cue.id}: {cue.title}"))
        elif not cue.running and cue.id in was_running:
            out.append(Announcement("end", f"{cue.id} ended ({cue.status})"))
    new_rules = [r for r in after.rules if before is None or r not in before.rules]
    if new_rules:
        out.append(Announcement("message", f"in force: {quoted(new_rules)}"))
    if after.standby is not None and (before is None or before.standby != after.standby):
        out.append(Announcement("standby", f"standby {after.standby}: watch for "
                                           f"「{after.standby_at}」"))
        if after.standby_rules:
            out.append(Announcement("message", f"once {after.standby} begins: "
                                               f"{quoted(after.standby_rules)}"))
    if before is None or before.held != after.held:
        if after.held or before is not None:
            out.append(Announcement("hold" if after.held else "resume",
                                    "held" if after.held else "resumed"))
    if after.panic_stage and (before is None or before.panic_stage != after.panic_stage):
        out.append(Announcement("panic", f"panic {after.panic_stage}"))
    if after.message and (before is None or before.message != after.message
                          or before.message_seq != after.message_seq):
        out.append(Announcement("message", after.message))
    if after.stop_at and (before is None or before.stop_at != after.stop_at):
        out.append(Announcement("message", f"watch for 「{after.stop_at}」, then stop (樂闋)"))
    if after.piece and (before is None or before.piece != after.piece):
        out.append(Announcement("message", f"無算樂: {after.piece}"))
    if after.tally and (before is None or before.tally != after.tally):
        out.append(Announcement("message", after.tally))
    if after.done and (before is None or not before.done):
        out.append(Announcement("done", "the show is done"))
    return out


def quoted(rules: tuple[str, ...] | list[str]) -> str:
    """Rules in the texts' words, each in 「」."""
    return "".join(f"「{rule}」" for rule in rules)


def fallen_jie(state: ShowState, now: float) -> JieAt | None:
    """The last 節 of the running 射節 that has fallen by ``now`` (None: none)."""
    shooting = state.shooting
    fallen = [m for m in shooting.marks if m.t <= now] if shooting else []
    return fallen[-1] if fallen else None


def jie_text(state: ShowState, mark: JieAt) -> str:
    """「節 k / N」, 「先以聽」 on a listening 節, and the 耦."""
    shooting = state.shooting
    assert shooting is not None
    listen = "，先以聽" if mark.k <= shooting.listen else ""
    ou = shooting.ou[mark.cycle][0] if mark.cycle < len(shooting.ou) else ""
    return f"節 {mark.k} / {shooting.n}{listen}　{ou}".rstrip()


class Announcer:
    """Follows the published states: what is new since the last call, 節 by 節."""

    def __init__(self) -> None:
        self.state: ShowState | None = None
        self.jie: tuple[str, int, int, int] | None = None  # cue, pass, cycle, k said last

    def news(self, state: ShowState | None, now: float) -> list[Announcement]:
        if state is None:
            return []
        out = changes(self.state, state) if state is not self.state else []
        self.state = state
        mark = fallen_jie(state, now)
        if mark is not None and state.shooting is not None:
            key = (state.shooting.cue, mark.pass_index, mark.cycle, mark.k)
            if key != self.jie:  # (a hold hides the 節, and moves it: none is said again)
                out.append(Announcement("jie", jie_text(state, mark)))
                self.jie = key
        return out


class Speaker:
    """Speaks the standby and GO calls with espeak-ng, one at a time, in a thread of its own
    (a call never waits for the voice)."""

    def __init__(self, program: str = "espeak-ng", voice: str | None = None) -> None:
        path = shutil.which(program)
        if path is None:
            raise UserError(f"--speak needs {program}, which is not installed "
                            "(Debian: apt-get install espeak-ng)")
        self.command = [path] + (["-v", voice] if voice else [])
        self._calls: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._speak, name="yuezheng-speak", daemon=True)
        self._thread.start()

    def announce(self, announcements: list[Announcement]) -> None:
        for a in announcements:
            if a.kind in SPOKEN:
                self._calls.put(a.text)

    def close(self) -> None:
        self._calls.put(None)
        self._thread.join(timeout=10)

    def _speak(self) -> None:
        while (text := self._calls.get()) is not None:
            subprocess.run([*self.command, text], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)

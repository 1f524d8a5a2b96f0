"""The 節 of a live show as the sending process reached them: each cue's marks by their index in
its schedule, the last 節 each cue sent, and when it went out (the judge anchors a release on
it; the console counts from it)."""

from __future__ import annotations

from sequencer.live.protocol import MarkPassed
from sequencer.outputs.cue_schedule import JieMark


class JieMarks:
    def __init__(self) -> None:
        self.last: dict[str, JieMark] = {}  # the last 節 each cue sent
        self.sent: dict[str, tuple[JieMark, float]] = {}  # ... and when it went out
        self._by_index: dict[tuple[str, int], JieMark] = {}  # (cue, index of its mark) → 節

    def add(self, cue: str, marks: dict[int, JieMark]) -> None:
        """A cue's schedule was loaded with these marks (index in its messages → 節)."""
        self._by_index.update({(cue, i): mark for i, mark in marks.items()})

    def passed(self, event: MarkPassed) -> JieMark | None:
        """The sending process reached a mark: its 節 (None: a mark of no 節)."""
        mark = self._by_index.get((event.key, event.index))
        if mark is not None:
            self.last[event.key] = mark
            self.sent[event.key] = (mark, event.t)
        return mark

"""A cue's trigger: how a sheet writes it, and the orders of cues in which it never fires."""

from __future__ import annotations

from collections.abc import Sequence

from cues.model import TRIGGER_AFTER, TRIGGER_FOLLOW, TRIGGER_GO, TRIGGER_SIGNAL, Cue, Trigger
from cues.sheet.checker import SheetChecker, WhereKey, describe_value


def parse_trigger(checker: SheetChecker, value: object, *, index: int, cue: str) -> Trigger | None:
    """``go`` (the default), ``follow``, ``after:CUE`` or ``signal:NAME``."""
    if value is None:
        return Trigger(TRIGGER_GO)
    where: WhereKey = {"table": "cue", "index": index, "key": "trigger", "cue": cue}
    if not isinstance(value, str):
        checker.error(f"'trigger' is {describe_value(value)}: expected \"go\", \"follow\", "
                      "\"after:CUE\" or \"signal:NAME\"", **where)
        return None
    text = value.strip()
    if text in (TRIGGER_GO, TRIGGER_FOLLOW):
        return Trigger(text)
    kind, sep, target = text.partition(":")
    if sep and kind in (TRIGGER_AFTER, TRIGGER_SIGNAL) and target.strip():
        return Trigger(kind, target.strip())
    checker.error(f"trigger {value!r} is not understood: expected \"go\" (the operator's GO), "
                  "\"follow\" (when the previous cue ends), \"after:CUE\" or \"signal:NAME\"",
                  **where)
    return None


def trigger_problems(cues: Sequence[Cue], signals: set[str]) -> list[tuple[Cue, str]]:
    """The cues whose trigger can never fire in this order, with the reason."""
    problems: list[tuple[Cue, str]] = []
    position = {c.id: i for i, c in enumerate(cues)}
    for i, cue in enumerate(cues):
        trig = cue.trigger
        if trig.kind == TRIGGER_FOLLOW and i == 0:
            problems.append((cue, "trigger \"follow\" on the first cue can never fire: there is "
                             "no previous cue; expected \"go\""))
        elif trig.kind == TRIGGER_AFTER:
            target = trig.target or ""
            if target == cue.id:
                problems.append((cue, f"trigger \"after:{target}\" waits for the cue itself and "
                                 "can never fire"))
            elif target not in position:
                problems.append((cue, f"trigger \"after:{target}\" names no cue of this rite "
                                 "(a dangling cue id)"))
            elif position[target] > i:
                problems.append((cue, f"trigger \"after:{target}\" waits for a later cue and can "
                                 "never fire: cues run in order"))
        elif trig.kind == TRIGGER_SIGNAL and trig.target not in signals:
            known = ", ".join(sorted(signals)) or "none declared"
            problems.append((cue, f"trigger \"signal:{trig.target}\" waits for a signal the rite "
                             f"never declares (rite.signals: {known})"))
    return problems


def check_triggers(checker: SheetChecker, cues: Sequence[Cue], signals: set[str]) -> None:
    """Record every trigger of ``cues`` that can never fire, at its cue's trigger line."""
    for cue, message in trigger_problems(cues, signals):
        index = checker.lines.index_at("cue", cue.line)
        checker.error(message, line=checker.lines.line("cue", index, "trigger"), cue=cue.id)

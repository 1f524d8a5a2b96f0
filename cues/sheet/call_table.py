"""A cue's ``calls``: the pitched calls at the shooting (the 獲者's 「舉旌以宮，偃旌以商」, the
大射's 負侯 answering 「以宮…又諾以商」), each with its passage, checked like any citation."""

from __future__ import annotations

from cues.model import WU_SHENG, Call
from cues.sheet.checker import SheetChecker, Where, describe_value, is_number
from cues.sheet.subtables import parse_source

CALL_KEYS = {"who", "words", "pitches", "seconds", "times", "source"}
CALL_KINDS = ("射", "射節")  # the rounds of shooting
MAX_CALL_SECONDS = 60.0
MAX_TIMES = 36


def parse_calls(checker: SheetChecker, data: dict, kind: str, where: Where) -> tuple[Call, ...]:
    """The cue's ``calls`` (only a round of shooting has them; a 射節 calls once a 耦)."""
    raw = checker.array(data.get("calls"), "calls",
                        "an array of { who, words, pitches, seconds, source }", key="calls",
                        **where)
    if raw and kind not in CALL_KINDS:
        checker.error(f"'calls' belong to a round of shooting (射 or 射節; this cue is {kind})",
                      key="calls", **where)
        return ()
    out: list[Call] = []
    for item in raw or ():
        call = _call(checker, item, kind, where)
        if call is not None:
            out.append(call)
    return tuple(out)


def _call(checker: SheetChecker, item: object, kind: str, where: Where) -> Call | None:
    shape = ("{ who = \"獲者\", words = \"獲\", pitches = [\"宮\", \"商\"], seconds = [1, 1], "
             "source }")
    if not isinstance(item, dict):
        checker.error(f"an entry of 'calls' is {describe_value(item)}: expected {shape}",
                      key="calls", **where)
        return None
    checker.unknown_keys(item, CALL_KEYS, "an entry of 'calls'", key="calls", **where)
    who, words = item.get("who"), item.get("words")
    pitches, secs = item.get("pitches"), item.get("seconds")
    times = item.get("times", 1)
    problem = None
    if not (isinstance(who, str) and who.strip() and isinstance(words, str) and words.strip()):
        problem = "needs who (a layout position) and words (what is called)"
    elif (not isinstance(pitches, list) or not pitches
          or not all(isinstance(p, str) and p in WU_SHENG for p in pitches)):
        problem = (f"pitches are {describe_value(pitches)}: expected 五聲 names "
                   f"({' '.join(WU_SHENG)})")
    elif (not isinstance(secs, list) or len(secs) != len(pitches)
          or not all(is_number(s) and 0 < s <= MAX_CALL_SECONDS for s in secs)):
        problem = (f"seconds are {describe_value(secs)}: expected one length for each pitch, "
                   f"0–{MAX_CALL_SECONDS:g} s")
    elif isinstance(times, bool) or not isinstance(times, int) or not 1 <= times <= MAX_TIMES:
        problem = f"times is {describe_value(times)}: expected a whole number from 1 to {MAX_TIMES}"
    elif kind == "射節" and "times" in item:
        problem = "a 射節 calls once in each 耦's turn: remove 'times'"
    if problem is not None:
        checker.error(f"a call {problem}", key="calls", **where)
        return None
    source = parse_source(checker, item.get("source"), required=True, key="calls", **where)
    if source is None:
        return None
    assert isinstance(who, str) and isinstance(words, str) and isinstance(pitches, list)
    assert isinstance(secs, list)
    return Call(who.strip(), words.strip(), tuple(pitches), tuple(float(s) for s in secs),
                source, times)

"""Timing failures, tagged: the only failures a test is ever run again for.

These machines are shared and noisy: JACK's dummy driver wakes on a software timer (a cycle that
comes late is an xrun, and in an xrun MIDI is dropped), and the OS can wake a sending process
later than the output's latency allows for. A test that measures time says so by raising
``TimingFailure`` — through ``on_time`` (a bound on time), ``as_sent`` (messages that differ
after JACK's own count of xruns says the machine dropped a cycle) or ``delivered`` (a live run
whose own report says only that it was late) — and only a test marked ``@timing_flaky`` is run
again, at most ``TIMING_RERUNS`` times, and only for a ``TimingFailure``. Anything else (a
wrong message, a wrong order without an xrun, a crash) fails at once. tests/test_tiers.py
holds the rule: the marker sits on tests (not helpers or fixtures), and nowhere else is a test
re-run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import pytest

from instruments.midi import is_all_off, is_note_off

TIMING_RERUNS = 3
"""plays after the first (3: on 2026-12-03 an xrun storm of this VM spoiled three plays of a 30 s
射節 in a row, 15 xruns in one, where the runs before and after had 0–2 reruns: the storms come
in bursts, and one more play, a show later, gives one time to pass)"""
T = TypeVar("T")


class TimingFailure(AssertionError):
    """A bound on time the machine, not the program, may have broken."""


timing_flaky = pytest.mark.flaky(reruns=TIMING_RERUNS, only_rerun=[r"^TimingFailure: "])


def on_time(condition: bool, message: str) -> None:
    """A bound on time: ``TimingFailure(message)`` unless ``condition``."""
    if not condition:
        raise TimingFailure(message)


def as_sent(got: Sequence[object], want: Sequence[object], xruns: int, what: str,
            resent_ok: bool = False) -> None:
    """``got == want``; where they differ after ``xruns`` > 0 (JACK's own count), the dropped
    cycle is the machine's: a TimingFailure. Without an xrun the difference is ours.
    ``resent_ok``: ``want`` in its order with some of its closing messages written again is
    what the output does after an xrun (``instruments.ports.jackout``), and passes — for a
    test of what is sent, not of how many times."""
    if list(got) == list(want):
        return
    if resent_ok and _resent_closing(list(got), list(want)):
        return
    if xruns:
        raise TimingFailure(f"{what}: {len(got)} messages against {len(want)} sent, after "
                            f"{xruns} xrun(s) of the JACK server")
    if _resent_closing(list(got), list(want)):  # the sender's xrun, not seen by the receiver
        raise TimingFailure(f"{what}: every message sent, and {len(got) - len(want)} closing "
                            f"message(s) written again (the output's answer to an xrun)")
    assert list(got) == list(want), what


def held_unless_xruns(ok: bool, xruns: int, message: str) -> None:
    """A check of what arrived (``ok``): where it fails after ``xruns`` > 0 (JACK's own count),
    what a dropped cycle lost is the machine's — a TimingFailure; without one, ours."""
    if not ok and xruns:
        raise TimingFailure(f"{message}, after {xruns} xrun(s) of the JACK server")
    assert ok, message


def _resent_closing(got: list[object], want: list[object]) -> bool:
    """``got`` is ``want`` in its order with closing messages of ``want`` added (no fewer)."""
    return len(got) > len(want) and resends_only(got, want)


def placed(got: Sequence[object], want: Sequence[object],
           before: Sequence[object] = ()) -> list[int] | None:
    """Where ``want``'s messages are in ``got``, in order, when every other message of ``got``
    up to the last of them is a closing message (note-off, all-off) already written (in
    ``before``, or among ``want``'s so far): written again after an xrun (``ports.jackout``).
    ``None`` when ``got`` is not so. What follows the last is not looked at."""
    written = {m for m in before if _closing(m)}
    at: list[int] = []
    for n, message in enumerate(got):
        if len(at) == len(want):
            break
        if message == want[len(at)]:
            at.append(n)
            if _closing(message):
                written.add(message)
        elif message not in written:
            return None
    return at if len(at) == len(want) else None


def resends_only(got: Sequence[object], want: Sequence[object],
                 before: Sequence[object] = ()) -> bool:
    """``got`` is ``want`` with closing messages already written (``placed``) written again,
    the last ones after it included."""
    at = placed(got, want, before)
    if at is None:
        return False
    written = {m for m in (*before, *want) if _closing(m)}
    return all(m in written for m in got[at[-1] + 1 if at else 0:])


def placed_as_sent(got: Sequence[object], want: Sequence[object], xruns: int,
                   what: str) -> list[int]:
    """``placed(got, want)`` — ``want`` at the start of ``got``, closing messages written again
    among them allowed —, or the failure ``as_sent`` gives their difference."""
    at = placed(got, want)
    if at is None:
        as_sent(got[:len(want)], want, xruns, what)
        raise AssertionError(what)  # (as_sent passes only what placed places)
    return at


def _closing(message: object) -> bool:
    return isinstance(message, bytes) and (is_note_off(message) or is_all_off(message))


XRUN_REACH_S = 0.050
"""how near an xrun's notice (``ActiveClient.xrun_times``) a moment is the xrun's: the notice
comes from JACK's notification thread a little after the cycle it spoiled, and a message due in
a skipped cycle arrives in a later one"""


def near_xruns(moment: float, xrun_times: Sequence[float], reach: float = XRUN_REACH_S) -> bool:
    """``moment`` (``time.perf_counter`` seconds) lies within ``reach`` of an xrun's notice."""
    return any(abs(moment - x) <= reach for x in xrun_times)


def off_time_is_the_machines(errors_ms: Sequence[float], moments: Sequence[float],
                             xrun_times: Sequence[float], bound_ms: float, xrun_bound_ms: float,
                             what: str) -> None:
    """Each message's timing error (``errors_ms``, at ``moments`` on ``perf_counter``) holds
    to ``bound_ms``; one near an xrun JACK reported (``xrun_times``) is the machine's as long
    as it holds to ``xrun_bound_ms`` (the cycles an xrun skips) and at most half the messages
    are so spoiled. Any other error is a TimingFailure too (a notice may come later than its
    reach) — never a pass."""
    off = [(i, e) for i, e in enumerate(errors_ms) if e > bound_ms]
    ours = [(i, round(e, 2)) for i, e in off
            if e > xrun_bound_ms or not near_xruns(moments[i], xrun_times)]
    on_time(not ours, f"{what}: timing errors over {bound_ms} ms away from any of "
                      f"{len(xrun_times)} xrun(s): {ours[:12]}")
    on_time(len(off) <= len(errors_ms) // 2,
            f"{what}: {len(off)} of {len(errors_ms)} messages spoiled by {len(xrun_times)} xrun(s)")


def delivered(returncode: int, output: str, xruns: int = 0) -> None:
    """A live run ended well (exit 0); one that says only that messages were handed over late
    (its own "NOT ON TIME" report, nothing lost, exit 1) is a TimingFailure — or, given the
    ``xruns`` JACK counted meanwhile (> 0) by a test that is not about time, the machine's
    dropped cycle, honestly reported: it passes."""
    if returncode == 0:
        return
    late_only = (returncode == 1 and "NOT ON TIME" in output and "OUTPUT LOST" not in output
                 and "Traceback" not in output and "internal error" not in output)
    if late_only and xruns:
        return
    if late_only:
        raise TimingFailure(f"the show was late on this machine: {_report(output)}")
    assert returncode == 0, output


def late_run(text: str) -> None:
    """A run whose error says only that the show was late (a live run's "not delivered whole"
    without a lost output, a traceback or an internal error): a TimingFailure."""
    if "not delivered whole" in text and not any(
            word in text for word in ("OUTPUT LOST", "Traceback", "internal error")):
        raise TimingFailure(f"the show was late on this machine: {text[-300:]}")


def until_quiet(attempt: Callable[[], T], busy: Callable[[T], str]) -> T:
    """``attempt()``, run again (at most TIMING_RERUNS more times) while it raises a
    TimingFailure or ``busy`` says the machine spoiled it ("": it did not) — for a rig a
    module's tests share, which a re-run of one test would not run again. The last attempt is
    returned (or its TimingFailure raised) whatever it says."""
    for n in range(TIMING_RERUNS + 1):
        last = n == TIMING_RERUNS
        try:
            result = attempt()
        except TimingFailure:
            if last:
                raise
            continue
        if last or not busy(result):
            return result
    raise AssertionError("unreachable")


def spoiled_by(checks: Callable[[], None], xruns: int = 0) -> str:
    """For ``until_quiet``'s ``busy``: how the machine spoiled a shared rig's run, by the
    module's own ``checks`` on it — a TimingFailure's message, or a failed check's while JACK
    counted ``xruns`` > 0 (a dropped cycle's MIDI); "" when they pass, or fail with no xrun
    (ours, not the machine's: the test reports it). An xrun that spoiled nothing is no reason
    to run it again."""
    try:
        checks()
    except TimingFailure as late:
        return str(late)
    except AssertionError as failed:
        return f"{xruns} xrun(s): {failed}" if xruns else ""
    return ""


def _report(output: str) -> str:
    return next((line for line in output.splitlines() if "NOT ON TIME" in line), output[-300:])

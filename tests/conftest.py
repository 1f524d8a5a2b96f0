"""Shared fixtures and the tiers. ``jack``: a running JACK server (skipped locally without one,
a failure in CI, where .ci/jack.sh must have started it).

Tiers are markers (pyproject.toml lists them): a test file names its tier with ``pytestmark``,
a slow test in a quicker file with its own marker; a test that uses the ``jack`` fixture is in
the ``jack`` tier; every other test is ``unit`` — the inner loop, ``python -m pytest -m unit``.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("JACK_NO_START_SERVER", "1")  # a test must never auto-start a server


@pytest.fixture(scope="session")
def jack() -> tuple[int, int]:
    """The running JACK server's (frames per period, sample rate); rtmidi must have JACK."""
    problem = None
    try:
        import rtmidi

        from instruments.ports.jacklib import jack_period, jack_running

        if rtmidi.API_UNIX_JACK not in rtmidi.get_compiled_api():
            problem = "python-rtmidi has no JACK support (see .ci/jack.sh)"
        elif not jack_running():
            problem = "no JACK server is running (start one with .ci/jack.sh)"
    except (ImportError, OSError) as exc:
        problem = f"JACK is not usable: {exc}"
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the JACK tests: {problem}")
        pytest.skip(problem)
    return jack_period()


TIERS = ("render", "live", "jack", "net", "browser", "fuzz", "build")
REALTIME = ("live", "jack", "net", "browser")
"""The tiers that keep time on the wall clock (shows played, JACK cycles, peers, a browser):
``realtime`` marks them, and the README's test command runs them by themselves, two at a time
(``-n 2``: they mostly wait; three at a time loaded the shared JACK server into dozens of xruns
a show), after the others have run on both cores: a CPU-bound test beside
them would be the "another job on the machine" their timing checks must survive, not a
condition to seek. (Both parts side by side, the CPU part at nice 19, took 13 min 19 s instead
of about 16½; the real-time part failed three tests: a 射節 over JACK spoiled by 24 xruns in
each of its three plays, a GO's reply that carried another thread's words (ours: fixed,
tests/test_command_words.py) and a note-off lost in the receiver-xrun test — seen once, not in
34 runs since beside renders or a test load, nor with the receiver or the sender stalled for up
to 200 ms. The CPU part's four SIGINT failures then were the harness's: a script's background
job inherits SIGINT ignored.)"""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "jack" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.jack)
        if not any(item.get_closest_marker(tier) for tier in TIERS):
            item.add_marker(pytest.mark.unit)
        if any(item.get_closest_marker(tier) for tier in REALTIME):
            item.add_marker(pytest.mark.realtime)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """A pytest-xdist worker is done: print the fuzz tallies it kept (``tests/fuzzing.py``)."""
    config = getattr(node, "config", None)
    reports = getattr(node, "workeroutput", {}).get("fuzz_reports", [])
    reporter = config.pluginmanager.get_plugin("terminalreporter") if config else None
    if reporter is None:
        return
    for line in reports:
        reporter.write_line("\n" + line)

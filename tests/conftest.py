"""Shared fixtures. ``jack``: a running JACK server (skipped locally without one, a failure in CI,
where .ci/jack.sh must have started it)."""

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

"""What the fuzz tests share: hypothesis settings scaled by ``YUEZHENG_FUZZ_SCALE``, the tally of
cases by input and outcome, and its report at the end of each fuzz module."""

from __future__ import annotations

import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, settings

SCALE = int(os.environ.get("YUEZHENG_FUZZ_SCALE", "1"))
BATCH = 10  # files per child process
OUTCOMES: Counter[str] = Counter()


def fuzz(runs: int):
    """Hypothesis settings for ``runs`` examples (times the scale), reproducible."""
    return settings(max_examples=runs * SCALE, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module", autouse=True)
def report_outcomes(request: pytest.FixtureRequest):
    """Print the module's cases by input and outcome after its last test."""
    OUTCOMES.clear()
    yield
    total = sum(OUTCOMES.values())
    line = f"fuzz: {total} cases run; by input and exit code: {dict(sorted(OUTCOMES.items()))}"
    workeroutput = getattr(request.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: its controller prints it (conftest)
        workeroutput.setdefault("fuzz_reports", []).append(line)
        return
    plugins = request.config.pluginmanager
    reporter = plugins.get_plugin("terminalreporter")
    capture = plugins.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line("\n" + line)

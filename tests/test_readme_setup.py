"""The README's two set-up commands stay true to the machines they meet: each makes a virtual
environment first (Debian 12's system Python refuses pip outside one: PEP 668), one runs the
main job and one the tests, and CI (.ci/run) runs the test command's steps."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = "python3 -m venv .venv && . .venv/bin/activate && "


def _setup_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Set up and run"):readme.index("## Play it for real")]
    return re.findall(r"```sh\n(.*?)\n```", section, flags=re.S)


def test_the_readme_sets_up_in_a_virtual_environment() -> None:
    run, test = _setup_commands()[:2]
    assert run == VENV + "pip install . && yuezheng render xiang-she -o xiang-she.wav"
    assert test == VENV + ('pip install ".[test]" && python -m pytest -n 2 -m "not realtime" '
                           '&& python -m pytest -n 2 -m realtime')


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    steps = ["python3 -m venv .venv", ". .venv/bin/activate", 'pip install --quiet ".[test]"',
             'python -m pytest -n 2 -m "not realtime" --junitxml="$reports/cpu.xml"',
             'python -m pytest -n 2 -m realtime --junitxml="$reports/realtime.xml"']
    lines = [line.strip() for line in ci.splitlines()]
    assert [lines.index(step) for step in steps] == sorted(lines.index(step) for step in steps)
    assert "python3-venv" in ci  # Debian ships venv apart

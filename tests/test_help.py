"""Help for users: every sub-command's --help has a one-line description and an example;
``--version``; one "yuezheng:" prefix on errors; no-JACK messages that say what to do; library
chatter on fd 2 silenced around the probing commands."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from cli import _build_parser, main

ROOT = Path(__file__).resolve().parent.parent


def _subparsers():
    action = next(a for a in _build_parser()._actions if a.dest == "command")
    return action.choices, {a.dest: a.help for a in action._choices_actions}


def test_every_command_has_a_description_and_an_example() -> None:
    parsers, summaries = _subparsers()
    assert len(parsers) >= 15
    for name, parser in parsers.items():
        text = parser.format_help()
        summary = summaries[name]
        assert summary and "\n" not in summary, name
        assert parser.description.splitlines()[0] == summary, name
        assert "example" in parser.epilog, name
        examples = [line.strip() for line in parser.epilog.splitlines()[1:]]
        assert examples and all(e.startswith(f"yuezheng {name}") for e in examples), name
        assert summary in text and examples[0] in text, name
        assert max(len(line) for line in parser.description.splitlines()[1:] or [""]) <= 90


def test_every_declared_command_has_one_body() -> None:
    """sequencer/command_line.py declares the commands, cli.py runs them: the same names, each
    declared once, and every command's parse gives its body."""
    import cli
    from sequencer.command_line import COMMANDS

    names = [c.name for c in COMMANDS]
    assert len(set(names)) == len(names)
    assert sorted(names) == sorted(cli._BODIES)
    parsers, _ = _subparsers()
    for name, parser in parsers.items():
        assert parser.get_default("func") is cli._BODIES[name], name


def test_examples_parse() -> None:
    """Each example is a valid command line (parsed, not run)."""
    import shlex

    parsers, _ = _subparsers()
    parser = _build_parser()
    for sub in parsers.values():
        for line in sub.epilog.splitlines()[1:]:
            argv = shlex.split(line.split("#")[0])[1:]
            parser.parse_args(argv)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    with (ROOT / "pyproject.toml").open("rb") as handle:
        version = tomllib.load(handle)["project"]["version"]
    assert capsys.readouterr().out.strip() == f"yuezheng {version}"


@pytest.mark.parametrize("argv", [["show"], ["bogus"], [], ["render", "xiang-she"]])
def test_one_prefix_on_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("yuezheng: ")
    assert "yuezheng: yuezheng" not in err


def test_no_jack_message_says_what_to_do() -> None:
    env = {**os.environ, "JACK_DEFAULT_SERVER": "yuezheng-no-such-server",
           "JACK_NO_START_SERVER": "1"}
    env.pop("YUEZHENG_DEBUG", None)
    done = subprocess.run([sys.executable, str(ROOT / "cli.py"), "ports"], capture_output=True,
                          text=True, env=env, timeout=60, cwd=ROOT)
    assert done.returncode == 2
    assert "--output pyo" in done.stderr and "jackd" in done.stderr
    assert ".ci" not in done.stderr and "dummy" not in done.stderr
    # the library's own chatter ("Cannot connect to server socket", JackShm…) is silenced
    lines = [line for line in done.stderr.splitlines() if line]
    assert lines and all(line.startswith("yuezheng: ") for line in lines), done.stderr


def test_quiet_libraries_keeps_our_own_stderr() -> None:
    code = ("import os, sys\n"
            "from instruments.ports.library_chatter import quiet_libraries\n"
            "with quiet_libraries():\n"
            "    os.write(2, b'ALSA lib pcm.c: noise\\n')\n"
            "    sys.stderr.write('ours\\n')\n"
            "os.write(2, b'after\\n')\n")
    env = {k: v for k, v in os.environ.items() if k != "YUEZHENG_DEBUG"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=60)
    assert done.stderr == "ours\nafter\n"

"""The command line's shared arguments are defined once: the same flags, the same 黃鍾 default."""

from __future__ import annotations

import pytest

import cli
from instruments.tuning import DEFAULT_HUANGZHONG_HZ, TUNING_SYSTEMS

TIMELINE = [["show", "yan"], ["midi", "yan", "-o", "x.mid"], ["render", "yan", "-o", "x.wav"],
            ["plot", "yan", "-o", "x.png"], ["judge", "yan", "--releases", "r.csv"],
            ["live", "yan", "--output", "memory:"]]


def parse(argv: list[str]):
    return cli._build_parser().parse_args(argv)


@pytest.mark.parametrize("argv", TIMELINE)
def test_timeline_commands_leave_tuning_to_the_sheet(argv: list[str]) -> None:
    args = parse(argv)
    assert args.huangzhong_hz is None and args.tuning is None and args.variant == []
    args = parse(argv + ["--huangzhong", "293.66", "--tuning", "equal", "--variant", "v"])
    assert (args.huangzhong_hz, args.tuning, args.variant) == ("293.66", "equal", ["v"])


@pytest.mark.parametrize(("argv", "tuning"), [(["score", "鹿鳴", "-o", "x.musicxml"], "sanfen"),
                                              (["audition", "磬", "-o", "x.wav"], "sanfen")])
def test_commands_without_a_rite_default_to_the_one_huangzhong(argv, tuning) -> None:
    args = parse(argv)
    assert args.huangzhong_hz == DEFAULT_HUANGZHONG_HZ
    assert args.tuning == tuning
    assert parse(argv + ["--huangzhong", "293.66"]).huangzhong_hz == 293.66


def test_the_help_of_every_huangzhong_names_the_default() -> None:
    helps = set()
    choices = set()
    for sub in _subparsers().values():
        for action in sub._actions:
            if "--huangzhong" in action.option_strings:
                helps.add(action.help)
            if "--tuning" in action.option_strings:
                choices.add(tuple(action.choices))
    assert helps == {f"frequency of 黃鍾 in Hz (default {DEFAULT_HUANGZHONG_HZ:.2f} = C4: the "
                     "sources give none)"}
    assert choices == {TUNING_SYSTEMS}


def _subparsers() -> dict:
    parser = cli._build_parser()
    for action in parser._actions:
        if action.choices and isinstance(action.choices, dict):
            return action.choices
    raise AssertionError("no sub-commands")

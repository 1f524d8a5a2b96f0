"""The command line's shared arguments are defined once: the same flags, the same 黃鍾 default."""

from __future__ import annotations

import pytest

import cli
from instruments.tuning import DEFAULT_HUANGZHONG_HZ, TUNING_SYSTEMS
from sequencer.command_line import SETTING_FLAGS

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


def _option(command: str, flag: str):
    """The parser's action for ``flag`` of ``command``."""
    return next(a for a in _subparsers()[command]._actions if flag in a.option_strings)


def test_every_choice_and_default_is_the_owners() -> None:
    """The CLI re-types no table: each choice and default is imported from its owner."""
    from cues.builtin import ENSEMBLES
    from instruments.mix.room import DEFAULT_ROOM, ROOMS
    from instruments.ports.rtmidi import API_NAMES
    from instruments.voices.models import BELL_DETUNES, BELL_INTERVALS
    from sequencer.judge.tally import DEFAULT_TOLERANCE_MS
    from sequencer.live.control.midi_in import DEFAULT_GO, DEFAULT_PANIC, DEFAULT_STOP
    from sequencer.live.go_safety import DEFAULT_GO_GUARD_S
    from sequencer.live.standby.pair import (
        DEFAULT_HEARTBEAT_MS,
        DEFAULT_LEAD_MS,
        DEFAULT_TAKEOVER_MS,
        ROLES,
    )
    from sequencer.outputs.render import DEFAULT_LOUDNESS_LUFS, ENGINES
    from sequencer.timeline import drums
    from sequencer.timeline.settings import RELEASE_RULES

    choices = {
        ("render", "--drum-pattern"): drums.PATTERNS, ("render", "--drum-reading"): drums.READINGS,
        ("render", "--release-rule"): RELEASE_RULES, ("render", "--room"): ROOMS,
        ("audition", "--room"): ROOMS, ("render", "--bell-detune"): BELL_DETUNES,
        ("render", "--engine"): ENGINES, ("render", "--bell-interval"): tuple(BELL_INTERVALS),
        ("render", "--ensemble"): tuple(ENSEMBLES), ("ports", "--api"): API_NAMES,
        ("live", "--role"): ROLES,
    }
    for (command, flag), owned in choices.items():
        assert tuple(_option(command, flag).choices) == tuple(owned), (command, flag)
    defaults = {
        ("render", "--room"): DEFAULT_ROOM, ("render", "--loudness"): DEFAULT_LOUDNESS_LUFS,
        ("render", "--engine"): ENGINES[0], ("live", "--go-guard"): DEFAULT_GO_GUARD_S,
        ("live", "--peer-lead"): DEFAULT_LEAD_MS, ("live", "--heartbeat"): DEFAULT_HEARTBEAT_MS,
        ("live", "--takeover"): DEFAULT_TAKEOVER_MS, ("live", "--midi-go"): DEFAULT_GO,
        ("live", "--midi-stop"): DEFAULT_STOP, ("live", "--midi-panic"): DEFAULT_PANIC,
        ("judge", "--tolerance-ms"): DEFAULT_TOLERANCE_MS,
    }
    for (command, flag), owned in defaults.items():
        assert _option(command, flag).default == owned, (command, flag)
    # live --loudness: none given is the render's (schedule.output_options), said in its help
    assert _option("live", "--loudness").default is None
    assert f"default {DEFAULT_LOUDNESS_LUFS:g}" in _option("live", "--loudness").help


def test_the_setting_flags_map_every_setting_of_the_timeline() -> None:
    """One explicit map, flag → field: each field a setting, each setting but the readings'
    own (the 九夏's order) a flag, and each flag declared with that field as its destination."""
    from sequencer.timeline.settings import SETTING_NAMES

    assert set(SETTING_FLAGS.values()) == set(SETTING_NAMES) - {"jiu_xia_order"}
    for flag, field in SETTING_FLAGS.items():
        assert _option("render", flag).dest == field


@pytest.mark.parametrize(("argv", "message"), [
    (["--tempo", "abc"], "--tempo abc: expected a number"),
    (["--jie-seconds", "0"], "--jie-seconds 0: 節 length 0.0 s is out of range"),
    (["--huangzhong", "9"], "--huangzhong 9: 黃鍾 frequency 9.0 Hz is out of range"),
    (["--drum-pattern", "xue", "--drum-reading", "precede"], "--drum-pattern and --drum-reading: "
     "under the reading 'precede'"),
])
def test_a_bad_setting_names_the_flag_it_came_by(argv, message, tmp_path, capsys) -> None:
    assert cli.main(["midi", "xiang-she", "-o", str(tmp_path / "x.mid"), *argv]) == cli.EXIT_USAGE
    assert f"yuezheng: {message}" in capsys.readouterr().err
    assert not (tmp_path / "x.mid").exists()


@pytest.mark.parametrize("lufs", ["0", "nan", "-61"])
def test_live_refuses_a_loudness_no_render_may_have(lufs: str, capsys) -> None:
    assert cli.main(["live", "xiang-she", "--output", "memory:", "--auto",
                     "--loudness", lufs]) == cli.EXIT_USAGE
    assert f"yuezheng: --loudness {lufs}: expected -60 to -6 LUFS" in capsys.readouterr().err


@pytest.mark.parametrize("output", ["memory:", "jack-virtual:yz"])
def test_live_refuses_a_loudness_a_midi_output_cannot_have(output: str, capsys) -> None:
    assert cli.main(["live", "xiang-she", "--output", output, "--auto",
                     "--loudness", "-18"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert (f"yuezheng: --loudness -18: it sets the level of the pyo output (the built-in "
            f"voices); {output!r} sends MIDI, whose level is the synth's") in err


def test_the_pyo_output_plays_at_the_loudness_asked() -> None:
    """``live --loudness``: the pyo output's gain is the one a dry render of the show's notes
    gets at that loudness: from −33 to −28 LUFS 5 dB more (the limiter idle there), from the
    default to −18 more than 5 dB (the limiter takes the 節 strokes' peaks, the gain makes it
    up)."""
    import math

    from sequencer.live.sending.schedule import output_options
    from sequencer.timeline.compiler import compile_rite
    from sequencer.timeline.selection import selected_rite

    rite, settings = selected_rite("xiang-she", variants=(), readings=(), from_cue="she-jie",
                                   until_cue="she-jie", overrides={}, flags={}, ensemble=None)
    timeline = compile_rite(rite, settings)
    assert output_options("memory:", timeline, -18.0) is None  # MIDI outputs: nothing to say
    gains = {lufs: output_options("pyo", timeline, lufs) for lufs in (-33.0, -28.0, None, -18.0)}
    db = {lufs: 20 * math.log10(o["gain"]) for lufs, o in gains.items() if o is not None}
    assert db[-28.0] - db[-33.0] == pytest.approx(5.0, abs=0.05)
    assert db[-18.0] - db[None] > 5.5
